"""The library of //benchmarks:scaling_model (`benchmarks/scaling_model_main.py` says what it
measures and how to run it): its options, their checks and its run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import sys
import tempfile

from command_line.options import Options, Range, above, at_least, option


@dataclasses.dataclass(frozen=True)
class ScalingOptions(Options):
  """The cluster to model: the training clip, the GPUs, the network and the nodes' CPUs."""
  clip_frames: int = option(64, 'Frames per training clip.', valid=at_least(1))
  crop_size: int = option(224, 'Crop side of a training clip.', valid=at_least(1))
  num_classes: int = option(101, 'Classes of the I3D head (UCF101).', valid=at_least(1))
  clips_per_gpu: int = option(6, 'Clips per worker step (one GPU per worker).', valid=at_least(1))
  gpu_tflops: float = option(4.4, 'GPU fp32 peak, TFLOPS (GTX1060 6GB: ~4.4).', valid=above(0))
  achieved_fraction: float = option(0.4, 'Assumed fraction of peak a training step reaches.',
                                    valid=Range(low=0.0, high=1.0, low_open=True))
  nodes: int = option(10, 'Machines in the cluster (one GPU each).', valid=at_least(1))
  link_gbits: tuple[float, ...] = option((1.0, 10.0), 'NIC speeds to model, Gbit/s.',
                                         valid=above(0))
  link_efficiency: float = option(0.9, 'Usable fraction of the nominal link rate (TCP, gRPC).',
                                  valid=Range(low=0.0, high=1.0, low_open=True))
  jpeg_decodes_per_core: float = option(
      0.0, 'Full-frame JPEG decodes per second per core; 0: measure on this machine with '
      'benchmarks/input_benchmark.py\'s decode loop.', valid=at_least(0))
  node_cores: int = option(4, 'Physical cores per node (i7-7700: 4 cores, 8 threads).',
                           valid=at_least(1))



MB = 1e6


def measured_decodes_per_core(frames: int = 16, batch: int = 4, seconds: float = 3.0) -> float:
  """Full-frame JPEG decodes per second on one core (cv2.imdecode, one thread) of the
  input benchmark's 341x256 frames, measured with benchmarks/input_benchmark.py's own decode loop."""
  from benchmarks import input_benchmark
  root = tempfile.mkdtemp(prefix='scaling_model_jpeg_')
  try:
    with contextlib.redirect_stdout(sys.stderr):  # data preparation progress lines
      paths = input_benchmark.make_data(root, classes=2, groups=8, frames=frames)
    clips_per_second = input_benchmark.measure(
        {'decode': lambda: input_benchmark.decode_loop(paths['tfrecords'], frames, batch)},
        batch, seconds)['decode']
    return clips_per_second * frames
  finally:
    shutil.rmtree(root, ignore_errors=True)


def ps_bytes_by_count(variables, max_ps: int) -> dict[int, list[float]]:
  """Trainable bytes per ps task for 1..max_ps tasks, placing EVERY variable (trainable
  or not, in creation order) with ParameterServerPlacement (greedy by bytes)."""
  import tensorflow as tf
  from model_fn.variable_placement import make_placement
  result = {}
  for k in range(1, max_ps + 1):
    devices = [f'/job:ps/task:{i}' for i in range(k)]
    placement = make_placement('ps', ['/device:GPU:0'], ps_devices=devices)
    load = dict.fromkeys(devices, 0.0)
    for v in variables:
      device = placement.device_for(v.name, v.shape, tf.float32)
      if v.trainable:
        load[device] += v.num_bytes
    result[k] = [load[d] for d in devices]
  return result


def report(options: ScalingOptions) -> str:
  from benchmarks import cluster_model, flop_count
  from model_fn.network_variables import network_variables
  from model_fn.networks import build_network
  from towers.params import make_params
  params = make_params(model='i3d', num_classes=options.num_classes,
                       clip_frames=options.clip_frames, crop_size=options.crop_size)
  clip = (options.clip_frames, options.crop_size, options.crop_size, 3)
  flops = flop_count.training_flops(build_network(params), clip)
  variables = network_variables(build_network(params), clip)
  total_bytes = sum(v.num_bytes for v in variables if v.trainable)
  trainable = [v for v in variables if v.trainable]
  gpu = options.gpu_tflops * 1e12
  compute = cluster_model.compute_seconds(flops.total, options.clips_per_gpu, gpu,
                                          options.achieved_fraction)
  shares = ps_bytes_by_count(variables, options.nodes)
  nodes, clip_name = options.nodes, 'x'.join(str(d) for d in clip[:3])
  out = [
      f'## Model: I3D (RGB, {options.num_classes} classes), one {clip_name} clip',
      '',
      '| quantity | value |', '|---|---:|',
      f'| forward FLOPs per clip | {flops.forward / 1e9:.1f} G |',
      f'| backward FLOPs per clip | {flops.backward / 1e9:.1f} G |',
      f'| training FLOPs per clip (forward + backward) | {flops.total / 1e9:.1f} G |',
      f'| GPU peak (fp32) | {options.gpu_tflops} TFLOPS |',
      f'| assumed achieved fraction | {options.achieved_fraction:.0%} |',
      f'| compute per worker step ({options.clips_per_gpu} clips) | {compute:.3f} s |',
      f'| trainable variables | {len(trainable)} tensors, '
      f'{sum(v.num_bytes for v in trainable) // 4:,} parameters |',
      f'| parameters pulled per worker step | {total_bytes / MB:.1f} MB |',
      f'| gradients pushed per worker step | {total_bytes / MB:.1f} MB |',
      '',
      'FLOPs: tf.compat.v1.profiler float_operation on the training graph (batch 1, '
      'multiply-add = 2), with Conv3D gradient statistics registered by benchmarks/flop_count.py; '
      f'op types with no statistic (counted 0): {", ".join(flops.uncounted_types)}.',
      '']
  for gbits in options.link_gbits:
    link = gbits * 1e9 / 8 * options.link_efficiency
    best = cluster_model.best_ps_count(compute, shares, nodes, nodes, link)
    out += [f'## {gbits:g} Gbit/s Ethernet ({link / MB:.1f} MB/s usable per direction)', '',
            f'### ps tasks, {nodes} synchronous workers', '',
            '| ps | MB per ps (max / min) | through busiest ps per step, in = out (MB) '
            '| busiest NIC per phase (MB) | sync step (s) | sync efficiency |',
            '|---:|---:|---:|---:|---:|---:|']
    for k, ps in shares.items():
      busiest = max(cluster_model.ps_traffic_per_step(ps, nodes))[0]
      step = cluster_model.sync_step_seconds(compute, ps, nodes, nodes, link)
      nic = max(cluster_model.phase_bytes(ps, nodes, nodes))
      out.append(f'| {k} | {max(ps) / MB:.1f} / {min(ps) / MB:.1f} | {busiest / MB:.0f} | '
                 f'{nic / MB:.1f} | {step:.3f} | '
                 f'{cluster_model.efficiency(nodes / step, nodes, compute):.0%} |')
    balanced = cluster_model.largest_first_shares(
        [v.num_bytes for v in trainable], nodes)
    balanced_step = cluster_model.sync_step_seconds(compute, balanced, nodes, nodes, link)
    out += ['', f'best ps count for {nodes} workers: {best}', '',
            f'what-if, {nodes} ps with the variables placed largest first: '
            f'{max(balanced) / MB:.1f} / {min(balanced) / MB:.1f} MB per ps (max / min), sync '
            f'step {balanced_step:.3f} s, efficiency '
            f'{cluster_model.efficiency(nodes / balanced_step, nodes, compute):.0%}', '',
            f'### workers, {best} ps task(s)', '',
            '| workers | sync step (s) | sync clips/s | sync efficiency | async clips/s '
            '| async efficiency |', '|---:|---:|---:|---:|---:|---:|']
    for w in range(1, nodes + 1):
      step = cluster_model.sync_step_seconds(compute, shares[best], w, nodes, link)
      rate = cluster_model.async_steps_per_second(compute, shares[best], w, nodes, link)
      out.append(f'| {w} | {step:.3f} | {w * options.clips_per_gpu / step:.1f} | '
                 f'{cluster_model.efficiency(w / step, w, compute):.0%} | '
                 f'{rate * options.clips_per_gpu:.1f} | '
                 f'{cluster_model.efficiency(rate, w, compute):.0%} |')
    out.append('')
  per_core = options.jpeg_decodes_per_core or measured_decodes_per_core()
  need_clips = options.clips_per_gpu / compute
  need_frames = need_clips * options.clip_frames
  capacity = per_core * options.node_cores
  out += ['## Input per node', '',
          f'A worker that never waits for the network consumes {options.clips_per_gpu} clips per '
          f'{compute:.3f} s = {need_clips:.2f} clips/s = {need_frames:.0f} JPEG frames/s '
          f'({options.clip_frames} decoded frames per clip).',
          f'JPEG decode rate measured on this machine (benchmarks/input_benchmark.py decode loop, one '
          f'thread, 341x256 frames): {per_core:.0f} frames/s per core; x {options.node_cores} '
          f'cores = {capacity:.0f} frames/s per node, {capacity / need_frames:.1f}x the need '
          f'({"enough" if capacity >= need_frames else "NOT enough"}).']
  return '\n'.join(out)

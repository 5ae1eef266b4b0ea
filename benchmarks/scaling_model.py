"""The numbers of docs/scaling.md: `bazel run //benchmarks:scaling_model [-- flags]`.

Counts I3D's training FLOPs per clip from the graph (`benchmarks/flop_count.py`), reads the
trainable variables' bytes from the same network, places them on 1..10 ps tasks with the
project's own greedy-by-bytes placement, and evaluates the paper model of
`benchmarks/cluster_model.py` for 1..10 workers at each link speed. The input-side check uses
the per-core JPEG decode rate measured on THIS machine with the input benchmark's decode
loop (or `--jpeg_decodes_per_core`). Prints Markdown.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile

if __package__ in (None, ''):
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app, flags  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_integer('clip_frames', 64, 'Frames per training clip.')
flags.DEFINE_integer('crop_size', 224, 'Crop side of a training clip.')
flags.DEFINE_integer('num_classes', 101, 'Classes of the I3D head (UCF101).')
flags.DEFINE_integer('clips_per_gpu', 6, 'Clips per worker step (one GPU per worker).')
flags.DEFINE_float('gpu_tflops', 4.4, 'GPU fp32 peak, TFLOPS (GTX1060 6GB: ~4.4).')
flags.DEFINE_float('achieved_fraction', 0.4, 'Assumed fraction of peak a training step reaches.')
flags.DEFINE_integer('nodes', 10, 'Machines in the cluster (one GPU each).')
flags.DEFINE_list('link_gbits', ['1', '10'], 'NIC speeds to model, Gbit/s.')
flags.DEFINE_float('link_efficiency', 0.9, 'Usable fraction of the nominal link rate (TCP, gRPC).')
flags.DEFINE_float('jpeg_decodes_per_core', 0.0,
                   'Full-frame JPEG decodes per second per core; 0: measure on this machine '
                   'with benchmarks/input_benchmark.py\'s decode loop.')
flags.DEFINE_integer('node_cores', 4, 'Physical cores per node (i7-7700: 4 cores, 8 threads).')

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
  or not, in creation order) with the project's ParameterServerPlacement."""
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


def report() -> str:
  from model_fn.networks import build_network
  from benchmarks import cluster_model, flop_count
  from towers.params import make_params
  params = make_params(model='i3d', num_classes=FLAGS.num_classes,
                       clip_frames=FLAGS.clip_frames, crop_size=FLAGS.crop_size)
  clip = (FLAGS.clip_frames, FLAGS.crop_size, FLAGS.crop_size, 3)
  flops = flop_count.training_flops(build_network(params), clip)
  variables = flop_count.network_variables(build_network(params), clip)
  total_bytes = sum(v.num_bytes for v in variables if v.trainable)
  trainable = [v for v in variables if v.trainable]
  gpu = FLAGS.gpu_tflops * 1e12
  compute = cluster_model.compute_seconds(flops.total, FLAGS.clips_per_gpu, gpu,
                                          FLAGS.achieved_fraction)
  shares = ps_bytes_by_count(variables, FLAGS.nodes)
  nodes, clip_name = FLAGS.nodes, 'x'.join(str(d) for d in clip[:3])
  out = [
      f'## Model: I3D (RGB, {FLAGS.num_classes} classes), one {clip_name} clip',
      '',
      '| quantity | value |', '|---|---:|',
      f'| forward FLOPs per clip | {flops.forward / 1e9:.1f} G |',
      f'| backward FLOPs per clip | {flops.backward / 1e9:.1f} G |',
      f'| training FLOPs per clip (forward + backward) | {flops.total / 1e9:.1f} G |',
      f'| GPU peak (fp32) | {FLAGS.gpu_tflops} TFLOPS |',
      f'| assumed achieved fraction | {FLAGS.achieved_fraction:.0%} |',
      f'| compute per worker step ({FLAGS.clips_per_gpu} clips) | {compute:.3f} s |',
      f'| trainable variables | {len(trainable)} tensors, '
      f'{sum(v.num_bytes for v in trainable) // 4:,} parameters |',
      f'| parameters pulled per worker step | {total_bytes / MB:.1f} MB |',
      f'| gradients pushed per worker step | {total_bytes / MB:.1f} MB |',
      '',
      'FLOPs: tf.compat.v1.profiler float_operation on the training graph (batch 1, '
      'multiply-add = 2), with Conv3D gradient statistics registered by benchmarks/flop_count.py; '
      f'op types with no statistic (counted 0): {", ".join(flops.uncounted_types)}.',
      '']
  for gbits in (float(g) for g in FLAGS.link_gbits):
    link = gbits * 1e9 / 8 * FLAGS.link_efficiency
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
      out.append(f'| {w} | {step:.3f} | {w * FLAGS.clips_per_gpu / step:.1f} | '
                 f'{cluster_model.efficiency(w / step, w, compute):.0%} | '
                 f'{rate * FLAGS.clips_per_gpu:.1f} | '
                 f'{cluster_model.efficiency(rate, w, compute):.0%} |')
    out.append('')
  per_core = FLAGS.jpeg_decodes_per_core or measured_decodes_per_core()
  need_clips = FLAGS.clips_per_gpu / compute
  need_frames = need_clips * FLAGS.clip_frames
  capacity = per_core * FLAGS.node_cores
  out += ['## Input per node', '',
          f'A worker that never waits for the network consumes {FLAGS.clips_per_gpu} clips per '
          f'{compute:.3f} s = {need_clips:.2f} clips/s = {need_frames:.0f} JPEG frames/s '
          f'({FLAGS.clip_frames} decoded frames per clip).',
          f'JPEG decode rate measured on this machine (benchmarks/input_benchmark.py decode loop, one '
          f'thread, 341x256 frames): {per_core:.0f} frames/s per core; x {FLAGS.node_cores} '
          f'cores = {capacity:.0f} frames/s per node, {capacity / need_frames:.1f}x the need '
          f'({"enough" if capacity >= need_frames else "NOT enough"}).']
  return '\n'.join(out)


def main(argv: list[str]) -> None:
  del argv
  print(report())


if __name__ == '__main__':
  app.run(main)

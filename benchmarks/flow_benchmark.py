"""TV-L1 flow, OpenCV's DualTVL1 against its TensorFlow port, as a library: the frame pairs
(`real_pairs`, `shifted_pair`), each implementation timed (`opencv_flow`, `tensorflow_flow`:
the flow and its `Throughput`, pairs per wall and CPU second), their agreement and `run` ->
the report. The program and its whole description: benchmarks/flow_benchmark_main.py.
"""

from __future__ import annotations

import dataclasses
import os
import time

import cv2
import numpy as np

from benchmarks import machine
from command_line.options import Options, Problem, at_least, option
from input_fn import flow, video_io

WIDTH, HEIGHT = 341, 256
MOTIONS = ((0.37, -0.61), (2.3, 1.45))  # known sub-pixel motions (x, y) in pixels
MARGIN = 16
GTX1060_BYTES_PER_S = 192e9  # GDDR5, 192-bit at 8 Gbit/s
GPU_BANDWIDTH_SHARE = 0.6    # assumed: achieved share of it by elementwise kernels
# Assumed bytes per pixel per inner iteration (float32), counted from the step's code
# (`Tvl1._one_scale.step`): unfused, each of its ~95 elementwise ops reads 2 arrays and
# writes 1 (12 B); fused by XLA into ~3 kernels, the 10 arrays it reads, the 6 it writes
# and ~6 intermediates between kernels, once each (~22 x 4 B).
UNFUSED_BYTES, FUSED_BYTES = 95 * 12, 22 * 4


@dataclasses.dataclass(frozen=True)
class FlowBenchmarkOptions(Options):
  clip: str = option('', 'A video whose frames to use (default: the real UCF101 clip in '
                     '../shared/i3d beside the repository).', path=True)
  pairs: int = option(4, 'Frame pairs measured per backend (OpenCV takes ~2 s per pair).',
                      valid=at_least(1))
  batch: int = option(4, 'Frame pairs per TensorFlow batch.', valid=at_least(1))
  width: int = option(WIDTH, 'Frame width the flow is computed at (341x256: a UCF101 video '
                      'resized to the short side 256; the real clip is 224x224).',
                      valid=at_least(16))
  height: int = option(HEIGHT, 'Frame height the flow is computed at.', valid=at_least(16))


def find_clip(given: str) -> str:
  """`given`, else the real UCF101 clip in ../shared/i3d; ValueError naming --clip."""
  if given:
    return given
  here = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
  for folder in (os.environ.get('I3D_SHARED_DIR', ''),
                 os.path.join(os.path.dirname(here), 'shared', 'i3d')):
    path = os.path.join(folder, 'v_CricketShot_g04_c01_rgb.gif')
    if folder and os.path.exists(path):
      return path
  raise ValueError('the real UCF101 clip (../shared/i3d/v_CricketShot_g04_c01_rgb.gif) is not '
                   'beside the repository: give --clip=<video> or set I3D_SHARED_DIR')


def real_pairs(clip: str, pairs: int, width: int = WIDTH, height: int = HEIGHT
               ) -> tuple[np.ndarray, np.ndarray]:
  """uint8 gray (first [N, height, width], second [N, height, width]) frame pairs spread
  over the clip (frames resized to that size unless decoded at it)."""
  gray = flow.grayscale(video_io.decode_video(clip))
  if gray.shape[1:] != (height, width):
    gray = np.stack([cv2.resize(g, (width, height), interpolation=cv2.INTER_AREA) for g in gray])
  starts = np.linspace(0, len(gray) - 2, pairs).round().astype(int)
  return gray[starts], gray[starts + 1]


def shifted_pair(frame: np.ndarray, motion: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
  """(frame, frame moved by `motion` px): second(x + d) = first(x), so the true flow from
  first to second is `motion` at every pixel (cubic resampling, rounded to uint8)."""
  h, w = frame.shape
  map_x = (np.arange(w, dtype=np.float32)[None, :] - np.float32(motion[0])).repeat(h, 0)
  map_y = (np.arange(h, dtype=np.float32)[:, None] - np.float32(motion[1])).repeat(w, 1)
  moved = cv2.remap(frame.astype(np.float32), map_x, map_y, cv2.INTER_CUBIC,
                    borderMode=cv2.BORDER_REFLECT)
  return frame, np.clip(np.round(moved), 0, 255).astype(np.uint8)


@dataclasses.dataclass(frozen=True)
class Throughput:
  pairs: int
  seconds: float      # wall clock
  cpu_seconds: float  # this process, all threads

  @property
  def pairs_per_second(self) -> float:
    return self.pairs / self.seconds

  @property
  def pairs_per_cpu_second(self) -> float:
    return self.pairs / self.cpu_seconds


def timed(function, *args) -> tuple[object, tuple[float, float]]:
  """(function(*args), (wall seconds, CPU seconds of this process))."""
  wall, cpu = time.perf_counter(), time.process_time()
  result = function(*args)
  return result, (time.perf_counter() - wall, time.process_time() - cpu)


def opencv_flow(first: np.ndarray, second: np.ndarray) -> tuple[np.ndarray, Throughput]:
  """OpenCV's DualTVL1, default settings, one thread: float [N, H, W, 2] and its timing."""
  cv2.setNumThreads(1)
  solver = flow.tvl1()
  result, (wall, cpu) = timed(lambda: np.stack([solver.calc(a, b, None)
                                                for a, b in zip(first, second)]))
  return result, Throughput(len(first), wall, cpu)


def tensorflow_flow(first: np.ndarray, second: np.ndarray, batch: int, xla: bool | None = None
                    ) -> tuple[np.ndarray, Throughput, float, str]:
  """The TensorFlow port, default settings, batches of `batch`: (flow, timing of the pairs
  after the first call, seconds of the first call (graph building + one batch), device);
  `xla`: compiled with XLA (None: extract_flow's default, on a GPU only)."""
  from data_tools import tensorflow_flow as backend  # pylint: disable=import-outside-toplevel
  device = 'GPU' if backend.gpu_visible() else 'CPU'
  engine = backend.TensorflowFlow(flow.Tvl1Settings(), batch, xla)
  _, (first_call, _) = timed(engine.pairs_flow, first[:batch], second[:batch])
  result, (wall, cpu) = timed(engine.pairs_flow, first, second)
  return result, Throughput(len(first), wall, cpu), first_call, device


def pixel_iterations(first: np.ndarray, second: np.ndarray) -> tuple[float, float]:
  """Inner iterations per pair in full-frame units (pixel-iterations / H / W): (mean over
  the pairs each alone, per pair of the whole batch, which runs each warp until its slowest
  pair stops)."""
  from data_tools import tvl1  # pylint: disable=import-outside-toplevel
  graph = tvl1.Tvl1(*first.shape[1:])
  _, alone, batch = graph.flow_and_work(first.astype(np.float32), second.astype(np.float32))
  pixels = first.shape[1] * first.shape[2]
  return float(np.mean(alone.numpy())) / pixels, float(batch.numpy()) / pixels


def gpu_estimate(iterations: float, bytes_per_pixel_iteration: float, pixels: int) -> float:
  """Frame pairs/s on a GTX1060 (192 GB/s) if `iterations` full-frame iterations over
  frames of `pixels` are memory-bound at GPU_BANDWIDTH_SHARE of its bandwidth, moving
  `bytes_per_pixel_iteration`."""
  seconds = iterations * pixels * bytes_per_pixel_iteration / (
      GTX1060_BYTES_PER_S * GPU_BANDWIDTH_SHARE)
  return 1 / seconds


@dataclasses.dataclass(frozen=True)
class Agreement:
  """Two flows of the same frame pairs compared: before encoding, `endpoint_px` (mean
  end-point difference of the float flow, px); as stored (8-bit codes written as
  extract_flow writes them, JPEG quality flow.JPEG_QUALITY, and decoded as prepare reads
  them), `stored_within_one` (share of the codes, u and v, within one gray level) and
  `stored_largest` (largest difference, gray levels)."""
  endpoint_px: float
  stored_within_one: float
  stored_largest: int


def stored_codes(displacement: np.ndarray) -> np.ndarray:
  """Float [..., H, W, 2] flow -> the uint8 codes its stored JPEGs decode to."""
  codes = flow.to_uint8(displacement).reshape(-1, *displacement.shape[-3:])

  def stored(image: np.ndarray) -> np.ndarray:
    data = video_io.encode_jpeg(image, flow.JPEG_QUALITY)
    return cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_GRAYSCALE)

  return np.stack([np.stack([stored(pair[..., channel]) for channel in range(2)], -1)
                   for pair in codes]).reshape(flow.to_uint8(displacement).shape)


def agreement(reference: np.ndarray, other: np.ndarray) -> Agreement:
  """How `other` (float [N, H, W, 2] flow) agrees with `reference` (see `Agreement`)."""
  epe = float(np.sqrt(((reference - other) ** 2).sum(-1)).mean())
  stored = np.abs(stored_codes(reference).astype(int) - stored_codes(other).astype(int))
  return Agreement(epe, float((stored <= 1).mean()), int(stored.max()))


def endpoint_error(estimate: np.ndarray, motion: tuple[float, float]) -> float:
  """Mean end-point error (px) of [H, W, 2] against a uniform `motion`, inner pixels."""
  inner = estimate[MARGIN:-MARGIN, MARGIN:-MARGIN]
  return float(np.sqrt(((inner - np.float32(motion)) ** 2).sum(-1)).mean())


def run(options: FlowBenchmarkOptions) -> str:
  size, pixels = f'{options.width}x{options.height}', options.width * options.height
  first, second = real_pairs(find_clip(options.clip), options.pairs, options.width,
                             options.height)
  reference, opencv = opencv_flow(first, second)
  ours, tensorflow, first_call, device = tensorflow_flow(first, second, options.batch)
  agreed = agreement(reference, ours)
  truth_first, truth_second = zip(*(shifted_pair(first[0], m) for m in MOTIONS))
  truth_first, truth_second = np.stack(truth_first), np.stack(truth_second)
  truth_cv, _ = opencv_flow(truth_first, truth_second)
  truth_tf, _, _, _ = tensorflow_flow(truth_first, truth_second, options.batch)
  iterations, batch_iterations = pixel_iterations(first, second)
  lines = [f'flow benchmark: TV-L1, OpenCV defaults (5 scales, 5 warps, epsilon 0.01), '
           f'{options.pairs} real UCF101 frame pairs at {size}; '
           f'{machine.machine_name()}; {time.strftime("%Y-%m-%d")}', '',
           '| backend | device | frame pairs/s | CPU s/pair | pairs per CPU-second | '
           'x OpenCV per CPU-second |', '|---|---|---:|---:|---:|---:|']
  for name, where, t in (('OpenCV DualTVL1', 'CPU, 1 thread', opencv),
                         (f'TensorFlow (batch {options.batch})', device, tensorflow)):
    lines.append(f'| {name} | {where} | {t.pairs_per_second:.2f} | '
                 f'{t.cpu_seconds / t.pairs:.2f} | {t.pairs_per_cpu_second:.3f} | '
                 f'{t.pairs_per_cpu_second / opencv.pairs_per_cpu_second:.2f} |')
  lines += ['', f'TensorFlow first call (graph building + one batch): {first_call:.1f} s, '
                'excluded above',
            f'agreement, TensorFlow vs OpenCV, {options.pairs} pairs at {size}: before '
            f'encoding, mean end-point difference {agreed.endpoint_px:.4f} px (target <= '
            f'0.05: {"met" if agreed.endpoint_px <= 0.05 else "NOT met"}); as stored (8-bit '
            f'codes in JPEGs of quality {flow.JPEG_QUALITY}, as extract_flow writes them): '
            f'{100 * agreed.stored_within_one:.3f}% of the codes within one gray level '
            f'(target >= 99%: {"met" if agreed.stored_within_one >= 0.99 else "NOT met"}), '
            f'the largest difference {agreed.stored_largest} gray levels', '',
            '| known motion (x, y) px | OpenCV EPE px | TensorFlow EPE px |', '|---|---:|---:|']
  for motion, a, b in zip(MOTIONS, truth_cv, truth_tf):
    lines.append(f'| ({motion[0]:+.2f}, {motion[1]:+.2f}) | {endpoint_error(a, motion):.3f} | '
                 f'{endpoint_error(b, motion):.3f} |')
  lines += ['', f'work: {iterations:.0f} full-frame inner iterations per pair (mean, each '
                f'pair alone; {iterations * pixels / 1e6:.1f} M pixel-iterations); '
                f'{batch_iterations:.0f} in one batch of the {options.pairs} pairs (each warp '
                'runs until its slowest pair stops)',
            f'GTX1060 estimate (memory-bound, {100 * GPU_BANDWIDTH_SHARE:.0f}% of '
            f'{GTX1060_BYTES_PER_S / 1e9:.0f} GB/s, the batch\'s work): '
            f'{gpu_estimate(batch_iterations, UNFUSED_BYTES, pixels):.1f} pairs/s unfused '
            f'({UNFUSED_BYTES} B per pixel-iteration), '
            f'{gpu_estimate(batch_iterations, FUSED_BYTES, pixels):.1f} pairs/s fused by XLA '
            f'({FUSED_BYTES} B); memory traffic only: the host syncs of the convergence checks '
            'are not counted (docs/scaling.md adds them to the figures it quotes)']
  return '\n'.join(lines)


def options_problem(options: FlowBenchmarkOptions) -> Problem | None:
  """--clip that cannot be found (`find_clip`), or None."""
  try:
    find_clip(options.clip)
  except ValueError as e:
    return Problem('clip', str(e))
  return None

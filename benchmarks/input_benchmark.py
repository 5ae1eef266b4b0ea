"""Input throughput, side by side: TFRecord pipeline, direct OpenCV route, py_func baseline.

  bazel run //benchmarks:input_benchmark [-- --seconds=8 --crop_size=112 --clip_frames=16]

Generates its own data in a temporary directory (synthetic UCF101 videos at UCF101's
320x240, prepared with --short_side=256 like the real data, plus jpegs_256 frame folders),
then measures training clips per second of:

* tfrecord: `input_fn/pipeline.py` (parallel reads, decode_and_crop_jpeg of used frames).
* direct (frames) / direct (videos): `input_fn/direct.py` (OpenCV in Python generators).
* py_func baseline: the user's original approach re-implemented: per clip a
  `tf.compat.v1.py_func` reads the clip's JPEG files from the frame folder and decodes them
  with OpenCV in Python, crops, flips and scales in numpy (parallel map, AUTOTUNE).
* decode limit: full-frame JPEG decodes per second on one core (cv2.imdecode, one thread,
  measured in the same interleaved rounds) x cores / frames per clip: what a perfect
  pipeline that decodes every used frame whole could reach on this machine.
* tfrecord (flow): the same pipeline with --stream=flow on flow records (`prepare
  --source=flow`), 2-channel clips, against its own decode limit: two grayscale JPEG planes
  (u, v) per frame. The planes hold the grayscale of the RGB frames, not TV-L1 output (TV-L1
  of 341x256 frames takes seconds per frame on this CPU): the same sizes, so the same decode
  work per plane as real flow of that size, measured in its own interleaved rounds.

Prints a table, the ratios, and whether "TFRecord >= 3x py_func" and "TFRecord >= 70% of
decode limit" hold. Not a test: numbers depend on the machine and its load.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from typing import Any, Callable

if __package__ in (None, ''):
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import cv2  # noqa: E402
import numpy as np  # noqa: E402


def make_data(root: str, classes: int, groups: int, frames: int) -> dict[str, str]:
  """Synthetic UCF101 at 320x240 with frame folders, and its prepared TFRecords."""
  from input_fn import make_synthetic_ucf101, prepare
  data = os.path.join(root, 'ucf')
  out = os.path.join(root, 'tfrecords')
  # Frame folders at the short side 256 of jpegs_256, like the user's data.
  make_synthetic_ucf101.make_dataset(data, classes=classes, groups=groups, width=320,
                                     height=240, min_frames=frames, max_frames=frames,
                                     object_size=48, write_frames=False)
  prepare.prepare(prepare.PrepareConfig(source='videos', data_dir=data, out=out,
                                        subsets=('train',), short_side=256,
                                        videos_per_shard=8, workers=0), log=lambda s: None)
  _write_frame_folders(out, data)
  return {'data': data, 'tfrecords': out}


def _write_frame_folders(tfrecords: str, data: str) -> None:
  """jpegs_256/<video>/frame%06d.jpg + rgb.txt from the prepared records (same JPEGs)."""
  import tensorflow as tf
  from input_fn import records, ucf101
  rows = []
  for path in sorted(tf.io.gfile.glob(os.path.join(tfrecords, 'train-*.tfrecord'))):
    for raw in tf.data.TFRecordDataset(path):
      parsed = records.parse(raw)
      name = parsed['video'].numpy().decode()
      folder = os.path.join(data, 'jpegs_256', name)
      os.makedirs(folder, exist_ok=True)
      for i, jpeg in enumerate(parsed['frames'].numpy()):
        with open(ucf101.frame_path(folder, i), 'wb') as f:
          f.write(jpeg)
      rows.append(f'{name} jpegs_256/{name} {len(parsed["frames"])} '
                  f'{int(parsed["label"])}')
  with open(os.path.join(data, 'rgb.txt'), 'w') as f:
    f.write('\r\n'.join(rows) + '\r\n')


def py_func_dataset(data: str, params: Any, parallel: bool = True) -> Any:
  """The user's approach: tf.py_func per clip, OpenCV JPEG decoding in Python; clips are
  loaded by a parallel map (AUTOTUNE) or, with parallel=False, one at a time."""
  import tensorflow as tf
  from input_fn import ucf101
  split = ucf101.read_split(os.path.join(data, 'ucfTrainTestlist'), params.split)
  infos, _ = ucf101.read_frame_list(os.path.join(data, 'rgb.txt'))
  entries = [(infos[e.key].path, infos[e.key].num_frames, e.label) for e in split.train
             if e.key in infos]
  T, S = params.clip_frames, params.crop_size

  def load_clip(folder: bytes, num_frames: np.int64) -> np.ndarray:
    rng = np.random
    n = int(num_frames)
    start = rng.randint(0, max(n - T, 0) + 1)
    frames = []
    for i in range(start, start + T):
      image = cv2.imread(ucf101.frame_path(folder.decode(), i % n))
      frames.append(cv2.cvtColor(image, cv2.COLOR_BGR2RGB))
    clip = np.stack(frames)
    y = rng.randint(0, clip.shape[1] - S + 1)
    x = rng.randint(0, clip.shape[2] - S + 1)
    clip = clip[:, y:y + S, x:x + S]
    if rng.rand() < 0.5:
      clip = clip[:, :, ::-1]
    return (clip.astype(np.float32) * (2.0 / 255.0) - 1.0)

  folders, counts, labels = zip(*entries)
  dataset = tf.data.Dataset.from_tensor_slices((list(folders), list(counts), list(labels)))
  dataset = dataset.shuffle(len(entries)).repeat()

  def parse(folder, count, label):
    clip = tf.compat.v1.py_func(load_clip, [folder, count], tf.float32)
    clip.set_shape([T, S, S, 3])
    return {'clips': clip}, tf.cast(label, tf.int64)
  dataset = dataset.map(parse, num_parallel_calls=tf.data.AUTOTUNE if parallel else None)
  return dataset.batch(params.batch_size, drop_remainder=True).prefetch(tf.data.AUTOTUNE)


def measure(factories: dict[str, Callable[[], Any]], batch_size: int, seconds: float,
            rounds: int = 3, warmup_batches: int = 6) -> dict[str, float]:
  """Clips per second of each dataset, iterated eagerly after a few warm-up batches.

  The routes take turns in `rounds` rounds of seconds/rounds each and the median round
  counts, so a load change on a shared machine hits all routes alike.
  """
  iterators = {}
  for name, make in factories.items():
    iterators[name] = iter(make())
    for _ in range(warmup_batches):
      next(iterators[name])
  rates: dict[str, list[float]] = {name: [] for name in factories}
  for _ in range(rounds):
    for name, iterator in iterators.items():
      for _ in range(warmup_batches):  # drop what was buffered while other routes ran
        next(iterator)
      batches, start = 0, time.perf_counter()
      while time.perf_counter() - start < seconds / rounds:
        next(iterator)
        batches += 1
      rates[name].append(batches * batch_size / (time.perf_counter() - start))
  return {name: float(np.median(r)) for name, r in rates.items()}


class _DecodeLoop:
  """An iterator whose `next()` decodes `batch_size * clip_frames` full JPEG frames with
  cv2.imdecode in one thread: `measure` then reports single-core clips per second."""

  def __init__(self, jpegs: list[np.ndarray], frames_per_batch: int,
               imread: int = cv2.IMREAD_COLOR):
    self.jpegs, self.frames_per_batch, self.position = jpegs, frames_per_batch, 0
    self.imread = imread

  def __iter__(self):
    return self

  def __next__(self) -> None:
    threads = cv2.getNumThreads()
    cv2.setNumThreads(1)
    try:
      for _ in range(self.frames_per_batch):
        cv2.imdecode(self.jpegs[self.position % len(self.jpegs)], self.imread)
        self.position += 1
    finally:
      cv2.setNumThreads(threads)


def decode_loop(tfrecords: str, clip_frames: int, batch_size: int) -> _DecodeLoop:
  """Decode loop over the frames of the first prepared video (the routes' JPEGs)."""
  import tensorflow as tf
  from input_fn import records
  path = sorted(tf.io.gfile.glob(os.path.join(tfrecords, 'train-*.tfrecord')))[0]
  raw = next(iter(tf.data.TFRecordDataset(path)))
  jpegs = [np.frombuffer(j, np.uint8) for j in records.parse(raw)['frames'].numpy()]
  return _DecodeLoop(jpegs, clip_frames * batch_size)


def make_flow_records(root: str, tfrecords: str, data: str) -> str:
  """Flow records of the benchmark's training videos: u and v planes = the grayscale of the
  prepared RGB frames (see the module docstring), written as tvl1_flow/ and prepared with
  --source=flow. Returns the records' directory."""
  import tensorflow as tf
  from input_fn import flow, prepare, records, ucf101
  for path in sorted(tf.io.gfile.glob(os.path.join(tfrecords, 'train-*.tfrecord'))):
    for raw in tf.data.TFRecordDataset(path):
      parsed = records.parse(raw)
      gray = np.stack([cv2.imdecode(np.frombuffer(j, np.uint8), cv2.IMREAD_GRAYSCALE)
                       for j in parsed['frames'].numpy()])
      flow.write_flow(np.stack([gray, gray], axis=-1),
                      os.path.join(data, ucf101.FLOW_DIR_NAME), parsed['video'].numpy().decode())
  out = os.path.join(root, 'flow_tfrecords')
  prepare.prepare(prepare.PrepareConfig(source='flow', data_dir=data, out=out,
                                        subsets=('train',), short_side=0, videos_per_shard=8,
                                        workers=0), log=lambda s: None)
  return out


def measure_flow(root: str, paths: dict[str, str], common: dict[str, Any], seconds: float
                 ) -> tuple[float, float, float]:
  """(flow clips/s of the TFRecord pipeline, grayscale JPEG planes/s on one core, the flow
  decode limit in clips/s = planes/s x cores / (2 x frames per clip))."""
  import tensorflow as tf
  from input_fn import pipeline, records
  from towers import params as params_lib
  flow_records = make_flow_records(root, paths['tfrecords'], paths['data'])
  params = params_lib.make_params(data_source='tfrecord', data_dir=flow_records,
                                  stream='flow', **common)
  raw = next(iter(tf.data.TFRecordDataset(pipeline.record_files(flow_records, 'train')[0])))
  planes = [np.frombuffer(j, np.uint8) for j in records.parse(raw)['flow_u'].numpy()]
  rates = measure({
      'flow decode, one core': lambda: _DecodeLoop(
          planes, 2 * common['clip_frames'] * common['batch_size'], cv2.IMREAD_GRAYSCALE),
      'tfrecord pipeline (flow)': lambda: pipeline.input_fn(
          tf.estimator.ModeKeys.TRAIN, params),
  }, common['batch_size'], seconds)
  per_core = rates['flow decode, one core'] * 2 * common['clip_frames']
  limit = per_core * (os.cpu_count() or 1) / (2 * common['clip_frames'])
  return rates['tfrecord pipeline (flow)'], per_core, limit


def run(seconds: float, clip_frames: int, crop_size: int, batch_size: int, classes: int,
        groups: int, frames: int, keep: str = '') -> str:
  """Runs every measurement and returns the report text."""
  root = keep or tempfile.mkdtemp(prefix='input_benchmark_')
  os.makedirs(root, exist_ok=True)
  try:
    return _run(root, seconds, clip_frames, crop_size, batch_size, classes, groups, frames)
  finally:
    if not keep:
      shutil.rmtree(root, ignore_errors=True)


def _run(root: str, seconds: float, clip_frames: int, crop_size: int, batch_size: int,
         classes: int, groups: int, frames: int) -> str:
  import tensorflow as tf
  from towers import params as params_lib
  from input_fn import direct, pipeline
  paths = make_data(root, classes, groups, frames)
  common = dict(clip_frames=clip_frames, crop_size=crop_size, batch_size=batch_size,
                num_classes=classes, shuffle_buffer=16)
  tfr = params_lib.make_params(data_source='tfrecord', data_dir=paths['tfrecords'], **common)
  frames_p = params_lib.make_params(data_source='frames', data_dir=paths['data'], **common)
  videos_p = params_lib.make_params(data_source='videos', data_dir=paths['data'], **common)
  train = tf.estimator.ModeKeys.TRAIN
  cores = float(os.cpu_count() or 1)
  rates = measure({
      'decode, one core': lambda: decode_loop(paths['tfrecords'], clip_frames, batch_size),
      'tfrecord pipeline': lambda: pipeline.input_fn(train, tfr),
      'direct OpenCV (frames)': lambda: direct.input_fn(train, frames_p),
      'direct OpenCV (videos)': lambda: direct.input_fn(train, videos_p),
      'py_func baseline (frames)': lambda: py_func_dataset(paths['data'], frames_p),
      'py_func, serial map': lambda: py_func_dataset(paths['data'], frames_p, parallel=False),
  }, batch_size, seconds)
  per_core = rates.pop('decode, one core') * clip_frames  # JPEG frames per second
  limit = per_core * cores / clip_frames
  rows = list(rates.items())
  baseline = rates['py_func baseline (frames)']
  serial = rates['py_func, serial map']
  tfrecord = rates['tfrecord pipeline']
  lines = [f'input benchmark: {clip_frames} frames per clip, {crop_size}x{crop_size} crop, '
           f'frames 341x256 JPEG, batch {batch_size}, {int(cores)} cores, '
           f'{seconds:.0f} s per route (median of 3 interleaved rounds)',
           '',
           f'| {"route":<28} | {"clips/s":>8} | {"x py_func":>9} | {"% of limit":>10} |',
           f'|{"-" * 30}|{"-" * 10}|{"-" * 11}|{"-" * 12}|']
  for name, rate in rows + [('decode limit', limit)]:
    lines.append(f'| {name:<28} | {rate:8.1f} | {rate / baseline:9.2f} | '
                 f'{100 * rate / limit:9.0f}% |')
  flow_rate, flow_per_core, flow_limit = measure_flow(root, paths, common, seconds)
  lines.append(f'| {"tfrecord pipeline (flow)":<28} | {flow_rate:8.1f} | {"-":>9} | '
               f'{100 * flow_rate / flow_limit:9.0f}% |')
  lines += ['',
            f'decode limit = {per_core:.0f} JPEG frames/s per core x {int(cores)} cores / '
            f'{clip_frames} frames per clip = {limit:.1f} clips/s',
            f'flow row: 2-channel clips (u, v planes of 341x256 grayscale JPEG), % of the flow '
            f'decode limit = {flow_per_core:.0f} planes/s per core x {int(cores)} cores / '
            f'(2 x {clip_frames} planes per clip) = {flow_limit:.1f} clips/s',
            f'TFRecord >= 3x py_func: {"met" if tfrecord >= 3 * baseline else "NOT met"} '
            f'({tfrecord / baseline:.2f}x the parallel py_func baseline; '
            f'{tfrecord / serial:.2f}x the serial one)',
            f'TFRecord >= 70% of decode limit: {"met" if tfrecord >= 0.7 * limit else "NOT met"}'
            f' ({100 * tfrecord / limit:.0f}%)']
  return '\n'.join(lines)


def main(argv: list[str]) -> None:
  del argv
  from absl import flags
  f = flags.FLAGS
  print(run(f.seconds, f.clip_frames, f.crop_size, f.batch_size, f.classes, f.groups,
            f.frames, f.keep_dir))


if __name__ == '__main__':
  from absl import app, flags
  flags.DEFINE_float('seconds', 9.0, 'Measurement time per route (3 interleaved rounds).')
  flags.DEFINE_integer('clip_frames', 16, 'Frames per clip.')
  flags.DEFINE_integer('crop_size', 112, 'Crop side in pixels.')
  flags.DEFINE_integer('batch_size', 8, 'Clips per batch.')
  flags.DEFINE_integer('classes', 4, 'Synthetic classes.')
  flags.DEFINE_integer('groups', 12, 'Groups per class (videos per class, one clip each).')
  flags.DEFINE_integer('frames', 48, 'Frames per video.')
  flags.DEFINE_string('keep_dir', '', 'Write the data here and keep it (default: a temp dir).')
  app.run(main)

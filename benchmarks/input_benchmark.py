"""Input throughput, the TFRecord pipeline against a PIL py_func loader, as a library: the data
(`make_data`), each route's clips (`pil_clip`, `opencv_clip`, `tfrecord_stages`), the
measurements (`measure`: clips/s and CPU seconds per clip), the decode loop and `run` -> the report.
The program and its whole description: benchmarks/input_benchmark_main.py.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import statistics
import tempfile
import time
from typing import Any, Callable

import cv2
import numpy as np

from benchmarks import machine
from command_line import entry
from command_line.options import Options, Problem, above, at_least, option
from input_fn import frame_folders, ucf101, video_lists

SPEED_TARGET = 3.0   # TFRecord clips/s over the PIL loader's, same cores
LIMIT_TARGET = 0.9   # TFRecord clips/s over the decode limit
ROUTES = ('tfrecord', 'pil', 'opencv', 'direct', 'flow')


def _tfrecord_measured(o: InputBenchmarkOptions) -> Problem | None:
  return None if 'tfrecord' in o.routes else Problem(
      'routes', f'--routes must include tfrecord (got {", ".join(o.routes)})')


def _clips_fit_videos(o: InputBenchmarkOptions) -> Problem | None:
  return None if o.frames >= o.clip_frames else Problem(
      'frames', f'--frames={o.frames} must be at least --clip_frames={o.clip_frames}')


@dataclasses.dataclass(frozen=True)
class InputBenchmarkOptions(Options):
  rules = (_tfrecord_measured, _clips_fit_videos)

  seconds: float = option(30.0, 'Measurement time per route, split over --rounds rounds.',
                          valid=above(0))
  rounds: int = option(3, 'Interleaved rounds per route (the median counts).', valid=at_least(1))
  clip_frames: int = option(64, 'Frames per clip (the I3D recipe: 64).', valid=at_least(1))
  crop_size: int = option(224, 'Crop side in pixels (the I3D recipe: 224).', valid=at_least(1))
  batch_size: int = option(6, 'Clips per batch (the I3D recipe: 6).', valid=at_least(1))
  classes: int = option(4, 'Synthetic classes.', valid=at_least(1))
  groups: int = option(10, 'Groups per class (split 1 tests groups 1-7, trains on the rest).',
                       valid=at_least(ucf101.GROUPS_PER_SPLIT + 1))
  frames: int = option(80, 'Frames per synthetic video (at least --clip_frames).',
                       valid=at_least(1))
  routes: tuple[str, ...] = option(ROUTES, 'Routes to measure besides the decode limit: '
                                   'tfrecord, pil (the PIL py_func loader), opencv, direct, flow.',
                                   choices=ROUTES)
  profile: bool = option(True, 'Also measure the TFRecord pipeline stage by stage.')
  keep_dir: str = option('', 'Write the data here and keep it (default: a temp dir).',
                         path=True)


@dataclasses.dataclass(frozen=True)
class Measurement:
  """Median over rounds: clips per second (wall) and CPU seconds per clip (this process,
  all threads)."""
  clips_per_second: float
  cpu_seconds_per_clip: float


def make_data(root: str, classes: int, groups: int, frames: int) -> dict[str, str]:
  """Synthetic UCF101 at 320x240 with frame folders, and its prepared TFRecords."""
  from data_tools import make_synthetic_ucf101, prepare
  data = os.path.join(root, 'ucf')
  out = os.path.join(root, 'tfrecords')
  # Frame folders at the short side 256 of jpegs_256, like jpegs_256.
  make_synthetic_ucf101.make_dataset(data, classes=classes, groups=groups, width=320,
                                     height=240, min_frames=frames, max_frames=frames,
                                     object_size=48, write_frames=False)
  prepare.prepare(prepare.PrepareOptions(source='videos', data_dir=data, out=out,
                                        subsets=('train',), short_side=256,
                                        videos_per_shard=8, workers=0), log=lambda s: None)
  _write_frame_folders(out, data)
  return {'data': data, 'tfrecords': out}


def _write_frame_folders(tfrecords: str, data: str) -> None:
  """jpegs_256/<video>/frame%06d.jpg + rgb.txt from the prepared records (same JPEGs)."""
  import tensorflow as tf
  from input_fn import records
  rows = []
  for path in sorted(tf.io.gfile.glob(os.path.join(tfrecords, 'train-*.tfrecord'))):
    for raw in tf.data.TFRecordDataset(path):
      parsed = records.parse(raw)
      name = parsed['video'].numpy().decode()
      folder = os.path.join(data, 'jpegs_256', name)
      os.makedirs(folder, exist_ok=True)
      for i, jpeg in enumerate(parsed['frames'].numpy()):
        with open(frame_folders.frame_path(folder, i), 'wb') as f:
          f.write(jpeg)
      rows.append(f'{name} jpegs_256/{name} {len(parsed["frames"])} '
                  f'{int(parsed["label"])}')
  with open(os.path.join(data, 'rgb.txt'), 'w') as f:
    f.write('\r\n'.join(rows) + '\r\n')


def _clip_entries(data: str, params: Any) -> list[tuple[str, int, int]]:
  """(frame folder, frame count, label) of every training video of the split."""
  from input_fn import frame_folders, ucf101, video_lists
  split = ucf101.read_split(os.path.join(data, 'ucfTrainTestlist'), params.split)
  infos, _ = video_lists.read_frame_list(os.path.join(data, 'rgb.txt'))
  return [(infos[e.key].path, infos[e.key].num_frames, e.label) for e in split.train
          if e.key in infos]


def _py_func_dataset(data: str, params: Any,
                     load_clip: Callable[[str, int, int, int], np.ndarray]) -> Any:
  """Per clip, `load_clip(folder, num_frames, T, S)` -> uint8 [T, S, S, 3] in a
  `tf.compat.v1.py_func` (parallel map, AUTOTUNE), then batches of uint8 clips: the same
  output as the TFRecord route gives the Estimator."""
  import tensorflow as tf
  entries = _clip_entries(data, params)
  T, S = params.clip_frames, params.crop_size

  def load(folder: bytes, num_frames: np.int64) -> np.ndarray:
    return load_clip(folder.decode(), int(num_frames), T, S)

  folders, counts, labels = zip(*entries)
  dataset = tf.data.Dataset.from_tensor_slices((list(folders), list(counts), list(labels)))
  dataset = dataset.shuffle(len(entries)).repeat()

  def parse(folder, count, label):
    clip = tf.compat.v1.py_func(load, [folder, count], tf.uint8, stateful=True)
    clip.set_shape([T, S, S, 3])
    return clip, tf.cast(label, tf.int64)
  dataset = dataset.map(parse, num_parallel_calls=tf.data.AUTOTUNE)
  dataset = dataset.batch(params.batch_size, drop_remainder=True)
  return dataset.map(lambda clip, label: ({'clips': clip}, label)).prefetch(tf.data.AUTOTUNE)


def pil_clip(folder: str, num_frames: int, clip_frames: int, crop_size: int,
             short_side: int = 256) -> np.ndarray:
  """The PIL loader (I3D_Finetune `Video_3D.get_frames` with data augmentation), as
  uint8 [T, S, S, 3]: T consecutive frames from a random start (wrapping around), each
  opened and decoded whole by PIL and converted to RGB; if the short side is not
  `short_side`, every frame is resized so that it is; one random S x S crop and one random
  left-right flip (probability 1/2) for the whole clip."""
  from PIL import Image, ImageOps  # pylint: disable=g-import-not-at-top
  from input_fn import frame_folders, ucf101, video_lists
  rng = np.random
  start = rng.randint(0, max(num_frames - clip_frames, 0) + 1)
  images = [Image.open(frame_folders.frame_path(folder, i % num_frames)).convert('RGB')
            for i in range(start, start + clip_frames)]
  width, height = images[0].size
  if min(width, height) != short_side:
    scale = short_side / min(width, height)
    size = (round(width * scale), round(height * scale))
    images = [image.resize(size) for image in images]
    width, height = size
  x = rng.randint(0, width - crop_size + 1)
  y = rng.randint(0, height - crop_size + 1)
  images = [image.crop((x, y, x + crop_size, y + crop_size)) for image in images]
  if rng.randint(0, 2) == 0:
    images = [ImageOps.mirror(image) for image in images]
  return np.stack([np.asarray(image) for image in images])


def opencv_clip(folder: str, num_frames: int, clip_frames: int, crop_size: int) -> np.ndarray:
  """The same clip with OpenCV: cv2.imread of every frame, BGR->RGB, crop, flip."""
  from input_fn import frame_folders, ucf101, video_lists
  rng = np.random
  start = rng.randint(0, max(num_frames - clip_frames, 0) + 1)
  clip = np.stack([cv2.cvtColor(cv2.imread(frame_folders.frame_path(folder, i % num_frames)),
                                cv2.COLOR_BGR2RGB)
                   for i in range(start, start + clip_frames)])
  y = rng.randint(0, clip.shape[1] - crop_size + 1)
  x = rng.randint(0, clip.shape[2] - crop_size + 1)
  clip = clip[:, y:y + crop_size, x:x + crop_size]
  return clip[:, :, ::-1] if rng.rand() < 0.5 else clip


def tfrecord_stages(params: Any) -> dict[str, Callable[[], Any]]:
  """The TFRecord training pipeline cut after each stage (each yields batches of
  `batch_size` elements, so rates compare per clip): read + parse; + decode of the crop
  windows; + flip and label check (one training clip); + skipped-record count, shuffle and
  batch (uint8: what the Estimator gets); + float scaling (`pipeline.input_fn`'s default)."""
  import tensorflow as tf
  from input_fn import pipeline, records
  T, S, B = params.clip_frames, params.crop_size, params.batch_size
  files = pipeline.record_files(params.data_dir, 'train')

  def records_dataset() -> Any:
    dataset = tf.data.Dataset.from_tensor_slices(files).shuffle(len(files)).repeat()
    return dataset.interleave(tf.data.TFRecordDataset, cycle_length=min(len(files), 8),
                              num_parallel_calls=tf.data.AUTOTUNE, deterministic=False)

  def decoded(record):
    parsed = records.parse(record)
    chosen = tf.gather(parsed['frames'],
                       pipeline.train_clip_indices(tf.shape(parsed['frames'])[0], T))
    shape = tf.image.extract_jpeg_shape(chosen[0])
    window = pipeline.crop_window(shape[0], shape[1], S, training=True)
    return pipeline.decode_crops(chosen, window, S, T)

  def cut(per_record: Callable[[Any], Any]) -> Callable[[], Any]:
    def make():
      dataset = records_dataset().map(per_record, num_parallel_calls=tf.data.AUTOTUNE)
      return dataset.batch(B, drop_remainder=True).prefetch(tf.data.AUTOTUNE)
    return make

  train = lambda record: pipeline.train_clip(record, T, S, params.num_classes)

  def uint8_batches():  # input_fn's training branch without its float map
    dataset = records_dataset().enumerate().map(
        lambda i, record: (i,) + train(record), num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True)
    dataset = pipeline.skip_and_count(dataset, 'training data')
    dataset = dataset.shuffle(max(params.shuffle_buffer, 1))
    return dataset.batch(B, drop_remainder=True).prefetch(tf.data.AUTOTUNE)

  return {
      'stage 1: read + parse': cut(lambda r: records.parse(r)['label']),
      'stage 2: + decode crops': cut(decoded),
      'stage 3: + flip, label check': cut(train),
      'stage 4: + skip count, shuffle, batch': uint8_batches,
      'stage 5: + float scaling': lambda: pipeline.input_fn(tf.estimator.ModeKeys.TRAIN,
                                                            params),
  }


def estimator_pipeline(params: Any) -> Any:
  """The TFRecord training pipeline with the arguments `input_fn/factory.py` gives it for
  the Estimator: uint8 clips and the skipped-record count. (Not through the factory: it
  also wants the test subset prepared, which this benchmark does not read.)"""
  import tensorflow as tf
  from input_fn import pipeline
  return pipeline.input_fn(tf.estimator.ModeKeys.TRAIN, params, with_skipped_count=True,
                           uint8_clips=True)


def measure_routes(factories: dict[str, Callable[[], Any]], batch_size: int, seconds: float,
                   rounds: int = 3, warmup_batches: int = 2) -> dict[str, Measurement]:
  """Each route's clips per second and CPU seconds per clip, median over `rounds` rounds.

  Rounds interleave the routes, so a load change on a shared machine hits all alike. Each
  (round, route) makes a fresh iterator, drops `warmup_batches` batches, then counts the
  batches of `seconds / rounds` seconds; only that route's threads exist meanwhile, so
  the process CPU time is that route's.
  """
  samples: dict[str, list[Measurement]] = {name: [] for name in factories}
  for _ in range(rounds):
    for name, make in factories.items():
      iterator = iter(make())
      for _ in range(warmup_batches):
        next(iterator)
      batches, start, cpu_start = 0, time.perf_counter(), time.process_time()
      while time.perf_counter() - start < seconds / rounds:
        next(iterator)
        batches += 1
      wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
      clips = batches * batch_size
      samples[name].append(Measurement(clips / wall, cpu / clips))
      del iterator
  return {name: Measurement(statistics.median(m.clips_per_second for m in runs),
                            statistics.median(m.cpu_seconds_per_clip for m in runs))
          for name, runs in samples.items()}


def measure(factories: dict[str, Callable[[], Any]], batch_size: int, seconds: float,
            rounds: int = 3, warmup_batches: int = 2) -> dict[str, float]:
  """Clips per second of each route (`measure_routes`)."""
  return {name: m.clips_per_second for name, m in
          measure_routes(factories, batch_size, seconds, rounds, warmup_batches).items()}


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
  from data_tools import prepare
  from input_fn import flow, frame_folders, records, ucf101, video_lists
  for path in sorted(tf.io.gfile.glob(os.path.join(tfrecords, 'train-*.tfrecord'))):
    for raw in tf.data.TFRecordDataset(path):
      parsed = records.parse(raw)
      gray = np.stack([cv2.imdecode(np.frombuffer(j, np.uint8), cv2.IMREAD_GRAYSCALE)
                       for j in parsed['frames'].numpy()])
      flow.write_flow(np.stack([gray, gray], axis=-1),
                      os.path.join(data, ucf101.FLOW_DIR_NAME), parsed['video'].numpy().decode())
  out = os.path.join(root, 'flow_tfrecords')
  prepare.prepare(prepare.PrepareOptions(source='flow', data_dir=data, out=out,
                                        subsets=('train',), short_side=0, videos_per_shard=8,
                                        workers=0), log=lambda s: None)
  return out


def measure_flow(root: str, paths: dict[str, str], common: dict[str, Any],
                 options: InputBenchmarkOptions) -> tuple[Measurement, float, Measurement]:
  """(the TFRecord pipeline on flow records as the Estimator gets it, grayscale JPEG planes
  per second on one core, the flow decode limit = planes/s x cores / (2 x frames per
  clip)), in their own interleaved rounds."""
  import tensorflow as tf
  from input_fn import pipeline, records
  from towers import params as params_lib
  flow_records = make_flow_records(root, paths['tfrecords'], paths['data'])
  params = params_lib.make_params(data_source='tfrecord', data_dir=flow_records,
                                  stream='flow', **common)
  raw = next(iter(tf.data.TFRecordDataset(pipeline.record_files(flow_records, 'train')[0])))
  planes = [np.frombuffer(j, np.uint8) for j in records.parse(raw)['flow_u'].numpy()]
  T, B = options.clip_frames, options.batch_size
  results = measure_routes({
      'flow decode, one core': lambda: _DecodeLoop(planes, 2 * T * B, cv2.IMREAD_GRAYSCALE),
      'tfrecord pipeline (flow)': lambda: estimator_pipeline(params),
  }, B, options.seconds, options.rounds)
  decode = results['flow decode, one core']
  per_core = decode.clips_per_second * 2 * T
  limit = Measurement(per_core * (os.cpu_count() or 1) / (2 * T), decode.cpu_seconds_per_clip)
  return results['tfrecord pipeline (flow)'], per_core, limit


def options_problem(options: InputBenchmarkOptions) -> Problem | None:
  """--routes with pil where Pillow is not installed, or None."""
  if 'pil' in options.routes:
    try:
      import PIL  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
    except ImportError:
      return Problem('routes', 'the PIL loader needs Pillow, which only this benchmark uses: '
                     '.venv/bin/pip install Pillow (or leave pil out of --routes)')
  return None


def run(options: InputBenchmarkOptions) -> str:
  """Runs every measurement and returns the report text. Raises `entry.Refused` naming
  an option that cannot work (`options_problem`)."""
  problem = options_problem(options)
  if problem:
    raise entry.Refused(problem)
  root = options.keep_dir or tempfile.mkdtemp(prefix='input_benchmark_')
  os.makedirs(root, exist_ok=True)
  try:
    return _run(root, options)
  finally:
    if not options.keep_dir:
      shutil.rmtree(root, ignore_errors=True)


ROUTE_NAMES = {'tfrecord': 'tfrecord pipeline', 'pil': 'PIL py_func loader',
               'opencv': 'OpenCV py_func', 'direct': 'direct OpenCV (frames)'}


def _run(root: str, options: InputBenchmarkOptions) -> str:
  import tensorflow as tf
  from towers import params as params_lib
  from input_fn import direct
  T, B = options.clip_frames, options.batch_size
  paths = make_data(root, options.classes, options.groups, options.frames)
  common = dict(clip_frames=T, crop_size=options.crop_size, batch_size=B,
                num_classes=options.classes, shuffle_buffer=16)
  tfr = params_lib.make_params(data_source='tfrecord', data_dir=paths['tfrecords'], **common)
  frames_p = params_lib.make_params(data_source='frames', data_dir=paths['data'], **common)
  train = tf.estimator.ModeKeys.TRAIN
  makers = {
      'tfrecord': lambda: estimator_pipeline(tfr),
      'pil': lambda: _py_func_dataset(paths['data'], frames_p, pil_clip),
      'opencv': lambda: _py_func_dataset(paths['data'], frames_p, opencv_clip),
      'direct': lambda: direct.input_fn(train, frames_p),
  }
  factories = {'decode, one core': lambda: decode_loop(paths['tfrecords'], T, B)}
  factories.update({ROUTE_NAMES[r]: makers[r] for r in makers if r in options.routes})
  if options.profile:
    factories.update(tfrecord_stages(tfr))
  results = measure_routes(factories, B, options.seconds, options.rounds)
  text = report(results, options, cores=os.cpu_count() or 1)
  if 'flow' in options.routes:
    flow, per_core, limit = measure_flow(root, paths, common, options)
    text += (f'\ntfrecord pipeline (flow): {flow.clips_per_second:.1f} clips/s, '
             f'{1000 * flow.cpu_seconds_per_clip:.0f} CPU ms/clip, '
             f'{100 * flow.clips_per_second / limit.clips_per_second:.0f}% of the flow decode '
             f'limit = {per_core:.0f} grayscale 341x256 planes/s per core x '
             f'{os.cpu_count() or 1} cores / (2 x {T} planes per clip) = '
             f'{limit.clips_per_second:.1f} clips/s (u, v = the frames\' grayscale, not '
             'TV-L1 output: same sizes, same decode work)')
  return text


def report(results: dict[str, Measurement], options: InputBenchmarkOptions,
           cores: int) -> str:
  """The table, the decode limit and the targets, from `measure_routes` results (with the
  one-core decode loop under 'decode, one core')."""
  T, S = options.clip_frames, options.crop_size
  decode = results.pop('decode, one core')
  per_core = decode.clips_per_second * T  # JPEG frames per second, one thread
  limit = Measurement(per_core * cores / T, decode.cpu_seconds_per_clip)
  tfrecord = results[ROUTE_NAMES['tfrecord']].clips_per_second
  user = results.get(ROUTE_NAMES['pil'])
  reference = user.clips_per_second if user else None
  header = (f'| {"route":<38} | {"clips/s":>8} | {"CPU ms/clip":>11} | '
            "   x PIL loader" f' | {"% of decode limit":>17} |')
  lines = [f'input benchmark: {T} frames per clip, {S}x{S} crop, 341x256 JPEG frames, '
           f'batch {options.batch_size}, {cores} cores ({machine.cpu_name()}), '
           f'{cpu_allocator()}; '
           f'{options.seconds:.0f} s per route, median of {options.rounds} interleaved '
           f'rounds', '', header, f'|{"-" * 40}|{"-" * 10}|{"-" * 13}|{"-" * 17}|{"-" * 19}|']
  for name, m in list(results.items()) + [('decode limit', limit)]:
    ratio = f'{m.clips_per_second / reference:15.2f}' if reference else f'{"-":>15}'
    lines.append(f'| {name:<38} | {m.clips_per_second:8.1f} | '
                 f'{1000 * m.cpu_seconds_per_clip:11.0f} | {ratio} | '
                 f'{100 * m.clips_per_second / limit.clips_per_second:16.0f}% |')
  lines += ['', f'decode limit = {per_core:.0f} full 341x256 JPEG decodes/s on one core '
                f'(cv2.imdecode) x {cores} cores / {T} frames per clip = '
                f'{limit.clips_per_second:.1f} clips/s']
  if reference:
    met = 'met' if tfrecord >= SPEED_TARGET * reference else 'NOT met'
    lines.append(f"TFRecord >= {SPEED_TARGET:.0f}x the PIL loader (same cores): {met} "
                 f'({tfrecord / reference:.2f}x)')
  met = 'met' if tfrecord >= LIMIT_TARGET * limit.clips_per_second else 'NOT met'
  lines.append(f'TFRecord >= {100 * LIMIT_TARGET:.0f}% of the decode limit: {met} '
               f'({100 * tfrecord / limit.clips_per_second:.0f}%)')
  # Capacity at equal cores from CPU time, which other processes' load disturbs far less
  # than wall-clock rates: clips/s per core = 1 / CPU seconds per clip.
  ours = results[ROUTE_NAMES['tfrecord']].cpu_seconds_per_clip
  bare = decode.cpu_seconds_per_clip
  if user:
    speed = user.cpu_seconds_per_clip / ours
    met = 'met' if speed >= SPEED_TARGET else 'NOT met'
    lines.append(f"from CPU time per clip: TFRecord {1000 * ours:.0f} ms, PIL loader "
                 f'{1000 * user.cpu_seconds_per_clip:.0f} ms: {speed:.2f}x the clips per '
                 f'core-second; >= {SPEED_TARGET:.0f}x: {met}')
    ceiling = user.cpu_seconds_per_clip / bare
    lines.append(f'ceiling for any route that decodes every frame of the clip: PIL loader '
                 f'{1000 * user.cpu_seconds_per_clip:.0f} ms / bare decodes {1000 * bare:.0f} ms '
                 f'= {ceiling:.2f}x, so {SPEED_TARGET:.0f}x is '
                 f"{'within reach' if ceiling >= SPEED_TARGET else 'out of reach'} with a decoder "
                 'of this speed')
  share = bare / ours
  lines.append(f'from CPU time per clip: bare full decodes {1000 * bare:.0f} ms, TFRecord '
               f'{1000 * ours:.0f} ms: {100 * share:.0f}% of the decode limit per core; '
               f">= {100 * LIMIT_TARGET:.0f}%: {'met' if share >= LIMIT_TARGET else 'NOT met'}")
  return '\n'.join(lines)


def cpu_allocator() -> str:
  """Which CPU allocator TensorFlow uses in this process, as set when it was started:
  'BFC CPU allocator' with TF_CPU_ALLOCATOR_USE_BFC=true (TensorFlow's own switch, read by
  TensorFlow, not by this project), else 'default CPU allocator (malloc)'. It matters
  here: malloc maps every batch buffer of more than 32 MB afresh, and the kernel's page
  faults on it cost about 15% of the TFRecord route's CPU (docs/input.md)."""
  value = os.environ.get('TF_CPU_ALLOCATOR_USE_BFC', '').strip().lower()
  return 'BFC CPU allocator' if value in ('1', 'true') else 'default CPU allocator (malloc)'

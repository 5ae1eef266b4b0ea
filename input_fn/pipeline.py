"""The fast route: prepared TFRecords to training clips, entirely in TensorFlow ops.

`input_fn(mode, params, input_context=None, uint8_clips=False)` returns a `tf.data.Dataset`
whose clips are float32 in [-1, 1] (x / 127.5 - 1, `to_unit_range`), or with
`uint8_clips=True`, as training reads them (`input_fn/factory.py`), uint8 in [0, 255] that
the tower model_fn scales on each tower's device; same shapes either way:

* TRAIN: `({'clips': [b, T, S, S, C]}, labels int64 [b])`, T = params.clip_frames,
  S = params.crop_size, C = 3 for params.stream='rgb' and 2 (u, v) for 'flow' (records of
  `prepare --source=flow`);
  `b` = batch size, static (drop_remainder). Clips start at a random frame (wrapping around
  to frame 0 when the video has fewer than T frames), random S x S crop, random horizontal
  flip; a flipped flow clip also has its horizontal motion negated (u -> 255 - u before
  scaling), since mirroring reverses left and right. Endless (repeats).
* EVAL: `({'clips': [b, T, S, S, C], 'video_index': int64 [b]}, labels int64 [b])`:
  params.eval_clips clips per video with starts spread evenly over the video, each cut as
  params.eval_crops crops (1: centre; 3: start, centre and end of the long side,
  `eval_crop_windows`), no flip: eval_clips x eval_crops views per video; `video_index`
  is the video's position in the eval split (0..num_videos-1), so clip predictions can be
  averaged per video (`model_fn/video_metrics.py`). One pass.
  Also `videos_listed` int64 [b]: how many videos this evaluation should see: the test
  list's distinct videos from the manifest (`manifest.videos_listed`: videos prepare
  skipped included, a line repeating a video not; a worker's share of the records when sharded), so the model_fn can report videos
  evaluated of videos listed.
* PREDICT: the EVAL features (without `videos_listed`) and no labels.

Files: exactly the shards the manifest of `params.data_dir` lists (`input_fn/manifest.py`),
all checked to exist; other files in the directory are never read. Before a run reads
them, each shard must be the file prepare wrote: its first record the video its manifest
lists first, its size the one written unless cut short (`foreign_shards`, checked with the
data: `input_fn/data_checks.py`).

Hot path: files are sharded per worker (`input_context`), shuffled and read
interleaved in parallel; a parallel map parses a record, picks the clip's frame numbers,
gathers only those JPEG strings and decodes only the kept crop of each
(`tf.image.decode_and_crop_jpeg`). No Python runs per element. A record that fails (corrupt
proto, undecodable JPEG, no frames, label out of range) is skipped, never fatal: skipped
records are counted in records, including those a damaged file takes with it (each file
yields exactly the number of records its manifest lists, see `read_listed_records`), and
the running count is logged (TensorFlow's warning log, `input_fn: skipped N bad record(s)`,
shown with --verbose); `with_skipped_count=True` also puts the count in the
features as `skipped_records` (int64 [b]), and in training the records read so far (good
and bad, every pass) as `records_read` (int64 [b]).
"""

from __future__ import annotations

import functools
import os
import re
from typing import Any

import tensorflow as tf

from input_fn import datasets, manifest, records

ModeKeys = tf.estimator.ModeKeys
AUTOTUNE = tf.data.AUTOTUNE
READ_BUFFER_BYTES = 8 << 20


# --- Worker sharding -----------------------------------------------------------------------


def worker_shard(input_context: tf.distribute.InputContext | None = None) -> tuple[int, int]:
  """(number of input pipelines, this pipeline's index) from `input_context`; (1, 0), read
  everything, without one. In a cluster the context comes from the task's role
  (`towers.cluster.spec.ClusterTask.input_context`)."""
  if input_context is None:
    return 1, 0
  return input_context.num_input_pipelines, input_context.input_pipeline_id


def shard_files(files: list[str], num_shards: int, index: int) -> tuple[list[str], bool]:
  """Files of pipeline `index` of `num_shards`, and whether records must be sharded instead.

  With at least as many files as pipelines, pipeline i gets files i, i+n, ... (disjoint,
  together all). Otherwise every pipeline reads all files in order and keeps every n-th
  record (returned flag True).
  """
  files = sorted(files)
  if num_shards <= 1:
    return files, False
  if len(files) >= num_shards:
    return files[index::num_shards], False
  return files, True


# --- Clip sampling and cropping (TensorFlow ops, shared with the direct route) ------------


def _max_start(num_frames: tf.Tensor, clip_frames: int) -> tf.Tensor:
  """Last allowed start: n - T when the clip fits, else n - 1 (the clip wraps around)."""
  return tf.where(num_frames >= clip_frames, num_frames - clip_frames, num_frames - 1)


def train_clip_indices(num_frames: tf.Tensor, clip_frames: int,
                       seed: int | None = None) -> tf.Tensor:
  """int32 [T] frame numbers of a training clip: T consecutive frames from a uniform random
  start, modulo `num_frames` (wrap-around for videos shorter than T). Needs num_frames >= 1."""
  num_frames = tf.cast(num_frames, tf.int32)
  start = tf.random.uniform([], 0, _max_start(num_frames, clip_frames) + 1, tf.int32,
                            seed=seed)
  return (start + tf.range(clip_frames)) % num_frames


def eval_clip_indices(num_frames: tf.Tensor, clip_frames: int, num_clips: int) -> tf.Tensor:
  """int32 [K, T] frame numbers of K evaluation clips whose starts are evenly spread from 0
  to the last allowed start (K = 1: the middle start); frames wrap around modulo n."""
  num_frames = tf.cast(num_frames, tf.int32)
  max_start = _max_start(num_frames, clip_frames)
  if num_clips == 1:
    starts = tf.reshape(max_start // 2, [1])
  else:
    starts = tf.cast(tf.round(tf.linspace(0.0, tf.cast(max_start, tf.float32), num_clips)),
                     tf.int32)
  return (starts[:, None] + tf.range(clip_frames)[None, :]) % num_frames


def crop_window(height: tf.Tensor, width: tf.Tensor, crop_size: int,
                training: bool) -> tf.Tensor:
  """int32 [4] window (y, x, h, w) inside a height x width frame: h = min(crop, height),
  w = min(crop, width); random position in training, centred otherwise."""
  height, width = tf.cast(height, tf.int32), tf.cast(width, tf.int32)
  h, w = tf.minimum(crop_size, height), tf.minimum(crop_size, width)
  if training:
    y = tf.random.uniform([], 0, height - h + 1, tf.int32)
    x = tf.random.uniform([], 0, width - w + 1, tf.int32)
  else:
    y, x = (height - h) // 2, (width - w) // 2
  return tf.stack([y, x, h, w])


def eval_crop_windows(height: tf.Tensor, width: tf.Tensor, crop_size: int,
                      num_crops: int) -> tf.Tensor:
  """int32 [num_crops, 4] windows (y, x, h, w), h = min(crop, height), w = min(crop, width).
  1 crop: centred (`crop_window` with training=False). 3 crops: along the long side (width
  when width >= height), at its start, centre and end, centred on the short side."""
  if num_crops not in datasets.EVAL_CROPS:
    raise ValueError(f'eval_crops must be one of {datasets.EVAL_CROPS}, got {num_crops}')
  centre = crop_window(height, width, crop_size, training=False)
  if num_crops == 1:
    return centre[None]
  height, width = tf.cast(height, tf.int32), tf.cast(width, tf.int32)
  y, x, h, w = tf.unstack(centre)
  wide = width >= height
  along = lambda last, middle: tf.stack([tf.zeros([], tf.int32), middle, last])
  ys = tf.where(wide, tf.fill([3], y), along(height - h, y))
  xs = tf.where(wide, along(width - w, x), tf.fill([3], x))
  return tf.stack([ys, xs, tf.fill([3], h), tf.fill([3], w)], axis=1)


def eval_crops_problem(height: int, width: int, crop_size: int, num_crops: int) -> str | None:
  """Why `num_crops` evaluation crops of a height x width frame would not be that many
  distinct crop_size views (None when they are, and always for 1 crop, which is cut as
  training cuts). 3 crops need the short side >= crop_size (else each window is the whole
  short side, stretched to a square by `fit_to_crop`) and the long side >= crop_size + 2
  (else two or three windows coincide)."""
  if num_crops == 1:
    return None
  short, long = min(height, width), max(height, width)
  size = f'{height}x{width} (height x width)'
  if short < crop_size:
    return (f'frames of {size} are smaller than the crop {crop_size} on their short side: '
            f'the {num_crops} crops would be {"the same frame" if long <= crop_size else "windows"}'
            ' stretched to a square')
  if long < crop_size + num_crops - 1:
    return (f'frames of {size} leave no room for {num_crops} different crops of {crop_size} '
            'along their long side: the views would repeat')
  return None


def crop_views(frames: tf.Tensor, windows: tf.Tensor, crop_size: int,
               num_crops: int) -> tf.Tensor:
  """uint8 [N, H, W, C] frames -> [num_crops, N, crop, crop, C]: each window of `windows`
  (int32 [num_crops, 4], (y, x, h, w) inside the frames) cut and `fit_to_crop`."""
  views = [fit_to_crop(frames[:, windows[m, 0]:windows[m, 0] + windows[m, 2],
                              windows[m, 1]:windows[m, 1] + windows[m, 3]], crop_size)
           for m in range(num_crops)]
  return tf.stack(views)


def eval_views(frames: tf.Tensor, crop_size: int, num_crops: int) -> tf.Tensor:
  """Decoded uint8 clips [K, T, H, W, C] -> their views [K * num_crops, T, crop, crop, C]:
  clip k's crop m at row k * num_crops + m (windows: `eval_crop_windows`)."""
  shape = tf.shape(frames)
  windows = eval_crop_windows(shape[2], shape[3], crop_size, num_crops)
  flat = tf.reshape(frames, tf.concat([[-1], shape[2:]], 0))
  views = crop_views(flat, windows, crop_size, num_crops)  # [M, K*T, S, S, C]
  views = tf.reshape(views, tf.concat([[num_crops], shape[:2], [crop_size, crop_size],
                                       shape[4:]], 0))
  views = tf.transpose(views, [1, 0, 2, 3, 4, 5])
  return tf.reshape(views, tf.concat([[-1], shape[1:2], [crop_size, crop_size], shape[4:]], 0))


def fit_to_crop(frames: tf.Tensor, crop_size: int) -> tf.Tensor:
  """uint8 [N, h, w, C] -> [N, crop, crop, C]: resized only when the frame was smaller than
  the crop (h or w < crop_size); otherwise returned as is."""
  shape = tf.shape(frames)
  def resize():
    resized = tf.image.resize(frames, [crop_size, crop_size])
    return tf.cast(tf.clip_by_value(tf.round(resized), 0, 255), tf.uint8)
  fits = tf.logical_and(tf.equal(shape[1], crop_size), tf.equal(shape[2], crop_size))
  return tf.cond(fits, lambda: frames, resize)


def decode_crops(jpegs: tf.Tensor, window: tf.Tensor, crop_size: int,
                 count: int, channels: int = 3) -> tf.Tensor:
  """Decodes only `window` of each of `count` JPEG strings: uint8 [count, crop, crop, C].

  The loop is unrolled (count is static) so the decodes can run in parallel."""
  frames = tf.stack([tf.image.decode_and_crop_jpeg(jpegs[i], window, channels=channels)
                     for i in range(count)])
  frames = fit_to_crop(frames, crop_size)
  frames.set_shape([count, crop_size, crop_size, channels])
  return frames


def mirror(clip: tf.Tensor, stream: str = 'rgb') -> tf.Tensor:
  """Left-right mirror of a uint8 clip [..., H, W, C]. A flow clip (C = 2: u, v) also gets
  its horizontal displacement negated, u -> 255 - u: a motion to the right, mirrored, is a
  motion to the left. Mirroring the image alone would train on wrong motion.

  Reverses the middle axis of the clip viewed as rows [-1, W, C]: TensorFlow has a fast
  kernel for that 3-D case, while reversing axis -2 of a 4-D uint8 clip goes through a
  generic element-by-element evaluator that costs several times the CPU. Same values
  either way."""
  shape = tf.shape(clip)
  rows = tf.reshape(clip, tf.stack([-1, shape[-2], shape[-1]]))
  mirrored = tf.reshape(tf.reverse(rows, axis=[1]), shape)
  mirrored.set_shape(clip.shape)
  if stream == 'flow':
    mirrored = tf.concat([255 - mirrored[..., :1], mirrored[..., 1:]], axis=-1)
  return mirrored


def random_flip(clip: tf.Tensor, stream: str = 'rgb') -> tf.Tensor:
  """`mirror`s a whole clip [T, H, W, C] with probability 1/2 (same for all frames)."""
  flip = tf.random.uniform([]) < 0.5
  return tf.cond(flip, lambda: mirror(clip, stream), lambda: clip)


def crop_decoded(frames: tf.Tensor, crop_size: int, training: bool) -> tf.Tensor:
  """Crop of already decoded uint8 frames [..., H, W, C] -> [..., crop, crop, C] (the direct
  route's counterpart of `decode_crops`, same windows)."""
  shape = tf.shape(frames)
  window = crop_window(shape[-3], shape[-2], crop_size, training)
  rank = frames.shape.rank
  lead = rank - 3
  begin = tf.concat([tf.zeros([lead], tf.int32), window[:2], [0]], 0)
  size = tf.concat([tf.fill([lead], -1), window[2:], [-1]], 0)
  cropped = tf.slice(frames, begin, size)
  flat = tf.reshape(cropped, tf.concat([[-1], tf.shape(cropped)[-3:]], 0))
  fitted = fit_to_crop(flat, crop_size)
  return tf.reshape(fitted, tf.concat([shape[:lead], [crop_size, crop_size, shape[-1]]], 0))


def to_unit_range(clip: tf.Tensor) -> tf.Tensor:
  """uint8 [0, 255] -> float32 [-1, 1]."""
  return tf.cast(clip, tf.float32) * (2.0 / 255.0) - 1.0


def stream_channels(stream: str) -> int:
  """Channels of a clip of `stream`: 3 for rgb, 2 (u, v) for flow."""
  return 2 if stream == 'flow' else 3


def _stream_jpegs(parsed: dict[str, tf.Tensor], stream: str) -> list[tuple[tf.Tensor, int]]:
  """(JPEG string vector, channels) per image plane of the record's `stream`: the RGB
  frames, or the u and v planes of a flow record."""
  if stream == 'flow':
    return [(parsed['flow_u'], 1), (parsed['flow_v'], 1)]
  return [(parsed['frames'], 3)]


def _decode_clip_frames(parsed: dict[str, tf.Tensor], stream: str, indices: tf.Tensor,
                        crop_size: int, training: bool) -> tf.Tensor:
  """uint8 [len(indices), S, S, C]: the frames `indices` (int32 [N], static N) of every plane
  of the record, decoded inside one shared crop window and stacked on channels."""
  planes = _stream_jpegs(parsed, stream)
  count = indices.shape[0]
  shape = tf.image.extract_jpeg_shape(planes[0][0][indices[0]])
  window = crop_window(shape[0], shape[1], crop_size, training)
  return tf.concat([decode_crops(tf.gather(jpegs, indices), window, crop_size, count, channels)
                    for jpegs, channels in planes], axis=-1)


def _decode_eval_views(parsed: dict[str, tf.Tensor], stream: str, indices: tf.Tensor,
                       crop_size: int, num_crops: int) -> tf.Tensor:
  """uint8 [num_crops, len(indices), S, S, C]: the frames `indices` of every plane, each cut
  in the `eval_crop_windows`. One crop decodes only its window; three crops decode the
  window spanning them once and cut it."""
  if num_crops == 1:
    return _decode_clip_frames(parsed, stream, indices, crop_size, training=False)[None]
  planes = _stream_jpegs(parsed, stream)
  count = indices.shape[0]
  shape = tf.image.extract_jpeg_shape(planes[0][0][indices[0]])
  windows = eval_crop_windows(shape[0], shape[1], crop_size, num_crops)
  start = tf.reduce_min(windows[:, :2], axis=0)
  span = tf.reduce_max(windows[:, :2] + windows[:, 2:], axis=0) - start
  union = tf.concat([start, span], 0)
  frames = tf.concat([tf.stack([tf.image.decode_and_crop_jpeg(jpegs[i], union, channels=c)
                                for i in range(count)])
                      for jpegs, c in ((tf.gather(j, indices), c) for j, c in planes)], axis=-1)
  offsets = tf.concat([tf.tile(start[None], [num_crops, 1]),
                       tf.zeros([num_crops, 2], tf.int32)], axis=1)
  views = crop_views(frames, windows - offsets, crop_size, num_crops)
  views.set_shape([num_crops, count, crop_size, crop_size, stream_channels(stream)])
  return views


# --- Per-record functions ------------------------------------------------------------------


def _checked_label(parsed: dict[str, tf.Tensor], num_classes: int) -> tf.Tensor:
  label = parsed['label']
  check = tf.debugging.assert_less(label, tf.constant(num_classes, tf.int64),
                                   message='label out of range')
  check_low = tf.debugging.assert_non_negative(label, message='negative label')
  with tf.control_dependencies([check, check_low]):
    return tf.identity(label)


def train_clip(serialized: tf.Tensor, clip_frames: int, crop_size: int,
               num_classes: int, stream: str = 'rgb') -> tuple[tf.Tensor, tf.Tensor]:
  """One serialized record -> (uint8 clip [T, S, S, C] randomly placed and flipped, label)."""
  parsed = records.parse(serialized)
  indices = train_clip_indices(tf.shape(_stream_jpegs(parsed, stream)[0][0])[0], clip_frames)
  clip = _decode_clip_frames(parsed, stream, indices, crop_size, training=True)
  return random_flip(clip, stream), _checked_label(parsed, num_classes)


def eval_video(serialized: tf.Tensor, clip_frames: int, crop_size: int, num_clips: int,
               num_classes: int, stream: str = 'rgb', num_crops: int = 1
               ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor]:
  """One record -> (uint8 views [K * M, T, S, S, C], label, video index, video name
  string): K clips (`eval_clip_indices`) x M crops (`eval_crop_windows`), clip k's crop m
  at row k * M + m."""
  parsed = records.parse(serialized)
  indices = eval_clip_indices(tf.shape(_stream_jpegs(parsed, stream)[0][0])[0], clip_frames,
                              num_clips)
  indices = tf.reshape(indices, [num_clips * clip_frames])
  views = _decode_eval_views(parsed, stream, indices, crop_size, num_crops)
  views = tf.reshape(views, [num_crops, num_clips, clip_frames, crop_size, crop_size,
                             stream_channels(stream)])
  views = tf.reshape(tf.transpose(views, [1, 0, 2, 3, 4, 5]),
                     [num_clips * num_crops, clip_frames, crop_size, crop_size,
                      stream_channels(stream)])
  return views, _checked_label(parsed, num_classes), parsed['index'], parsed['video']


def eval_clips(serialized: tf.Tensor, clip_frames: int, crop_size: int, num_clips: int,
               num_classes: int, stream: str = 'rgb', num_crops: int = 1
               ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
  """One record -> (uint8 views [K * M, T, S, S, C] as `eval_video`, label, video index)."""
  return eval_video(serialized, clip_frames, crop_size, num_clips, num_classes, stream,
                    num_crops)[:3]


def skip_and_count(dataset: tf.data.Dataset, what: str) -> tf.data.Dataset:
  """Drops elements whose computation failed and counts them.

  `dataset` yields (input number i, *values) with i = 0, 1, 2, ... in order, and must keep
  that order up to here. Returns (skipped so far, *values) for the elements that
  succeeded; whenever the count grows it is logged as a TensorFlow warning.
  """
  dataset = dataset.ignore_errors()

  def step(state, element):
    emitted, reported = state
    skipped = element[0] - emitted

    report = functools.partial(_report_skipped, skipped, what)

    reported = tf.cond(skipped > reported, report, lambda: reported)
    return (emitted + 1, reported), (skipped,) + tuple(element[1:])

  zero = tf.constant(0, tf.int64)
  return dataset.scan((zero, zero), step)


def _report_skipped(skipped: tf.Tensor, what: str) -> tf.Tensor:
  """`skipped` (int64 scalar), after logging the count as a TensorFlow warning (shown on
  the console without --verbose)."""
  log = tf.print('input_fn: skipped', skipped, 'bad record(s) of', what,
                 '(corrupt record, undecodable JPEG, no frames or label out of range)',
                 output_stream=tf.compat.v1.logging.warning)
  with tf.control_dependencies([log]):
    return tf.identity(skipped)


NO_READABLE_RECORD = 'input_fn: no readable record'


class UnreadableInput(RuntimeError):
  """Every record of a pass is damaged (`map_skip_and_count`'s in-graph check): the message
  is its NO_READABLE_RECORD sentence; `records` the records of one pass, `option` data_dir
  (the data to prepare again)."""
  option = 'data_dir'

  def __init__(self, line: str, records: int) -> None:
    super().__init__(line)
    self.records = records


def unreadable_input(message: str) -> UnreadableInput | None:
  """The `UnreadableInput` a TensorFlow error message (InvalidArgumentError) reports, None
  if it holds no NO_READABLE_RECORD sentence."""
  start = message.find(NO_READABLE_RECORD)
  if start < 0:
    return None
  end = message.find(')', message.find('same flags', start))
  line = message[start:end + 1 if end >= 0 else None].splitlines()[0]
  count = re.search(r'none of the (\d+) ', line)
  return UnreadableInput(line, int(count.group(1)) if count else 0)


def map_skip_and_count(dataset: tf.data.Dataset, fn, what: str, records_per_pass: int,
                       threads: int) -> tf.data.Dataset:
  """`skip_and_count` of `dataset.map(fn)` over a repeated input (index i, record) of
  `records_per_pass` records per pass, which also ends: `fn` failing for two passes'
  worth of records in a row (all damaged) is an InvalidArgumentError starting with
  NO_READABLE_RECORD and naming the count, not a wait for a record that never comes.

  Yields (bad records skipped so far, records read so far, *fn's values) per good record.
  Each record is computed in a one-element dataset with its own `ignore_errors`, which
  yields a marker instead when `fn` fails, so the failures are counted as they happen."""
  def one(i, record):
    computed = tf.data.Dataset.from_tensors(record).map(fn).ignore_errors()
    values = computed.map(lambda *v: (tf.constant(True),) + v)
    marker = tf.nest.map_structure(
        lambda spec: tf.zeros([d or 0 for d in spec.shape], spec.dtype), computed.element_spec)
    failed = tf.data.Dataset.from_tensors((tf.constant(False),) + tuple(marker))
    return values.concatenate(failed).take(1).map(lambda ok, *v: (ok, i) + v)

  dataset = dataset.interleave(one, cycle_length=threads if threads > 0 else AUTOTUNE,
                               num_parallel_calls=threads, deterministic=True)

  def step(state, element):
    skipped, in_a_row, reported = state
    ok = element[0]
    skipped = skipped + tf.cast(tf.logical_not(ok), tf.int64)
    in_a_row = tf.where(ok, tf.constant(0, tf.int64), in_a_row + 1)
    check = tf.debugging.assert_less(  # two passes: passes overlap in the interleave
        in_a_row, tf.constant(2 * max(records_per_pass, 1), tf.int64),
        message=f'{NO_READABLE_RECORD}: none of the {records_per_pass} {what.split()[0]} '
                f'records could be read in two passes over the {what} (every one is damaged: '
                'corrupt record, undecodable JPEG, no frames or label out of range); prepare '
                'the data again (//data_tools:prepare, same flags)')

    report = functools.partial(_report_skipped, skipped, what)

    with tf.control_dependencies([check]):
      reported = tf.cond(tf.logical_and(ok, skipped > reported), report, lambda: reported)
    return (skipped, in_a_row, reported), (ok, skipped, element[1] + 1) + tuple(element[2:])

  zero = tf.constant(0, tf.int64)
  dataset = dataset.scan((zero, zero, zero), step)
  return dataset.filter(_is_ok).map(_without_ok)


def _is_ok(ok: tf.Tensor, *rest: tf.Tensor) -> tf.Tensor:
  del rest
  return ok


def _without_ok(ok: tf.Tensor, *rest: tf.Tensor) -> tuple[tf.Tensor, ...]:
  del ok
  return rest


# --- The input_fn --------------------------------------------------------------------------


def record_files(data_dir: str, subset: str) -> list[str]:
  """Sorted paths of every shard of `subset` ('train' or 'test') that the manifest of
  `data_dir` lists; `manifest.ManifestError` if the manifest is missing or a listed file is.
  Other files in `data_dir` (stale shards, another dataset) are never read."""
  return sorted(path for path, _ in manifest.shard_paths(data_dir, subset))


def foreign_shards(data_dir: str, subset: str) -> str | None:
  """Why the shards of `subset` in `data_dir` do not hold what their manifest lists: one
  line naming how many listed shards are not the file prepare wrote (`foreign_shard`:
  copied from another subset, split, dataset or preparation), the first one, what it holds
  against what is listed, and the fix. Such a file would be read as the manifest's videos.
  None when none is; a missing shard is not one (`manifest.shard_paths` names it).
  `manifest.ManifestError` when the manifest cannot be read."""
  listed = manifest.read(data_dir, subset)['shards']
  subset_of = _subsets_of_videos(data_dir)
  foreign = [(path, held) for path, held in
             ((os.path.join(data_dir, s['file']), foreign_shard(data_dir, s, subset_of))
              for s in listed)
             if held]
  if not foreign:
    return None
  path, held = foreign[0]
  return (f'{len(foreign)} of the {len(listed)} {subset} shards of {data_dir} hold other '
          f'records than {os.path.basename(manifest.manifest_path(data_dir, subset))} lists '
          f'(first: {path} {held}): that file is not the one prepare wrote, and its records '
          f'would be read as the listed videos; prepare again with --out={data_dir} '
          '--overwrite')


def foreign_shard(data_dir: str, shard: dict[str, Any], subset_of: dict[str, str]
                  ) -> str | None:
  """What the file of the manifest row `shard` in `data_dir` holds instead of what the row
  lists (a video it holds is named a train or test video of the directory when
  `subset_of`, video name -> subset, lists it), or None when it may be the file prepare
  wrote. It is not when its first record is another video than the row lists first
  (`records.first_video`, confirmed by
  `records.first_video_checked`), or when its size is not the row's `bytes` and it is no
  cut-short copy of it: larger, or holding at least the listed records, none cut
  (`records.record_count`). A missing file, or one whose first record is damaged or cut
  (its records are skipped and counted when read), is not refused here; a row without
  video names (version 1 manifests) or `bytes` is compared on what it has."""
  path, count = os.path.join(data_dir, shard['file']), int(shard['records'])
  names = manifest.video_names({'shards': [shard]})
  if not os.path.exists(path):
    return None
  if names and records.first_video(path) != names[0]:
    held = records.first_video_checked(path)
    if held is not None and held != names[0]:
      where = f', a {subset_of[held]} video of this directory' if held in subset_of else ''
      return (f'starts with {held}{where}, but its manifest lists {count} records starting '
              f'with {names[0]}')
  size, written = os.path.getsize(path), shard.get('bytes')
  if written is None or size == written:
    return None
  held_records = records.record_count(path)
  if size > written or (held_records is not None and held_records >= count):
    held = f'{size} bytes' if held_records is None else f'{held_records} records in {size} bytes'
    return f'holds {held}, but its manifest lists {count} records in {written} bytes'
  return None


def _subsets_of_videos(data_dir: str) -> dict[str, str]:
  """Video name -> the subset ('train' or 'test') whose manifest in `data_dir` lists it
  (a subset whose manifest cannot be read lists none)."""
  found = {}
  for subset in manifest.SUBSETS:
    try:
      found.update((name, subset) for name in manifest.video_names(manifest.read(data_dir, subset)))
    except manifest.ManifestError:
      continue
  return found


def read_listed_records(path: tf.Tensor, records_listed: tf.Tensor) -> tf.data.Dataset:
  """Exactly `records_listed` elements from the shard at `path`: its records, and for every
  record lost to corruption (a damaged record ends the read of its file) an empty string,
  which fails parsing downstream and so is counted as one skipped record."""
  readable = tf.data.TFRecordDataset(path, buffer_size=READ_BUFFER_BYTES).ignore_errors()
  lost = tf.data.Dataset.from_tensors(tf.constant(b'')).repeat()
  return readable.concatenate(lost).take(records_listed)


def replica_batch_size(params: Any, training: bool,
                       input_context: tf.distribute.InputContext | None) -> int:
  """Examples per batch of this input pipeline: `examples_per_step` (training:
  accumulate_steps micro-batches of batch_size, one step's clips) or
  `effective_eval_batch_size`, divided among tf.distribute replicas when `input_context`
  says there are several (their sum is the global batch)."""
  size = params.examples_per_step if training else params.effective_eval_batch_size
  if input_context is not None:
    size = input_context.get_per_replica_batch_size(size)
  return size


def input_fn(mode: str, params: Any, input_context: tf.distribute.InputContext | None = None,
             with_skipped_count: bool = False, uint8_clips: bool = False) -> tf.data.Dataset:
  """The TFRecord pipeline over `params.data_dir` (see the module docstring for outputs).

  `uint8_clips=True` leaves the clips uint8 in [0, 255] (same values before scaling): the
  consumer scales them, as the tower model_fn does on each tower's device. At 64x224 clips
  the float conversion costs about as much CPU as the JPEG decoding
  (`bazel run //benchmarks:input_benchmark`, stages 4 and 5).

  `params` is a `towers.params.TrainParams` (fields used: data_dir, clip_frames, crop_size,
  num_classes, batch_size, eval_batch_size, eval_clips, eval_crops, shuffle_buffer,
  input_threads, stream).
  """
  training = mode == ModeKeys.TRAIN
  threads = params.input_threads or AUTOTUNE
  num_shards, shard_index = worker_shard(input_context)
  listed = dict(manifest.shard_paths(params.data_dir, 'train' if training else 'test'))
  files, shard_records = shard_files(list(listed), num_shards, shard_index)
  T, S = params.clip_frames, params.crop_size
  stream = params.stream

  dataset = tf.data.Dataset.from_tensor_slices(
      (files, tf.constant([listed[f] for f in files], tf.int64)))
  read = read_listed_records
  if training and not shard_records:
    dataset = dataset.shuffle(len(files), reshuffle_each_iteration=True).repeat()
    dataset = dataset.interleave(read, cycle_length=min(len(files), 8), block_length=1,
                                 num_parallel_calls=threads, deterministic=False)
  else:
    dataset = dataset.interleave(read, cycle_length=1)  # in order: record sharding, eval
    if shard_records:
      dataset = dataset.shard(num_shards, shard_index)
    if training:
      dataset = dataset.repeat()
  dataset = dataset.enumerate()

  if training:
    per_pass = sum(listed[f] for f in files)
    if shard_records:
      per_pass = len(range(shard_index, per_pass, num_shards))
    dataset = map_skip_and_count(
        dataset, lambda record: train_clip(record, T, S, params.num_classes, stream),
        'training data', per_pass, threads)
    dataset = dataset.shuffle(max(params.shuffle_buffer, 1))
    # Batch the uint8 clips, then scale whole batches: 4x less copying than float clips.
    dataset = dataset.batch(replica_batch_size(params, True, input_context), drop_remainder=True)

    def features_labels(skipped, read, clip, label):
      features = {'clips': clip if uint8_clips else to_unit_range(clip)}
      if with_skipped_count:
        features['skipped_records'] = skipped
        features['records_read'] = read
      return features, label
    dataset = dataset.map(features_labels, num_parallel_calls=threads)
  else:
    M = params.eval_crops
    K = params.eval_clips * M  # views per video
    dataset = dataset.map(
        lambda i, record: (i,) + eval_clips(record, T, S, params.eval_clips,
                                            params.num_classes, stream, M),
        num_parallel_calls=threads, deterministic=True)
    dataset = skip_and_count(dataset, 'evaluation data')

    def per_clip(skipped, clips, label, index):
      repeat = lambda v: tf.fill([K], v)
      return tf.data.Dataset.from_tensor_slices(
          (repeat(skipped), clips, repeat(label), repeat(index)))
    dataset = dataset.flat_map(per_clip)
    dataset = dataset.batch(replica_batch_size(params, False, input_context))

    videos_listed = sum(listed[f] for f in files)
    if shard_records:
      videos_listed = len(range(shard_index, videos_listed, num_shards))
    if num_shards == 1:  # every video of the subset's list, also those prepare skipped
      videos_listed = max(videos_listed, manifest.videos_listed(
          manifest.read(params.data_dir, 'test')))

    def features_labels(skipped, clip, label, index):
      features = {'clips': clip if uint8_clips else to_unit_range(clip), 'video_index': index}
      if mode == ModeKeys.EVAL:
        features['videos_listed'] = tf.fill(tf.shape(index), tf.constant(videos_listed, tf.int64))
      if with_skipped_count:
        features['skipped_records'] = skipped
      return features, label
    dataset = dataset.map(features_labels, num_parallel_calls=threads)
    if mode == ModeKeys.PREDICT:
      dataset = dataset.map(lambda features, label: features)
  return dataset.prefetch(AUTOTUNE)

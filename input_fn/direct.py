"""The direct route: raw videos or frame folders through OpenCV, without preparation.

Same outputs as `input_fn/pipeline.py` (same clip sampling rules, crops, flip, scaling and
eval multi-view layout, clips x crops, with `video_index`), for small data and quick tries. Frames are
decoded by Python generators (`tf.data.Dataset.from_generator`, a few interleaved to overlap
OpenCV work); this is the slow route: prepare TFRecords for real training.

params.dataset picks the layout (`input_fn/datasets.py`): ucf101 or hmdb51.
data_source 'videos': `<data_dir>/UCF-101/<Class>/*.avi` (HMDB51: `hmdb51_org/<class>/`), frames resized so the short side is
params.frame_short_side. 'frames': `<data_dir>/jpegs_256/<video>/frame%06d.jpg` or
`img_%05d.jpg`, decided per video folder (`frame_folders.frame_pattern`; a tree may mix them), with
`<data_dir>/rgb.txt` when present for the claimed counts, same resizing rule. With
params.stream='flow', 'frames' reads the TV-L1 flow of //data_tools:extract_flow instead:
`<data_dir>/tvl1_flow/{u,v}/<video>/frame%06d.jpg` (or the rows of `<data_dir>/flow.txt`),
2-channel clips (u, v), resized with their displacements (`flow.resize_codes`).
Split files: `<data_dir>/ucfTrainTestlist/` or `<data_dir>`. Bad videos are skipped and
logged (absl warning with the running count), never fatal.
"""

from __future__ import annotations

import os
from typing import Any, Iterator

import numpy as np
import tensorflow as tf
from absl import logging

from input_fn import datasets, flow, frame_folders, pipeline, ucf101, video_io, video_lists

ModeKeys = tf.estimator.ModeKeys
GENERATORS = 2  # interleaved generators per pipeline


def max_start(num_frames: int, clip_frames: int) -> int:
  """Last allowed clip start: n - T when the clip fits, else n - 1 (the clip wraps)."""
  return num_frames - clip_frames if num_frames >= clip_frames else num_frames - 1


def train_clip_indices(num_frames: int, clip_frames: int,
                       rng: np.random.Generator) -> np.ndarray:
  """numpy twin of `pipeline.train_clip_indices`: int [T], random start, modulo n."""
  start = int(rng.integers(0, max_start(num_frames, clip_frames) + 1))
  return (start + np.arange(clip_frames)) % num_frames


def eval_clip_indices(num_frames: int, clip_frames: int, num_clips: int) -> np.ndarray:
  """numpy twin of `pipeline.eval_clip_indices`: int [K, T], starts spread evenly."""
  last = max_start(num_frames, clip_frames)
  if num_clips == 1:
    starts = np.array([last // 2])
  else:
    starts = np.round(np.linspace(0.0, float(last), num_clips).astype(np.float32)).astype(int)
  return (starts[:, None] + np.arange(clip_frames)[None, :]) % num_frames


class VideoSource:
  """Lists a split's videos and loads chosen frames of one, for 'videos' or 'frames'."""

  def __init__(self, params: Any):
    self.kind = params.data_source
    self.stream = params.stream
    self.short_side = params.frame_short_side
    root = params.data_dir
    self.split = datasets.params_split(params)
    for problem in self.split.problems:
      logging.warning('input_fn: skipping list entry: %s', problem)
    self.videos_dir = datasets.videos_dir(params.dataset, root)
    self.frames_dir = datasets.frames_dir(params.dataset, root)
    self.flow_dir = os.path.join(root, ucf101.FLOW_DIR_NAME)
    self.infos: dict[str, video_lists.FrameInfo] = {}
    if self.kind == 'frames':
      self.infos, problems = datasets.direct_frame_list(params, len(self.split.classes))
      for problem in problems:
        logging.warning('input_fn: frame list: %s', problem)
    if self.kind == 'frames' and self.stream == 'rgb':  # <class>/<video>/ folders too
      self.infos = {**datasets.class_folder_frames(
          self.frames_dir, self.split.train + self.split.test), **self.infos}

  def entries(self, subset: str) -> list[video_lists.VideoEntry]:
    return self.split.subset(subset)

  def load(self, entry: video_lists.VideoEntry, choose) -> np.ndarray:
    """uint8 frames chosen by `choose(num_frames) -> int array` (any shape); returns shape
    choose(...).shape + [H, W, C] (C = 3 RGB, 2 flow). Raises IOError/ValueError on bad
    input."""
    if self.stream == 'flow':
      return self._load_flow(entry, choose)
    if self.kind == 'videos':
      path = video_lists.resolve_video(self.videos_dir, entry)
      if path is None:
        raise IOError(f'{entry.rel_path} not found under {self.videos_dir}')
      announced = video_io.video_frame_count(path)
      if announced > 0:
        indices = choose(announced)
        try:
          frames = video_io.decode_video(path, self.short_side, keep=indices.reshape(-1))
          return frames.reshape(indices.shape + frames.shape[1:])
        except video_io.VideoError:
          pass  # the header's count was wrong: decode everything below
      try:
        frames = video_io.decode_video(path, self.short_side)
      except video_io.VideoError as e:
        raise IOError(f'{path}: {e}') from e
      indices = choose(len(frames))
      return frames[indices]
    info = self.infos.get(entry.key)
    folder = self._frame_folder(entry, info)
    pattern = frame_folders.frame_pattern(folder)
    count, reason = frame_folders.count_frames(folder, info.num_frames if info else None,
                                        pattern=pattern)
    if reason:
      raise IOError(reason)
    indices = choose(count)
    frames = frame_folders.read_frames(folder, indices.reshape(-1), pattern=pattern)
    frames = np.stack([video_io.resize_short_side(f, self.short_side) for f in frames])
    return frames.reshape(indices.shape + frames.shape[1:])

  def _frame_folder(self, entry: video_lists.VideoEntry,
                    info: video_lists.FrameInfo | None) -> str:
    """The RGB frame folder of `entry`: its frame-list row's, else its own under frames_dir."""
    if info and os.path.isdir(info.path):
      return info.path
    return (video_lists.find_child(self.frames_dir, entry.name) or
            os.path.join(self.frames_dir or '', entry.name))

  def source_size(self, entry: video_lists.VideoEntry) -> int | None:
    """Bytes of what `entry` is read from: its video file, or the files of its frame folder
    (flow: its u and v folders); None when missing. One stat per file, no decoding."""
    info = self.infos.get(entry.key)
    if self.stream == 'flow':
      folders = flow.find_flow_folders(self.flow_dir, entry.name, info.path if info else None)
    elif self.kind == 'videos':
      found = video_lists.resolve_video(self.videos_dir, entry) if self.videos_dir else None
      return os.path.getsize(found) if found else None
    else:
      folders = [self._frame_folder(entry, info)]
    if not all(os.path.isdir(f) for f in folders):
      return None
    total = 0
    for folder in folders:
      with os.scandir(folder) as children:
        total += sum(child.stat().st_size for child in children if child.is_file())
    return total

  def problem(self, entry: video_lists.VideoEntry) -> str | None:
    """Why `entry` cannot be read, as far as the files on disk say without decoding
    (missing video file, missing or empty frame folder); None when it looks readable."""
    info = self.infos.get(entry.key)
    if self.stream == 'flow':
      folders = flow.find_flow_folders(self.flow_dir, entry.name, info.path if info else None)
    elif self.kind == 'videos':
      found = video_lists.resolve_video(self.videos_dir, entry) if self.videos_dir else None
      return None if found else f'{entry.rel_path} not found under {self.videos_dir}'
    else:
      folders = [self._frame_folder(entry, info)]
    counts = []
    for folder in folders:
      pattern = (frame_folders.FRAME_PATTERN if self.stream == 'flow'
                 else frame_folders.frame_pattern(folder))
      count, reason = frame_folders.count_frames(folder, info.num_frames if info else None,
                                          pattern=pattern)
      if reason:
        return reason
      counts.append(count)
    return _uv_mismatch(counts) if self.stream == 'flow' else None

  def frame_shape(self, entry: video_lists.VideoEntry) -> tuple[int, int, int]:
    """(frames, height, width) of `entry` as this source gives them (resized to the short
    side), reading one frame. Raises IOError/ValueError as `load`."""
    counted = []
    def first(num_frames: int) -> np.ndarray:
      counted.append(int(num_frames))
      return np.zeros([1], int)
    frame = self.load(entry, first)
    return counted[-1], int(frame.shape[1]), int(frame.shape[2])

  def _load_flow(self, entry: video_lists.VideoEntry, choose) -> np.ndarray:
    """`load` for the flow stream: u and v planes stacked on the last axis."""
    info = self.infos.get(entry.key)
    folders = flow.find_flow_folders(self.flow_dir, entry.name, info.path if info else None)
    counts = []
    for folder in folders:
      count, reason = frame_folders.count_frames(folder, info.num_frames if info else None)
      if reason:
        raise IOError(f'{reason}: run //data_tools:extract_flow')
      counts.append(count)
    mismatch = _uv_mismatch(counts)
    if mismatch:
      raise IOError(mismatch)
    indices = choose(counts[0])
    planes = [np.stack([flow.resize_codes(f, self.short_side) for f in
                        frame_folders.read_frames(folder, indices.reshape(-1), grayscale=True)])
              for folder in folders]
    frames = np.stack(planes, axis=-1)
    return frames.reshape(indices.shape + frames.shape[1:])


def _uv_mismatch(counts: list[int]) -> str | None:
  """Why u and v planes of `counts` frames cannot pair up (never cut to the shorter)."""
  if len(set(counts)) > 1:
    return (f'u/v length mismatch: u has {counts[0]} frames, v {counts[1]}: extract its flow '
            'again (//data_tools:extract_flow)')
  return None


def readable_videos(params: Any, subset: str) -> tuple[int, int, list[str]]:
  """(readable, listed, problems) of `subset`'s videos ('train' or 'test') for the
  videos and frames sources, from the files on disk (`VideoSource.problem`): a quick
  count before training, which decoding may still lower."""
  source = VideoSource(params)
  entries = source.entries(subset)
  problems = [f'{e.name}: {p}' for e in entries for p in [source.problem(e)] if p]
  return len(entries) - len(problems), len(entries), problems


def _generator(source: VideoSource, entries: list[video_lists.VideoEntry], params: Any,
               training: bool, seed: int) -> Iterator[tuple]:
  rng = np.random.default_rng(seed)
  T, K = params.clip_frames, params.eval_clips
  skipped = 0
  while True:
    order = rng.permutation(len(entries)) if training else range(len(entries))
    produced = 0
    for i in order:
      entry = entries[i]
      try:
        if training:
          frames = source.load(entry, lambda n: train_clip_indices(n, T, rng))
        else:
          frames = source.load(entry, lambda n: eval_clip_indices(n, T, K))
      except (IOError, ValueError) as e:
        skipped += 1
        logging.warning('input_fn: skipped %d bad video(s) so far; this one: %s: %s',
                        skipped, entry.rel_path, e)
        continue
      produced += 1
      if training:
        yield frames, np.int64(entry.label)
      else:
        yield frames, np.int64(entry.label), np.int64(entry.index)
    if not training or not produced:
      return


def input_fn(mode: str, params: Any,
             input_context: tf.distribute.InputContext | None = None) -> tf.data.Dataset:
  """Dataset with exactly the outputs of `pipeline.input_fn` for the 'videos' and 'frames'
  sources (worker-sharded by video, round-robin over the split list)."""
  training = mode == ModeKeys.TRAIN
  source = VideoSource(params)
  num_shards, shard_index = pipeline.worker_shard(input_context)
  entries = source.entries('train' if training else 'test')[shard_index::num_shards]
  # The videos the list names (entries and those kept out): "N of M listed videos".
  listed = source.split.num_videos('test') if num_shards == 1 else len(entries)
  if not entries:
    raise ValueError(f'no videos for this worker in {params.data_dir} (split {params.split})')
  T, S = params.clip_frames, params.crop_size
  stream = source.stream
  C = pipeline.stream_channels(stream)
  frames_spec = tf.TensorSpec([T, None, None, C] if training else
                              [params.eval_clips, T, None, None, C], tf.uint8)
  label_spec = tf.TensorSpec([], tf.int64)
  signature = (frames_spec, label_spec) if training else (frames_spec, label_spec, label_spec)
  generators = min(GENERATORS, len(entries))

  def one_generator(g: tf.Tensor) -> tf.data.Dataset:
    def make(g_value):
      g_value = int(g_value)
      return _generator(source, entries[g_value::generators], params, training,
                        params.random_seed * 1000 + shard_index * 100 + g_value)
    return tf.data.Dataset.from_generator(make, output_signature=signature, args=(g,))

  dataset = tf.data.Dataset.range(generators).interleave(
      one_generator, cycle_length=generators, num_parallel_calls=generators,
      deterministic=not training)
  if training:
    def prepare_clip(frames, label):
      clip = pipeline.random_flip(pipeline.crop_decoded(frames, S, training=True), stream)
      clip.set_shape([T, S, S, C])
      return {'clips': pipeline.to_unit_range(clip)}, label
    dataset = dataset.map(prepare_clip, num_parallel_calls=tf.data.AUTOTUNE)
    dataset = dataset.shuffle(max(params.shuffle_buffer, 1))
    dataset = dataset.batch(pipeline.replica_batch_size(params, True, input_context),
                            drop_remainder=True)
  else:
    M = params.eval_crops
    K = params.eval_clips * M  # views per video

    def prepare_clips(clips, label, index):
      clips = pipeline.eval_views(clips, S, M)
      clips.set_shape([K, T, S, S, C])
      features = {'clips': pipeline.to_unit_range(clips), 'video_index': tf.fill([K], index)}
      if mode == ModeKeys.EVAL:  # the videos this evaluation should see: its list's
        features['videos_listed'] = tf.fill([K], tf.constant(listed, tf.int64))
      return tf.data.Dataset.from_tensor_slices((features, tf.fill([K], label)))
    dataset = dataset.flat_map(prepare_clips)
    dataset = dataset.batch(pipeline.replica_batch_size(params, False, input_context))
    if mode == ModeKeys.PREDICT:
      dataset = dataset.map(lambda features, label: features)
  return dataset.prefetch(tf.data.AUTOTUNE)

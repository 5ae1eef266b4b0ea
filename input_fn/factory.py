"""`make_input_fn(params, mode)`: the input function for params.data_source.

Sources handled here: 'tfrecord' (`pipeline.py`, the fast route), 'videos' and 'frames'
(`direct.py`, OpenCV without preparation). 'synthetic' belongs to `input_fn/synthetic.py`.
All return the same contract (see `pipeline.py`), except that the 'tfrecord' route leaves
the clips uint8 [0, 255] for the tower model_fn to scale on its devices:
TRAIN `({'clips': float32 [b, T, S, S, C]}, int64 [b])` (C = 3 rgb, 2 flow); EVAL
`({'clips': ..., 'video_index': int64 [b]}, int64 [b])`; PREDICT the EVAL features.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, Callable

import tensorflow as tf

from input_fn import direct, manifest, pipeline, records, ucf101

InputFn = Callable[[tf.distribute.InputContext | None], tf.data.Dataset]
SOURCES = ('tfrecord', 'videos', 'frames')


def _manifest_source(data_dir: str) -> str | None:
  """The `source` (videos, frames or flow) the records of `data_dir` were prepared from,
  from its manifests; None when there is none or it is damaged (`manifest.read` names a
  damaged one when the data is read)."""
  for subset in ('train', 'test'):
    path = manifest.manifest_path(data_dir, subset)
    if os.path.exists(path):
      try:
        with open(path) as f:
          found = json.load(f)
      except (OSError, ValueError):
        return None
      return found.get('source') if isinstance(found, dict) else None
  return None


def stream_data_problem(params: Any) -> str | None:
  """Why the files in `params.data_dir` cannot give clips of `params.stream` (a validated
  TrainParams: a source that cannot give flow at all is refused when it is made), saying
  what to run; None when they can (or when data_dir does not exist: reported elsewhere)."""
  stream, source, data_dir = params.stream, params.data_source, params.data_dir
  extract = ('bazel run //data_tools:extract_flow -- --data_dir=<UCF101 root holding UCF-101/>')
  prepare = ('bazel run //data_tools:prepare -- --source=flow --data_dir=<UCF101 root holding '
             'tvl1_flow/> --out=<new directory>')
  if not data_dir or not os.path.isdir(data_dir):
    return None
  if stream == 'flow' and source == 'frames':
    flow_dir = os.path.join(data_dir, ucf101.FLOW_DIR_NAME)
    if not all(os.path.isdir(os.path.join(flow_dir, c)) for c in ('u', 'v')):
      return (f'stream=flow with data_source=frames reads {flow_dir}/u and /v, which are '
              f'not there: run `bazel run //data_tools:extract_flow -- --data_dir={data_dir}`')
  if source == 'tfrecord':
    prepared = _manifest_source(data_dir)
    if stream == 'flow' and prepared not in (None, 'flow'):
      return (f'stream=flow, but data_dir={data_dir} holds RGB records (prepared with '
              f'--source={prepared}): prepare flow records ({prepare}; after {extract}) and '
              'pass that --out as --data_dir')
    if stream == 'rgb' and prepared == 'flow':
      return (f'stream=rgb, but data_dir={data_dir} holds flow records (prepared with '
              '--source=flow): pass the RGB records\' directory, or --stream=flow')
  return None


def check_data_params(params: Any, mode: str) -> None:
  """Raises ValueError naming the data parameter that cannot work with the files in
  data_dir (`params` is a validated TrainParams: its values are in range). Prepared data
  (tfrecord) must fit the model: every label < num_classes and, for training, train and
  test disjoint by video (`manifest.training_data_problems`); the subset `mode` reads must
  hold at least one record (`manifest.ManifestError` otherwise)."""
  if params.data_source not in SOURCES:
    raise ValueError(f'data_source={params.data_source!r} is not handled by '
                     f'input_fn.factory (it handles {", ".join(SOURCES)})')
  if not params.data_dir:
    raise ValueError(f'data_source={params.data_source} needs data_dir')
  if not os.path.isdir(params.data_dir):
    raise ValueError(f'data_dir={params.data_dir!r} is not a directory')
  problem = stream_data_problem(params)
  if problem:
    raise ValueError(problem)
  if params.data_source == 'tfrecord':
    needed = manifest.SUBSETS if mode == tf.estimator.ModeKeys.TRAIN else ('test',)
    problems = manifest.training_data_problems(params.data_dir, params.num_classes, needed,
                                               params.dataset)
    if problems:
      raise manifest.ManifestError(problems[0])
    subset = 'train' if mode == tf.estimator.ModeKeys.TRAIN else 'test'
    prepared = manifest.read(params.data_dir, subset)
    if prepared.get('num_records', 1) == 0:
      raise manifest.ManifestError(
          f'{manifest.manifest_path(params.data_dir, subset)}: 0 {subset} records of '
          f'{prepared.get("num_listed", 0)} listed videos: no run trains or evaluates on zero '
          'data; fix the source (see its skipped list) and prepare again')
    listed = manifest.read(params.data_dir, 'test')['num_listed']
    if mode != tf.estimator.ModeKeys.TRAIN and listed > params.max_eval_videos:
      raise ValueError(f'max_eval_videos={params.max_eval_videos} is smaller than the '
                       f'{listed} videos of the eval split '
                       f'({manifest.manifest_path(params.data_dir, "test")})')


SAMPLED_VIDEOS = 8  # videos `frame_sample` looks at


def frame_sample(params: Any, subset: str, count: int = SAMPLED_VIDEOS, decoded: bool = False
                 ) -> list[tuple[str, int, int, int]]:
  """(video, frames, height, width) of up to `count` videos of `subset` ('train' or
  'test'), spread evenly over it, with frames as the input gives them to the crops
  (tfrecord: as prepared; videos and frames: resized to frame_short_side, or with
  `decoded` as the files hold them). Reads one record, or one frame, per video; videos
  that cannot be read are left out; [] for the synthetic source or unreadable data."""
  if params.data_source == 'tfrecord':
    return records_frame_sample(params.data_dir, subset, count)
  if params.data_source not in ('videos', 'frames'):
    return []
  if decoded:
    params = dataclasses.replace(params, frame_short_side=0)
  try:
    source = direct.VideoSource(params)
    entries = sorted(source.entries(subset), key=lambda e: e.name)
  except (OSError, ValueError):
    return []
  found = []
  for entry in entries[::max(1, -(-len(entries) // count))][:count]:
    try:
      found.append((entry.name, *source.frame_shape(entry)))
    except (OSError, ValueError):
      continue
  return found


def records_frame_sample(data_dir: str, subset: str, count: int = SAMPLED_VIDEOS
                         ) -> list[tuple[str, int, int, int]]:
  """`frame_sample` of the records in `data_dir`: the first records of up to `count` of
  the subset's shards, spread evenly over them, `count` records in all (fewer if the
  subset has fewer)."""
  try:
    shards = manifest.shard_paths(data_dir, subset)
  except manifest.ManifestError:
    return []
  chosen = shards[::max(1, -(-len(shards) // count))][:count]
  per_shard = -(-count // len(chosen))
  found = []
  for path, _ in chosen:
    try:
      found += [records.frame_shape(r) for r in records.first_records(path, per_shard)]
    except (tf.errors.OpError, OSError, ValueError, IndexError):
      continue
  return found[:count]


def make_input_fn(params: Any, mode: str) -> InputFn:
  """Returns `fn(input_context=None) -> tf.data.Dataset` for `mode` (a tf.estimator.ModeKeys).

  Checks the data parameters now, so a bad configuration fails before training starts.
  """
  check_data_params(params, mode)

  def input_fn(input_context: tf.distribute.InputContext | None = None) -> tf.data.Dataset:
    if params.data_source == 'tfrecord':
      # The model_fn turns the count of skipped bad records into a summary, and scales the
      # uint8 clips on each tower's device (a quarter of the bytes through the pipeline).
      return pipeline.input_fn(mode, params, input_context,
                               with_skipped_count=mode == tf.estimator.ModeKeys.TRAIN,
                               uint8_clips=True)
    return direct.input_fn(mode, params, input_context)
  return input_fn

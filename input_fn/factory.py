"""`make_input_fn(params, mode)`: the input function for params.data_source.

Sources handled here: 'tfrecord' (`pipeline.py`, the fast route), 'videos' and 'frames'
(`direct.py`, OpenCV without preparation). 'synthetic' belongs to `input_fn/synthetic.py`.
All return the same contract (see `pipeline.py`):
TRAIN `({'clips': float32 [b, T, S, S, 3]}, int64 [b])`; EVAL
`({'clips': ..., 'video_index': int64 [b]}, int64 [b])`; PREDICT the EVAL features.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable

import tensorflow as tf

from input_fn import direct, pipeline, records

InputFn = Callable[[tf.distribute.InputContext | None], tf.data.Dataset]
SOURCES = ('tfrecord', 'videos', 'frames')


def check_data_params(params: Any, mode: str) -> None:
  """Raises ValueError naming the data parameter that cannot work."""
  if params.data_source not in SOURCES:
    raise ValueError(f'data_source={params.data_source!r} is not handled by '
                     f'input_fn.factory (it handles {", ".join(SOURCES)})')
  if not params.data_dir:
    raise ValueError(f'data_source={params.data_source} needs data_dir')
  if not os.path.isdir(params.data_dir):
    raise ValueError(f'data_dir={params.data_dir!r} is not a directory')
  if params.split not in (1, 2, 3):
    raise ValueError(f'split must be 1, 2 or 3, got {params.split}')
  for name in ('eval_clips', 'shuffle_buffer', 'max_eval_videos'):
    if getattr(params, name) < 1:
      raise ValueError(f'{name} must be positive, got {getattr(params, name)}')
  if params.frame_short_side < 0 or params.input_threads < 0:
    raise ValueError('frame_short_side and input_threads must be >= 0')
  if mode != tf.estimator.ModeKeys.TRAIN and params.data_source == 'tfrecord':
    manifest = os.path.join(params.data_dir, records.MANIFEST.format(subset='test'))
    if os.path.exists(manifest):
      with open(manifest) as f:
        listed = json.load(f).get('num_listed', 0)
      if listed > params.max_eval_videos:
        raise ValueError(f'max_eval_videos={params.max_eval_videos} is smaller than the '
                         f'{listed} videos of the eval split ({manifest})')


def make_input_fn(params: Any, mode: str) -> InputFn:
  """Returns `fn(input_context=None) -> tf.data.Dataset` for `mode` (a tf.estimator.ModeKeys).

  Checks the data parameters now, so a bad configuration fails before training starts.
  """
  check_data_params(params, mode)
  route = pipeline.input_fn if params.data_source == 'tfrecord' else direct.input_fn

  def input_fn(input_context: tf.distribute.InputContext | None = None) -> tf.data.Dataset:
    if params.data_source == 'tfrecord' and mode == tf.estimator.ModeKeys.TRAIN:
      # The model_fn turns the count of skipped bad records into a summary.
      return pipeline.input_fn(mode, params, input_context, with_skipped_count=True)
    return route(mode, params, input_context)
  return input_fn

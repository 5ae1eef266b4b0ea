"""`make_input_fn(params, mode)`: the input function for params.data_source, the one place
that chooses it.

Sources: 'synthetic' (`synthetic.py`, random clips, no file), 'tfrecord' (`pipeline.py`, the
fast route), 'videos' and 'frames' (`direct.py`, OpenCV without preparation). Before a file
source's input_fn exists its data is checked (`data_checks.check`: raises `DataError` on the
first problem). All return the same contract (see `pipeline.py`), except that the
'tfrecord' route leaves the clips uint8 [0, 255] for the tower model_fn to scale on its
devices: TRAIN `({'clips': float32 [b, T, S, S, C]}, int64 [b])` (C = 3 rgb, 2 flow); EVAL
`({'clips': ..., 'video_index': int64 [b]}, int64 [b])`; PREDICT the EVAL features.
"""

from __future__ import annotations

from typing import Any, Callable

import tensorflow as tf

from input_fn import data_checks, direct, pipeline, synthetic

InputFn = Callable[[tf.distribute.InputContext | None], tf.data.Dataset]


def subsets_read(mode: str) -> tuple[str, ...]:
  """The subsets an input_fn of `mode` reads: 'train' to train, 'test' otherwise."""
  return ('train',) if mode == tf.estimator.ModeKeys.TRAIN else ('test',)


def make_input_fn(params: Any, mode: str,
                  task_context: tf.distribute.InputContext | None = None) -> InputFn:
  """Returns `fn(input_context=None) -> tf.data.Dataset` for `mode` (a tf.estimator.ModeKeys).

  Checks the data now (`data_checks.check`), so a bad configuration fails before training
  starts. `task_context` is this cluster task's share of the data
  (`towers.cluster.spec.ClusterTask.input_context`), used when the Estimator passes none.
  """
  data_checks.check(params, subsets_read(mode))

  def input_fn(input_context: tf.distribute.InputContext | None = None) -> tf.data.Dataset:
    context = input_context or task_context
    if params.data_source == 'synthetic':
      return synthetic.input_fn(mode, params, context)
    if params.data_source == 'tfrecord':
      # The model_fn turns the count of skipped bad records into a summary, and scales the
      # uint8 clips on each tower's device (a quarter of the bytes through the pipeline).
      return pipeline.input_fn(mode, params, context,
                               with_skipped_count=mode == tf.estimator.ModeKeys.TRAIN,
                               uint8_clips=True)
    return direct.input_fn(mode, params, context)
  return input_fn

"""Chooses the input_fn for `params.data_source`."""

from __future__ import annotations

from typing import Callable

import tensorflow as tf

from input_fn import synthetic

InputFn = Callable[..., tf.data.Dataset]


def make_input_fn(params, mode: str,
                  task_context: tf.distribute.InputContext | None = None) -> InputFn:
  """An Estimator input_fn for `mode` (TRAIN or EVAL) that accepts an optional input_context.

  `task_context` is this cluster task's share of the data
  (`towers.cluster.spec.ClusterTask.input_context`), used when the Estimator passes none.
  """
  if params.data_source == 'synthetic':
    def make(input_context: tf.distribute.InputContext | None = None) -> tf.data.Dataset:
      return synthetic.input_fn(mode, params, input_context)
  else:
    from input_fn import factory  # pylint: disable=g-import-not-at-top
    make = factory.make_input_fn(params, mode)
  if task_context is None:
    return make

  def input_fn(input_context: tf.distribute.InputContext | None = None) -> tf.data.Dataset:
    return make(input_context or task_context)
  return input_fn

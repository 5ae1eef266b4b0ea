"""Chooses the input_fn for `params.data_source`."""

from __future__ import annotations

from typing import Callable

import tensorflow as tf

from input_fn import synthetic

InputFn = Callable[..., tf.data.Dataset]


def make_input_fn(params, mode: str) -> InputFn:
  """An Estimator input_fn for `mode` (TRAIN or EVAL) that accepts an optional input_context."""
  if params.data_source == 'synthetic':
    def input_fn(input_context: tf.distribute.InputContext | None = None) -> tf.data.Dataset:
      return synthetic.input_fn(mode, params, input_context)
    return input_fn
  from input_fn import factory  # pylint: disable=g-import-not-at-top
  return factory.make_input_fn(params, mode)

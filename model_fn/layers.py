"""Layers that networks build on, and the explicit per-tower context they receive.

Networks are plain functions `network(clips, ctx) -> logits`. Everything that differs
between towers (training or not, main tower or not, where batch-norm statistics go) is in
the `TowerContext` argument: there is no hidden graph-collection state and no call-order
contract. Variables are created with `tf.compat.v1.get_variable`, so the tower builder can
share them across towers (`reuse`) and place them (custom getter) without the network
knowing; their names are exactly those of a one-tower graph.

Tensor layout everywhere: NDHWC, i.e. `[batch, frames, height, width, channels]`.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import tensorflow as tf

tf1 = tf.compat.v1

BN_EPSILON = 1e-3
BN_DECAY = 0.999


@dataclasses.dataclass(frozen=True)
class BatchNormMoments:
  """Batch statistics one tower measured for one batch-norm layer.

  `mean` and `variance` have the layer's channel shape; `count` is the number of values
  each statistic was computed from (batch * frames * height * width), as a float scalar.
  """
  moving_mean: tf.Variable
  moving_variance: tf.Variable
  mean: tf.Tensor
  variance: tf.Tensor
  count: tf.Tensor
  decay: float


@dataclasses.dataclass
class TowerContext:
  """What a network needs to know about the tower it is being built in.

  `index` 0 is the main tower (`is_main`): a network writes its own summaries there only,
  once per step rather than once per tower. `is_training` selects batch statistics (and
  dropout) versus moving statistics. Batch-norm layers append their
  batch moments to `bn_moments`; the tower builder, not the layer, turns them into
  moving-average updates (see `model_fn/batch_norm_updates.py`).
  """
  index: int = 0
  is_training: bool = False
  bn_moments: list[BatchNormMoments] = dataclasses.field(default_factory=list)

  @property
  def is_main(self) -> bool:
    return self.index == 0


def variable_name(v: tf.Variable) -> str:
  """A variable's graph name without the `:0` suffix, the same for every tower and every
  `tf.distribute` replica (whose local copies' ops are named `<name>/replica_<i>`)."""
  return v.name.split(':')[0]


def conv3d(x: tf.Tensor, filters: int, kernel: Sequence[int], strides: Sequence[int] = (1, 1, 1),
           use_bias: bool = False, padding: str = 'SAME', name: str = 'conv_3d') -> tf.Tensor:
  """3-D convolution with variables `<scope>/<name>/w` [kt, kh, kw, in, out] and optional `b`."""
  with tf1.variable_scope(name):
    in_channels = int(x.shape[-1])
    w = tf1.get_variable('w', list(kernel) + [in_channels, filters],
                         initializer=tf1.initializers.variance_scaling(2.0))
    y = tf.nn.conv3d(x, w, strides=[1, *strides, 1], padding=padding)
    if use_bias:
      b = tf1.get_variable('b', [filters], initializer=tf1.zeros_initializer())
      y = tf.nn.bias_add(y, b)
  return y


def dense(x: tf.Tensor, units: int, name: str = 'dense') -> tf.Tensor:
  """Fully connected layer with variables `<name>/kernel` [in, units] and `<name>/bias`."""
  with tf1.variable_scope(name):
    kernel = tf1.get_variable('kernel', [int(x.shape[-1]), units],
                              initializer=tf1.initializers.glorot_uniform())
    bias = tf1.get_variable('bias', [units], initializer=tf1.zeros_initializer())
  return tf.nn.bias_add(tf.matmul(x, kernel), bias)


def batch_norm(x: tf.Tensor, ctx: TowerContext, name: str = 'batch_norm',
               use_scale: bool = False, decay: float = BN_DECAY,
               epsilon: float = BN_EPSILON, stat_shape: Sequence[int] | None = None) -> tf.Tensor:
  """Batch normalisation over all axes but the last (channels).

  Variables: `beta` (offset), optionally `gamma` (scale), `moving_mean` and
  `moving_variance`, whose shape is `stat_shape` (default `[C]`; DeepMind's Kinetics-600
  checkpoint uses `[1, 1, 1, 1, C]`). Moving statistics are MEAN-aggregated so that
  `tf.distribute` replicas may update them too. In training the batch moments are
  recorded in `ctx.bn_moments`; this layer creates no update op itself.
  """
  channels = int(x.shape[-1])
  shape = list(stat_shape) if stat_shape is not None else [channels]
  with tf1.variable_scope(name):
    beta = tf1.get_variable('beta', shape, initializer=tf1.zeros_initializer())
    gamma = (tf1.get_variable('gamma', shape, initializer=tf1.ones_initializer())
             if use_scale else None)
    moving_mean = tf1.get_variable(
        'moving_mean', shape, initializer=tf1.zeros_initializer(), trainable=False,
        aggregation=tf.VariableAggregation.MEAN)
    moving_variance = tf1.get_variable(
        'moving_variance', shape, initializer=tf1.ones_initializer(), trainable=False,
        aggregation=tf.VariableAggregation.MEAN)
  flat = lambda v: tf.reshape(v, [channels]) if v is not None else None
  if ctx.is_training:
    mean, variance = tf.nn.moments(x, axes=list(range(x.shape.rank - 1)))
    count = tf.cast(tf.size(x) // channels, tf.float32)
    ctx.bn_moments.append(BatchNormMoments(moving_mean, moving_variance,
                                           tf.reshape(mean, shape), tf.reshape(variance, shape),
                                           count, decay))
  else:
    mean, variance = flat(moving_mean), flat(moving_variance)
  return tf.nn.batch_normalization(x, mean, variance, flat(beta), flat(gamma), epsilon)


def dropout(x: tf.Tensor, ctx: TowerContext, keep_prob: float) -> tf.Tensor:
  """Dropout in training only; identity when `keep_prob` is 1 or in evaluation."""
  if not ctx.is_training or keep_prob >= 1.0:
    return x
  return tf.nn.dropout(x, rate=1.0 - keep_prob)

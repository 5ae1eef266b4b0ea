"""A small 3-D CNN for CPU runs and tests: conv3d(+BN)+ReLU blocks, pooling, dense.

Input `[batch, frames, height, width, channels]` float32 in [-1, 1]; output logits
`[batch, num_classes]`. Any frame count >= 2 and crop >= 8 work. With
`use_batch_norm=False` the convolutions get a bias instead, and the network is a pure
function of its weights (no batch statistics), which the tower-equivalence tests rely on.
"""

from __future__ import annotations

from typing import Callable

import tensorflow as tf

from model_fn import layers

tf1 = tf.compat.v1

SCOPE = 'c3d_small'
WIDTHS = (16, 32, 64)


def build(num_classes: int, use_batch_norm: bool = True, dropout_keep: float = 1.0
          ) -> Callable[[tf.Tensor, layers.TowerContext], tf.Tensor]:
  """Returns `network(clips, ctx) -> logits` with variables under `c3d_small/`."""

  def network(clips: tf.Tensor, ctx: layers.TowerContext) -> tf.Tensor:
    x = clips
    with tf1.variable_scope(SCOPE):
      for i, width in enumerate(WIDTHS):
        with tf1.variable_scope(f'block{i + 1}'):
          x = layers.conv3d(x, width, (3, 3, 3), use_bias=not use_batch_norm)
          if use_batch_norm:
            x = layers.batch_norm(x, ctx, decay=0.9)
          x = tf.nn.relu(x)
          # Pool space every block; pool time from the second block on, keeping >= 1 frame.
          t_pool = 2 if i > 0 and x.shape[1] >= 2 else 1
          x = tf.nn.max_pool3d(x, [1, t_pool, 2, 2, 1], [1, t_pool, 2, 2, 1], 'SAME')
      x = tf.reduce_mean(x, axis=[1, 2, 3])
      x = layers.dropout(x, ctx, dropout_keep)
      return layers.dense(x, num_classes, name='logits')

  return network

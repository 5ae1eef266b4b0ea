"""Registry of networks: `build_network(params)` returns `network(clips, ctx) -> logits`."""

from __future__ import annotations

from typing import Callable

import tensorflow as tf

from model_fn import layers
from model_fn.networks import c3d_small

Network = Callable[[tf.Tensor, layers.TowerContext], tf.Tensor]


def build_network(params) -> Network:
  """Builds the network named by `params.model` for `params.num_classes` outputs."""
  if params.model == 'c3d_small':
    return c3d_small.build(params.num_classes, use_batch_norm=params.batch_norm,
                           dropout_keep=params.dropout_keep)
  raise ValueError(f'model={params.model!r} is not a known network')

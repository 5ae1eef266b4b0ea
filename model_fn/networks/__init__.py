"""Registry of networks: `build_network(params)` returns `network(clips, ctx) -> logits`."""

from __future__ import annotations

from typing import Callable

import tensorflow as tf

from model_fn import layers
from model_fn.networks import c3d_small, i3d

Network = Callable[[tf.Tensor, layers.TowerContext], tf.Tensor]


def build_network(params) -> Network:
  """Builds the network named by `params.model` for `params.num_classes` outputs."""
  if params.model == 'c3d_small':
    return c3d_small.build(params.num_classes, use_batch_norm=params.batch_norm,
                           dropout_keep=params.dropout_keep)
  if params.model == 'i3d':
    # DeepMind's Unit3D always has batch norm: params.batch_norm does not apply.
    return i3d.build(params.num_classes, stream=params.stream,
                     dropout_keep=params.dropout_keep, head=params.head,
                     pretrained_classes=params.pretrained_classes)
  raise ValueError(f'model={params.model!r} is not a known network')


def input_channels(params) -> int:
  """Channels the network expects: 2 for an optical-flow stream, else 3 (RGB)."""
  return 2 if params.stream == 'flow' else 3

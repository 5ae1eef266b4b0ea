"""The variables a network creates, known before the real graph is built.

`network_variables(network, clip_shape)` calls the network once on a placeholder clip in a
throw-away graph and lists what it created: names, shapes and bytes are those the towers
will create, because variable names do not depend on the graph and parameter shapes do
not depend on the batch. A placement that must see every variable before placing the
first (largest first over the ps tasks, `variable_placement.LargestFirstPlacement`) is
built from this list.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

import tensorflow as tf

from model_fn.layers import TowerContext

tf1 = tf.compat.v1


@dataclasses.dataclass(frozen=True)
class VariableInfo:
  """One variable: full name (no ':0'), static shape, bytes of its value, trainable."""
  name: str
  shape: tuple[int, ...]
  num_bytes: int
  trainable: bool


def network_variables(network: Callable[[tf.Tensor, TowerContext], tf.Tensor],
                      clip_shape: Sequence[int]) -> list[VariableInfo]:
  """Every variable `network` creates for a batch of one clip of `clip_shape` (frames,
  height, width, channels), in creation order (the order in which a placement sees them),
  with its byte size and whether it is trainable (trainable ones are pulled and have
  gradients pushed every step). Nothing is run; the caller's graph is untouched."""
  graph = tf.Graph()
  with graph.as_default():
    clips = tf1.placeholder(tf.float32, [1, *clip_shape])
    network(clips, TowerContext(index=0, is_training=True))
    trainable = {v.op.name for v in tf1.trainable_variables()}
    return [VariableInfo(v.op.name, tuple(v.shape.as_list()),
                         v.shape.num_elements() * v.dtype.size, v.op.name in trainable)
            for v in tf1.global_variables()]

"""FLOPs of one training example, counted from the graph by TensorFlow's profiler.

`training_flops(network, clip_shape, num_classes)` builds the network for ONE clip (static
shapes), the per-example cross-entropy, and its gradients with respect to every trainable
variable, and counts float operations with `tf.compat.v1.profiler` and the
`float_operation` option, over the ops the loss depends on (forward FLOPs) and over the
ops the gradients depend on (total); backward = total - forward. The optimizer's update is not counted
(a few FLOPs per parameter).

TensorFlow registers FLOP statistics for `Conv3D` but not for its gradients, which would
silently drop two thirds of a 3-D CNN's training work. This module registers them with the
same formula (2 x output-gradient elements x kernel volume x input channels for the input
gradient; the same count for the filter gradient). Ops with no registered statistic
(pooling, ReLU and their gradients, ...) count as zero: `uncounted_types` lists them.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

import numpy as np
import tensorflow as tf
from tensorflow.python.framework import graph_util, ops

from model_fn.layers import TowerContext

tf1 = tf.compat.v1


def _conv3d_backprop_flops(graph: tf.Graph, node) -> ops.OpStats:
  """Conv3DBackpropInputV2 / Conv3DBackpropFilterV2: inputs (sizes or input, filter or
  sizes, out_backprop); the kernel shape is the filter input's (input gradient) or the
  op's own output's (filter gradient)."""
  out_backprop = graph_util.tensor_shape_from_node_def_name(graph, node.input[2])
  out_backprop.assert_is_fully_defined()
  if node.op == 'Conv3DBackpropInputV2':
    kernel = graph_util.tensor_shape_from_node_def_name(graph, node.input[1])
  else:
    kernel = graph_util.tensor_shape_from_node_def_name(graph, node.name)
  kernel.assert_is_fully_defined()
  kt, kh, kw, in_channels = (int(d) for d in kernel.as_list()[:4])
  count = np.prod(out_backprop.as_list(), dtype=np.int64)
  return ops.OpStats('flops', int(count) * kt * kh * kw * in_channels * 2)


for _op_type in ('Conv3DBackpropInputV2', 'Conv3DBackpropFilterV2'):
  ops.RegisterStatistics(_op_type, 'flops')(_conv3d_backprop_flops)


# Op types that move, create or reshape data and do no arithmetic worth counting.
NOT_ARITHMETIC = frozenset((
    'AssignVariableOp', 'Cast', 'ConcatOffset', 'Const', 'ExpandDims', 'Fill', 'FloorDiv',
    'FloorMod', 'Identity', 'NoOp', 'Placeholder', 'RandomUniform', 'ReadVariableOp',
    'Reshape', 'Shape', 'ShapeN', 'Slice', 'Squeeze', 'StopGradient', 'Tile',
    'TruncatedNormal', 'VarHandleOp', 'VarIsInitializedOp', 'VariableV2', 'ZerosLike'))


@dataclasses.dataclass(frozen=True)
class FlopCount:
  """Float operations for one example (a multiply-add counts 2). `uncounted_types`: op
  types of the training graph that do arithmetic but have no FLOP statistic (counted 0)."""
  forward: int
  total: int
  uncounted_types: tuple[str, ...]

  @property
  def backward(self) -> int:
    return self.total - self.forward


def graph_flops(graph: tf.Graph, outputs: Sequence[tf.Tensor] | None = None) -> int:
  """Float operations of `graph` as tf.compat.v1.profiler counts them; with `outputs`,
  of only the ops those tensors depend on (what a session fetching them executes)."""
  if outputs is not None:
    graph = _fan_in(graph, outputs)
  options = tf1.profiler.ProfileOptionBuilder.float_operation()
  options['output'] = 'none'
  return int(tf1.profiler.profile(graph, options=options).total_float_ops)


def _fan_in(graph: tf.Graph, outputs: Sequence[tf.Tensor]) -> tf.Graph:
  """A copy of the part of `graph` that `outputs` depend on. The gradient graph also holds
  ops no fetch needs (e.g. the first convolution's gradient with respect to the input
  clip), which TensorFlow prunes at run time and so must not be counted."""
  names = sorted({t.op.name for t in outputs})
  sub = tf1.graph_util.extract_sub_graph(graph.as_graph_def(), names)
  pruned = tf.Graph()
  with pruned.as_default():
    tf1.import_graph_def(sub, name='')
  return pruned


def _uncounted_types(graph: tf.Graph) -> tuple[str, ...]:
  missing = set()
  for op in graph.get_operations():
    try:
      stats = ops.get_stats_for_node_def(graph, op.node_def, 'flops')
    except ValueError:  # a shape the statistic cannot use; not expected with static shapes
      stats = ops.OpStats('flops')
    if stats.value is None and op.type not in NOT_ARITHMETIC:
      missing.add(op.type)
  return tuple(sorted(missing))


def training_flops(network: Callable[[tf.Tensor, TowerContext], tf.Tensor],
                   clip_shape: Sequence[int]) -> FlopCount:
  """Forward and forward+backward FLOPs of `network` on one clip of `clip_shape`
  (frames, height, width, channels), in training mode (batch statistics)."""
  graph = tf.Graph()
  with graph.as_default():
    clips = tf1.placeholder(tf.float32, [1, *clip_shape], name='clip')
    logits = network(clips, TowerContext(index=0, is_training=True))
    labels = tf.zeros([1], tf.int64)
    loss = tf.reduce_sum(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits))
    grads = [g for g in tf1.gradients(loss, tf1.trainable_variables()) if g is not None]
    return FlopCount(graph_flops(graph, [loss]), graph_flops(graph, grads),
                     _uncounted_types(_fan_in(graph, grads)))


@dataclasses.dataclass(frozen=True)
class VariableFlops:
  """Float operations of one example attributed to one trainable variable: `forward`,
  the forward ops in the variable's own scope (e.g. `.../conv_3d/Conv3D` for
  `.../conv_3d/w`); `backward`, those ops' gradient ops (`gradients/.../conv_3d/...`:
  the input and filter gradients of a convolution)."""
  name: str
  forward: int
  backward: int


def variable_flops(network: Callable[[tf.Tensor, TowerContext], tf.Tensor],
                   clip_shape: Sequence[int]) -> tuple[list[VariableFlops], FlopCount]:
  """Per trainable variable, in creation order, the FLOPs of its layer's forward and
  backward ops on one clip of `clip_shape`, and the whole graph's `training_flops` count.

  An op belongs to the variable whose scope (its name without the last component) is
  the longest prefix of the op's name, with the `gradients/` prefix removed for backward
  ops; ops in no variable's scope (pooling, concat, the loss) belong to none, so the
  per-variable sums can fall short of the totals by their FLOPs. Only ops the loss
  (forward) or the gradients (backward) need are counted, as in `training_flops`."""
  graph = tf.Graph()
  with graph.as_default():
    clips = tf1.placeholder(tf.float32, [1, *clip_shape], name='clip')
    logits = network(clips, TowerContext(index=0, is_training=True))
    loss = tf.reduce_sum(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.zeros([1], tf.int64), logits=logits))
    variables = tf1.trainable_variables()
    grads = [g for g in tf1.gradients(loss, variables) if g is not None]
    totals = FlopCount(graph_flops(graph, [loss]), graph_flops(graph, grads),
                       _uncounted_types(_fan_in(graph, grads)))
    forward_ops = {op.name for op in _fan_in(graph, [loss]).get_operations()}
    needed = _fan_in(graph, grads)
  scopes = {v.op.name: v.op.name.rsplit('/', 1)[0] + '/' for v in variables}
  by_length = sorted(scopes.items(), key=lambda item: -len(item[1]))
  forward = dict.fromkeys(scopes, 0)
  backward = dict.fromkeys(scopes, 0)
  for op in needed.get_operations():
    flops = _op_flops(needed, op)
    if not flops:
      continue
    is_forward = op.name in forward_ops
    name = op.name if is_forward else op.name.split('gradients/', 1)[-1]
    owner = next((v for v, scope in by_length if name.startswith(scope)), None)
    if owner is not None:
      (forward if is_forward else backward)[owner] += flops
  return [VariableFlops(v, forward[v], backward[v]) for v in scopes], totals


def _op_flops(graph: tf.Graph, op: tf.Operation) -> int:
  """The op's registered FLOP statistic, 0 without one (as the profiler counts it)."""
  try:
    stats = ops.get_stats_for_node_def(graph, op.node_def, 'flops')
  except ValueError:
    return 0
  return int(stats.value or 0)

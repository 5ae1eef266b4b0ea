"""Builds a network once per tower: shared variables, per-tower ops on per-tower devices.

Tower i runs under `tf.device(devices[i])` and name scope `tower_<i>`. Variables are
created by tower 0 and reused by the others (`reuse=True`), through a custom getter that
places them with a `VariablePlacement`; their names are those of a one-tower graph, so
checkpoints interchange between tower counts.

With gradient accumulation (`model_fn/accumulation.py`) `build_towers` is called once per
micro-batch: micro-batch m > 0 builds its towers under name scope
`micro_batch_<m>/tower_<i>`, reuses every variable and pulled tensor, and its forward
pass on device i starts only after the ops it is given to wait for (`start_after[i]`).
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Callable, Sequence

import tensorflow as tf

from model_fn import batch_split
from model_fn.layers import BatchNormMoments, TowerContext
from model_fn.networks import Network
from model_fn.variable_placement import VariablePlacement

tf1 = tf.compat.v1


# The conventions a network must keep to train over towers (`NetworkError.rule`).
OWN_VARIABLES = 'own_variables'  # every tower reuses tower 0's variables
UPDATE_OPS = 'update_ops'  # nothing relies on the UPDATE_OPS collection
LOGITS_SHAPE = 'logits_shape'  # logits are [batch, num_classes]


class NetworkError(ValueError):
  """A network the towers cannot train as written; the message says the fix."""

  def __init__(self, message: str, rule: str, count: int | None = None) -> None:
    super().__init__(message)
    self.rule = rule  # the convention it breaks: OWN_VARIABLES, UPDATE_OPS or LOGITS_SHAPE
    self.count = count  # variables or ops that break it (None for LOGITS_SHAPE)


def float_clips(clips: tf.Tensor) -> tf.Tensor:
  """uint8 clips [0, 255] -> float32 [-1, 1] (x * 2/255 - 1, as the input pipelines scale);
  any other dtype is returned unchanged (clips already scaled)."""
  if clips.dtype != tf.uint8:
    return clips
  return tf.cast(clips, tf.float32) * (2.0 / 255.0) - 1.0


@dataclasses.dataclass
class TowerOutputs:
  """What the towers built.

  logits[i]: float32 [b_i, num_classes]; loss_sums[i]: float32 scalar S_i, the sum of
  tower i's per-example cross-entropies (None without labels);
  sizes[i]: int32 scalar b_i; bn_moments[i]: tower i's batch-norm moments (training only);
  pulled: trainable variable name -> the one float32 tensor all towers read for it, when
  `build_towers` got a `pull` (16-bit transfers); empty otherwise.
  scope: prefix of the towers' name scopes ('' or 'micro_batch_<m>/').
  """
  logits: list[tf.Tensor]
  loss_sums: list[tf.Tensor] | None
  sizes: list[tf.Tensor]
  bn_moments: list[list[BatchNormMoments]]
  devices: tuple[str, ...]
  pulled: dict[str, tf.Tensor] = dataclasses.field(default_factory=dict)
  scope: str = ''


def _on_device(device: str):
  """tf.device(device), or no device scope at all for '' (a tf.distribute replica's own)."""
  return tf.device(device) if device else contextlib.nullcontext()


def build_towers(network: Network, clips: tf.Tensor, labels: tf.Tensor | None,
                 devices: Sequence[str], placement: VariablePlacement | None,
                 is_training: bool,
                 pull: Callable[[tf.Variable], tf.Tensor] | None = None,
                 micro_batch: int = 0, pulled: dict[str, tf.Tensor] | None = None,
                 start_after: Sequence[tf.Operation] | None = None) -> TowerOutputs:
  """Splits `clips` [B, T, H, W, C] (and `labels` [B]) over `devices` and builds each tower.

  uint8 clips are split as bytes and scaled to float32 [-1, 1] on each tower's device
  (`float_clips`): the input pipeline's threads and the host-to-device copy handle a
  quarter of the bytes of float clips.

  `placement` None leaves variables wherever the surrounding scope puts them.
  Raises `NetworkError` when a tower other than the first creates variables (the network
  does not use `tf.compat.v1.get_variable`, e.g. Keras layers) or when the network adds
  UPDATE_OPS (which no tower runs). `pull`, if given, turns each trainable variable into
  the tensor the towers read instead (once per variable, shared by all towers;
  `outputs.pulled`): `model_fn/transfer.pull`.

  Micro-batch `micro_batch` > 0 of an accumulated step (see the module docstring) reuses
  the variables of micro-batch 0 and its `pulled` tensors (so nothing is pulled twice),
  and tower i's input passes through an identity that runs after `start_after[i]`: every
  op of its forward pass that depends on the clips waits for that op.
  """
  num_towers = len(devices)
  clip_parts = batch_split.split_batch(clips, num_towers)
  label_parts = batch_split.split_batch(labels, num_towers) if labels is not None else None
  scope = f'micro_batch_{micro_batch}/' if micro_batch else ''
  outputs = TowerOutputs([], [] if labels is not None else None, [], [], tuple(devices),
                         pulled if pulled is not None else {}, scope)

  def placing_getter(getter, name, *args, **kwargs):
    variable = _placed(getter, name, *args, **kwargs)
    if pull is None or not kwargs.get('trainable', True):
      return variable
    if name not in outputs.pulled:
      outputs.pulled[name] = pull(variable)
    return outputs.pulled[name]

  def _placed(getter, name, *args, **kwargs):
    if placement is None:
      return getter(name, *args, **kwargs)
    shape = kwargs.get('shape') or (args[0] if args else [])
    dtype = kwargs.get('dtype') or tf.float32
    if placement.caching_device is not None and pull is None and _read_by_towers(
        kwargs, is_training):
      kwargs['caching_device'] = placement.caching_device
    with tf.device(placement.device_for(name, shape, dtype)):
      return getter(name, *args, **kwargs)

  outer_scope = tf1.get_variable_scope()
  update_ops_before = len(tf1.get_collection(tf1.GraphKeys.UPDATE_OPS))
  for i, device in enumerate(devices):
    ctx = TowerContext(index=i, is_training=is_training)
    num_variables = len(tf1.global_variables())
    reuse = True if i > 0 or micro_batch > 0 else None
    with tf1.variable_scope(outer_scope, reuse=reuse,
                            custom_getter=placing_getter, auxiliary_name_scope=False), \
        tf.name_scope(f'{scope}tower_{i}'), _on_device(device):
      clip_part = clip_parts[i]
      if start_after is not None:
        with tf.control_dependencies([start_after[i]]):
          clip_part = tf.identity(clip_part, name='after_previous_micro_batch')
      if i > 0 and not is_training and clip_part.shape[0] is None:
        logits = _on_at_least_one_row(network, float_clips(clip_part), ctx)
      else:
        logits = network(float_clips(clip_part), ctx)
      outputs.logits.append(logits)
      outputs.sizes.append(tf.shape(logits)[0])
      outputs.bn_moments.append(ctx.bn_moments)
      if label_parts is not None:
        losses = tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=label_parts[i], logits=tf.cast(logits, tf.float32))
        outputs.loss_sums.append(tf.reduce_sum(losses))
    if reuse:
      _check_shared_variables(i, tf1.global_variables()[num_variables:])
  _check_no_update_ops(len(tf1.get_collection(tf1.GraphKeys.UPDATE_OPS)) - update_ops_before)
  return outputs


def _on_at_least_one_row(network: Network, clips: tf.Tensor, ctx: TowerContext) -> tf.Tensor:
  """`network(clips, ctx)` for a tower whose share of a dynamic batch may be empty (the
  last evaluation batch, or a served one, holding fewer clips than there are towers): an
  empty share gets one zero clip, whose logits are dropped again, so the tower returns
  [0, num_classes] and every clip of the batch is counted once. Kernels (oneDNN's among
  them) need not accept an empty batch."""
  size = tf.shape(clips)[0]
  missing = tf.maximum(1 - size, 0)
  padded = tf.pad(clips, [[0, missing]] + [[0, 0]] * (clips.shape.rank - 1))
  return network(padded, ctx)[:size]


def _read_by_towers(getter_kwargs: dict, is_training: bool) -> bool:
  """Whether the towers read a variable, so that it gets the placement's caching device
  (one copy per worker per step, shared by its towers): trainable variables always, every
  variable outside training. In training a non-trainable variable (batch-norm moving
  statistics) is only assigned, and a cached copy would cost a read from the ps and a
  control edge back every step, as TensorFlow orders each assign after the cached read."""
  return getter_kwargs.get('trainable') is not False or not is_training


def _check_shared_variables(tower: int, created: list[tf.Variable]) -> None:
  """Tower `tower` > 0 must reuse tower 0's variables, not create its own."""
  if created:
    names = ', '.join(v.op.name for v in created[:3])
    raise NetworkError(f'tower {tower} created {len(created)} variables of its own ({names}, '
                       '...): a network must create its variables with '
                       'tf.compat.v1.get_variable (model_fn.layers, tf.compat.v1.layers), not '
                       'Keras layers, so that every tower trains the same weights',
                       OWN_VARIABLES, len(created))


def _check_no_update_ops(added: int) -> None:
  """The towers run no UPDATE_OPS: a network that relies on them would never update."""
  if added:
    raise NetworkError(f'the network added {added} ops to the UPDATE_OPS collection (e.g. '
                       'tf.compat.v1.layers.batch_normalization), which the towers never run, '
                       'so its moving statistics would never change: use '
                       'model_fn.layers.batch_norm(x, ctx), which records its moments in ctx',
                       UPDATE_OPS, added)


def tower_gradients(outputs: TowerOutputs, variables: Sequence[tf.Variable],
                    global_batch: tf.Tensor, main_tower_extra_loss: tf.Tensor | None
                    ) -> list[list[tf.Tensor | None]]:
  """d(S_i / B)/dv for every tower i and variable v (B the float32 global batch), each
  computed on tower i's device; the main tower also differentiates
  `main_tower_extra_loss` (the weight loss; None: nothing more, as for micro-batches after
  the first), so that term enters once. The 1/B enters backprop as a scalar, so the
  gradients come out scaled at no extra pass over them.
  With pulled tensors (`outputs.pulled`), the gradient of a variable is taken w.r.t. the
  tensor the towers read, on the towers' side of the transfer."""
  xs = [outputs.pulled.get(v.op.name, v) for v in variables]
  grads = []
  for i, device in enumerate(outputs.devices):
    with tf.name_scope(f'{outputs.scope}tower_{i}/gradients'), _on_device(device):
      loss = outputs.loss_sums[i] / global_batch
      if i == 0 and main_tower_extra_loss is not None:
        loss += main_tower_extra_loss
      grads.append(tf1.gradients(loss, xs, colocate_gradients_with_ops=True))
  return grads

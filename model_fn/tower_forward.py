"""The forward pass over towers that the TRAIN and EVAL graphs share, and the loss rule.

    forward(features, labels, mode, params, devices, placement, network) -> Forward

`features`: float32 clips [B, T, H, W, C] in [-1, 1] (or uint8, scaled on each tower's
device), or a dict with key 'clips' (`split_features`); `labels`: int64 [B] or None. In
TRAIN with `accumulate_steps` k the batch is k micro-batches [B / k, ...] (`accumulation.py`):
`forward` builds the first on every tower, the train spec adds the others. `Forward.logits`
float32 [B / k, num_classes] gathered on HOST_DEVICE (the tensor named 'logits').
Loss (`mean_loss`): the mean cross-entropy over the global batch plus
`weight_decay * sum(l2_loss(w))` counted once (`gradients.py`).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import tensorflow as tf

from model_fn import accumulation, gradients, tower_graph, transfer
from model_fn.devices import HOST_DEVICE
from model_fn.networks import Network, build_network
from model_fn.variable_placement import VariablePlacement

tf1 = tf.compat.v1
ModeKeys = tf.estimator.ModeKeys


def split_features(features: Any) -> tuple[tf.Tensor, tf.Tensor | None]:
  """(clips, video_index or None) from a tensor or a {'clips', 'video_index'} dict."""
  if isinstance(features, dict):
    return features['clips'], features.get('video_index')
  return features, None


def check_logits(logits: tf.Tensor, num_classes: int) -> None:
  """The network's logits must be [batch, num_classes]: other widths would make the loss
  fail at run time or the per-class metrics average over classes that cannot occur."""
  shape = logits.shape
  if shape.rank != 2 or shape[-1] != num_classes:
    raise tower_graph.NetworkError(
        f'the network returns logits of shape {shape}, expected [batch, num_classes='
        f'{num_classes}]: set num_classes to the network\'s output width, or build the '
        'network for num_classes outputs', tower_graph.LOGITS_SHAPE)


def mean_loss(loss_sums: list[tf.Tensor], global_batch: tf.Tensor, weight_loss: tf.Tensor,
              replicas: int = 1) -> tf.Tensor:
  """The reduction rule's loss: sum(loss_sums) / global_batch + weight_loss / replicas.

  `loss_sums` are the float32 scalar per-tower sums S_i of the per-example
  cross-entropies, `global_batch` the float32 number of examples over all towers (and
  replicas). With one graph of towers `replicas` is 1; under MirroredStrategy each of the
  R replicas returns its share and the strategy sums them.
  """
  return tf.add_n(loss_sums) / global_batch + weight_loss / replicas


def pull_destination(variable_device: str, devices: tuple[str, ...], host: str) -> str:
  """Where a 16-bit pull is cast back to float32: on the one tower's device (the 16-bit
  value is what crosses to it), else on the variable's own device when that is a tower's
  (nothing leaves it and comes back), else on `host`, whose float32 copy the towers share."""
  if len(devices) == 1:
    return devices[0]
  if any(_same_device(variable_device, d) for d in devices):
    return variable_device
  return host


def _same_device(a: str, b: str) -> bool:
  spec_a, spec_b = tf.DeviceSpec.from_string(a), tf.DeviceSpec.from_string(b)
  return (spec_a.device_type or '').upper() == (spec_b.device_type or '').upper() and \
      (spec_a.device_index or 0) == (spec_b.device_index or 0) and spec_a.job == spec_b.job \
      and spec_a.task == spec_b.task


@dataclasses.dataclass(frozen=True)
class Forward:
  """The towers' first micro-batch and what the specs build on it."""
  network: Network
  placement: VariablePlacement
  pull: Callable[[tf.Variable], tf.Tensor] | None  # 16-bit reads of the variables (TRAIN)
  transfer_dtype: tf.DType
  micro: int                      # micro-batches per step (1 but in TRAIN)
  clip_parts: list[tf.Tensor]     # the clips of each micro-batch
  label_parts: list[Any]          # their labels (or [None])
  outputs: tower_graph.TowerOutputs  # of the first micro-batch
  logits: tf.Tensor               # [B / k, num_classes], named 'logits'
  global_batch: tf.Tensor         # float32 scalar: clips of every tower and micro-batch
  weight_loss: tf.Tensor          # float32 scalar, counted once


def forward(features, labels, mode, params, devices: tuple[str, ...],
            placement: VariablePlacement, network: Network | None = None) -> Forward:
  """Builds the first micro-batch on every tower of `devices`, the variables placed by
  `placement`, and the weight loss; `network` None: the registered network `params.model`."""
  clips, _ = split_features(features)
  network = network or build_network(params)
  transfer_dtype = transfer.transfer_dtype(params.transfer_dtype)
  pull = None
  if transfer_dtype != tf.float32 and mode == ModeKeys.TRAIN:  # evaluation pulls nothing
    host = placement.caching_device or HOST_DEVICE
    pull = lambda v: transfer.pull(v, pull_destination(v.device, devices, host),  # noqa: E731
                                   transfer_dtype)
  micro = params.accumulate_steps if mode == ModeKeys.TRAIN else 1
  clip_parts = accumulation.micro_batches(clips, micro, params.batch_size)
  label_parts = ([None] if labels is None
                 else accumulation.micro_batches(labels, micro, params.batch_size))
  outputs = tower_graph.build_towers(network, clip_parts[0], label_parts[0], devices,
                                     placement, mode == ModeKeys.TRAIN, pull)
  check_logits(outputs.logits[0], params.num_classes)
  if len(outputs.logits) == 1:
    logits = tf.identity(outputs.logits[0], name='logits')
  else:
    with tf.device(HOST_DEVICE):
      logits = tf.concat(outputs.logits, axis=0, name='logits')
  with tf.device(HOST_DEVICE):  # every tower of every micro-batch
    global_batch = tf.cast(tf.shape(clips)[0], tf.float32)
  with tf.device(devices[0]), tf.name_scope('weight_loss'):
    weight_loss = gradients.weight_loss(tf1.trainable_variables(), params.weight_decay,
                                        outputs.pulled)
  return Forward(network, placement, pull, transfer_dtype, micro, clip_parts, label_parts,
                 outputs, logits, global_batch, weight_loss)

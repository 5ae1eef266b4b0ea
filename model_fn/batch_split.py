"""Splitting a global batch into tower batches."""

from __future__ import annotations

import tensorflow as tf

from model_fn.devices import HOST_DEVICE


def tower_sizes(batch_size: int, num_towers: int) -> list[int]:
  """Sizes that differ by at most one, larger first: 10 over 4 towers -> [3, 3, 2, 2].
  `num_towers` is positive (a count of tower devices or of micro-batches)."""
  if batch_size < num_towers:
    raise ValueError(f'a batch of {batch_size} cannot be split over {num_towers} towers: '
                     'every tower needs at least one example')
  base, extra = divmod(batch_size, num_towers)
  return [base + (1 if i < extra else 0) for i in range(num_towers)]


def split_batch(tensor: tf.Tensor, num_towers: int) -> list[tf.Tensor]:
  """Splits `tensor` on axis 0 into `num_towers` parts sized as `tower_sizes`.

  A static batch dimension smaller than the tower count is a `ValueError`. A dynamic one
  (evaluation's last batch, serving) is split at run time; towers may then get 0 rows.
  The split runs on HOST_DEVICE, where the input arrives.
  """
  if num_towers == 1:
    return [tensor]
  with tf.device(HOST_DEVICE):
    return _split(tensor, num_towers)


def _split(tensor: tf.Tensor, num_towers: int) -> list[tf.Tensor]:
  """`split_batch` without its device."""
  static = tensor.shape[0]
  if static is not None:
    return tf.split(tensor, tower_sizes(int(static), num_towers), axis=0)
  batch = tf.shape(tensor, out_type=tf.int32)[0]
  base, extra = batch // num_towers, batch % num_towers
  sizes = tf.stack([base + tf.cast(i < extra, tf.int32) for i in range(num_towers)])
  return tf.split(tensor, sizes, axis=0, num=num_towers)

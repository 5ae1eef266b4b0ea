"""Moving-statistics updates of batch norm, built once from the towers' batch moments.

`main` (default): each moving mean/variance follows the main tower's batch statistics,
as in tensorpack, so the update costs nothing across devices. `mean`: they follow the
statistics of the union of all towers' examples (count-weighted: the mean of means, and
the mean of variances plus the variance of the means), as one big batch would give.
Either way there is one update op per variable, and it runs with the train op.
"""

from __future__ import annotations

from typing import Callable, Sequence

import tensorflow as tf

from model_fn.layers import BatchNormMoments

tf1 = tf.compat.v1


def moving_average_updates(tower_moments: Sequence[Sequence[BatchNormMoments]], mode: str,
                           reduce_device: Callable[[tf.Variable], str]) -> list[tf.Operation]:
  """Update ops for every batch-norm layer. tower_moments[i] is tower i's list, in layer
  order. The `mean` combination runs on `reduce_device(moving_mean)`; the assignment
  itself runs where the variable lives."""
  if not tower_moments or not tower_moments[0]:
    return []
  if mode not in ('main', 'mean'):
    raise ValueError(f'bn_update={mode!r} is not one of main, mean')
  updates = []
  for layer in range(len(tower_moments[0])):
    per_tower = [moments[layer] for moments in tower_moments]
    first = per_tower[0]
    if mode == 'main' or len(per_tower) == 1:
      mean, variance = first.mean, first.variance
    else:
      with tf.device(reduce_device(first.moving_mean)), tf.name_scope('bn_mean_over_towers'):
        counts = tf.stack([m.count for m in per_tower])
        weights = counts / tf.reduce_sum(counts)
        shape = [-1] + [1] * first.mean.shape.rank
        means = tf.stack([m.mean for m in per_tower])
        variances = tf.stack([m.variance for m in per_tower])
        w = tf.reshape(weights, shape)
        mean = tf.reduce_sum(w * means, axis=0)
        variance = tf.reduce_sum(w * (variances + tf.square(means - mean)), axis=0)
    for variable, value in ((first.moving_mean, mean), (first.moving_variance, variance)):
      updates.append(_assign_moving_average(variable, value, first.decay, reduce_device))
  return updates


def _assign_moving_average(variable: tf.Variable, value: tf.Tensor, decay: float,
                           reduce_device: Callable[[tf.Variable], str]) -> tf.Operation:
  """variable <- variable - (variable - value) * (1 - decay). `value` leaves the reduce
  device once (one tensor per statistic reaches the variable's device), and the step is
  computed next to the variable, so the variable is read where it lives and never sent
  to the reduce device (in a cluster: no ps-to-worker read per statistic per step)."""
  with tf.name_scope('batch_norm_updates'):
    with tf.device(reduce_device(variable)):
      value = tf.identity(value, name='statistic')
    with tf.device(variable.device):
      step = (variable.read_value() - value) * (1.0 - decay)
      return variable.assign_sub(step).op

"""The exponential moving average of the weights (`params.ema_decay`; 0: none).

    with_ema(apply_op, updates, params) -> (train_op, ema or None)
    warm_start_then_reset_shadows(warm_start_fn, ema) -> scaffold init_fn or None
    ema_scaffold(params) -> Scaffold or None

Training updates the averages after each apply of the gradients; evaluation and the export
load each weight's average in place of the weight (`ema_scaffold`).
"""

from __future__ import annotations

import tensorflow as tf

tf1 = tf.compat.v1


def with_ema(apply_op: tf.Operation, updates: list[tf.Operation], params):
  """Groups the train op; with `ema_decay`, the averages update after each apply, each on
  its weight's device (a ps task's CPU in a cluster), so no weight crosses to the worker
  for its average."""
  if not params.ema_decay:
    return tf.group(apply_op, *updates, name='train_op'), None
  ema = tf1.train.ExponentialMovingAverage(params.ema_decay)
  ema_ops = []
  with tf.control_dependencies([apply_op]):
    for variable in tf1.trainable_variables():
      with tf.device(variable.device):
        ema_ops.append(ema.apply([variable]))
  return tf.group(*ema_ops, *updates, name='train_op'), ema


def warm_start_then_reset_shadows(warm_start_fn, ema):
  """Runs the warm start (first run only), then copies weights into their EMA shadows so
  the averages start from the restored weights rather than the random initial ones."""
  if warm_start_fn is None:
    return None
  reset_shadows = None
  if ema is not None:
    resets = []
    for v in tf1.trainable_variables():
      if ema.average(v) is not None:
        with tf.device(v.device):
          resets.append(ema.average(v).assign(v))
    reset_shadows = tf.group(*resets)

  def init_fn(scaffold, session):
    warm_start_fn(scaffold, session)
    if reset_shadows is not None:
      session.run(reset_shadows)

  return init_fn


def ema_scaffold(params) -> tf1.train.Scaffold | None:
  """With `ema_decay`, a saver that loads each weight's moving average into the weight."""
  if not params.ema_decay:
    return None
  ema = tf1.train.ExponentialMovingAverage(params.ema_decay)
  return tf1.train.Scaffold(saver=tf1.train.Saver(ema.variables_to_restore()))

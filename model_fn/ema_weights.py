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
  """Groups the train op; with `ema_decay`, the averages update after each apply."""
  if not params.ema_decay:
    return tf.group(apply_op, *updates, name='train_op'), None
  ema = tf1.train.ExponentialMovingAverage(params.ema_decay)
  with tf.control_dependencies([apply_op]):
    ema_op = ema.apply(tf1.trainable_variables())
  return tf.group(ema_op, *updates, name='train_op'), ema


def warm_start_then_reset_shadows(warm_start_fn, ema):
  """Runs the warm start (first run only), then copies weights into their EMA shadows so
  the averages start from the restored weights rather than the random initial ones."""
  if warm_start_fn is None:
    return None
  reset_shadows = None
  if ema is not None:
    reset_shadows = tf.group(*[ema.average(v).assign(v) for v in tf1.trainable_variables()
                               if ema.average(v) is not None])

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

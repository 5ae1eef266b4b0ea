"""Learning-rate schedules and optimizers, built from `TrainParams`.

The learning rate at global step s is

    lr(s) = schedule(s) * warmup(s) * scale
    warmup(s) = min(1, (s + 1) / warmup_steps)      (1 when warmup_steps == 0)
    scale     = examples per update / lr_reference_batch      (1 when lr_reference_batch == 0)

with examples per update = accumulate_steps x batch_size (one update per step, whatever
the number of micro-batches it sums).

where schedule is `piecewise` (lr_values[i] for boundaries[i-1] <= s < boundaries[i], as
`tf.compat.v1.train.piecewise_constant`), `cosine` (from lr_values[0] to 0 at max_steps),
`exponential` (lr_values[0] * lr_decay_rate ** (s / lr_decay_steps)) or `constant`.
"""

from __future__ import annotations

import tensorflow as tf

tf1 = tf.compat.v1


def learning_rate(params, global_step: tf.Tensor) -> tf.Tensor:
  """The float32 scalar learning rate at `global_step` (see module docstring)."""
  base = float(params.lr_values[0])
  step = tf.cast(global_step, tf.int64)
  if params.lr_schedule == 'piecewise' and not params.lr_boundaries:
    rate = tf.constant(base)  # one value, no boundary: constant
  elif params.lr_schedule == 'piecewise':
    rate = tf1.train.piecewise_constant(
        step, [int(b) for b in params.lr_boundaries], [float(v) for v in params.lr_values])
  elif params.lr_schedule == 'cosine':
    rate = tf1.train.cosine_decay(base, step, params.max_steps)
  elif params.lr_schedule == 'exponential':
    rate = tf1.train.exponential_decay(base, step, params.lr_decay_steps, params.lr_decay_rate)
  elif params.lr_schedule == 'constant':
    rate = tf.constant(base)
  else:
    raise ValueError(f'lr_schedule={params.lr_schedule!r} is not known')
  rate = tf.cast(rate, tf.float32)
  if params.warmup_steps > 0:
    fraction = tf.cast(step + 1, tf.float32) / float(params.warmup_steps)
    rate *= tf.minimum(1.0, fraction)
  if params.lr_reference_batch > 0:
    rate *= params.examples_per_step / params.lr_reference_batch
  return rate


def make_optimizer(params, rate: tf.Tensor) -> tf1.train.Optimizer:
  """The `--optimizer`: momentum (default), sgd, adam or rmsprop."""
  if params.optimizer == 'momentum':
    return tf1.train.MomentumOptimizer(rate, momentum=params.momentum)
  if params.optimizer == 'sgd':
    return tf1.train.GradientDescentOptimizer(rate)
  if params.optimizer == 'adam':
    return tf1.train.AdamOptimizer(rate)
  if params.optimizer == 'rmsprop':
    return tf1.train.RMSPropOptimizer(rate, decay=0.9, momentum=params.momentum, epsilon=1.0)
  raise ValueError(f'optimizer={params.optimizer!r} is not one of momentum, sgd, adam, rmsprop')

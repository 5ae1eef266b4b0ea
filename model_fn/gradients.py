"""The synchronization point: per-tower gradients become one gradient per variable.

Reduction rule (the one rule for every mode and every tower count): with S_i the SUM of
tower i's per-example losses and B the global batch (sum of the tower sizes, equal or
not), tower i differentiates S_i / B, and the applied gradient for variable v is

    g_v = sum_i d(S_i / B)/dv  +  weight_decay * v      (v a decayed kernel; else no 2nd term)

which is exactly the gradient of  mean_loss_over_global_batch + weight_decay * sum(l2_loss(w)).
The weight-decay term is added once, not once per tower. The 1/B is inside each tower's
backprop (a scalar), so the synchronization point only sums: an `add_n` on the
placement's reduce device for v: v's own device on one machine, the
worker's host in a cluster, so that each worker pushes one averaged gradient per
variable per step to the ps, however many towers it has. Optional clipping
by global norm comes after the average and the decay.
"""

from __future__ import annotations

from typing import Callable, Sequence

import tensorflow as tf

tf1 = tf.compat.v1

DECAYED_VARIABLE_NAMES = ('w', 'kernel')


def is_decayed(variable: tf.Variable) -> bool:
  """True for conv/dense kernels: variables whose last name component is `w` or `kernel`."""
  return variable.op.name.split('/')[-1] in DECAYED_VARIABLE_NAMES


def weight_loss(variables: Sequence[tf.Variable], weight_decay: float) -> tf.Tensor:
  """weight_decay * sum(l2_loss(v)) over decayed variables, each term on v's device."""
  terms = []
  for v in variables:
    if is_decayed(v):
      with tf.device(v.device):
        terms.append(tf.nn.l2_loss(v))
  if not terms or weight_decay == 0.0:
    return tf.constant(0.0)
  return weight_decay * tf.add_n(terms)


def average_tower_gradients(
    tower_grads: Sequence[Sequence[tf.Tensor | None]], variables: Sequence[tf.Variable],
    weight_decay: float, reduce_device: Callable[[tf.Variable], str] = lambda v: v.device
) -> list[tuple[tf.Tensor, tf.Variable]]:
  """Applies the reduction rule above.

  Args:
    tower_grads: tower_grads[i][j] is d(S_i / B)/d variables[j] (None if unconnected),
      as `tower_graph.tower_gradients` returns them.
    variables: the variables, shared by all towers.
    weight_decay: coefficient of the L2 term.
    reduce_device: where the sum, scale and decay for a variable run.
  Returns:
    (gradient, variable) pairs, skipping variables no tower's loss depends on.
  """
  pairs = []
  for j, v in enumerate(variables):
    grads = [g[j] for g in tower_grads if g[j] is not None]
    if not grads:
      continue
    with tf.device(reduce_device(v)), tf.name_scope('average_gradients'):
      g = tf.add_n(grads) if len(grads) > 1 else grads[0]
      if weight_decay and is_decayed(v):
        g += weight_decay * v.read_value()
    pairs.append((g, v))
  return pairs


def clip_by_global_norm(pairs: list[tuple[tf.Tensor, tf.Variable]], clip_norm: float
                        ) -> tuple[list[tuple[tf.Tensor, tf.Variable]], tf.Tensor]:
  """Returns (clipped pairs, global norm before clipping). clip_norm 0 leaves them as is."""
  grads = [g for g, _ in pairs]
  norm = tf.linalg.global_norm(grads)
  if clip_norm > 0:
    grads, _ = tf.clip_by_global_norm(grads, clip_norm, use_norm=norm)
  return list(zip(grads, [v for _, v in pairs])), norm

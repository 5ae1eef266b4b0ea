"""The synchronization point: per-tower gradients become one gradient per variable.

Reduction rule (the one rule for every mode and every tower count): with S_i the SUM of
tower i's per-example losses and B the global batch (sum of the tower sizes, equal or
not), the applied gradient for variable v is

    g_v = sum_i d(S_i / B)/dv  +  weight_decay * v      (v a decayed kernel; else no 2nd term)

which is exactly the gradient of  mean_loss_over_global_batch + weight_decay * sum(l2_loss(w)).
Each tower differentiates S_i / B (the 1/B is a scalar inside backprop) and the main tower
also differentiates the weight loss, so the decay is added once, not once per tower, and
reads the same copy of v as the forward pass. The synchronization point then only sums:
an `add_n` on the placement's reduce device for v: v's own device on one machine, the
worker's host in a cluster, so that each worker pushes one averaged gradient per
variable per step to the ps, however many towers it has. Optional clipping by global
norm comes after the sum.

Nothing here groups the gradients: each variable's sum, and so its push to the ps and
its apply there, can run as soon as that variable's tower gradients exist, while
backprop continues through earlier layers (`tests/overlap_test.py`). Clipping by global
norm is the exception: every clipped gradient needs the norm of all of them.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

import tensorflow as tf

from model_fn.layers import variable_name

tf1 = tf.compat.v1

DECAYED_VARIABLE_NAMES = ('w', 'kernel')
SYNC_SCOPE = 'sum_tower_gradients'  # name scope of the synchronization point's add_n ops


def is_decayed(variable: tf.Variable) -> bool:
  """True for conv/dense kernels: variables whose last name component is `w` or `kernel`
  (in every tower and every tf.distribute replica)."""
  return variable_name(variable).split('/')[-1] in DECAYED_VARIABLE_NAMES


def weight_loss(variables: Sequence[tf.Variable], weight_decay: float,
                values: Mapping[str, tf.Tensor] | None = None) -> tf.Tensor:
  """weight_decay * sum(l2_loss(v)) over decayed variables, on the caller's device: the
  main tower's, where each kernel's value is already present for the forward pass
  (`values[v.op.name]`, the pulled tensor, when the towers read one instead of v)."""
  values = values or {}
  terms = [tf.nn.l2_loss(values.get(v.op.name, v)) for v in variables if is_decayed(v)]
  if not terms or weight_decay == 0.0:
    return tf.constant(0.0)
  return weight_decay * tf.add_n(terms)


def sum_tower_gradients(
    tower_grads: Sequence[Sequence[tf.Tensor | None]], variables: Sequence[tf.Variable],
    reduce_device: Callable[[tf.Variable], str] = lambda v: v.device
) -> list[tuple[tf.Tensor, tf.Variable]]:
  """The synchronization point of the reduction rule above.

  Args:
    tower_grads: tower_grads[i][j] is d(S_i / B [+ weight loss for i = 0])/d variables[j]
      (None if unconnected), as `tower_graph.tower_gradients` returns them.
    variables: the variables, shared by all towers.
    reduce_device: where the sum for a variable runs.
  Returns:
    (gradient, variable) pairs, skipping variables no tower's loss depends on.
  """
  pairs = []
  for j, v in enumerate(variables):
    grads = [g[j] for g in tower_grads if g[j] is not None]
    if not grads:
      continue
    if len(grads) > 1:
      with tf.device(reduce_device(v)), tf.name_scope(SYNC_SCOPE):
        pairs.append((tf.add_n(grads), v))
    else:
      pairs.append((grads[0], v))
  return pairs


def clip_by_global_norm(pairs: list[tuple[tf.Tensor, tf.Variable]], clip_norm: float
                        ) -> tuple[list[tuple[tf.Tensor, tf.Variable]], tf.Tensor]:
  """Returns (clipped pairs, global norm before clipping). clip_norm 0 leaves them as is."""
  grads = [g for g, _ in pairs]
  norm = tf.linalg.global_norm(grads)
  if clip_norm > 0:
    grads, _ = tf.clip_by_global_norm(grads, clip_norm, use_norm=norm)
  return list(zip(grads, [v for _, v in pairs])), norm

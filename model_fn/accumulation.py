"""Gradient accumulation: k micro-batches per step, one pull and one push per variable.

A step with `accumulate_steps` k reads k x batch_size clips. `micro_batches` splits them
into k micro-batches of batch_size (micro-batch m = rows [m*b, (m+1)*b)), each split over
the tower devices as a plain step's batch is. Micro-batch 0 is built by the tower model_fn
as usual; `add_micro_batches` builds the others on the same devices, each reusing the
variables and the tensors pulled for micro-batch 0, so each variable is read once per
step and the summed gradient is pushed once.

Arithmetic (the reduction rule of `gradients.py`, B = k x batch_size the step's clips):
every micro-batch tower differentiates S / B, the main tower of micro-batch 0 also the
weight loss, so the sum over micro-batches and devices is the gradient of the mean loss
over all B clips plus the weight decay counted once: the gradient of one step on the B
clips without accumulation when the network's output for a clip does not depend on the
other clips of its tower batch (no batch norm). Batch norm normalises each micro-batch
tower by its own statistics, as a tower does; the moving averages follow the main tower
of micro-batch 0 (`bn_update=main`) or all micro-batch towers size-weighted (`mean`).

Memory: on each device the gradients are summed as they come (one running sum per
variable and device), and micro-batch m+1's input on a device passes an identity that
waits for the running sum after micro-batch m on that device, i.e. for all of micro-batch
m's gradients there: its activations are freed before micro-batch m+1's forward starts,
so peak activation memory is that of one micro-batch.
"""

from __future__ import annotations

from typing import Callable, Sequence

import tensorflow as tf

from model_fn import batch_split, tower_graph
from model_fn.networks import Network
from model_fn.tower_graph import TowerOutputs
from model_fn.variable_placement import VariablePlacement

Gradients = list[list[tf.Tensor | None]]  # [device][variable], as tower_gradients returns


class InputBatchError(ValueError):
  """A training batch that is not accumulate_steps x batch_size clips."""

  def __init__(self, message: str, expected: int, given: int) -> None:
    super().__init__(message)
    self.expected = expected  # clips a step reads: accumulate_steps x batch_size
    self.given = given  # clips in the input's batch


def micro_batches(tensor: tf.Tensor, accumulate_steps: int, batch_size: int
                  ) -> list[tf.Tensor]:
  """`tensor` [k*b, ...] as k micro-batches [b, ...] (k = `accumulate_steps`, b =
  `batch_size`). With k > 1 a batch other than k*b is refused: an input batched by
  batch_size alone would silently train on micro-batches of b/k clips. A static batch is an
  `InputBatchError` now; a dynamic one (`dataset.batch(n)`) fails the step that reads it
  (InvalidArgumentError with the same message)."""
  if accumulate_steps == 1:
    return batch_split.split_batch(tensor, accumulate_steps)
  expected = accumulate_steps * batch_size
  needs = (f'accumulate_steps={accumulate_steps} needs {accumulate_steps} x '
           f'batch_size={batch_size} = {expected} clips per training batch')
  fix = ('batch the input by params.examples_per_step with drop_remainder=True (as '
         'input_fn.factory.make_input_fn does)')
  static = tensor.shape[0]
  if static is not None and static != expected:
    raise InputBatchError(f'{needs}, the input gives {static}: {fix}', expected=expected,
                          given=int(static))
  if static is None:
    check = tf.debugging.assert_equal(tf.shape(tensor)[0], expected,
                                      message=f'{needs}: {fix}; the input gave')
    with tf.control_dependencies([check]):
      tensor = tf.identity(tensor)
  return batch_split.split_batch(tensor, accumulate_steps)


def add_micro_batches(network: Network, clip_parts: Sequence[tf.Tensor],
                      label_parts: Sequence[tf.Tensor], first: TowerOutputs,
                      first_grads: Gradients, variables: Sequence[tf.Variable],
                      global_batch: tf.Tensor, placement: VariablePlacement | None,
                      pull: Callable[[tf.Variable], tf.Tensor] | None = None
                      ) -> tuple[TowerOutputs, Gradients]:
  """Builds micro-batches 1..k-1 after micro-batch 0 and sums every gradient per device.

  Args:
    clip_parts, label_parts: the k micro-batches (`micro_batches`); part 0 is `first`'s.
    first: micro-batch 0's towers, as `tower_graph.build_towers` built them.
    first_grads: its `tower_graph.tower_gradients` (with the weight loss on tower 0).
    variables: the variables differentiated, in `first_grads`' order.
    global_batch: float32 scalar B, all k micro-batches' clips.
    placement, pull: as given to `build_towers` for micro-batch 0.
  Returns:
    (outputs of all k x devices towers, micro-batch 0's first: logits, loss_sums, sizes
    and bn_moments concatenated in micro-batch order; per-device gradient sums
    [device][variable], the sum over micro-batches of d(S / B)/dv, None where no
    micro-batch depends on v).
  """
  devices = first.devices
  sums = [list(grads) for grads in first_grads]
  merged = TowerOutputs(list(first.logits), list(first.loss_sums), list(first.sizes),
                        list(first.bn_moments), tuple(first.devices), first.pulled)
  for m in range(1, len(clip_parts)):
    gates = [_all_done(sums[d], device, f'micro_batch_{m - 1}_done_{d}')
             for d, device in enumerate(devices)]
    outputs = tower_graph.build_towers(network, clip_parts[m], label_parts[m], devices,
                                       placement, True, pull, micro_batch=m,
                                       pulled=first.pulled, start_after=gates)
    grads = tower_graph.tower_gradients(outputs, variables, global_batch, None)
    for d, device in enumerate(devices):
      with tf.device(device), tf.name_scope(f'accumulate_gradients/tower_{d}'):
        sums[d] = [_add(total, g) for total, g in zip(sums[d], grads[d])]
    merged.logits += outputs.logits
    merged.loss_sums += outputs.loss_sums
    merged.sizes += outputs.sizes
    merged.bn_moments += outputs.bn_moments
    merged.devices += outputs.devices
  return merged, sums


def _add(total: tf.Tensor | None, gradient: tf.Tensor | None) -> tf.Tensor | None:
  if total is None:
    return gradient
  if gradient is None:
    return total
  return total + gradient


def _all_done(tensors: Sequence[tf.Tensor | None], device: str, name: str) -> tf.Operation:
  """One op on `device` that runs after every tensor of `tensors` is computed."""
  with tf.device(device):
    return tf.group(*[t for t in tensors if t is not None], name=name)

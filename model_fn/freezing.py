"""Which variables the optimizer updates (`--trainable_from`).

`trainable_variables(params, variables)` drops the variables of every endpoint of the
network `params.model` before `params.trainable_from` (for I3D, `Mixed_4b` freezes
Conv3d_1a_7x7 ... Mixed_3c); everything else, including I3D's Logits layer and the
`head=stack` dense layer, stays. The endpoints and which endpoint a variable belongs to
come from the network's registry entry (`model_fn.networks.NetworkSpec`).
Frozen variables keep their (warm-start) values; their batch-norm moving statistics are
still updated by the tower builder like any other. Since no gradient flows into them,
backprop also stops there, which saves the memory of the frozen layers' gradients.

Selection is by variable name (`<Stream>/inception_i3d/<Endpoint>/...` for I3D), so it
works wherever the variables live (towers, `/job:ps`).
"""

from __future__ import annotations

from typing import Sequence

import tensorflow as tf
from absl import logging

from command_line.options import Problem
from model_fn import networks
from model_fn.layers import variable_name


def frozen_endpoints(model: str, trainable_from: str) -> tuple[str, ...]:
  """The endpoints of network `model` before `trainable_from` (empty when it is empty)."""
  if not trainable_from:
    return ()
  endpoints = networks.spec(model).endpoints
  if trainable_from not in endpoints:
    raise ValueError(Problem('trainable_from', f'trainable_from={trainable_from!r} is not an '
                             f'endpoint of model={model} '
                             f'({", ".join(endpoints) or "it has none"})'))
  return endpoints[:endpoints.index(trainable_from)]


def trainable_variables(params, variables: Sequence[tf.Variable]) -> list:
  """The subset of `variables` the optimizer updates, in their order.

  All of them when `params.trainable_from` is empty. Raises ValueError when it is not an
  endpoint of `params.model`, or when it freezes nothing among `variables` (a typo or a
  graph without that network would otherwise train everything silently).
  """
  trainable_from = params.trainable_from
  if not trainable_from:
    return list(variables)
  frozen = set(frozen_endpoints(params.model, trainable_from))
  endpoint_of = networks.spec(params.model).endpoint_of
  kept = [v for v in variables if endpoint_of(variable_name(v)) not in frozen]
  n_frozen = len(variables) - len(kept)
  if frozen and not n_frozen:
    raise ValueError(f'trainable_from={trainable_from} freezes no variable: none of the '
                     f'{len(variables)} variables is under a {params.model} endpoint before it')
  logging.info('trainable_from=%s: %d variables frozen (endpoints before it), %d trained',
               trainable_from, n_frozen, len(kept))
  return kept

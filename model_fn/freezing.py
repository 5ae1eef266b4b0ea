"""Which variables the optimizer updates (`--trainable_from`).

`trainable_variables(params, variables)` drops the I3D variables of every endpoint
before `params.trainable_from` (e.g. `Mixed_4b` freezes Conv3d_1a_7x7 ... Mixed_3c);
everything else, including the Logits layer and the `head=stack` dense layer, stays.
Frozen variables keep their (warm-start) values; their batch-norm moving statistics are
still updated by the tower builder like any other. Since no gradient flows into them,
backprop also stops there, which saves the memory of the frozen layers' gradients.

Selection is by variable name (`<Stream>/inception_i3d/<Endpoint>/...`), so it works
wherever the variables live (towers, `/job:ps`).
"""

from __future__ import annotations

from typing import Sequence

import tensorflow as tf

from model_fn.networks import i3d
from model_fn.warm_start import variable_name

tf1 = tf.compat.v1


def frozen_endpoints(trainable_from: str) -> tuple[str, ...]:
  """The endpoints before `trainable_from` (empty when it is empty)."""
  if not trainable_from:
    return ()
  if trainable_from not in i3d.ENDPOINTS:
    raise ValueError(f'trainable_from={trainable_from!r} is not an I3D endpoint '
                     f'({", ".join(i3d.ENDPOINTS)})')
  return i3d.ENDPOINTS[:i3d.ENDPOINTS.index(trainable_from)]


def is_frozen(name: str, trainable_from: str) -> bool:
  return i3d.endpoint_of(name) in frozen_endpoints(trainable_from)


def trainable_variables(params, variables: Sequence[tf.Variable]) -> list:
  """The subset of `variables` the optimizer updates, in their order.

  All of them when `params.trainable_from` is empty. Raises ValueError when it is set
  for a model other than i3d, or when it freezes nothing among `variables` (a typo or a
  graph without I3D would otherwise train everything silently).
  """
  trainable_from = getattr(params, 'trainable_from', '')
  if not trainable_from:
    return list(variables)
  if params.model != 'i3d':
    raise ValueError(f'trainable_from is for model=i3d, got model={params.model}')
  frozen = set(frozen_endpoints(trainable_from))
  kept = [v for v in variables if i3d.endpoint_of(variable_name(v)) not in frozen]
  n_frozen = len(variables) - len(kept)
  if frozen and not n_frozen:
    raise ValueError(f'trainable_from={trainable_from} freezes no variable: none of the '
                     f'{len(variables)} variables is under an I3D endpoint before it')
  tf1.logging.info('trainable_from=%s: %d variables frozen (%s ... %s), %d trained',
                   trainable_from, n_frozen, i3d.ENDPOINTS[0],
                   i3d.ENDPOINTS[len(frozen) - 1] if frozen else '-', len(kept))
  return kept

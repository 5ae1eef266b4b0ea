"""The Estimator `model_fn` that trains, evaluates and serves a network over towers.

    make_model_fn(network=None, strategy='towers')
        -> model_fn(features, labels, mode, params, config=None) -> tf.estimator.EstimatorSpec

`network` is the user's own `network(clips, ctx) -> logits`, None the registered network
`params.model`; `strategy` 'mirrored' builds it under tf.distribute.MirroredStrategy.

`features`: float32 clips [B, T, H, W, C] in [-1, 1] (or uint8 in [0, 255], scaled on each
tower's device), or a dict with key 'clips' (and,
in evaluation, optionally 'video_index' int64 [B] for video-level accuracy and
'videos_listed' int64 [B] for the evaluated-of-listed count (`eval_coverage.py`); in training,
optionally 'skipped_records' int64 [B], the input's running count of bad records
skipped, written as the summary `input/skipped_bad_records` and shown in the progress lines
against 'records_read' int64 [B], the records the input has read so far; in prediction,
optionally 'class_names' string [num_classes], which the serving signature returns).
`labels`: int64 [B]. `params`: a `towers.params.TrainParams`. Prediction (the graph an
export serves) is one tower on no device, whatever the towers of training.

Loss reduction (one rule for TRAIN, EVAL and every tower count, see `gradients.py`):
the reported and optimised loss is the mean cross-entropy over the whole global batch,
plus `weight_decay * sum(l2_loss(w))` over conv/dense kernels, counted once. Uneven
towers are weighted by their size, so 1, 2, 3 or 4 towers give the same gradient.
In training with `accumulate_steps` k the batch [k x batch_size, ...] is k micro-batches,
run one after another on each tower device and summed into one gradient per variable
(`accumulation.py`): the same rule over all k x batch_size clips, one update per step.

Each mode's spec is a module of its own: TRAIN `train_spec.py` (the train op over the
towers), EVAL `eval_spec.py`, PREDICT and the export `predict_spec.py`, their shared forward
pass over the towers `tower_forward.py`; `--strategy=mirrored` is `mirrored_spec.py` (the
same network and rule, one tower per `tf.distribute` replica). This module picks the spec by
strategy and mode, and places the variables of the towers' TRAIN and EVAL graphs.
"""

from __future__ import annotations

import functools
from typing import Callable

import tensorflow as tf

from model_fn import eval_spec, predict_spec, tower_forward, train_spec
from model_fn.devices import resolve_tower_devices
from model_fn.mirrored_spec import mirrored_spec
from model_fn.network_variables import network_variables
from model_fn.networks import Network, build_network, input_channels
from model_fn.variable_placement import VariablePlacement, make_placement, ps_device

ModeKeys = tf.estimator.ModeKeys


def make_model_fn(network: Network | None = None, strategy: str = 'towers'
                  ) -> Callable[..., tf.estimator.EstimatorSpec]:
  """The Estimator model_fn that trains `network(clips, ctx) -> logits` (None: the
  registered network `params.model`) over towers (`strategy` 'towers') or under
  MirroredStrategy ('mirrored')."""
  if strategy == 'mirrored':
    def estimator_model_fn(features, labels, mode, params, config=None):
      del config  # tf.distribute places the variables
      return mirrored_spec(features, labels, mode, params, network)
  else:
    def estimator_model_fn(features, labels, mode, params, config=None):
      return _towers_spec(features, labels, mode, params, config, network)
  return estimator_model_fn


def _towers_spec(features, labels, mode, params, config=None, network: Network | None = None
                ) -> tf.estimator.EstimatorSpec:
  """The towers' EstimatorSpec for `mode`. In a cluster (`config` with ps tasks) variables
  go to the ps tasks, largest first (`_placement`), whatever `variable_device` says; on one
  machine they follow `variable_device`."""
  if mode == ModeKeys.PREDICT:
    return predict_spec.serving_spec(features, params, network)
  devices = resolve_tower_devices(params.num_towers, params.tower_devices).devices
  placement = _placement(params, devices, config, network)
  forward = tower_forward.forward(features, labels, mode, params, devices, placement, network)
  if mode == ModeKeys.EVAL:
    return eval_spec.towers_eval_spec(forward, labels, features, params)
  return train_spec.towers_train_spec(forward, features, params, config)


def _placement(params, devices: tuple[str, ...], config, network: Network | None
               ) -> VariablePlacement:
  """In a cluster (`config` with ps tasks) the ps tasks, the trainable variables listed
  first (`trainable_sizes`) and placed largest first, each on the least-loaded ps; the
  others (moving statistics, the global step) on the least-loaded ps as created. Else
  `params.variable_device`."""
  num_ps = config.num_ps_replicas if config is not None else 0
  if not num_ps:
    return make_placement(params.variable_device, devices)
  return make_placement('ps', devices, ps_devices=[ps_device(i) for i in range(num_ps)],
                        host_device=f'/job:{config.task_type}/task:{config.task_id}'
                                    '/device:CPU:0', planned=trainable_sizes(params, network))


def trainable_sizes(params, network: Network | None = None) -> tuple[tuple[str, int], ...]:
  """(name, bytes) of the trainable variables `network` (None: the registered network
  `params.model`) creates under `params`, in creation order: the network built once in a
  throw-away graph (`network_variables`, at the run's clip size). Remembered per (params,
  network) when both are hashable, because every graph of a run (training, each
  evaluation, the export) places the same variables and I3D's throw-away build costs
  ~2.7 s; an unhashable network object (e.g. a dataclass) is listed anew each time."""
  try:
    hash((params, network))
  except TypeError:
    return _list_trainable_sizes(params, network)
  return _remembered_trainable_sizes(params, network)


def _list_trainable_sizes(params, network: Network | None) -> tuple[tuple[str, int], ...]:
  clip = (params.clip_frames, params.crop_size, params.crop_size, input_channels(params))
  return tuple((v.name, v.num_bytes)
               for v in network_variables(network or build_network(params), clip)
               if v.trainable)


_remembered_trainable_sizes = functools.lru_cache(maxsize=8)(_list_trainable_sizes)

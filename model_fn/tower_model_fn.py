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

Besides `towers`, `--strategy=mirrored` reuses the same network and rule with one tower
per `tf.distribute` replica (see `_mirrored_spec`); both share `mean_loss` and
`build_train_op`.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable

import tensorflow as tf
from absl import logging

from command_line import status_file
from command_line.options import OptionsError
from model_fn import accumulation, batch_norm_updates, gradients, optimization, tower_graph
from model_fn import eval_coverage, freezing, sync_replicas, training_hooks, transfer
from model_fn import video_metrics
from model_fn import warm_start
from model_fn.devices import resolve_tower_devices
from model_fn.network_variables import network_variables
from model_fn.networks import Network, build_network, input_channels
from model_fn.variable_placement import VariablePlacement, make_placement

tf1 = tf.compat.v1
ModeKeys = tf.estimator.ModeKeys

HOST_DEVICE = '/device:CPU:0'  # where all towers' logits are gathered
TOP_1 = 'accuracy/top_1'  # the evaluation metric that picks the best model


def split_features(features: Any) -> tuple[tf.Tensor, tf.Tensor | None]:
  """(clips, video_index or None) from a tensor or a {'clips', 'video_index'} dict."""
  if isinstance(features, dict):
    return features['clips'], features.get('video_index')
  return features, None


def make_model_fn(network: Network | None = None, strategy: str = 'towers'
                  ) -> Callable[..., tf.estimator.EstimatorSpec]:
  """The Estimator model_fn that trains `network(clips, ctx) -> logits` (None: the
  registered network `params.model`) over towers (`strategy` 'towers') or under
  MirroredStrategy ('mirrored')."""
  if strategy == 'mirrored':
    def estimator_model_fn(features, labels, mode, params, config=None):
      del config  # tf.distribute places the variables
      return _mirrored_spec(features, labels, mode, params, network)
  else:
    def estimator_model_fn(features, labels, mode, params, config=None):
      return _towers_spec(features, labels, mode, params, config, network)
  return estimator_model_fn


def _towers_spec(features, labels, mode, params, config=None, network: Network | None = None
                ) -> tf.estimator.EstimatorSpec:
  """The towers' EstimatorSpec. `network(clips, ctx) -> logits` defaults to the registered
  network `params.model`. In a cluster (`config` with ps tasks) variables go to the ps
  tasks, largest first (`_placement`), whatever `variable_device` says; on one machine they
  follow `variable_device`. In training with `accumulate_steps` k > 1 the batch holds k
  micro-batches, run one after another on each tower device (`accumulation.py`)."""
  if mode == ModeKeys.PREDICT:
    return _serving_spec(features, params, network)
  clips, video_index = split_features(features)
  devices = resolve_tower_devices(params.num_towers, params.tower_devices).devices
  placement = _placement(params, devices, config, network)
  network = network or build_network(params)
  transfer_dtype = transfer.transfer_dtype(params.transfer_dtype)
  pull = None
  if transfer_dtype != tf.float32 and mode == ModeKeys.TRAIN:  # evaluation pulls nothing
    host = placement.caching_device or HOST_DEVICE
    pull = lambda v: transfer.pull(v, host, transfer_dtype)  # noqa: E731
  micro = params.accumulate_steps if mode == ModeKeys.TRAIN else 1
  clip_parts = accumulation.micro_batches(clips, micro, params.batch_size)
  label_parts = ([None] if labels is None
                 else accumulation.micro_batches(labels, micro, params.batch_size))
  outputs = tower_graph.build_towers(network, clip_parts[0], label_parts[0], devices,
                                     placement, mode == ModeKeys.TRAIN, pull)
  check_logits(outputs.logits[0], params.num_classes)
  if len(outputs.logits) == 1:
    logits = tf.identity(outputs.logits[0], name='logits')
  else:
    with tf.device(HOST_DEVICE):
      logits = tf.concat(outputs.logits, axis=0, name='logits')
  global_batch = tf.cast(tf.shape(clips)[0], tf.float32)  # every tower of every micro-batch
  with tf.device(devices[0]), tf.name_scope('weight_loss'):
    weight_loss = gradients.weight_loss(tf1.trainable_variables(), params.weight_decay,
                                        outputs.pulled)
  if mode == ModeKeys.EVAL:
    loss = tf.identity(mean_loss(outputs.loss_sums, global_batch, weight_loss),
                       name='total_loss')
    return _eval_spec(loss, logits, labels, features, params)

  variables = freezing.trainable_variables(params, tf1.trainable_variables())
  tower_grads = tower_graph.tower_gradients(outputs, variables, global_batch, weight_loss)
  if micro > 1:
    outputs, tower_grads = accumulation.add_micro_batches(
        network, clip_parts, label_parts, outputs, tower_grads, variables, global_batch,
        placement, pull)
  loss = tf.identity(mean_loss(outputs.loss_sums, global_batch, weight_loss), name='total_loss')
  pairs = gradients.sum_tower_gradients(tower_grads, variables, placement.reduce_device)
  pairs, grad_norm = gradients.clip_by_global_norm(pairs, params.clip_gradient_norm)
  pairs = [(transfer.push(g, v, transfer_dtype), v) for g, v in pairs]
  updates = batch_norm_updates.moving_average_updates(outputs.bn_moments, params.bn_update,
                                                      placement.reduce_device)
  num_workers = config.num_worker_replicas if config is not None else 1
  train = build_train_op(params, pairs, updates, num_workers,
                         config.is_chief if config is not None else True)
  _train_summaries(loss, weight_loss, train.learning_rate, grad_norm, outputs, global_batch)
  skipped = None
  if isinstance(features, dict) and 'skipped_records' in features:
    skipped_so_far = tf.reduce_max(features['skipped_records'])
    tf1.summary.scalar('input/skipped_bad_records', skipped_so_far)
    if 'records_read' in features:
      skipped = training_hooks.SkippedRecords(skipped_so_far,
                                              tf.reduce_max(features['records_read']))
  hooks = [training_hooks.ProgressHook(loss, params.examples_per_step, params.max_steps,
                                       params.log_every_steps, params.model_dir, skipped),
           *train.hooks]
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train.op, scaffold=train.scaffold,
                                    training_hooks=hooks)


def check_logits(logits: tf.Tensor, num_classes: int) -> None:
  """The network's logits must be [batch, num_classes]: other widths would make the loss
  fail at run time or the per-class metrics average over classes that cannot occur."""
  shape = logits.shape
  if shape.rank != 2 or shape[-1] != num_classes:
    raise tower_graph.NetworkError(
        f'the network returns logits of shape {shape}, expected [batch, num_classes='
        f'{num_classes}]: set num_classes to the network\'s output width, or build the '
        'network for num_classes outputs', tower_graph.LOGITS_SHAPE)


def _placement(params, devices: tuple[str, ...], config, network: Network | None
               ) -> VariablePlacement:
  """In a cluster (`config` with ps tasks) the ps tasks, the trainable variables listed
  first (`trainable_sizes`) and placed largest first, each on the least-loaded ps; the
  others (moving statistics, the global step) on the least-loaded ps as created. Else
  `params.variable_device`."""
  num_ps = config.num_ps_replicas if config is not None else 0
  if not num_ps:
    return make_placement(params.variable_device, devices)
  return make_placement('ps', devices, ps_devices=[f'/job:ps/task:{i}' for i in range(num_ps)],
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


def mean_loss(loss_sums: list[tf.Tensor], global_batch: tf.Tensor, weight_loss: tf.Tensor,
              replicas: int = 1) -> tf.Tensor:
  """The reduction rule's loss: sum(loss_sums) / global_batch + weight_loss / replicas.

  `loss_sums` are the float32 scalar per-tower sums S_i of the per-example
  cross-entropies, `global_batch` the float32 number of examples over all towers (and
  replicas). With one graph of towers `replicas` is 1; under MirroredStrategy each of the
  R replicas returns its share and the strategy sums them.
  """
  return tf.add_n(loss_sums) / global_batch + weight_loss / replicas


@dataclasses.dataclass(frozen=True)
class TrainOp:
  """What `build_train_op` made: the op of one step, the step's learning rate, the
  scaffold (warm start, EMA shadows) and the hooks the optimizer needs."""
  op: tf.Operation
  learning_rate: tf.Tensor
  scaffold: tf1.train.Scaffold
  hooks: tuple[tf1.train.SessionRunHook, ...]


def build_train_op(params, pairs: list[tuple[tf.Tensor, tf.Variable]],
                   updates: list[tf.Operation], num_workers: int = 1, is_chief: bool = True
                   ) -> TrainOp:
  """Applies `pairs` (final gradient, variable) with the optimizer and schedule of
  `params`, increments the global step, runs the batch-norm `updates` with it, then the
  EMA of the weights (`ema_decay`). With `sync_replicas` and several workers the
  optimizer waits for the others' gradients. The scaffold warm-starts the network the
  first time (`warm_start_from`)."""
  global_step = tf1.train.get_or_create_global_step()
  rate = optimization.learning_rate(params, global_step)
  optimizer = optimization.make_optimizer(params, rate)
  hooks = ()
  if params.sync_replicas and num_workers > 1:
    optimizer = tf1.train.SyncReplicasOptimizer(
        optimizer, replicas_to_aggregate=num_workers - params.backup_workers,
        total_num_replicas=num_workers)
    hooks = (sync_replicas.session_hook(optimizer, is_chief),)
    logging.info('%s', sync_replicas.status_line(num_workers, params.backup_workers))
    status_file.record('sync_replicas', workers=num_workers,
                       aggregated=num_workers - params.backup_workers)
  apply_op = optimizer.apply_gradients(pairs, global_step=global_step)
  train_op, ema = _with_ema(apply_op, updates, params)
  scaffold = tf1.train.Scaffold(
      init_fn=_init_fn(warm_start.make_warm_start_init_fn(params, tf1.global_variables()), ema))
  return TrainOp(train_op, rate, scaffold, hooks)


def _with_ema(apply_op: tf.Operation, updates: list[tf.Operation], params):
  """Groups the train op; with `ema_decay`, the averages update after each apply."""
  if not params.ema_decay:
    return tf.group(apply_op, *updates, name='train_op'), None
  ema = tf1.train.ExponentialMovingAverage(params.ema_decay)
  with tf.control_dependencies([apply_op]):
    ema_op = ema.apply(tf1.trainable_variables())
  return tf.group(ema_op, *updates, name='train_op'), ema


def _init_fn(warm_start_fn, ema):
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


def _train_summaries(loss, weight_loss, rate, grad_norm, outputs, global_batch) -> None:
  """Scalars written once per step from the main graph, never duplicated per tower."""
  tf1.summary.scalar('loss/total', loss)
  tf1.summary.scalar('loss/weight', weight_loss)
  tf1.summary.scalar('learning_rate', rate)
  tf1.summary.scalar('gradient_global_norm', grad_norm)
  tf1.summary.scalar('global_batch', global_batch)
  for i, (loss_sum, size) in enumerate(zip(outputs.loss_sums, outputs.sizes)):
    tf1.summary.scalar(f'loss/tower_{i}', loss_sum / tf.cast(tf.maximum(size, 1), tf.float32))


def eval_metrics(logits: tf.Tensor, labels: tf.Tensor, video_index: tf.Tensor | None,
                 params) -> dict:
  """Top-1, top-5 (top-k for fewer classes), mean per-class accuracy (over the classes
  present in the evaluated labels), and, given `video_index`, video-level accuracy from
  the clips' averaged predictions."""
  labels = tf.cast(labels, tf.int64)
  predictions = tf.argmax(logits, axis=-1)
  k = min(5, params.num_classes)
  in_top_k = tf.cast(tf.nn.in_top_k(targets=labels, predictions=tf.cast(logits, tf.float32), k=k),
                     tf.float32)
  metrics = {
      TOP_1: tf1.metrics.accuracy(labels, predictions),
      'accuracy/top_5': tf1.metrics.mean(in_top_k),
      'accuracy/mean_per_class': video_metrics.mean_per_class_accuracy(
          labels, predictions, params.num_classes),
  }
  if video_index is not None:
    metrics['accuracy/video'] = video_metrics.video_accuracy(
        video_index, logits, labels, params.max_eval_videos)
  return metrics


def _eval_spec(loss, logits, labels, features, params):
  """Metrics (`eval_metrics`); given the input's `videos_listed`, also
  `eval/videos_evaluated` and `eval/videos_listed`, checked by an `EvalCoverageHook`."""
  _, video_index = split_features(features)
  metrics = eval_metrics(logits, labels, video_index, params)
  hooks = []
  if isinstance(features, dict) and 'videos_listed' in features and video_index is not None:
    metrics['eval/videos_evaluated'] = video_metrics.videos_evaluated(
        video_index, params.max_eval_videos)
    metrics['eval/videos_listed'] = tf1.metrics.mean(
        tf.cast(features['videos_listed'], tf.float32))
    hooks.append(eval_coverage.EvalCoverageHook(
        metrics['eval/videos_evaluated'][0], metrics['eval/videos_listed'][0],
        params.strict_eval, params.eval_steps))
  return tf.estimator.EstimatorSpec(
      ModeKeys.EVAL, loss=loss, eval_metric_ops=metrics, evaluation_hooks=hooks,
      scaffold=_ema_scaffold(params))


def _serving_spec(features, params, network: Network | None = None
                  ) -> tf.estimator.EstimatorSpec:
  """PREDICT, the graph an export serves: the network once, as one tower on no device, so
  that the SavedModel carries none of training's towers or device pins and a TF1 session
  with soft placement off (TensorFlow Serving's) runs it on any machine. Variable names do
  not depend on the towers: every checkpoint of any tower count loads into it."""
  clips, _ = split_features(features)
  outputs = tower_graph.build_towers(network or build_network(params), clips, None, ('',),
                                     None, False)
  check_logits(outputs.logits[0], params.num_classes)
  logits = tf.identity(outputs.logits[0], name='logits')
  names = features.get('class_names') if isinstance(features, dict) else None
  return _predict_spec(logits, params, names)


def _predict_spec(logits, params, class_names: tf.Tensor | None = None):
  """predictions `classes` int64 [B], `probabilities` float32 [B, num_classes], `logits`;
  given `class_names` (string [num_classes], label order) the serving signature also
  returns `class_names` string [B, num_classes] (row b: the names in label order, beside
  `probabilities[b]`) and `class_name` string [B] (the name of `classes`)."""
  predictions = {
      'classes': tf.argmax(logits, axis=-1),
      'probabilities': tf.nn.softmax(logits),
      'logits': logits,
  }
  served = dict(predictions)
  if class_names is not None:
    served['class_name'] = tf.gather(class_names, predictions['classes'], name='class_name')
    served['class_names'] = tf.tile(class_names[tf.newaxis], [tf.shape(logits)[0], 1],
                                    name='class_names')
  return tf.estimator.EstimatorSpec(
      ModeKeys.PREDICT, predictions=predictions,
      export_outputs={'serving_default': tf.estimator.export.PredictOutput(served)},
      scaffold=_ema_scaffold(params))


def _ema_scaffold(params) -> tf1.train.Scaffold | None:
  """With `ema_decay`, a saver that loads each weight's moving average into the weight."""
  if not params.ema_decay:
    return None
  ema = tf1.train.ExponentialMovingAverage(params.ema_decay)
  return tf1.train.Scaffold(saver=tf1.train.Saver(ema.variables_to_restore()))


def _mirrored_spec(features, labels, mode, params, network: Network | None = None
                  ) -> tf.estimator.EstimatorSpec:
  """The same network, loss and train op under `tf.distribute.MirroredStrategy`.

  The strategy calls this once per replica with that replica's share of the batch and
  sums the replicas' gradients in `apply_gradients`. So each replica's loss is
  S_r / B + weight_loss / R (B global batch, R replicas): the summed gradient is the same
  as the towers' rule. Batch-norm moving statistics follow each replica's batch and are
  MEAN-aggregated over replicas. A TrainParams with strategy=mirrored refuses the options it does
  not apply (clipping and EMA would act per replica; bn_update=mean, sync_replicas,
  accumulate_steps); accumulate_steps is refused here too, for callers (the tf.distribute
  peers of benchmarks/) whose params say strategy=towers.
  """
  if params.accumulate_steps != 1:
    raise OptionsError(f'accumulate_steps={params.accumulate_steps} is built only in the '
                       'towers\' model_fn, not under a tf.distribute strategy: set '
                       'accumulate_steps=1', option='accumulate_steps')
  if mode == ModeKeys.PREDICT:
    return _serving_spec(features, params, network)
  clips, video_index = split_features(features)
  replicas = tf.distribute.get_replica_context().num_replicas_in_sync
  outputs = tower_graph.build_towers(network or build_network(params), clips, labels,
                                     ('',), None, mode == ModeKeys.TRAIN)
  logits = outputs.logits[0]
  check_logits(logits, params.num_classes)
  global_batch = tf.cast(outputs.sizes[0] * replicas, tf.float32)
  weight_loss = gradients.weight_loss(tf1.trainable_variables(), params.weight_decay)
  loss = mean_loss(outputs.loss_sums, global_batch, weight_loss, replicas)
  if mode == ModeKeys.EVAL:
    return _eval_spec(loss, logits, labels, features, params)
  variables = freezing.trainable_variables(params, tf1.trainable_variables())
  grads = tf1.gradients(loss, variables)
  pairs = [(g, v) for g, v in zip(grads, variables) if g is not None]
  updates = batch_norm_updates.moving_average_updates(outputs.bn_moments, 'main',
                                                      lambda v: v.device)
  train = build_train_op(params, pairs, updates)
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train.op, scaffold=train.scaffold)

"""The TRAIN spec: one optimizer step over the towers' summed gradient.

    build_train_op(params, pairs, updates, num_workers=1, is_chief=True) -> TrainOp
    towers_train_spec(forward, features, params, config=None) -> EstimatorSpec(TRAIN)

Each tower's gradient is of its share of the towers' loss (`tower_forward.mean_loss`); with
`accumulate_steps` k the other k - 1 micro-batches are added one after another
(`accumulation.py`). The gradients are summed per variable on its reduce device, clipped by
global norm (`clip_gradient_norm`), pushed in `transfer_dtype`, then applied once per step
with the schedule's learning rate; batch-norm moving statistics and the weights' EMA update
with the step. Summaries: the loss, its parts per tower, the rate, the gradient norm, and
the training top-1 and input frames (`train_view.py`).
"""

from __future__ import annotations

import dataclasses

import tensorflow as tf
from absl import logging

from command_line import status_file
from model_fn import accumulation, batch_norm_updates, freezing, gradients, optimization
from model_fn import sync_replicas, tower_graph, training_hooks, transfer, warm_start
from model_fn.train_view import train_view_summaries
from model_fn.ema_weights import warm_start_then_reset_shadows, with_ema
from model_fn.tower_forward import Forward, mean_loss

tf1 = tf.compat.v1


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
  train_op, ema = with_ema(apply_op, updates, params)
  scaffold = tf1.train.Scaffold(init_fn=warm_start_then_reset_shadows(
      warm_start.make_warm_start_init_fn(params, tf1.global_variables()), ema))
  return TrainOp(train_op, rate, scaffold, hooks)


def towers_train_spec(forward: Forward, features, params, config=None
                      ) -> tf.estimator.EstimatorSpec:
  """The towers' TRAIN spec on `forward`: the other micro-batches, the summed gradient and
  the train op; the loss named 'total_loss'. `config` (a RunConfig or None) says the
  workers (`sync_replicas`) and whether this one is the chief."""
  outputs, global_batch, weight_loss = forward.outputs, forward.global_batch, forward.weight_loss
  placement = forward.placement
  variables = freezing.trainable_variables(params, tf1.trainable_variables())
  tower_grads = tower_graph.tower_gradients(outputs, variables, global_batch, weight_loss)
  if forward.micro > 1:
    outputs, tower_grads = accumulation.add_micro_batches(
        forward.network, forward.clip_parts, forward.label_parts, outputs, tower_grads,
        variables, global_batch, placement, forward.pull)
  loss = tf.identity(mean_loss(outputs.loss_sums, global_batch, weight_loss), name='total_loss')
  pairs = gradients.sum_tower_gradients(tower_grads, variables, placement.reduce_device)
  pairs, grad_norm = gradients.clip_by_global_norm(pairs, params.clip_gradient_norm)
  pairs = [(transfer.push(g, v, forward.transfer_dtype), v) for g, v in pairs]
  updates = batch_norm_updates.moving_average_updates(outputs.bn_moments, params.bn_update,
                                                      placement.reduce_device)
  num_workers = config.num_worker_replicas if config is not None else 1
  train = build_train_op(params, pairs, updates, num_workers,
                         config.is_chief if config is not None else True)
  _train_summaries(loss, weight_loss, train.learning_rate, grad_norm, outputs, global_batch)
  train_view_summaries(outputs, forward.label_parts, forward.clip_parts[0], params.stream)
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
  return tf.estimator.EstimatorSpec(tf.estimator.ModeKeys.TRAIN, loss=loss, train_op=train.op,
                                    scaffold=train.scaffold, training_hooks=hooks)


def _train_summaries(loss, weight_loss, rate, grad_norm, outputs, global_batch) -> None:
  """Scalars written once per step from the main graph, never duplicated per tower."""
  tf1.summary.scalar('loss/total', loss)
  tf1.summary.scalar('loss/weight', weight_loss)
  tf1.summary.scalar('learning_rate', rate)
  tf1.summary.scalar('gradient_global_norm', grad_norm)
  tf1.summary.scalar('global_batch', global_batch)
  for i, (loss_sum, size) in enumerate(zip(outputs.loss_sums, outputs.sizes)):
    tf1.summary.scalar(f'loss/tower_{i}', loss_sum / tf.cast(tf.maximum(size, 1), tf.float32))

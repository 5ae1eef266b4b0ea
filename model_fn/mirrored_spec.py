"""`--strategy=mirrored`: the same network, loss rule and train op under
`tf.distribute.MirroredStrategy`, one tower per replica.

    mirrored_spec(features, labels, mode, params, network=None) -> EstimatorSpec

The strategy calls it once per replica with that replica's share of the batch and sums the
replicas' gradients in `apply_gradients`, so each replica's loss is
S_r / B + weight_loss / R (B global batch, R replicas): the summed gradient is the towers'.
EVAL and PREDICT are the towers' specs (`eval_spec`, `predict_spec`).
"""

from __future__ import annotations

import tensorflow as tf

from command_line.options import OptionsError
from model_fn import batch_norm_updates, freezing, gradients, tower_graph
from model_fn.eval_spec import eval_spec
from model_fn.networks import Network, build_network
from model_fn.predict_spec import serving_spec
from model_fn.tower_forward import check_logits, mean_loss, split_features
from model_fn.train_spec import build_train_op

tf1 = tf.compat.v1
ModeKeys = tf.estimator.ModeKeys


def mirrored_spec(features, labels, mode, params, network: Network | None = None
                  ) -> tf.estimator.EstimatorSpec:
  """The same network, loss and train op under `tf.distribute.MirroredStrategy`.

  Batch-norm moving statistics follow each replica's batch and are MEAN-aggregated over
  replicas. A TrainParams with strategy=mirrored refuses the options it does not apply
  (clipping and EMA would act per replica; bn_update=mean, sync_replicas,
  accumulate_steps); accumulate_steps is refused here too, for callers (the tf.distribute
  peers of benchmarks/) whose params say strategy=towers.
  """
  if params.accumulate_steps != 1:
    raise OptionsError(f'accumulate_steps={params.accumulate_steps} is built only in the '
                       'towers\' model_fn, not under a tf.distribute strategy: set '
                       'accumulate_steps=1', option='accumulate_steps')
  if mode == ModeKeys.PREDICT:
    return serving_spec(features, params, network)
  clips, _ = split_features(features)
  replicas = tf.distribute.get_replica_context().num_replicas_in_sync
  outputs = tower_graph.build_towers(network or build_network(params), clips, labels,
                                     ('',), None, mode == ModeKeys.TRAIN)
  logits = outputs.logits[0]
  check_logits(logits, params.num_classes)
  global_batch = tf.cast(outputs.sizes[0] * replicas, tf.float32)
  weight_loss = gradients.weight_loss(tf1.trainable_variables(), params.weight_decay)
  loss = mean_loss(outputs.loss_sums, global_batch, weight_loss, replicas)
  if mode == ModeKeys.EVAL:
    return eval_spec(loss, logits, labels, features, params)
  variables = freezing.trainable_variables(params, tf1.trainable_variables())
  grads = tf1.gradients(loss, variables)
  pairs = [(g, v) for g, v in zip(grads, variables) if g is not None]
  updates = batch_norm_updates.moving_average_updates(outputs.bn_moments, 'main',
                                                      lambda v: v.device)
  train = build_train_op(params, pairs, updates)
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train.op, scaffold=train.scaffold)

"""One training step of a network, built three ways, for the throughput benchmark.

Every builder returns a `StepGraph`: a fresh graph whose `train_op` runs one full training
step (forward, backward, gradient reduction, optimizer update, batch-norm updates) on a
fixed synthetic global batch held in a local variable on the host CPU, and the session
config to run it with. The same timing method then applies to every row
(`session.run(train_op)`, see `benchmarks/towers_benchmark_main.py`):

* `reference_step`: the network on one device, plain `tf.compat.v1.gradients` and
  `apply_gradients`, no tower machinery (no split, no custom getter, no gradient averaging);
* `towers_step`: `model_fn.tower_model_fn.make_model_fn()` (this project) on N devices;
* `mirrored_step`: `model_fn.tower_model_fn.make_model_fn(strategy='mirrored')` under
  `tf.distribute.MirroredStrategy` on the same N devices, wired as Estimator does it
  (`extended.call_for_each_replica`, then `strategy.group` of the train ops).

All three use the same network, optimizer, learning-rate schedule, weight decay and batch.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import tensorflow as tf

from model_fn import gradients, optimization, tower_model_fn
from model_fn.devices import resolve_tower_devices
from model_fn.layers import TowerContext
from model_fn.networks import build_network, input_channels
from towers.estimator import session_config
from towers.params import TrainParams

tf1 = tf.compat.v1
HOST = '/device:CPU:0'


@dataclasses.dataclass
class StepGraph:
  """A built training step: run `init_op` once, then `train_op` once per step."""
  graph: tf.Graph
  train_op: tf.Operation
  init_op: tf.Operation
  config: tf1.ConfigProto


def _synthetic_batch(params: TrainParams) -> tuple[tf.Tensor, tf.Tensor]:
  """The global batch as local variables on the host: uniform clips in [-1, 1], labels
  cycling over the classes. Read each step, so no input pipeline cost is measured."""
  rng = np.random.default_rng(params.random_seed)
  shape = (params.batch_size, params.clip_frames, params.crop_size, params.crop_size,
           input_channels(params))
  clips = rng.uniform(-1.0, 1.0, shape).astype(np.float32)
  labels = (np.arange(params.batch_size) % params.num_classes).astype(np.int64)
  with tf.device(HOST):
    clips_var = tf1.get_local_variable('benchmark_clips', initializer=clips, trainable=False)
    labels_var = tf1.get_local_variable('benchmark_labels', initializer=labels,
                                        trainable=False)
  return clips_var.read_value(), labels_var.read_value()


def _init_op() -> tf.Operation:
  return tf.group(tf1.global_variables_initializer(), tf1.local_variables_initializer())


def reference_step(params: TrainParams) -> StepGraph:
  """The network on the host CPU alone: the same step without any tower machinery."""
  graph = tf.Graph()
  with graph.as_default(), tf.device(HOST):
    tf1.set_random_seed(params.random_seed)
    clips, labels = _synthetic_batch(params)
    global_step = tf1.train.get_or_create_global_step()
    ctx = TowerContext(index=0, is_training=True)
    logits = build_network(params)(clips, ctx)
    data_loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits))
    variables = tf1.trainable_variables()
    loss = data_loss + gradients.weight_loss(variables, params.weight_decay)
    optimizer = optimization.make_optimizer(
        params, optimization.learning_rate(params, global_step))
    grads = tf1.gradients(loss, variables)
    apply_op = optimizer.apply_gradients(
        [(g, v) for g, v in zip(grads, variables) if g is not None], global_step=global_step)
    bn_updates = [
        op for m in ctx.bn_moments
        for op in (m.moving_mean.assign_sub((m.moving_mean - m.mean) * (1.0 - m.decay)),
                   m.moving_variance.assign_sub(
                       (m.moving_variance - m.variance) * (1.0 - m.decay)))]
    train_op = tf.group(apply_op, *bn_updates)
    init_op = _init_op()
  devices = resolve_tower_devices(1, (), num_gpus=0)
  return StepGraph(graph, train_op, init_op, session_config(devices, 1))


def towers_step(params: TrainParams) -> StepGraph:
  """This project's tower model_fn over `params.num_towers` devices."""
  devices = resolve_tower_devices(params.num_towers, params.tower_devices)
  graph = tf.Graph()
  with graph.as_default():
    tf1.set_random_seed(params.random_seed)
    clips, labels = _synthetic_batch(params)
    spec = tower_model_fn.make_model_fn()(clips, labels, tf.estimator.ModeKeys.TRAIN, params)
    init_op = _init_op()
  return StepGraph(graph, spec.train_op, init_op,
                   session_config(devices, devices.num_towers))


def mirrored_step(params: TrainParams) -> StepGraph:
  """`make_model_fn(strategy='mirrored')` on the towers' devices. Each replica takes its
  contiguous share of the host batch, as a distributed dataset would hand it over.
  Needs the eager runtime to expose enough CPU devices (`ensure_logical_cpus`) first."""
  devices = resolve_tower_devices(params.num_towers, params.tower_devices)
  replicas = devices.num_towers
  if params.batch_size % replicas:
    raise ValueError(f'batch_size={params.batch_size} must divide over {replicas} replicas')
  per_replica = params.batch_size // replicas
  graph = tf.Graph()
  with graph.as_default():
    tf1.set_random_seed(params.random_seed)
    clips, labels = _synthetic_batch(params)
    strategy = tf.distribute.MirroredStrategy(devices=list(devices.devices))
    with strategy.scope():
      tf1.train.get_or_create_global_step()

      def replica_fn(all_clips, all_labels):
        index = tf.distribute.get_replica_context().replica_id_in_sync_group
        start = index * per_replica
        spec = tower_model_fn.make_model_fn(strategy='mirrored')(
            all_clips[start:start + per_replica], all_labels[start:start + per_replica],
            tf.estimator.ModeKeys.TRAIN, params)
        return spec.train_op

      train_ops = strategy.extended.call_for_each_replica(replica_fn, args=(clips, labels))
      train_op = strategy.group(train_ops)
    init_op = _init_op()
  return StepGraph(graph, train_op, init_op, session_config(devices, replicas))

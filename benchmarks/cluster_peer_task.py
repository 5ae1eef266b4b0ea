"""The library of //benchmarks:cluster_peer_task (`benchmarks/cluster_peer_task_main.py` says
what it measures and how to run it): its options, their checks and its run.
"""

from __future__ import annotations

import dataclasses

import tensorflow as tf
from absl import flags

from model_fn import tower_forward, tower_model_fn
from model_fn.training_hooks import ProgressHook
from command_line import status_file
from input_fn import factory
from towers import flags as towers_flags
from command_line.options import option, Options

tf1 = tf.compat.v1

PEERS = ('ps_strategy', 'multi_worker_mirrored', 'replica_device_setter')


@dataclasses.dataclass(frozen=True)
class PeerOptions(Options):
  peer: str = option('ps_strategy', 'Which TensorFlow multi-node tool trains.', choices=PEERS)




def make_strategy(peer: str) -> tf.distribute.Strategy | None:
  """The strategy object of `peer` (None: plain Estimator replication)."""
  if peer == 'ps_strategy':
    return tf1.distribute.experimental.ParameterServerStrategy()
  if peer == 'multi_worker_mirrored':
    return tf.distribute.experimental.MultiWorkerMirroredStrategy()
  return None


def peer_model_fn(features, labels, mode, params) -> tf.estimator.EstimatorSpec:
  """`make_model_fn(strategy='mirrored')` plus the progress hook; records the replica's batch
  size (a `replica_batch` status event)."""
  spec = tower_model_fn.make_model_fn(strategy='mirrored')(features, labels, mode, params)
  if mode != tf.estimator.ModeKeys.TRAIN:
    return spec
  clips, _ = tower_forward.split_features(features)
  status_file.record('replica_batch', clips=int(clips.shape[0]))
  hook = ProgressHook(spec.loss, params.batch_size, params.max_steps, params.log_every_steps)
  return spec._replace(training_hooks=(*spec.training_hooks, hook))


def run(options: PeerOptions) -> None:
  """Trains this task's part of the peer cluster (train flags: `towers.params`)."""
  params = towers_flags.params_from_flags(flags.FLAGS)
  peer = options.peer
  config = tf.estimator.RunConfig(
      model_dir=params.model_dir, tf_random_seed=params.random_seed,
      save_checkpoints_steps=params.save_checkpoints_steps,
      log_step_count_steps=params.log_every_steps, save_summary_steps=params.log_every_steps,
      train_distribute=make_strategy(peer))
  estimator = tf.estimator.Estimator(peer_model_fn, config=config, params=params)
  train_spec = tf.estimator.TrainSpec(factory.make_input_fn(params, tf.estimator.ModeKeys.TRAIN),
                                      max_steps=params.max_steps)
  eval_spec = tf.estimator.EvalSpec(factory.make_input_fn(params, tf.estimator.ModeKeys.EVAL),
                                    steps=1)
  tf.estimator.train_and_evaluate(estimator, train_spec, eval_spec)

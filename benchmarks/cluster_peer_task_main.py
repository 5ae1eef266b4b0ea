"""One task (ps, chief or worker, from TF_CONFIG) of a TensorFlow multi-node peer that
`cluster_peers` measures beside this library:

  ps_strategy            tf.compat.v1.distribute.experimental.ParameterServerStrategy
  multi_worker_mirrored  tf.distribute.experimental.MultiWorkerMirroredStrategy
  replica_device_setter  no strategy: the Estimator's own between-graph replication
                         (tf.compat.v1.train.replica_device_setter over the ps tasks)

Every peer trains the same network, loss and optimizer as `--strategy=mirrored` does
(`tower_model_fn.make_model_fn(strategy='mirrored')`, one replica per process) on the same
synthetic input (`input_fn.factory`), through `tf.estimator.train_and_evaluate` exactly as a
TensorFlow user would, so TensorFlow starts the servers and creates the sessions. The chief
and workers run the project's `ProgressHook`, whose status events (graph built, session
ready, first step, progress; `command_line/status_file.py`) `cluster_peers` reads.

`--batch_size` is what the Estimator's input_fn is given: under MultiWorkerMirroredStrategy
that is the global batch (each of the R replicas gets batch_size / R), otherwise one
worker's batch. A `replica_batch` status event {clips} says what each replica got.
"""

from __future__ import annotations

import dataclasses

import tensorflow as tf
from absl import flags

from model_fn import tower_forward, tower_model_fn
from model_fn.training_hooks import ProgressHook
from command_line import cli, entry, status_file
from input_fn import factory
from towers import flags as towers_flags
from command_line.options import option, Options

tf1 = tf.compat.v1

PEERS = ('ps_strategy', 'multi_worker_mirrored', 'replica_device_setter')


@dataclasses.dataclass(frozen=True)
class PeerOptions(Options):
  peer: str = option('ps_strategy', 'Which TensorFlow multi-node tool trains.', choices=PEERS)


towers_flags.define_flags()
cli.define_flags(PeerOptions)


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


PROGRAM = entry.Program('cluster_peer_task', run, PeerOptions)


if __name__ == '__main__':
  PROGRAM.start(define=False)

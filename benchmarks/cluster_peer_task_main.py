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

The library: benchmarks/cluster_peer_task.py.
"""

from __future__ import annotations

from benchmarks.cluster_peer_task import PeerOptions, run
from command_line import entry
from towers import flags as towers_flags

towers_flags.define_flags()  # the train binary's flags, for each task

PROGRAM = entry.Program('cluster_peer_task', run, PeerOptions)


if __name__ == '__main__':
  PROGRAM.start()

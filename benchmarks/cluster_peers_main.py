"""This library's cluster training beside TensorFlow's own multi-node tools, in one run.

    bazel run //benchmarks:cluster_peers -- --repeats=2

Systems, each on a local cluster of 1 ps, a chief and a worker (MultiWorkerMirroredStrategy:
chief and worker, no ps), one replica per worker, processes on this machine with
TF_CONFIG, inside a private loopback-only network namespace (as `local_cluster`):

  ours_async             //towers:train, asynchronous (the default)
  ours_sync              //towers:train --sync_replicas
  ps_strategy            tf.compat.v1.distribute.experimental.ParameterServerStrategy
  multi_worker_mirrored  tf.distribute.experimental.MultiWorkerMirroredStrategy
  replica_device_setter  a plain Estimator (between-graph replication over the ps)

Same network (c3d_small), synthetic input, optimizer and replica batch (`--replica_batch`
clips per worker step; the global batch is twice that). The peers run
`benchmarks/cluster_peer_task_main.py`. All tasks of a cluster start at the same moment, as
Slurm or Kubeflow start them. Repeats are interleaved (repeat r of every system, then r+1).

Measured per run:
  examples/s     global steps x examples per global step (one worker's batch when
                 asynchronous, both workers' when synchronous), over the chief's progress
                 events from `--settle_secs` after both chief and worker made their
                 first step, for `--window_secs` (or until max_steps);
  CPU/example    user + system CPU seconds of every task process over the same window
                 per example: the work each system spends, which sets examples/s when
                 all tasks share this machine's cores (and is less disturbed by other
                 load than examples/s); each run's line also gives it per task;
  bytes/step     loopback bytes over the same window per replica step (= per worker
                 batch), against the model: 2 x parameters + batch-norm statistics;
  worker start   the worker's session ready and first step, each minus the chief's; and
                 how long the worker waited for the chief: its session ready minus the
                 later of the chief's session ready and its own graph built, i.e. the time
                 TensorFlow's 30 s poll (or our 0.5 s one) adds. All three are the events
                 `ProgressHook` records in each task's status file (graph_built,
                 session_ready, first_step; `command_line/status_file.py`), never log text;
  lost updates   after chief and worker have ended, every variable still on the ps is
                 compared with the chief's final checkpoint: global steps (and variables)
                 on the ps that the checkpoint does not hold. This library's ps exits by
                 itself once the chief's final checkpoint is written, recording the global
                 step it held (its `ps_final_step` status event): global steps only, set beside
                 the checkpoint's. MultiWorkerMirrored has no ps: n/a.
Targets: ours >= 1.0x every peer's examples/s; bytes per replica step <= 1.05x
the model; the worker waits <= 5 s once the chief's session is ready; no lost updates.
"""

from __future__ import annotations

# First: its signal handlers (command_line/signals.py), before anything slow.
from command_line import entry
# pylint: disable=wrong-import-position,wrong-import-order
import os
import sys

from benchmarks.peers_options import PeersOptions
from command_line import cli, console
from towers.cluster.local_cluster import ISOLATED_ENV, reexec_in_private_network

console.quiet_native_logs()  # before TensorFlow is imported: it reads the level once
cli.define_flags(PeersOptions)


def run(options: PeersOptions) -> int:
  """In a private network namespace (re-executed into one): every system's runs and the
  report (`cluster_peers.run`). Options that cannot work were refused before TensorFlow
  loads, here."""
  reexec_in_private_network(__file__, sys.argv[1:])
  if not os.environ.get(ISOLATED_ENV):
    raise entry.Refused('needs a private network namespace (unshare) so that the loopback '
                        'counter sees only the cluster')
  from benchmarks import cluster_peers  # pylint: disable=import-outside-toplevel
  return cluster_peers.run(options)


PROGRAM = entry.Program('cluster_peers', run, PeersOptions)


if __name__ == '__main__':
  PROGRAM.start(define=False)

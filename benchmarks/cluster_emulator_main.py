"""A GPU cluster emulated on this machine: `bazel run //benchmarks:cluster_emulator [-- flags]`.

    bazel run //benchmarks:cluster_emulator -- --nodes=1,2,4,10 --link_mbit=1000 --time_scale=10

For each system, mode (sync, async) and node count it builds `nodes` network namespaces
on shaped full-duplex links (`tools/namespaces.py`: `--link_mbit` /
`--time_scale` per direction per node, `--link_latency_ms`), puts one ps task and one
worker on every node (they share the node's link, as on the real cluster), runs them as
separate processes with `ProgramCluster` (`benchmarks/emulated_task.py`: the real
network's variables on the ps tasks, real pulls and pushes through TensorFlow's gRPC
parameter-server runtime, the forward and backward passes replaced by a wait of
`--emulate_compute x --time_scale` seconds, split per layer by FLOPs with `--overlap` so
that pulls overlap the forward pass and pushes the backward pass, as in training
without gradient clipping), and prints one Markdown row per run.

`--systems` chooses what runs those steps: `ours` (the above), or a TensorFlow peer
through its own strategy object (`benchmarks/emulated_peer_task.py`, same variables, same
wait, roles from TF_CONFIG): `ps_strategy` (tf.compat.v1 ParameterServerStrategy, one ps
and one worker per node, asynchronous only) and `multi_worker_mirrored`
(MultiWorkerMirroredStrategy, one worker per node and no ps, synchronous only; its model
is a ring all-reduce). A mode a system does not have is skipped with one line.
Columns:

* examples/s per worker and step-time percentiles, in the USER's seconds (measured
  seconds / time_scale): stretching the compute wait and slowing the links by the same k
  keeps their ratio and leaves this machine's CPU time per step (gRPC copies) k times
  smaller in comparison;
* scaling efficiency against one node (the 1-node run of the same invocation) and
  against a GPU that never waits, beside the paper model's prediction for the same
  layout (`benchmarks/cluster_model.py`, at `--link_efficiency` of the link);
* MB per worker step through the busiest node link, sent / received, measured from the
  bridge's counters (Ethernet, IP, TCP and gRPC framing included) beside the model's for
  that node at the measured mix of worker steps (asynchronous workers step at different
  rates when their remote ps shares differ; the model counts each worker's steps), and
  that link's use: its busier direction's bytes over the window / the link rate (a
  shaped link cannot exceed 100%).

`--plot=<file.png>` also draws the scaling curve (nodes against the share of compute, one
line per system and mode, the model dashed; `benchmarks/plots.py`); with
`--rows_from=<status file>` it draws the rows a run recorded and measures nothing.

Steps: `--untimed_steps` per worker are not measured, then `--steps` are. Each run is
bounded by `--timeout_secs`; every namespace, link and process is removed at the end.

The library: benchmarks/cluster_emulator.py.
"""

from __future__ import annotations

# First: its signal handlers (command_line/signals.py), before anything slow.
from command_line import entry
# pylint: disable=wrong-import-position,wrong-import-order
import os
import sys

from towers.cluster.local_cluster import ISOLATED_ENV, reexec_in_private_network

if sys.modules['__main__'].__dict__ is globals():
  # Run as the process's program (not executed in another's, as docs/flags_doc.py does):
  # into a private network namespace before the library loads TensorFlow, which would
  # otherwise load twice (~4 CPU-seconds). Drawing --rows_from there is harmless.
  reexec_in_private_network(__file__, sys.argv[1:])

from benchmarks import cluster_emulator
from benchmarks.cluster_emulator import EmulatorOptions, options_problem
from tools.namespaces import NamespaceError


def run(options: EmulatorOptions) -> None:
  """With --rows_from, draws the recorded rows; else, in the private network namespace
  (refused when this machine allows none), the table (`cluster_emulator.run`)."""
  if options.rows_from:
    cluster_emulator.draw_recorded(options)
    return
  if not os.environ.get(ISOLATED_ENV):
    raise entry.Refused('needs network namespaces (unshare --net --map-root-user); this '
                        'machine does not allow them')
  cluster_emulator.run(options)


PROGRAM = entry.Program('cluster_emulator', run, EmulatorOptions, check=options_problem,
                        refused=(NamespaceError,))


if __name__ == '__main__':
  PROGRAM.start()

r"""Starts this node's processes of a Slurm job's training cluster and supervises them.

    srun --ntasks-per-node=1 --kill-on-bad-exit=1 .venv/bin/python3 -m towers.cluster.node_main \
      --num_ps=2 --flagfile=gtx1060.flags --model_dir=/shared/runs/i3d

Run once per node of the job (one Slurm task each). The job's nodes are
`scontrol show hostnames $SLURM_JOB_NODELIST`, this node is `$SLURM_NODEID`: node i runs
trainer i (node 0's is the chief), the first --num_ps nodes also a ps, the last node also the
evaluator (ps and evaluator with no GPU), each a `towers.train_main` told its role by flags.
Flags it does not know go to every process. The policy (towers/cluster/supervision.py): a
trainer or ps that fails is named on one line, the node's other processes are stopped and the
program exits with its code (srun's --kill-on-bad-exit then ends the other nodes); an
evaluator that fails is named and training goes on; a chief or evaluator that stops for the
time limit (exit 75) creates `<--stopped_marker>.chief` / `.evaluator`, for the batch script
to requeue the job. Each end is a task_ended status event ($TOWERS_STATUS_FILE).

The library: towers/cluster/node.py.
"""

from __future__ import annotations

# First: its signal handlers (command_line/signals.py), before anything slow.
from command_line import entry
# pylint: disable=wrong-import-position,wrong-import-order
import os
import signal
import subprocess
import sys

from absl import flags

from towers.cluster.node import NodeOptions, job_node, node_roles, run_node
from towers.cluster.spec import ClusterError


def parse_flags(argv: list[str]) -> list[str]:
  """Parses the node program's flags; returns [program, *train flags] (the unknown ones)."""
  return [argv[0], *flags.FLAGS(argv, known_only=True)[1:]]


def scontrol_hostnames(node_list: str) -> list[str]:
  """`scontrol show hostnames node_list`: the host names of a Slurm node list, in order."""
  listed = subprocess.run(['scontrol', 'show', 'hostnames', node_list], capture_output=True,
                          text=True, check=False)
  if listed.returncode != 0:
    raise entry.Refused(f'scontrol show hostnames {node_list} failed (exit code '
                        f'{listed.returncode}): {listed.stderr.strip()}')
  return listed.stdout.split()


def _interrupted(signum, frame) -> None:
  del signum, frame
  raise KeyboardInterrupt


def run(options: NodeOptions, train_args: list[str]) -> int:
  """Runs this node's processes with `train_args`; 0, or the exit code of the first
  trainer or ps that failed."""
  nodes, node_id = job_node(os.environ, scontrol_hostnames)
  roles = node_roles(nodes, node_id, options.num_ps, options.ps_port, options.trainer_port)
  signal.signal(signal.SIGTERM, _interrupted)  # scancel: stop the processes, then end
  return run_node(roles, train_args, options.python or sys.executable, options.stopped_marker)


# SIGUSR1 (the job's time limit) is for the training processes, which Slurm signals
# themselves: this program goes on supervising them (stops_at_once=False).
PROGRAM = entry.Program('node', run, NodeOptions, refused=(ClusterError,), arguments=True,
                        stops_at_once=False)


if __name__ == '__main__':
  PROGRAM.start(flags_parser=parse_flags)

"""The supervisor policy of a training cluster, written once: what a process's end means for
the others. Every launcher applies it: `towers/cluster/node.py` (one node's processes, as the
Slurm batch script runs them) and `towers/cluster/local_cluster.py` (a whole cluster here).

  exit 0                                  DONE: it finished its part;
  exit 75 (STOPPED_EXIT_CODE), any role   STOPPED: the time limit (the chief at a checkpoint,
                                          the evaluator before its final evaluation): run
                                          again, or requeue, to continue;
  any other exit, the evaluator           EVALUATOR_FAILED: named on one line, training goes on;
  any other exit, a ps/chief/worker       FAILED: ends every other process.
"""

from __future__ import annotations

import ctypes
import signal
import sys

from command_line import signals
from towers.cluster.time_limit import STOPPED_EXIT_CODE

DONE = 'done'
STOPPED = 'stopped'
EVALUATOR_FAILED = 'evaluator_failed'
FAILED = 'failed'
PR_SET_PDEATHSIG = 1


def verdict(task_type: str, exit_code: int) -> str:
  """The policy for a process of `task_type` ('ps', 'chief', 'worker', 'evaluator') that
  exited with `exit_code`: DONE, STOPPED, EVALUATOR_FAILED or FAILED."""
  if exit_code == 0:
    return DONE
  if exit_code == STOPPED_EXIT_CODE:
    return STOPPED
  return EVALUATOR_FAILED if task_type == 'evaluator' else FAILED


def die_with_parent() -> None:
  """`preexec_fn` of every supervised process: the kernel kills it (SIGKILL) when its
  supervisor dies, even by SIGKILL, so no process outlives its launcher. It starts with
  SIGINT and SIGUSR1 blocked until its handlers exist (`command_line/signals.py`): no
  instant of its start is left to the default action."""
  signals.blocked_in_child()
  if sys.platform.startswith('linux'):
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)

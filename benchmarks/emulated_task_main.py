"""The emulated-cluster task program (`python -m benchmarks.emulated_task_main`, started by
//benchmarks:cluster_emulator): reads its `TaskOptions` and runs the task
(benchmarks/emulated_task.py)."""

from __future__ import annotations

from benchmarks.emulated_task import TaskOptions, run
from command_line import entry


PROGRAM = entry.Program('emulated_task', run, TaskOptions)


if __name__ == '__main__':
  PROGRAM.start()

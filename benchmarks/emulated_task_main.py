"""One task of the emulated cluster (`//benchmarks:cluster_emulator` starts these).

  python -m benchmarks.emulated_task_main --model=i3d ...

The task itself: benchmarks/emulated_task.py.
"""

from __future__ import annotations

from benchmarks.emulated_task import TaskOptions, run
from command_line import entry


PROGRAM = entry.Program('emulated_task', run, TaskOptions)


if __name__ == '__main__':
  PROGRAM.start()

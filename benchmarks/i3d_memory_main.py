"""How many I3D training clips fit in a GPU's memory, from the graph's tensor shapes.

  bazel run //benchmarks:i3d_memory [-- --usable_gib=5.0]

Prints the estimate of benchmarks/i3d_memory.py.
"""

from __future__ import annotations

from benchmarks.i3d_memory import MemoryOptions, run
from command_line import entry


PROGRAM = entry.Program('i3d_memory', run, MemoryOptions)


if __name__ == '__main__':
  PROGRAM.start()

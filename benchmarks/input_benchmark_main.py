"""Input throughput, side by side: the TFRecord pipeline against a PIL py_func loader.

  bazel run //benchmarks:input_benchmark [-- --seconds=30]

Prints the report of benchmarks/input_benchmark.py.
"""

from __future__ import annotations

from benchmarks.input_benchmark import InputBenchmarkOptions, options_problem, run
from command_line import entry


PROGRAM = entry.Program('input_benchmark', lambda options: print(run(options)),
                        InputBenchmarkOptions, check=options_problem, verbose=True)


if __name__ == '__main__':
  PROGRAM.start()

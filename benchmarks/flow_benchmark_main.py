"""`bazel run //benchmarks:flow_benchmark`: prints the TV-L1 comparison of
benchmarks/flow_benchmark.py."""

from __future__ import annotations

from benchmarks.flow_benchmark import FlowBenchmarkOptions, options_problem, run
from command_line import entry


PROGRAM = entry.Program('flow_benchmark', lambda options: print(run(options)),
                        FlowBenchmarkOptions, check=options_problem)


if __name__ == '__main__':
  PROGRAM.start()

"""TV-L1 flow, side by side: OpenCV's DualTVL1 against its TensorFlow port (data_tools/tvl1.py).

  bazel run //benchmarks:flow_benchmark [-- --pairs=4 --batch=4]

Prints the table of benchmarks/flow_benchmark.py.
"""

from __future__ import annotations

from benchmarks.flow_benchmark import FlowBenchmarkOptions, options_problem, run
from command_line import entry


PROGRAM = entry.Program('flow_benchmark', lambda options: print(run(options)),
                        FlowBenchmarkOptions, check=options_problem)


if __name__ == '__main__':
  PROGRAM.start()

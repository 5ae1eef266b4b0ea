"""The numbers of docs/scaling.md: `bazel run //benchmarks:scaling_model [-- flags]`.

Counts I3D's training FLOPs per clip from the graph (`benchmarks/flop_count.py`), reads the
trainable variables' bytes from the same network, places them on 1..10 ps tasks greedy by
bytes in creation order (`ParameterServerPlacement`; training places them largest first,
`LargestFirstPlacement`, compared in docs/scaling.md), and evaluates the paper model of
`benchmarks/cluster_model.py` for 1..10 workers at each link speed. The input-side check uses
the per-core JPEG decode rate measured on THIS machine with the input benchmark's decode
loop (or `--jpeg_decodes_per_core`). Prints Markdown.

The library: benchmarks/scaling_model.py.
"""

from __future__ import annotations

from benchmarks.scaling_model import report, ScalingOptions
from command_line import entry


PROGRAM = entry.Program('scaling_model', lambda options: print(report(options)),
                        ScalingOptions)


if __name__ == '__main__':
  PROGRAM.start()

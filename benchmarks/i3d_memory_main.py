"""How many I3D training clips fit in a GTX1060's memory, from TensorFlow's own accounting.

    bazel run //benchmarks:i3d_memory [-- --usable_gib=5.0]
    bazel run //benchmarks:i3d_memory -- --recipe=gtx1060.flags

With `--recipe` (a train flagfile) it checks that recipe instead of printing the table:
one line with the clips of one tower's micro-batch (batch_size / towers), the memory they
need and whether it fits; exit 1 when it does not.

Builds one tower's training step (I3D, cross-entropy, gradients of the trained variables,
momentum updates, the gradient accumulators when the recipe accumulates), places every op
on a virtual GTX1060 (a Grappler cluster of one DeviceProperties GPU: sm_61, 6 GiB), and
asks Grappler for the step's peak memory (`Cluster.DeterminePeakMemoryUsage`), as built
and after `tf_optimizer.OptimizeGraph` with the default config. The optimized graph is
what a session runs: its layout optimizer converts the convolutions to NCDHW with
transposes, and both layouts of the largest activations are alive at once, so that peak
is the larger and is the one used. Neither counts the CUDA context or cuDNN's convolution
workspace: the need adds 363 MiB and 512 MiB for them (their sources:
`benchmarks.i3d_memory.Overheads`), and the clips that fit are the most whose need stays
within `--usable_gib` (5 GiB of a 6 GiB card; the remaining GiB is the margin for the
allocator's fragmentation, which nothing here estimates). The peak grows linearly with the
clips: the clip count that fits is guessed from 1 and 2 clips (with `--recipe`, it starts
from the recipe's own count), then measured at that count and the next.

Takes minutes: each clip count is a graph built and optimized.

The library: benchmarks/i3d_memory.py.
"""

from __future__ import annotations

from benchmarks.i3d_memory import MemoryOptions, run
from command_line import entry


PROGRAM = entry.Program('i3d_memory', run, MemoryOptions)


if __name__ == '__main__':
  PROGRAM.start()

"""How many I3D training clips fit in a GPU's memory, from the graph's tensor shapes.

    bazel run //benchmarks:i3d_memory [-- --usable_gib=5.0]
    bazel run //benchmarks:i3d_memory -- --recipe=gtx1060.flags

With `--recipe` (a train flagfile) it checks that recipe instead of printing the table:
one line with the clips of one tower's micro-batch (batch_size / towers), the memory they
need and whether it fits; exit 1 when it does not.

Builds one training tower (batch 1, no computation) and its gradients, then sums

  * retained: every forward tensor that a gradient op reads (what backprop keeps alive
    from the forward pass: conv inputs, ReLU outputs, batch-norm intermediates, pool
    inputs/outputs, the clip itself). Shape-only reads (Shape, ShapeN, Size, Rank) are
    not counted. With `trainable_from`, no gradient flows into the frozen endpoints, so
    their activations are not retained.
  * transient: the larger of the backward peak (the two largest gradient tensors, an
    activation's gradient and its input's gradient, live at once) and the forward peak
    (the largest inputs + outputs of one forward op, which counts even for frozen
    endpoints, whose activations are freed once used).

Both scale linearly with the clips per tower. Fixed cost: weights, their gradients and
the momentum slot (3 x 4 bytes x parameters). Usable memory is an assumption, not a
measurement: of a 6 GB GTX1060 (6,144 MiB), the CUDA context, cuDNN workspace and TF's
reserve leave roughly 5 GiB to the allocator (`--usable_gib`). The layers here use the
unfused batch norm of `model_fn/layers.py`, as the real run does.

The library: benchmarks/i3d_memory.py.
"""

from __future__ import annotations

from benchmarks.i3d_memory import MemoryOptions, run
from command_line import entry


PROGRAM = entry.Program('i3d_memory', run, MemoryOptions)


if __name__ == '__main__':
  PROGRAM.start()

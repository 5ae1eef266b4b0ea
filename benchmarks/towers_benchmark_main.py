"""Tower throughput benchmark: `bazel run //benchmarks:towers_benchmark [-- flags]`.

For each `--models` entry, examples per second at one fixed global batch of synthetic
clips for: one device with no towers (the reference), this project's towers on each of
`--devices`, and tf.distribute.MirroredStrategy on the same devices. Method, identical for
every row: the row's training step is built in its own graph (`benchmarks/benchmark_graphs.py`)
and timed as wall time of `session.run(train_op)`; all rows of a model are open at once
and their repeats are interleaved (repeat r of every row, then repeat r+1), so load from
other processes on the machine hits all rows alike. `--untimed_steps` are excluded; each
repeat times `--steps_per_repeat` steps; the table shows the median and min-max over
`--repeats`.

Devices are virtual CPU devices (`ConfigProto.device_count`) when there is no GPU, and the
first N GPUs otherwise. N virtual CPUs share the machine's cores, so the CPU rows measure
the machinery's overhead, not scaling.

`--trace=PATH` writes a Chrome trace of one towers step (`--trace_devices` devices, the
first model) to PATH, plus PATH-derived traces of the reference and MirroredStrategy
steps, and prints where the time went. `--include_input` appends the input-pipeline
benchmark (`benchmarks/input_benchmark.py`) to the same report.

The library: benchmarks/towers_benchmark.py.
"""

from __future__ import annotations

from benchmarks.towers_benchmark import BenchmarkOptions, options_problem, run
from command_line import entry


PROGRAM = entry.Program('towers_benchmark', run, BenchmarkOptions, check=options_problem)


if __name__ == '__main__':
  PROGRAM.start()

"""Time to accuracy: `bazel run //benchmarks:time_to_accuracy [-- flags]`.

Trains the built-in demo (towers/demo.flags, synthetic source; any demo flag can be
overridden with `--set=name=value,...`; by default 16 motion directions instead
of 4, because the demo itself reaches 100% at its first evaluations) with each of `--towers` on the SAME global batch,
evaluating top-1 accuracy on the demo's test clips every `--eval_every` steps, and stops
each run at the first evaluation reaching `--target` (or at `--step_limit`). Reports the
curve and, side by side, the steps and seconds to the target and the ratio to the first
tower count. Seconds are counted two ways: training-step seconds (the sum of the training
session.run calls, measured by a hook) and wall seconds (including the Estimator's graph
rebuilds, checkpoints and the evaluations themselves, identical work for every tower count).
`--plot=<file.png>` also draws the curves (`benchmarks/plots.py`) and writes the runs beside
it (`<file>.json`); `--results_from=<file>.json --plot=<file.png>` draws recorded runs again.

The library: benchmarks/time_to_accuracy.py.
"""

from __future__ import annotations

from benchmarks.time_to_accuracy import options_problem, run, TimeToAccuracyOptions
from command_line import entry


PROGRAM = entry.Program('time_to_accuracy', run, TimeToAccuracyOptions, check=options_problem)


if __name__ == '__main__':
  PROGRAM.start()

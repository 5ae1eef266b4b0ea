"""Trains and evaluates a video network over towers.

    bazel run //towers:train -- --flagfile=towers/demo.flags

Relative paths, in flags and for --flagfile itself, resolve against the directory you ran
`bazel run` from. Every flag is a field of `towers.params.TrainParams`. In a cluster (flags,
TF_CONFIG or SLURM; see towers/cluster/spec.py) the same command runs on every node.
"""

from __future__ import annotations

import sys

from absl import app, flags

from command_line import console

console.quiet_native_logs()  # before TensorFlow is imported: it reads the level once

# pylint: disable=wrong-import-position
import tensorflow as tf

from input_fn import pipeline
from command_line import cli
from towers import flags as towers_flags
from towers import training
from towers.cluster.chief_watchdog import CHIEF_LOST_EXIT_CODE
from towers.cluster.time_limit import STOPPED_EXIT_CODE, StoppedBeforeTheEnd
from towers.cluster_evaluator import ChiefLost

towers_flags.define_flags()
cli.define_flags(console.ConsoleOptions)


def main(argv: list[str]) -> int:
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {" ".join(argv[1:])}')
  console.configure(cli.options_from_flags(console.ConsoleOptions).verbose)
  try:
    params = towers_flags.params_from_flags(flags.FLAGS)
    metrics = training.train_and_evaluate(params)
  except training.START_ERRORS as e:
    print(f'error: {e}', file=sys.stderr)
    return 2
  except training.END_ERRORS as e:
    print(f'error: {e}', file=sys.stderr)
    return 1
  except tf.errors.InvalidArgumentError as e:
    line = pipeline.input_error_line(e.message)
    if line is None:
      raise
    print(f'error: {line}', file=sys.stderr)
    return 1
  except StoppedBeforeTheEnd as e:
    print(e, file=sys.stderr)
    return STOPPED_EXIT_CODE
  except ChiefLost as e:
    print(f'error: {e}', file=sys.stderr)
    return CHIEF_LOST_EXIT_CODE
  if metrics:
    print(training.final_metrics_text(params, metrics))
  return 0


if __name__ == '__main__':
  cli.run(main)

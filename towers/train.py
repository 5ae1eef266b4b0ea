"""Trains and evaluates a video network over towers.

    bazel run //towers:train -- --flagfile=towers/demo.flags

Relative paths, in flags and for --flagfile itself, resolve against the directory you ran
`bazel run` from. Every flag is a field of `towers.params.TrainParams`. In a cluster (flags,
TF_CONFIG or SLURM; see towers/cluster/spec.py) the same command runs on every node.
"""

from __future__ import annotations

import sys

from absl import app, flags, logging

from command_line import console

console.quiet_native_logs()  # before TensorFlow is imported: it reads the level once

# pylint: disable=wrong-import-position
import tensorflow as tf

from input_fn import pipeline
from input_fn.manifest import ManifestError
from model_fn.eval_coverage import EvalCoverageError
from command_line import cli
from towers import preflight
from towers import flags as towers_flags
from towers import cluster_task as cluster_runner
from towers.cluster import spec as cluster
from towers.cluster.chief_watchdog import CHIEF_LOST_EXIT_CODE
from towers.cluster_evaluator import ChiefLost, EvaluationFailed
from towers.cluster.shutdown import TrainingIncomplete
from towers.cluster.time_limit import STOPPED_EXIT_CODE, StoppedBeforeTheEnd
from towers.params import ParamsError
from towers.training import metrics_table, protocol, train_and_evaluate

towers_flags.define_flags()
cli.define_flags(console.ConsoleOptions)


def main(argv: list[str]) -> int:
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {" ".join(argv[1:])}')
  console.configure(cli.options_from_flags(console.ConsoleOptions).verbose)
  try:
    params = towers_flags.params_from_flags(flags.FLAGS)
    task = cluster.resolve_cluster(params)
    if task is not None:  # before anything initialises TensorFlow's devices
      cluster_runner.assign_gpus(params, task)
    if task is None or task.task_type != 'ps':  # a ps needs neither data nor checkpoint
      preflight.check(params, task.num_workers if task else 1)
    logging.info('training %s for %d steps, %d clips per step (%d micro-batch(es) of %d), '
                 'model_dir %s', params.model, params.max_steps, params.examples_per_step,
                 params.accumulate_steps, params.batch_size, params.model_dir)
    if task is None:
      metrics = train_and_evaluate(params)
    else:
      metrics = cluster_runner.run_task(params, task)
  except (ParamsError, cluster.ClusterError, preflight.PreflightError, ManifestError) as e:
    print(f'error: {e}', file=sys.stderr)
    return 2
  except (EvalCoverageError, TrainingIncomplete, EvaluationFailed) as e:
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
    print(f'final metrics at step {int(metrics.get("global_step", -1))} (accuracy/video: '
          f'{protocol(params.eval_clips, params.eval_crops)} per video):\n'
          f'{metrics_table(metrics)}')
  return 0


if __name__ == '__main__':
  cli.run(main)

"""Trains and evaluates a video network over towers.

    bazel run //towers:train -- --flagfile=towers/demo.flags

Relative paths, in flags and for --flagfile itself, resolve against the directory you ran
`bazel run` from. Every flag is a field of `towers.params.TrainParams`. In a cluster (flags,
TF_CONFIG or SLURM; see towers/cluster/spec.py) the same command runs on every node.

Exit codes (`command_line/entry.py`; each but 0 and 75 after one `train: error: ...` line):
0 trained (the final metrics on stdout); 2 refused before training (a flag,
`training.START_ERRORS`); 1 failed after it started (`training.END_ERRORS`, no readable
input record, a loss or evaluation gone NaN, a full disk: `command_line/disk_space.py`);
4 the evaluator lost the chief (CHIEF_LOST_EXIT_CODE); 75 stopped for the job's time limit
(SIGUSR1 at any instant, on one machine as in a cluster: a checkpoint written if a step
ran; once max_steps is reached it stops nothing: exit 0), with its own status line
(STOPPED_EXIT_CODE); 130 SIGINT (Ctrl-C).
"""

from __future__ import annotations

# First: its signal handlers (command_line/signals.py), before anything slow.
from command_line import entry
# pylint: disable=wrong-import-position,wrong-import-order
import sys

from absl import flags

from command_line import cli, console, disk_space, flagfile, status_file

console.quiet_native_logs()  # before TensorFlow is imported: it reads the level once

from towers.flags import ProgramOptions
from command_line.options import Problem
from towers.params import ParamsError, TrainParams
from towers.cluster import spec as cluster_spec


def run(params: TrainParams) -> int:
  """Trains `params` (the flags, already a valid TrainParams: flags that cannot work were
  refused before TensorFlow loads); prints the final metrics. A damaged input that leaves no
  readable record is `entry.Failed`; the time limit's stop is a status line, not an error."""
  if cli.options_from_flags(ProgramOptions).check_flags:
    try:  # the cluster too (TF_CONFIG, cluster flags or SLURM): no TensorFlow needed
      cluster_spec.resolve_cluster(params)
    except cluster_spec.ClusterError as e:
      raise entry.Refused(str(e)) from e
    return 0
  # TensorFlow loads here, once the flags are known to make a TrainParams.
  # pylint: disable=import-outside-toplevel
  import tensorflow as tf
  from input_fn import pipeline
  from model_fn import eval_spec
  from towers import checkpoints, run_flags, training
  from towers.cluster.evaluator import ChiefLost
  from towers.cluster.time_limit import STOPPED_EXIT_CODE, StoppedBeforeTheEnd
  from towers.cluster.watchdog import CHIEF_LOST_EXIT_CODE
  limited = disk_space.file_size_limit_warning()
  if limited:
    print(f'train: warning: {limited}', file=sys.stderr)
  copied = run_flags.copied_problem(flagfile.flag_origins(sys.argv[1:]).get('model_dir', ''),
                                    params.model_dir)
  if copied:
    raise entry.Refused(Problem('model_dir', copied))
  unnamed = [name for name in training.DATA_SETTINGS if not flags.FLAGS[name].present]
  if unnamed:  # the data says which dataset, split and classes it holds
    params = training.with_data_settings(params, unnamed)
  try:
    metrics = training.train_and_evaluate(params)
  except training.START_ERRORS as e:
    raise entry.Refused(str(e)) from e  # recorded as `e`: its type and options
  except training.END_ERRORS as e:
    raise entry.Failed(str(e)) from e
  except ChiefLost as e:
    raise entry.Ended(str(e), CHIEF_LOST_EXIT_CODE) from None
  except tf.compat.v1.train.NanLossDuringTrainingError:
    raise entry.Failed(training.diverged_line(params)) from None
  except tf.errors.InvalidArgumentError as e:
    nonfinite = eval_spec.nonfinite_outputs_line(e.message)
    if nonfinite is not None:
      raise entry.Failed(nonfinite) from None
    unreadable = pipeline.unreadable_input(e.message)
    if unreadable is None:
      raise
    raise entry.Failed(str(unreadable)) from unreadable
  except tf.errors.OpError as e:
    damaged = checkpoints.damaged_checkpoint_line(e, params.model_dir)
    if damaged is None:
      raise
    raise entry.Failed(damaged) from None
  except StoppedBeforeTheEnd as e:
    print(e, file=sys.stderr)
    status_file.record('stopped', program='train', step=e.step, max_steps=params.max_steps)
    return STOPPED_EXIT_CODE
  if metrics:
    print(training.final_metrics_text(params, metrics))
  return 0


PROGRAM = entry.Program('train', run, TrainParams, refused=(ParamsError,), verbose=True,
                        extra_options=(ProgramOptions,), stops_at_once=False)


if __name__ == '__main__':
  PROGRAM.start()

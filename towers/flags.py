"""Command-line flags generated from `TrainParams`: one flag per field, same name and help.

Binaries and specs that read TrainParams from flags import this module (`//towers:train`
does the same through `entry.Program(options=TrainParams)`); the library takes a
`TrainParams` (or a dict) and never reads flags. The convention is `command_line/cli.py`'s.
`ProgramOptions`: the train binary's own flags besides TrainParams' (no TensorFlow here, so
the binary checks them before it loads).
"""

from __future__ import annotations

import dataclasses

from absl import flags

from command_line import cli
from command_line.options import option, Options
from towers.params import TrainParams, make_params


@dataclasses.dataclass(frozen=True)
class ProgramOptions(Options):
  """The train binary's own flags besides TrainParams' and the console's."""
  check_flags: bool = option(
      False, 'Only check the flags: exit 0 when they make valid settings, else the one error '
      'line and exit 2, before TensorFlow loads (launchers check once before starting tasks); '
      'the cluster (TF_CONFIG, cluster flags or SLURM) is checked too; the data, the '
      'model_dir and a resume are checked when the run starts.')


def define_flags(flag_values: flags.FlagValues = flags.FLAGS) -> None:
  """Defines every TrainParams field as a flag with the field's default."""
  cli.define_flags(TrainParams, flag_values)


def params_from_flags(flag_values: flags.FlagValues = flags.FLAGS,
                      working_dir: str | None = None) -> TrainParams:
  """Validated params from parsed flags; relative paths resolve against `working_dir`
  (default: the directory `bazel run` was started from, else the current directory)."""
  return make_params(cli.values_from_flags(TrainParams, flag_values, working_dir))

"""Command-line flags generated from `TrainParams`: one flag per field, same name and help.

Only `//towers:train` and other binaries import this module; the library takes a
`TrainParams` (or a dict) and never reads flags.
"""

from __future__ import annotations

import dataclasses
import os

from absl import flags

from towers.params import CHOICES, HELP, PATH, TrainParams, make_params


def define_flags(flag_values: flags.FlagValues = flags.FLAGS) -> None:
  """Defines every TrainParams field as a flag with the field's default."""
  for f in dataclasses.fields(TrainParams):
    default, help_text = f.default, f.metadata[HELP]
    if f.metadata.get(CHOICES):
      flags.DEFINE_enum(f.name, default, f.metadata[CHOICES], help_text, flag_values=flag_values)
    elif f.type.startswith('tuple'):
      flags.DEFINE_list(f.name, [str(v) for v in default], help_text, flag_values=flag_values)
    elif f.type == 'bool':
      flags.DEFINE_bool(f.name, default, help_text, flag_values=flag_values)
    elif f.type == 'int':
      flags.DEFINE_integer(f.name, default, help_text, flag_values=flag_values)
    elif f.type == 'float':
      flags.DEFINE_float(f.name, default, help_text, flag_values=flag_values)
    else:
      flags.DEFINE_string(f.name, default, help_text, flag_values=flag_values)


def params_from_flags(flag_values: flags.FlagValues = flags.FLAGS,
                      working_dir: str | None = None) -> TrainParams:
  """Validated params from parsed flags; relative paths resolve against `working_dir`
  (default: the directory `bazel run` was started from, else the current directory)."""
  base = working_dir or user_working_dir()
  values = {}
  for f in dataclasses.fields(TrainParams):
    value = flag_values[f.name].value
    if f.metadata.get(PATH) and value and not os.path.isabs(value):
      value = os.path.normpath(os.path.join(base, value))
    values[f.name] = value
  return make_params(values)


def user_working_dir() -> str:
  """Where the user ran the command: `bazel run` sets BUILD_WORKING_DIRECTORY."""
  return os.environ.get('BUILD_WORKING_DIRECTORY') or os.getcwd()

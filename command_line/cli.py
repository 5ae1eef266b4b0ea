"""The one command-line convention of every binary in the project.

A program's options are one frozen dataclass of `command_line.options.option` fields.
`define_flags(Options)` declares one absl flag per field (same name, default and help;
choices become enum flags, tuples list flags; `--help` lists the fields marked
`option(key=True)`, or all of them when the dataclass marks none, and `--helpfull` every
flag, under the title of its section when the dataclass is composed of sections);
`options_from_flags(Options)` reads them
back, resolving path fields against the directory the user ran the command from; `run(main)`
starts `main(argv)` in that directory, so `--flagfile` and relative paths mean what the
user typed. The library never imports this module.

    @dataclasses.dataclass(frozen=True)
    class PrepareOptions:
      out: str = option('', 'Output directory.', path=True)

    cli.define_flags(PrepareOptions)
    def main(argv): options = cli.options_from_flags(PrepareOptions); ...
    if __name__ == '__main__': cli.run(main)

Programs do this through `command_line/entry.py` (`entry.Program(...).start()`), which also
maps what goes wrong to one `<program>: error: <message>` line and its exit code.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import Any, Callable, TypeVar

from absl import app, flags

from command_line import console
from command_line.working_dir import user_working_dir
from command_line.options import CHOICES, KEY, PATH, build, help_of, section_of

T = TypeVar('T')


def define_flags(options_type: type, flag_values: flags.FlagValues = flags.FLAGS) -> None:
  """Defines every field of `options_type` as a flag with the field's default and help (and
  its declared range: 'Must be positive.'). The fields marked `key` (all, when none is) are
  the program's key flags: absl's --help lists the main module's (`sys.argv[0]`) key flags,
  --helpfull every flag, grouped by the module that defined it: a field of a section
  (`options.section_of`) counts as defined by '<section title> (<options type>)'."""
  fields = dataclasses.fields(options_type)
  for f in fields:
    default, help_text, field_type = f.default, help_of(f), str(f.type)
    section = section_of(options_type, f.name)
    where = {'flag_values': flag_values}
    if section:
      where['module_name'] = f'{section} ({options_type.__name__})'
    if f.metadata.get(CHOICES) and field_type == 'str':
      flags.DEFINE_enum(f.name, default, f.metadata[CHOICES], help_text, **where)
    elif field_type.startswith('tuple'):
      flags.DEFINE_list(f.name, [str(v) for v in default], help_text, **where)
    elif field_type == 'bool':
      flags.DEFINE_bool(f.name, default, help_text, **where)
    elif field_type == 'int':
      flags.DEFINE_integer(f.name, default, help_text, **where)
    elif field_type == 'float':
      flags.DEFINE_float(f.name, default, help_text, **where)
    else:
      flags.DEFINE_string(f.name, default, help_text, **where)
  for f in [f for f in fields if f.metadata.get(KEY)] or fields:
    flag_values.register_key_flag_for_module(sys.argv[0], flag_values[f.name])


def values_from_flags(options_type: type, flag_values: flags.FlagValues = flags.FLAGS,
                      working_dir: str | None = None) -> dict[str, Any]:
  """The parsed flag of every field; path fields with `~` expanded as a shell would (a
  flagfile's or a quoted `--flag=~/x` reaches the program unexpanded), relative ones
  resolved against `working_dir` (default: `user_working_dir()`)."""
  base = working_dir or user_working_dir()
  values = {}
  for f in dataclasses.fields(options_type):
    value = flag_values[f.name].value
    if f.metadata.get(PATH) and value:
      value = os.path.expanduser(value)
    if f.metadata.get(PATH) and value and not os.path.isabs(value):
      value = os.path.normpath(os.path.join(base, value))
    values[f.name] = value
  return values


def options_from_flags(options_type: type[T], flag_values: flags.FlagValues = flags.FLAGS,
                       working_dir: str | None = None) -> T:
  """The options object of the parsed flags (see `command_line.options.build`)."""
  return build(options_type, values_from_flags(options_type, flag_values, working_dir))


def run(main: Callable[[list[str]], int | None],
        flags_parser: Callable[[list[str]], list[str]] | None = None) -> None:
  """`absl.app.run(main)` from the user's working directory (`bazel run` starts binaries
  inside the runfiles tree; --flagfile and relative paths are the user's). `flags_parser`
  as in absl: a launcher that passes unknown flags on uses `FLAGS(argv, known_only=True)`.
  TensorFlow's C++ INFO and WARNING lines are hidden unless the command line asks for
  --verbose (`console.quiet_native_logs`): this covers TensorFlow imported from here on; a
  binary whose own imports load TensorFlow calls `console.quiet_native_logs()` before them."""
  console.quiet_native_logs()
  os.chdir(user_working_dir())
  if flags_parser is None:
    app.run(main)
  else:
    app.run(main, flags_parser=flags_parser)

"""Options objects: frozen dataclasses whose fields say their help, choices and paths.

Every program of the project keeps its options in one frozen dataclass built with
`option(...)` fields: `towers.params.TrainParams` for training, one dataclass per tool.
`command_line/cli.py` turns such a dataclass into command-line flags; this module needs no absl,
so the library can build options from a dict.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping, TypeVar

CHOICES = 'choices'
HELP = 'help'
PATH = 'path'  # a filesystem path: resolved against the user's working directory by cli.py

T = TypeVar('T')


class OptionsError(ValueError):
  """An option's value or name is invalid. The message names the option."""


def option(default: Any, help_text: str, choices: tuple[str, ...] | None = None,
           path: bool = False) -> Any:
  """A dataclass field with its default, its help text, its allowed values (or None) and
  whether it holds a filesystem path."""
  metadata = {HELP: help_text, PATH: path}
  if choices is not None:
    metadata[CHOICES] = tuple(choices)
  return dataclasses.field(default=default, metadata=metadata)


def field_names(options_type: type) -> tuple[str, ...]:
  return tuple(f.name for f in dataclasses.fields(options_type))


def build(options_type: type[T], values: Mapping[str, Any] | None = None,
          error: type[Exception] = OptionsError) -> T:
  """`options_type(**values)` after checking names, converting lists to tuples of the
  field's element type and checking choices; raises `error` naming the option."""
  values = dict(values or {})
  unknown = sorted(set(values) - set(field_names(options_type)))
  if unknown:
    raise error(f'unknown option(s): {", ".join(unknown)} '
                f'(known: {", ".join(field_names(options_type))})')
  fields = {f.name: f for f in dataclasses.fields(options_type)}
  converted = {name: convert(fields[name], value, error) for name, value in values.items()}
  built = options_type(**converted)
  for f in dataclasses.fields(options_type):
    choices = f.metadata.get(CHOICES)
    value = getattr(built, f.name)
    if choices and value not in choices:
      raise error(f'{f.name}={value!r} is not one of {", ".join(choices)}')
  return built


def convert(f: dataclasses.Field, value: Any, error: type[Exception] = OptionsError) -> Any:
  """The value as the field's declared type: a comma-separated string or a list becomes
  a tuple of int, float or str; int, float and bool fields must hold such a value."""
  field_type = str(f.type)
  if field_type.startswith('tuple'):
    if isinstance(value, str):
      value = [v for v in value.split(',') if v.strip()]
    element = int if 'int' in field_type else float if 'float' in field_type else str
    try:
      return tuple(element(v) for v in value)
    except (TypeError, ValueError) as e:
      raise error(f'{f.name}: cannot read {value!r} as a list of {element.__name__}') from e
  if field_type == 'bool':
    if not isinstance(value, bool):
      raise error(f'{f.name}={value!r} must be True or False')
  elif field_type == 'int':
    if isinstance(value, bool) or not isinstance(value, int):
      raise error(f'{f.name}={value!r} must be a whole number')
  elif field_type == 'float':
    if isinstance(value, bool) or not isinstance(value, (int, float)):
      raise error(f'{f.name}={value!r} must be a number')
    return float(value)
  elif field_type == 'str' and not isinstance(value, str):
    raise error(f'{f.name}={value!r} must be a string')
  return value

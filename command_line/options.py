"""Options objects: frozen dataclasses whose fields say their help, choices and paths.

Every program of the project keeps its options in one frozen dataclass derived from
`Options` with `option(...)` fields: `towers.params.TrainParams` for training, one dataclass
per tool. An options object is valid whenever it exists: making one (directly, from flags,
from a dict or through `dataclasses.replace`) runs `validated`, the one check of every
options type: each field converted to its type, finite, in its range and among its choices,
then the type's cross-field `rules`. `build` adds only the check of unknown names.
`command_line/cli.py` turns such a dataclass into command-line flags; this module needs no
absl, so the library can build options from a dict.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Any, Callable, ClassVar, Mapping, TypeVar

CHOICES = 'choices'
HELP = 'help'
PATH = 'path'  # a filesystem path: resolved against the user's working directory by cli.py
RANGE = 'range'
KEY = 'key'  # one of the flags a user starts with: listed by --help (`command_line/cli.py`)

T = TypeVar('T')


class OptionsError(ValueError):
  """An option's value or name is invalid. The message names the option; `option` holds its
  name (None when the error concerns no single option), for programs and specs to tell
  errors apart without reading the text. `noun` is what the message calls an option."""
  noun: ClassVar[str] = 'option'

  def __init__(self, message: str, option: str | None = None) -> None:
    super().__init__(message)
    self.option = option


class Problem(str):
  """A problem message (a `str`) that also holds the name of the option it concerns
  (`option`, or None): lists of problems stay readable text and stay machine-checkable."""
  option: str | None

  def __new__(cls, option: str | None, text: str) -> 'Problem':
    made = super().__new__(cls, text)
    made.option = option
    return made


def options_named(error: BaseException) -> list[str]:
  """The option names an error concerns: those of its `problems` (a list of `Problem`s), else
  its `option` (absl's unknown-flag error: `flagname`; an error raised with a `Problem`:
  the problem's); [] when it names none."""
  listed = getattr(error, 'problems', None)
  if listed:
    return [p.option for p in listed if getattr(p, 'option', None)]
  message = error.args[0] if error.args else None
  name = (getattr(error, 'option', None) or getattr(error, 'flagname', None) or
          getattr(message, 'option', None))
  return [name] if name else []


@dataclasses.dataclass(frozen=True)
class Range:
  """The values a numeric option (or each element of a list option) may take: at least
  `low` (above it when `low_open`), at most `high` (below it when `high_open`), none of
  `excluded` (e.g. num_towers: -1 or positive)."""
  low: float | None = None
  high: float | None = None
  low_open: bool = False
  high_open: bool = False
  excluded: tuple[float, ...] = ()

  def holds(self, value: float) -> bool:
    if value != value or value in self.excluded:  # NaN: in no range
      return False
    if self.low is not None and (value <= self.low if self.low_open else value < self.low):
      return False
    return self.high is None or (value < self.high if self.high_open else value <= self.high)

  def describe(self) -> str:
    """'positive', '>= 0', '> 0', 'in [0, 1)', '>= -1 and not 0'."""
    if self.excluded:
      bounds = dataclasses.replace(self, excluded=()).describe()
      return f'{bounds} and not {" or ".join(map(_number, self.excluded))}'
    if self.high is None:
      if self.low == 1 and not self.low_open:
        return 'positive'
      return f'{">" if self.low_open else ">="} {_number(self.low)}'
    if self.low is None:
      return f'{"<" if self.high_open else "<="} {_number(self.high)}'
    return (f'in {"(" if self.low_open else "["}{_number(self.low)}, {_number(self.high)}'
            f'{")" if self.high_open else "]"}')


def _number(value: float | None) -> str:
  return f'{value:g}' if isinstance(value, float) else str(value)


def at_least(low: float) -> Range:
  return Range(low=low)


def above(low: float) -> Range:
  return Range(low=low, low_open=True)


def option(default: Any, help_text: str, choices: tuple[Any, ...] | None = None,
           path: bool = False, valid: Range | None = None, key: bool = False) -> Any:
  """A dataclass field with its default, its help text, its allowed values (or None; of a
  list option, each element's, every one at most once),
  whether it holds a filesystem path, the range its number (or each of its numbers)
  must lie in (`valid`; `convert` refuses others, and NaN or infinity in any float), and
  whether it is one of the few options a user starts with (`key`: shown by --help)."""
  metadata: dict[str, Any] = {HELP: help_text, PATH: path, KEY: key}
  if choices is not None:
    metadata[CHOICES] = tuple(choices)
  if valid is not None:
    metadata[RANGE] = valid
  return dataclasses.field(default=default, metadata=metadata)


def help_of(f: dataclasses.Field) -> str:
  """The field's help text and, when it declares one, its range: '... Must be >= 2.'"""
  valid = f.metadata.get(RANGE)
  if valid is None:
    return f.metadata[HELP]
  each = ' each' if str(f.type).startswith('tuple') else ''
  return f'{f.metadata[HELP]} Must{each} be {valid.describe()}.'


def field_names(options_type: type) -> tuple[str, ...]:
  return tuple(f.name for f in dataclasses.fields(options_type))


# A cross-field rule: the problem (naming its option) of an options object, or None.
Rule = Callable[[Any], 'Problem | None']


class Options:
  """Base of every options dataclass: making one runs `validated` (`__post_init__`).
  A subclass declares its cross-field checks in `rules` (small named functions, each
  returning a `Problem` or None; a subclass adds its own to its bases') and the error type
  they raise in `error`."""
  rules: ClassVar[tuple[Rule, ...]] = ()
  error: ClassVar[type[OptionsError]] = OptionsError
  TITLE: ClassVar[str] = ''  # a section's title: heads the fields it declares in help

  def __post_init__(self) -> None:
    validated(self)


def section_of(options_type: type, name: str) -> str:
  """The `TITLE` of the class that declares field `name` of `options_type` ('' if none): an
  options type composed of sections groups its flags by it (--helpfull, docs/flags.md)."""
  for cls in options_type.__mro__:
    if name in vars(cls).get('__annotations__', {}):
      return vars(cls).get('TITLE', '')
  return ''


def rules_of(options_type: type) -> tuple[Rule, ...]:
  """Every rule `options_type` and its bases declare, bases' first (in field order)."""
  return tuple(rule for cls in reversed(options_type.__mro__)
               for rule in vars(cls).get('rules', ()))


def validated(options: Any) -> Any:
  """Checks `options` (a dataclass) in place and returns it: each field is converted
  (`convert`: type, finite, range) and checked against its choices, then every rule of its
  type runs (`rules_of`); the first problem raises the type's `error` naming the option."""
  error = getattr(options, 'error', OptionsError)
  for f in dataclasses.fields(options):
    value = convert(f, getattr(options, f.name), error)
    problem = choice_problem(f, value)
    if problem:
      raise _named(error, problem, f.name)
    object.__setattr__(options, f.name, value)
  for rule in rules_of(type(options)):
    problem = rule(options)
    if problem:
      raise _named(error, problem, problem.option)
  return options


def choice_problem(f: dataclasses.Field, value: Any) -> str | None:
  """Why `value` (converted) is not among the field's `choices` (a list option: an element
  not among them, or one given twice), or None."""
  choices = f.metadata.get(CHOICES)
  if not choices:
    return None
  listed = ', '.join(map(str, choices))
  if not isinstance(value, tuple):
    return None if value in choices else f'{f.name}={value!r} is not one of {listed}'
  if all(v in choices for v in value) and len(set(value)) == len(value):
    return None
  return f'{f.name}={",".join(map(str, value))}: each of {listed} at most once'


def build(options_type: type[T], values: Mapping[str, Any] | None = None,
          error: type[Exception] | None = None) -> T:
  """`options_type(**values)` (which validates itself, `Options`) after checking that every
  name is a field; raises `error` (default the type's `error`) naming the unknown option."""
  if not issubclass(options_type, Options):
    raise TypeError(f'{options_type.__name__} must derive from command_line.options.Options '
                    '(the one check of every options object)')
  error = error or options_type.error
  values = dict(values or {})
  unknown = sorted(set(values) - set(field_names(options_type)))
  if unknown:
    noun = getattr(error, 'noun', 'option')
    raise _named(error, f'unknown {noun}(s): {", ".join(unknown)} '
                 f'(known: {", ".join(field_names(options_type))})', unknown[0])
  return options_type(**values)


def convert(f: dataclasses.Field, value: Any, error: type[Exception] = OptionsError) -> Any:
  """The value as the field's declared type: a comma-separated string or a list becomes
  a tuple of int, float or str; int, float and bool fields must hold such a value; a float
  must be finite, and a number must lie in the field's declared range (`option(valid=)`)."""
  converted = _typed(f, value, error)
  valid = f.metadata.get(RANGE)
  numbers = converted if isinstance(converted, tuple) else (converted,)
  for number in numbers:
    if isinstance(number, float) and not math.isfinite(number) or \
        valid is not None and isinstance(number, (int, float)) and not valid.holds(number):
      what = (f'{f.name} must all be {valid.describe() if valid else "finite"}, got '
              f'{converted}' if isinstance(converted, tuple) else
              f'{f.name} must be {valid.describe() if valid else "finite"}, got {converted}')
      if valid is not None and isinstance(number, float) and not math.isfinite(number):
        what += ' (a finite number)'
      raise _named(error, what, f.name)
  return converted


def _named(error: type[Exception], message: str, option: str | None) -> Exception:
  """`error(message)` holding `option` (as `OptionsError` does)."""
  made = error(message)
  made.option = option
  return made


def _typed(f: dataclasses.Field, value: Any, error: type[Exception]) -> Any:
  field_type = str(f.type)
  if field_type.startswith('tuple'):
    if isinstance(value, str):
      value = [v for v in value.split(',') if v.strip()]
    element = int if 'int' in field_type else float if 'float' in field_type else str
    try:
      return tuple(element(v) for v in value)
    except (TypeError, ValueError) as e:
      raise _named(error, f'{f.name}: cannot read {value!r} as a list of '
                   f'{element.__name__}', f.name) from e
  if field_type == 'bool':
    if not isinstance(value, bool):
      raise _named(error, f'{f.name}={value!r} must be True or False', f.name)
  elif field_type == 'int':  # NumPy's integers too, as Python ints
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
      raise _named(error, f'{f.name}={value!r} must be a whole number', f.name)
    return int(value)
  elif field_type == 'float':
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
      raise _named(error, f'{f.name}={value!r} must be a number', f.name)
    return float(value)
  elif field_type == 'str' and not isinstance(value, str):
    raise _named(error, f'{f.name}={value!r} must be a string', f.name)
  return value

"""An options object as an absl flagfile: the lines that make it again; and the flagfiles of a
command line read as every user text file is.

    flag_lines(options) -> list[str]     # '--name=value', one per field, in field order
    expand_flagfiles(argv) -> list[str]  # each --flagfile=F replaced by F's flags
    flag_origins(argv) -> {flag: flagfile or ''}  # where each flag's value came from

Values are written as `cli.define_flags` reads them back: booleans 'true'/'false', tuples
comma-separated (empty: '--name='), floats by `repr` (exact), path fields (`option(path=
True)`) made absolute, so the file means the same from any working directory. Reading the
lines with `--flagfile` gives an object equal to `options` (strings holding a comma or a
newline are outside this contract: no option holds one).

A command line's flagfiles are read once per process (and working directory): every later
`expand_flagfiles` or `flag_origins` of the same argv answers from that reading, so what a
program asks of its flags agrees with what it parsed, even if a file changes meanwhile.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from typing import Any, Sequence

from command_line import text_files
from command_line.options import PATH

_DIRECTIVES = ('--flagfile=', '-flagfile=')


class FlagfileError(ValueError):
  """A --flagfile that cannot be read (missing, not UTF-8, including itself), or that
  overrides a flag typed before it; the message names it, and the file and line that name
  it. `option`: the flag overridden, else None."""

  def __init__(self, message: str, option: str | None = None) -> None:
    super().__init__(message)
    self.option = option


def expand_flagfiles(argv: list[str]) -> list[str]:
  """`argv` with each `--flagfile=F` replaced by F's flags, as absl expands them (one flag a
  line; blank, '#' and '//' lines skipped; nested --flagfile expanded in place), each file
  read by `text_files.read_lines` (a UTF-8 byte-order mark or CRLF read as without). A
  relative nested path that is not there from the working directory is taken beside the
  file naming it (a recipe that includes another, run from any directory). Raises
  `FlagfileError`, also for a flag typed before a --flagfile that sets it to another value:
  absl would read the file's (the last), dropping what was typed without a word."""
  expanded = _read(tuple(argv), os.getcwd())
  typed: dict[str, tuple[str, str]] = {}
  last: dict[str, tuple[str, str, str]] = {}
  for name, value, arg, origin in _settings(expanded):
    last[name] = (value, arg, origin)
    if not origin:
      typed[name] = (value, arg)
  for name, (value, arg, origin) in last.items():
    if origin and name in typed and typed[name][0] != value:
      raise FlagfileError(f'{typed[name][1]} is typed before --flagfile={origin}, which sets '
                          f'{arg} and so overrides it (flags are read in order, the last '
                          'wins): put the flags you type after --flagfile', name)
  return [arg for arg, _ in expanded]


def _settings(expanded: Sequence[tuple[str, str]]) -> list[tuple[str, str, str, str]]:
  """(flag name, value, the argument(s) as written, origin) of each flag `expanded` sets,
  in every spelling absl reads: `--name=value`, `--name value`, and a boolean's bare
  `--name` ('true') and `--noname` ('false'; `--name=false` and its other spellings read
  the same). Positional arguments, which programs refuse, are taken as values."""
  found = []
  i = 0
  while i < len(expanded):
    arg, origin = expanded[i]
    i += 1
    if not arg.startswith('-') or arg in ('-', '--'):
      continue
    body = arg.lstrip('-')
    if '=' in body:
      name, value = body.split('=', 1)
    elif i < len(expanded) and not expanded[i][0].startswith('-') and expanded[i][1] == origin:
      name, value = body, expanded[i][0]
      arg = f'{arg} {value}'
      i += 1
    elif body.startswith('no') and len(body) > 2:
      name, value = body[2:], 'false'
    else:
      name, value = body, 'true'
    found.append((name, _BOOLEAN_WORDS.get(value.lower(), value), arg, origin))
  return found


# absl's spellings of a boolean value, read as one.
_BOOLEAN_WORDS = {'true': 'true', 't': 'true', 'yes': 'true',
                  'false': 'false', 'f': 'false', 'no': 'false'}


def flag_origins(argv: list[str]) -> dict[str, str]:
  """{flag name: the flagfile its value came from, '' for the command line} for every flag
  `argv` sets, as `expand_flagfiles` reads it: the last setting wins, as in absl, so a flag
  given before a --flagfile that sets it again comes from the file. Raises `FlagfileError`."""
  return {arg.lstrip('-').split('=', 1)[0]: origin
          for arg, origin in _read(tuple(argv), os.getcwd()) if arg.startswith('-')}


@functools.lru_cache(maxsize=None)
def _read(argv: tuple[str, ...], cwd: str) -> tuple[tuple[str, str], ...]:
  """`_expanded(argv)` read once per argv and working directory `cwd` (the current one)."""
  del cwd  # part of the key: relative paths are read from it
  return tuple(_expanded(list(argv)))


def _expanded(argv: list[str], _including: tuple[tuple[str, int], ...] = ()
              ) -> list[tuple[str, str]]:
  """(flag, the flagfile it was read from or '') for `expand_flagfiles`."""
  expanded = []
  joined = []  # '--flagfile F' as '--flagfile=F'
  for arg in argv:
    if joined and joined[-1] in ('--flagfile', '-flagfile'):
      joined[-1] += '=' + arg
    else:
      joined.append(arg)
  for arg in joined:
    if not arg.startswith(_DIRECTIVES):
      expanded.append((arg, _including[-1][0] if _including else ''))
      continue
    name = arg.split('=', 1)[1]
    path = name
    if _including and not os.path.isabs(name) and not os.path.exists(name):
      path = os.path.join(os.path.dirname(_including[-1][0]), name)
    where = f' (named at {_including[-1][0]}:{_including[-1][1]})' if _including else ''
    if os.path.abspath(path) in (os.path.abspath(p) for p, _ in _including):
      raise FlagfileError(f'--flagfile={name}{where} includes itself')
    try:
      lines = text_files.read_lines(path)
    except OSError as e:
      raise FlagfileError(f'--flagfile={name}{where} cannot be read: {e.strerror}') from None
    except text_files.NotUtf8 as e:
      raise FlagfileError(f'--flagfile: {e}{where}') from None
    for number, text in lines:
      text = text.strip()
      if not text.startswith(('#', '//')):
        expanded += _expanded([text], _including + ((path, number),))
  return expanded


def flag_lines(options: Any) -> list[str]:
  """'--name=value' for every field of the dataclass `options`."""
  return [f'--{f.name}={_text(getattr(options, f.name), f.metadata.get(PATH, False))}'
          for f in dataclasses.fields(options)]


def _text(value: Any, path: bool) -> str:
  if isinstance(value, bool):
    return 'true' if value else 'false'
  if isinstance(value, tuple):
    return ','.join(_text(v, False) for v in value)
  if isinstance(value, float):
    return repr(value)
  if path and value:
    return os.path.abspath(value)
  return str(value)

"""An options object as an absl flagfile: the lines that make it again.

    flag_lines(options) -> list[str]     # '--name=value', one per field, in field order

Values are written as `cli.define_flags` reads them back: booleans 'true'/'false', tuples
comma-separated (empty: '--name='), floats by `repr` (exact), path fields (`option(path=
True)`) made absolute, so the file means the same from any working directory. Reading the
lines with `--flagfile` gives an object equal to `options` (strings holding a comma or a
newline are outside this contract: no option holds one).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from command_line.options import PATH


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

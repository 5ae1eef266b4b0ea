"""Where a serving program may write a result file (evaluate_two_stream --json_out and the
files beside it, classify --output): never over an existing file that is not a result of
that program, never inside a directory the run reads (records, a model_dir, an export).

    problem = overwrite_problem('json_out', path, 'evaluate_two_stream', is_ours, read_dirs)

No TensorFlow here: the programs check their outputs before it loads.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Mapping

from command_line.options import Problem
from command_line.text_files import NotUtf8, read_lines
from input_fn import json_files


def content(path: str) -> Any:
  """What a result file at `path` holds, for a recogniser: the JSON value of a .json file,
  the first line's comma-separated cells of any other (a .csv); None when it cannot be read
  as such."""
  if path.lower().endswith('.json'):
    return json_files.load_value(path)
  try:
    lines = read_lines(path)
  except (OSError, NotUtf8):
    return None
  return lines[0][1].split(',') if lines else None


def overwrite_problem(option: str, path: str, program: str, is_ours: Callable[[Any], bool],
                      read_dirs: Mapping[str, str], given: str | None = None) -> Problem | None:
  """Why `program` must not write `path` (the file of --`option`=`given`, default `path`):
  it lies inside one of `read_dirs` (option -> directory the run reads), or it exists and
  `is_ours(content(path))` says it is not a result of `program` (a manifest, a record
  shard, a user's file). None when it may be written (new, or an earlier result)."""
  given = path if given is None else given
  real = os.path.realpath(path)
  for read_option, directory in read_dirs.items():
    inside = os.path.realpath(directory)
    if real == inside or real.startswith(inside.rstrip(os.sep) + os.sep):
      return Problem(option, f'--{option}={given}: {path} is inside --{read_option}='
                     f'{directory}, which this run reads: write the result elsewhere')
  if os.path.isfile(path) and not is_ours(content(path)):
    return Problem(option, f'--{option}={given}: {path} is an existing file that {program} '
                   'did not write (not one of its results): give another path, or remove '
                   'that file first')
  return None

"""Whether an output directory holds a data tool's own data: its identity file.

prepare, extract_flow and make_synthetic_ucf101 each write, before their first output
file, a JSON object saying what makes their data what it is (sources and settings) into
their identity file in the directory (`claim`). A rerun into the same directory reads it
back (`read`), compares it with what it was asked to make (`differences`), and refuses a
directory holding other data with one line naming the difference and the fix
(`refusal`), so data of two settings is never mixed.

    here = dir_identity.read(path)           # None: no identity file; IdentityDamaged
    found = dir_identity.differences(here, asked)
    if found: raise MyToolError(dir_identity.refusal('--out=DIR', 'another dataset', found,
                                                     'use another --out'))
    dir_identity.claim(path, asked)
"""

from __future__ import annotations

import json
import os
from typing import Any, Mapping, Sequence

from command_line.options import Problem
from input_fn import json_files


class IdentityDamaged(ValueError):
  """The identity file exists but holds no identity; the message says what it holds."""


def read(path: str, key: str | None = None) -> dict[str, Any] | None:
  """The identity in `path` (its `key` entry when given, inside a larger file); None when
  the file does not exist. Raises `IdentityDamaged` ('not JSON', 'no <key> in it', 'a JSON
  list, not an object') when it exists without an identity."""
  if not os.path.exists(path):
    return None
  try:
    with open(path) as f:
      value = json.load(f)
  except (OSError, ValueError):
    raise IdentityDamaged('not JSON') from None
  if not isinstance(value, dict):
    raise IdentityDamaged(f'a JSON {type(value).__name__}, not an object')
  if key is None:
    return value
  if not isinstance(value.get(key), dict):
    raise IdentityDamaged(f'no {key} in it')
  return value[key]


def differences(here: Mapping[str, Any], asked: Mapping[str, Any],
                fields: Sequence[str] | None = None) -> list[Problem]:
  """'name: <value here> here, <value asked> asked' for every field that differs (`fields`
  in that order, default every field of either); a field holding a dict on both sides is
  compared entry by entry ('(none)' for a missing or empty entry). Each is a `Problem`
  whose `option` is the field's name (the entry's key inside a dict field)."""
  names = list(fields) if fields is not None else sorted(set(here) | set(asked))
  found = []
  for name in names:
    old, new = here.get(name), asked.get(name)
    if isinstance(old, dict) and isinstance(new, dict):
      for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
          found.append(Problem(key, f'{key}: {old.get(key) or "(none)"} here, '
                                    f'{new.get(key) or "(none)"} asked'))
    elif old != new:
      found.append(Problem(name, f'{name}: {old if old not in ("", None) else "(none)"} '
                                 f'here, {new if new not in ("", None) else "(none)"} asked'))
  return found


def flattened(settings: Mapping[str, Any]) -> dict[str, Any]:
  """`settings` with each dict field's entries as fields of their own, named
  '<field>_<key>' (extract_flow's 'tvl1': {'warps': 5} -> 'tvl1_warps', the flag that sets
  it), so `differences` names what a user can type."""
  flat: dict[str, Any] = {}
  for name, value in settings.items():
    if isinstance(value, Mapping):
      flat.update({f'{name}_{key}': entry for key, entry in value.items()})
    else:
      flat[name] = value
  return flat


def refusal(where: str, holds: str, found: Sequence[str], fix: str) -> str:
  """The one line refusing a directory: '<where> holds <holds> (<differences>): <fix>'."""
  return f'{where} holds {holds} ({"; ".join(found)}): {fix}'


def claim(path: str, identity: Mapping[str, Any]) -> None:
  """Writes `identity` to `path` (atomically, creating its directory)."""
  os.makedirs(os.path.dirname(path) or '.', exist_ok=True)
  json_files.write_json(path, dict(identity))

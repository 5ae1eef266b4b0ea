"""JSON files the data tools write and read back: written atomically, read leniently."""

from __future__ import annotations

import json
import os
from typing import Any


def write_json(path: str, value: Any, sort_keys: bool = False) -> None:
  """Writes `value` as JSON (indent 1) to `path` atomically: to `path.tmp`, then renamed
  over `path`, so a reader sees the old file or the whole new one, never a part."""
  with open(path + '.tmp', 'w') as f:
    json.dump(value, f, indent=1, sort_keys=sort_keys)
  os.replace(path + '.tmp', path)


def load_object(path: str) -> dict[str, Any] | None:
  """The JSON object in `path`; None when missing, unreadable, not JSON or not an object."""
  try:
    with open(path) as f:
      value = json.load(f)
  except (OSError, ValueError):
    return None
  return value if isinstance(value, dict) else None

"""JSON files the data tools write and read back: written atomically, read leniently."""

from __future__ import annotations

import json
import os
import socket
from typing import Any


def write_json(path: str, value: Any, sort_keys: bool = False) -> None:
  """Writes `value` as JSON (indent 1) to `path` atomically (`write_text`)."""
  write_text(path, json.dumps(value, indent=1, sort_keys=sort_keys))


def write_text(path: str, text: str) -> None:
  """Writes `text` to `path` (UTF-8) atomically: to a temporary file named after this host and
  process, then renamed over `path`, so a reader sees the old file or the whole new one,
  and processes on several nodes writing the same path at once never mix their bytes."""
  temporary = f'{path}.tmp-{socket.gethostname()}-{os.getpid()}'
  try:
    with open(temporary, 'w', encoding='utf-8') as f:
      f.write(text)
    os.replace(temporary, path)
  finally:
    if os.path.exists(temporary):
      os.remove(temporary)


def load_value(path: str) -> Any | None:
  """The JSON value in `path` (UTF-8; a byte-order mark reads as none, as in every user
  text file); None when missing, unreadable or not JSON."""
  try:
    with open(path, encoding='utf-8-sig') as f:
      return json.load(f)
  except (OSError, ValueError):
    return None


def load_object(path: str) -> dict[str, Any] | None:
  """The JSON object in `path` (`load_value`); None when missing, unreadable, not JSON or
  not an object."""
  value = load_value(path)
  return value if isinstance(value, dict) else None

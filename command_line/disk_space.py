"""Full disks: one line naming the path and its free space, instead of a traceback.

    line = full_disk_line(error)   # None unless `error` is a write to a full disk
    path = full_disk_path(error)   # the path it wrote ('' when unknown), else None
    problem = free_space_problem(model_dir, latest_checkpoint)  # room before a resumed run?

Every program's entry (`command_line/entry.py`) turns a full disk into its one error line
(exit 1); the training preflight checks room up front where it can size what it writes.

TensorFlow reports a full disk as `ResourceExhaustedError` (checkpoints, SavedModels) or
`RuntimeError` (summary writers) whose message is '<path>; No space left on device';
Python as `OSError` with errno ENOSPC.
"""

from __future__ import annotations

import errno
import os
import re
import shutil

NO_SPACE = 'No space left on device'
_PATH = re.compile(r'(/[^;\n]*); ' + NO_SPACE)


def human_bytes(count: float) -> str:
  """1536 -> '1.5 KiB'."""
  for unit in ('bytes', 'KiB', 'MiB', 'GiB', 'TiB'):
    if count < 1024 or unit == 'TiB':
      return f'{count:.0f} {unit}' if unit == 'bytes' else f'{count:.1f} {unit}'
    count /= 1024
  return f'{count:.1f} TiB'


def _existing(path: str) -> str:
  path = os.path.abspath(path)
  while not os.path.exists(path) and os.path.dirname(path) != path:
    path = os.path.dirname(path)
  return path


def free_bytes(path: str) -> int:
  """Free bytes for this user on the file system holding `path` (or its nearest parent)."""
  return shutil.disk_usage(_existing(path)).free


def full_disk_path(error: BaseException) -> str | None:
  """The path whose write found the disk full when `error` (or its cause) is such a write
  ('' when the error does not name it); None otherwise."""
  seen = 0
  while error is not None and seen < 5:
    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
      return error.filename or ''
    if NO_SPACE in str(error):
      match = _PATH.search(str(error))
      return match.group(1) if match else ''
    error = error.__cause__ or error.__context__
    seen += 1
  return None


def full_disk_line(error: BaseException) -> str | None:
  """'no space left on device writing <path> (<free> free there): ...' when `error` (or its
  cause) is a write to a full disk; None otherwise."""
  path = full_disk_path(error)
  if path is None:
    return None
  where = f' writing {path} ({human_bytes(free_bytes(path))} free there)' if path else ''
  return (f'no space left on device{where}: free space on that disk or write elsewhere; '
          'what was complete before is kept, and a rerun goes on from it')


def checkpoint_bytes(model_dir: str, prefix: str) -> int:
  """The bytes of a checkpoint's files (`prefix`.index and `prefix`.data-*)."""
  directory, name = os.path.split(prefix)
  return sum(os.path.getsize(os.path.join(directory, f)) for f in os.listdir(directory)
             if f.startswith(name + '.'))


def free_space_problem(model_dir: str, latest_checkpoint: str | None) -> str | None:
  """Before a resumed run: model_dir's disk must hold two more checkpoints of the size of
  its latest (one written while the oldest is still kept) and an export of the weights;
  None when it does (or when there is no checkpoint to size them by)."""
  if not latest_checkpoint:
    return None
  need = 3 * checkpoint_bytes(model_dir, latest_checkpoint)
  free = free_bytes(model_dir)
  if free >= need:
    return None
  return (f'model_dir={model_dir} has {human_bytes(free)} free, but training writes '
          f'checkpoints of {human_bytes(need / 3)} there (and an export of the same size): '
          f'free at least {human_bytes(need)} on that disk or choose another --model_dir')

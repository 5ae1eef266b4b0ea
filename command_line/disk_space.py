"""Full disks (and writes a quota or file-size limit refuses): one line naming the path and
its free space, instead of a traceback.

    line = full_disk_line(error)   # None unless `error` is a write to a full disk
    path = full_disk_path(error)   # the path it wrote ('' when unknown), else None
    with writing(folder, after):   # a full disk there: FullDisk naming folder and `after`
    resumes(error)                 # False when its `after` says a rerun starts over
    problem = free_space_problem(model_dir, latest_checkpoint)  # room before a resumed run?

Every program's entry (`command_line/entry.py`) turns a full disk into its one error line
(exit 1); the training preflight checks room up front where it can size what it writes.

TensorFlow reports a full disk as `ResourceExhaustedError` (checkpoints, SavedModels) or
`RuntimeError` (summary writers) whose message is '<path>; No space left on device';
Python as `OSError` with errno ENOSPC, naming no file when a buffered write or close fails;
`writing` names the path for those. A disk quota (EDQUOT, 'Disk quota exceeded') and a
file-size limit (EFBIG, 'File too large': `ulimit -f`) refuse a write the same way and end
the same way, each with its own words and fix (`REFUSED_WRITES`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import resource
import shutil
from typing import Iterator

NO_SPACE = 'No space left on device'
# errno -> (the system's message, what the line says, the fix) of each write a disk refuses.
REFUSED_WRITES = {
    errno.ENOSPC: (NO_SPACE, 'no space left on device',
                   'free space on that disk or write elsewhere'),
    errno.EDQUOT: ('Disk quota exceeded', 'disk quota exceeded',
                   'free space within your quota or write elsewhere'),
    errno.EFBIG: ('File too large', 'file too large',
                  'raise the file-size limit (`ulimit -f`) or write elsewhere'),
}
_PATH = re.compile(r'(/[^;\n]*); (' + '|'.join(m for m, _, _ in REFUSED_WRITES.values()) + ')')
RESUMES = 'what was complete before is kept, and a rerun goes on from it'
STARTS_OVER = 'nothing is kept to go on from: the same command starts over'


class FullDisk(OSError):
  """A write under `filename` found its disk full (or `code`: another of REFUSED_WRITES);
  `after`: what the user can rely on then (the end of the error line; default RESUMES).
  Pickles whole (from worker processes)."""

  def __init__(self, path: str, after: str = RESUMES, code: int = errno.ENOSPC) -> None:
    super().__init__(code, REFUSED_WRITES[code][0], path)
    self.after = after

  def __reduce__(self):
    return FullDisk, (self.filename, self.after, self.errno)


@contextlib.contextmanager
def writing(path: str, after: str = RESUMES) -> Iterator[None]:
  """Turns a full disk (any of REFUSED_WRITES) met inside the block into `FullDisk` naming
  the file written (or `path` when the error names none) and `after`."""
  try:
    yield
  except FullDisk:
    raise
  except OSError as e:
    if e.errno not in REFUSED_WRITES:
      raise
    raise FullDisk(e.filename or path, after, e.errno) from e


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


def _refused_code(error: BaseException) -> int | None:
  """The REFUSED_WRITES errno `error` itself reports (by errno, else by message), or None."""
  if isinstance(error, OSError) and error.errno in REFUSED_WRITES:
    return error.errno
  text = str(error)
  return next((code for code, (message, _, _) in REFUSED_WRITES.items() if message in text),
              None)


def _full_disk_error(error: BaseException | None) -> BaseException | None:
  """`error`, or the cause it was raised from, that is a write a disk refused; else None."""
  seen = 0
  while error is not None and seen < 5:
    if _refused_code(error) is not None:
      return error
    error = error.__cause__ or error.__context__
    seen += 1
  return None


def full_disk_path(error: BaseException) -> str | None:
  """The path whose write found the disk full when `error` (or its cause) is such a write
  ('' when the error does not name it); None otherwise."""
  found = _full_disk_error(error)
  if found is None:
    return None
  if isinstance(found, OSError) and found.errno in REFUSED_WRITES:
    return found.filename or ''
  match = _PATH.search(str(found))
  return match.group(1) if match else ''


def resumes(error: BaseException, after: str = RESUMES) -> bool:
  """Whether a rerun goes on from what a full disk's `error` left (its `after`, else the
  program's `after`, is RESUMES)."""
  return getattr(_full_disk_error(error), 'after', after) == RESUMES


def full_disk_line(error: BaseException, after: str = RESUMES) -> str | None:
  """'no space left on device writing <path> (<free> free there): <fix>; <after>' when
  `error` (or its cause) is a write a disk refused (the words and fix of its REFUSED_WRITES
  entry), ending with its own `after` (`FullDisk`), else `after` (the program's: RESUMES,
  or STARTS_OVER for a program that keeps nothing to go on from); None otherwise."""
  path = full_disk_path(error)
  if path is None:
    return None
  found = _full_disk_error(error)
  _, what, fix = REFUSED_WRITES[_refused_code(found)]
  where = f' writing {path} ({human_bytes(free_bytes(path))} free there)' if path else ''
  return f'{what}{where}: {fix}; {getattr(found, "after", after)}'


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


def file_size_limit_warning() -> str | None:
  """A warning when this process runs under a file-size limit (`ulimit -f`, RLIMIT_FSIZE):
  a write past it fails, and TensorFlow's event writer drops such a failure without an
  error, so the run's TensorBoard curves would stop there unseen; None without a limit."""
  limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
  if limit == resource.RLIM_INFINITY:
    return None
  return (f'a file-size limit of {human_bytes(limit)} is set (ulimit -f): an event file that '
          'reaches it stops recording TensorBoard curves without an error; raise it '
          '(ulimit -f unlimited) to keep them')

"""Where the user ran the command, which `bazel run` hides by starting binaries elsewhere."""

import os
import tempfile


def user_working_dir() -> str:
  """The user's working directory: `bazel run` sets BUILD_WORKING_DIRECTORY."""
  return os.environ.get('BUILD_WORKING_DIRECTORY') or os.getcwd()


def user_path(path: str) -> str:
  """`path` as the user meant it: a relative path resolves against `user_working_dir()`."""
  return path if os.path.isabs(path) else os.path.normpath(os.path.join(user_working_dir(), path))


def unwritable(path: str) -> str | None:
  """Why a file could not be written to `path` (checked before the work that produces it:
  `is a directory`, `cannot be written (<reason>)`); None if it can. Creates the missing
  folders of `path`; leaves no file behind that was not there."""
  if os.path.isdir(path):
    return 'is a directory'
  existed = os.path.exists(path)
  try:
    os.makedirs(os.path.dirname(path) or '.', exist_ok=True)
    with open(path, 'a'):
      pass
  except OSError as e:
    return f'cannot be written ({e.strerror})'
  if not existed:
    os.remove(path)
  return None


def unwritable_dir(path: str) -> str | None:
  """Why files could not be written in the directory `path` (checked before the work that
  writes them: `cannot be created: <parent> is a file`, `is not writable (<reason>)`,
  `cannot be created: <parent> is not writable (<reason>)`); None if they can. Probes
  `path`, or its nearest existing parent, with a temporary file; creates nothing."""
  wanted = os.path.abspath(path)
  existing = wanted
  while existing and not os.path.exists(existing):
    existing = os.path.dirname(existing)
  if existing and not os.path.isdir(existing):
    return f'cannot be created: {existing} is a file'
  try:
    with tempfile.TemporaryFile(dir=existing, prefix='.write_probe_'):
      pass
  except OSError as e:
    return (f'is not writable ({e.strerror})' if existing == wanted else
            f'cannot be created: {existing} is not writable ({e.strerror})')
  return None

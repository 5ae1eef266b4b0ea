"""Where the user ran the command, which `bazel run` hides by starting binaries elsewhere."""

import os


def user_working_dir() -> str:
  """The user's working directory: `bazel run` sets BUILD_WORKING_DIRECTORY."""
  return os.environ.get('BUILD_WORKING_DIRECTORY') or os.getcwd()


def user_path(path: str) -> str:
  """`path` as the user meant it: a relative path resolves against `user_working_dir()`."""
  return path if os.path.isabs(path) else os.path.normpath(os.path.join(user_working_dir(), path))

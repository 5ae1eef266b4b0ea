"""What a program prints: the project's own lines by default, everything with --verbose.

By default a binary shows its progress lines (step, loss, examples/s, ETA), one line per
evaluation, warnings and errors, and its final result. Hidden unless `--verbose` (or
absl's `--v`/`--verbosity` at 0 or more): TensorFlow's C++ INFO and WARNING lines
(TF_CPP_MIN_LOG_LEVEL=2, unless the user set that variable), its deprecation notices,
every INFO record of the `tensorflow` Python logger (Estimator chatter, the
`loss = ..., step = ...` lines of its LoggingTensorHook, `global_step/sec`), and the INFO
records TensorFlow's own modules send through absl (SavedModel loading's "Fingerprint not
found").

A binary calls `quiet_native_logs()` before anything imports TensorFlow (TensorFlow's C++
side reads its log level once), defines `ConsoleOptions` flags, and calls
`configure(verbose)` once flags are parsed:

    from command_line import console
    console.quiet_native_logs()
    ...  # imports that load TensorFlow
    cli.define_flags(console.ConsoleOptions)

This module imports neither TensorFlow nor anything that does.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import logging
import os
import sys
import time
from typing import Sequence

from absl import logging as absl_logging

from command_line import flagfile
from command_line.options import option, Options
from command_line.working_dir import user_working_dir

NATIVE_LOG_LEVEL = 'TF_CPP_MIN_LOG_LEVEL'
QUIET_NATIVE_LEVEL = '2'  # C++ ERROR and FATAL only


@dataclasses.dataclass(frozen=True)
class ConsoleOptions(Options):
  verbose: bool = option(
      False, 'Show everything TensorFlow logs (C++ INFO/WARNING lines, deprecation notices, '
      'Estimator INFO) besides the progress, evaluation and warning lines shown by default.')


def verbose_requested(argv: Sequence[str]) -> bool:
  """Whether the command line (`argv[1:]`, --flagfile expanded relative to the user's
  working directory) asks for everything: the last --verbose/--noverbose wins; an explicit
  --v/--verbosity >= 0 (absl's INFO or more) counts as --verbose."""
  args = _expanded(list(argv[1:]))
  verbose = False
  for i, arg in enumerate(args):
    name, _, value = arg.lstrip('-').partition('=')
    if not arg.startswith('-'):
      continue
    if name == 'verbose':
      verbose = value.lower() not in ('false', '0', 'no') if value else True
    elif name == 'noverbose':
      verbose = False
    elif name in ('v', 'verbosity'):
      if not value and i + 1 < len(args):
        value = args[i + 1]
      try:
        verbose = verbose or int(value) >= 0
      except ValueError:
        pass
  return verbose


def _expanded(args: list[str]) -> list[str]:
  """`args` with every --flagfile replaced by its flags (`flagfile.expand_flagfiles`, as the
  programs' own parsing reads them)."""
  here = os.getcwd()
  try:
    os.chdir(user_working_dir())
    return flagfile.expand_flagfiles(args)
  except flagfile.FlagfileError:
    return args  # the real flag parsing reports the problem
  finally:
    os.chdir(here)


def quiet_native_logs(argv: Sequence[str] | None = None) -> None:
  """Before TensorFlow is imported: hides its C++ INFO and WARNING lines (for this process
  and the processes it starts) unless `argv` (default sys.argv) asks for --verbose or the
  user set TF_CPP_MIN_LOG_LEVEL."""
  if NATIVE_LOG_LEVEL in os.environ:
    return
  if not verbose_requested(sys.argv if argv is None else argv):
    os.environ[NATIVE_LOG_LEVEL] = QUIET_NATIVE_LEVEL


# TensorFlow warnings about what this library does by design: the step counter's "global
# step has not been increased" while synchronous workers wait for each other (TensorFlow's
# own comment there: SyncReplicasOptimizer does not increase it in a worker's step).
_BY_DESIGN = ('It seems that global step (tf.train.get_global_step) has not been increased',)


class _HideTensorFlowChatter(logging.Filter):
  """Passes the `tensorflow` logger's warnings and errors, except deprecation notices and
  the warnings in `_BY_DESIGN`."""

  def filter(self, record: logging.LogRecord) -> bool:
    if record.levelno < logging.WARNING:
      return False
    return not (_is_deprecation(record) or str(record.msg).startswith(_BY_DESIGN))


def _is_deprecation(record: logging.LogRecord) -> bool:
  return (os.path.basename(record.pathname or '') == 'deprecation.py' or
          'is deprecated and will be removed' in str(record.msg))


class _ReadableFormatter(logging.Formatter):
  """'HH:MM:SS message'; warnings and errors say so: 'HH:MM:SS warning: message'."""

  def format(self, record: logging.LogRecord) -> str:
    stamp = time.strftime('%H:%M:%S', time.localtime(record.created))
    level = '' if record.levelno < logging.WARNING else f'{record.levelname.lower()}: '
    text = f'{stamp} {level}{record.getMessage()}'
    if record.exc_info:
      text += '\n' + self.formatException(record.exc_info)
    return text


class _HideTensorFlowAbslInfo(logging.Filter):
  """Drops INFO records that TensorFlow's own modules log through absl; passes the rest."""

  def filter(self, record: logging.LogRecord) -> bool:
    return record.levelno >= logging.WARNING or not _in_tensorflow(record.pathname or '')


@functools.lru_cache(maxsize=None)
def _tensorflow_dirs() -> tuple[str, ...]:
  """The installed TensorFlow packages' directories, found without importing them."""
  dirs = []
  for name in ('tensorflow', 'tensorflow_estimator'):
    spec = importlib.util.find_spec(name)
    for location in (spec.submodule_search_locations or []) if spec else []:
      dirs += {os.path.abspath(location) + os.sep, os.path.realpath(location) + os.sep}
  return tuple(dirs)


def _in_tensorflow(path: str) -> bool:
  return os.path.abspath(path).startswith(_tensorflow_dirs())


_HIDE = _HideTensorFlowChatter()
_HIDE_ABSL = _HideTensorFlowAbslInfo()


def configure(verbose: bool) -> None:
  """After flag parsing: the console shows what a person reads, or (verbose) everything in
  absl's full format. Idempotent."""
  tf_logger = logging.getLogger('tensorflow')
  absl_logger = absl_logging.get_absl_logger()
  absl_logging.use_absl_handler()
  if verbose:
    tf_logger.removeFilter(_HIDE)
    absl_logger.removeFilter(_HIDE_ABSL)
    absl_logging.set_verbosity(absl_logging.INFO)
    absl_logging.get_absl_handler().setFormatter(absl_logging.PythonFormatter())
    return
  tf_logger.addFilter(_HIDE)
  absl_logger.addFilter(_HIDE_ABSL)
  # TensorFlow's own stderr handler would print each kept record a second time.
  for handler in list(tf_logger.handlers):
    tf_logger.removeHandler(handler)
  tf_logger.propagate = True
  absl_logging.set_verbosity(absl_logging.INFO)
  absl_logging.get_absl_handler().setFormatter(_ReadableFormatter())


def protocol(clips: int, crops: int) -> str:
  """'3 clips x 1 crop': the views a video-level number averages (every table and line that
  prints one names them so)."""
  return f'{clips} clip{"s" * (clips != 1)} x {crops} crop{"s" * (crops != 1)}'

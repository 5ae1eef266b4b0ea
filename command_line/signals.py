"""The two signals every program answers the same way, from its first instant.

  SIGUSR1  the job's time limit is near (Slurm's `--signal=USR1@N`): the program stops in
           good order, keeping the work done (a training writes a checkpoint if a step
           ran, prepare and extract_flow keep every finished shard or video), says so on
           one line and exits STOPPED_EXIT_CODE (75): the same command continues. Once the
           program's work is done it is ignored: exit 0.
  SIGINT   Ctrl-C: one line, exit INTERRUPTED_EXIT_CODE (130), no traceback.
  SIGTERM  (kill, docker stop, scancel) in a program that answers it (`answer_sigterm`:
           prepare, extract_flow): as SIGINT, one line, exit TERMINATED_EXIT_CODE (143);
           elsewhere its default action.

`install()` runs when `command_line.entry` is imported by a program (`*_main.py`), before
absl or TensorFlow load: until the program's main starts a signal is only remembered
(`STOP`, `INTERRUPT`). `Program.main` then acts on it (`raise_pending`) and from there on
SIGINT raises KeyboardInterrupt and SIGUSR1 raises `TimeLimit`, unless the program handles
`STOP` itself (//towers:train: `towers/cluster/time_limit.py`). Forked workers only remember
(their parent decides); a pool made inside `blocked` with `ignored_in_worker` as its
initializer has workers that ignore both, whatever their start method. A launcher that starts a program with both signals blocked covers
even the interpreter's own start: `install` unblocks them once its handlers are in place,
and a signal that came meanwhile is delivered then. Needs neither TensorFlow nor absl.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import threading
from typing import Iterator

STOP_SIGNAL = signal.SIGUSR1
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
STOPPED_EXIT_CODE = 75  # EX_TEMPFAIL: stopped early on purpose, run again to continue
INTERRUPTED_EXIT_CODE = 130  # 128 + SIGINT, what a shell reports for Ctrl-C
TERMINATED_EXIT_CODE = 143  # 128 + SIGTERM, what a shell reports for a process it ended
HANDLED = (signal.SIGINT, STOP_SIGNAL)
STOP = threading.Event()  # set once STOP_SIGNAL has come to this process
INTERRUPT = threading.Event()  # set once SIGINT has come to this process


class TimeLimit(BaseException):
  """STOP_SIGNAL came to a program that stops at once: the work it finished is kept.
  A BaseException, as KeyboardInterrupt, so that no `except Exception` swallows it."""


class Terminated(BaseException):
  """SIGTERM came to a program that answers it (`answer_sigterm`). A BaseException, as
  KeyboardInterrupt, so that no `except Exception` swallows it."""


def _raise_terminated(signum, frame) -> None:
  del signum, frame
  raise Terminated()


def _remember(signum, frame) -> None:
  del frame
  (INTERRUPT if signum == signal.SIGINT else STOP).set()


def _raise_time_limit(signum, frame) -> None:
  del signum, frame
  STOP.set()
  raise TimeLimit()


_INSTALLED = threading.Event()  # `install` ran: this process is a program's


def _in_main_thread() -> bool:
  return threading.current_thread() is threading.main_thread()


def remember() -> None:
  """Both signals only set `INTERRUPT` / `STOP` (a program's start, a forked worker)."""
  for signum in HANDLED:
    signal.signal(signum, _remember)


def _in_forked_child() -> None:
  """A forked child only remembers both signals, and a SIGTERM ends it (its parent alone
  answers SIGTERM, `answer_sigterm`, and ends its workers with one)."""
  remember()
  if signal.getsignal(signal.SIGTERM) is _raise_terminated:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def install() -> None:
  """At a program's first import: `remember`, forked children remember too (and have
  SIGTERM's default action), then both signals are unblocked (a launcher may have started
  this process with them blocked)."""
  if not _in_main_thread():
    return
  remember()
  _INSTALLED.set()
  os.register_at_fork(after_in_child=_in_forked_child)
  signal.pthread_sigmask(signal.SIG_UNBLOCK, HANDLED)


def raise_pending(stops_at_once: bool) -> None:
  """When a program's main starts: SIGINT raises KeyboardInterrupt and, with
  `stops_at_once`, STOP_SIGNAL raises `TimeLimit` (else it keeps setting `STOP` for the
  program to act on); one that came before is raised now. Nothing when this process is
  not a program (`install` did not run: a library or a spec calls main)."""
  if not (_INSTALLED.is_set() and _in_main_thread()):
    return
  signal.signal(signal.SIGINT, signal.default_int_handler)
  if stops_at_once:
    signal.signal(STOP_SIGNAL, _raise_time_limit)
  if INTERRUPT.is_set():
    raise KeyboardInterrupt()
  if stops_at_once and STOP.is_set():
    raise TimeLimit()


def answer_sigterm() -> None:
  """From here on SIGTERM raises `Terminated` in the main thread, so the program ends as
  on SIGINT (its `finally` blocks run, its pool's workers are ended) with one line, instead
  of dying silently. Nothing when this process is not a program."""
  if _INSTALLED.is_set() and _in_main_thread():
    signal.signal(signal.SIGTERM, _raise_terminated)


def work_done() -> None:
  """The program's work is over, whatever its end: STOP_SIGNAL is ignored from here on
  (also through the interpreter's shutdown, which would reset a Python handler), SIGINT
  only remembered and SIGTERM has its default action again. Nothing when this process is
  not a program."""
  if _INSTALLED.is_set() and _in_main_thread():
    signal.signal(STOP_SIGNAL, signal.SIG_IGN)
    signal.signal(signal.SIGINT, _remember)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


@contextlib.contextmanager
def blocked() -> Iterator[None]:
  """Both signals are held (not lost) inside the block; one that came is acted on as it
  ends. Processes and threads started inside (a pool's workers, multiprocessing's
  resource tracker) start with both blocked: a signal sent to the whole process group
  (a terminal's Ctrl-C) reaches none of them before `ignored_in_worker` runs. In the main
  thread the handlers only note a signal meanwhile (another thread may take it)."""
  before = signal.pthread_sigmask(signal.SIG_BLOCK, HANDLED)
  came: list[int] = []
  handlers = {s: signal.getsignal(s) for s in HANDLED} if _in_main_thread() else {}
  for signum in handlers:
    signal.signal(signum, lambda signum, frame: came.append(signum))
  try:
    yield
  finally:
    for signum, handler in handlers.items():
      signal.signal(signum, handler)
    signal.pthread_sigmask(signal.SIG_SETMASK, before)
    for signum in dict.fromkeys(came):
      signal.raise_signal(signum)  # acted on now, by the handler in place again


def ignored_in_worker() -> None:
  """A pool's initializer (with the pool made inside `blocked`): the worker ignores both
  signals, which its parent alone answers (it ends the workers), then unblocks them; it
  dies with its parent (`die_with_parent`)."""
  die_with_parent()
  for signum in HANDLED:
    signal.signal(signum, signal.SIG_IGN)
  signal.pthread_sigmask(signal.SIG_UNBLOCK, HANDLED)


def die_with_parent() -> None:
  """In a pool worker: the kernel kills it (SIGKILL) when its parent ends, however the
  parent ends (SIGTERM, SIGKILL), so no worker goes on writing after the program is gone.
  Linux's PR_SET_PDEATHSIG; elsewhere nothing."""
  parent = os.getppid()
  try:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
  except (OSError, AttributeError):
    return
  if os.getppid() != parent:  # the parent ended before the request took effect
    os._exit(1)


def blocked_in_child() -> None:
  """For a launcher's `preexec_fn`: the child starts with both signals blocked (its
  `install` unblocks them), so none can end it before its handlers exist."""
  signal.pthread_sigmask(signal.SIG_BLOCK, HANDLED)

"""Stopping in good order before a job's time limit.

The batch script asks Slurm for SIGUSR1 some minutes before the limit (`--signal=USR1@N`);
Slurm sends it to every process of the job's steps. Then chief and workers stop after
their current step; the chief writes a checkpoint without waiting for the workers and
tells the ps tasks they may exit; the evaluator stops at once. Each exits with
`STOPPED_EXIT_CODE` after one line saying so, and the batch script requeues the job,
which resumes from that checkpoint. A ps ignores the signal: it serves until the chief
says training is over.
"""

from __future__ import annotations

import os
import signal
import threading

import tensorflow as tf
from absl import logging

STOP_SIGNAL = signal.SIGUSR1
STOPPED_EXIT_CODE = 75  # EX_TEMPFAIL: stopped early on purpose, run again to continue


class StoppedBeforeTheEnd(RuntimeError):
  """Training stopped on STOP_SIGNAL before max_steps; the message says where."""


def stop_on_signal(task_name: str) -> threading.Event:
  """Installs the STOP_SIGNAL handler of a chief or worker: it sets (and this returns) an
  event that `StopHook` turns into a stop after the current step."""
  stop = threading.Event()

  def handler(signum, frame) -> None:
    del signum, frame
    if not stop.is_set():
      logging.warning('%s: got SIGUSR1 (the job\'s time limit is near): stopping after this '
                      'step', task_name)
    stop.set()

  signal.signal(STOP_SIGNAL, handler)
  return stop


def exit_on_signal(task_name: str) -> None:
  """The evaluator's STOP_SIGNAL handler: one line, then exit STOPPED_EXIT_CODE at once
  (an evaluation can outlast the time left; the next run evaluates again)."""

  def handler(signum, frame) -> None:
    del signum, frame
    logging.warning('%s: got SIGUSR1 (the job\'s time limit is near): stopping; it '
                    'evaluates again when the job continues', task_name)
    logging.flush()
    os._exit(STOPPED_EXIT_CODE)  # pylint: disable=protected-access

  signal.signal(STOP_SIGNAL, handler)


def ignore_signal() -> None:
  """A ps serves on: the chief tells it when to exit."""
  signal.signal(STOP_SIGNAL, signal.SIG_IGN)


class StopHook(tf.compat.v1.train.SessionRunHook):
  """Requests a stop after the step during which `stop` was set."""

  def __init__(self, stop: threading.Event) -> None:
    self._stop = stop

  def after_run(self, run_context, run_values) -> None:
    del run_values
    if self._stop.is_set():
      run_context.request_stop()

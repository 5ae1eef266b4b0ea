"""Stopping in good order before a job's time limit.

The batch script asks Slurm for SIGUSR1 some minutes before the limit (`--signal=USR1@N`);
Slurm sends it to every process of the job's steps. Then chief and workers stop after
their current step; the chief writes a checkpoint without waiting for the workers and
tells the ps tasks they may exit; a training on one machine writes its checkpoint and
skips the evaluation of it. The evaluator stops at once, unless the final checkpoint (at
max_steps) is there: that evaluation is due, and it finishes it. Each that stopped exits
with `STOPPED_EXIT_CODE` after one line saying so, and the batch script requeues the job,
which resumes from that checkpoint (or evaluates the final one). A ps ignores the signal:
it serves until the chief says training is over.

The signal is handled at every moment of a process's life: `command_line/signals.py`,
installed when the program starts, before anything slow, keeps a signal that comes
before the role is known (`STOP`); each role then installs its own handler, which acts
on a signal that came early; once its work is done a role ignores it (`ignore_signal`),
also while the interpreter shuts down (Python resets its own handlers to the default,
which would end the process with exit 138, but keeps an ignored signal ignored). A signal
that comes once max_steps is reached stops nothing: training is over (exit 0).

This module loads no TensorFlow; `stop_hook` builds the training hook.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Any, Callable

from absl import logging

from command_line.signals import STOP, STOP_SIGNAL, STOPPED_EXIT_CODE


class StoppedBeforeTheEnd(RuntimeError):
  """Training stopped on STOP_SIGNAL before max_steps; the message says where. `step`: the
  global step of the checkpoint written at the stop (None: the session's own end saved it)."""

  def __init__(self, message: str, step: int | None = None) -> None:
    super().__init__(message)
    self.step = step


def stop_on_signal(task_name: str,
                   trained: Callable[[], bool] = lambda: False) -> threading.Event:
  """Installs the STOP_SIGNAL handler of a trainer (chief, worker, or one machine): it
  sets (and this returns) `STOP`, which `stop_hook` turns into a stop after the current
  step; once `trained()` (max_steps reached) its line says it stops nothing. A signal that
  came before (`command_line/signals.py`) counts."""

  def note() -> None:
    if trained():
      logging.warning('%s: got SIGUSR1 (the job\'s time limit is near) after max_steps: '
                      'training is over, nothing to stop', task_name)
      return
    logging.warning('%s: got SIGUSR1 (the job\'s time limit is near): stopping after this '
                    'step', task_name)

  def handler(signum, frame) -> None:
    del signum, frame
    if not STOP.is_set():
      note()
    STOP.set()

  signal.signal(STOP_SIGNAL, handler)
  if STOP.is_set():
    note()
  return STOP


def stop_trainer(task_name: str, trained_step: Callable[[], int | None],
                 max_steps: int) -> threading.Event:
  """The time-limit stop of every trainer (one machine, chief, worker): `stop_on_signal`,
  whose line says it stops nothing once `trained_step()` (model_dir's latest checkpoint's
  step, None when none; unreadable, e.g. being replaced, counts as not yet) reaches
  `max_steps`."""

  def trained() -> bool:
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    try:
      step = trained_step()
    except (tf.errors.OpError, ValueError):
      return False
    return step is not None and step >= max_steps

  return stop_on_signal(task_name, trained)


def stopped_before_the_end(task_name: str, max_steps: int, where: str,
                           step: int | None = None) -> StoppedBeforeTheEnd:
  """The error every trainer stopped by the signal raises: its one line names the task,
  max_steps and `where` the checkpoint is ('checkpoint at step N written')."""
  return StoppedBeforeTheEnd(
      f'{task_name}: stopped before max_steps={max_steps} for the job\'s time limit '
      f'({where}); training continues from it when the job is requeued or resubmitted', step)


def exit_on_signal(task_name: str, final_due: Callable[[], bool]) -> None:
  """The evaluator's STOP_SIGNAL handler: when `final_due()` (the final checkpoint is
  there) one line says it finishes that evaluation, and it goes on; else one line, then
  exit STOPPED_EXIT_CODE at once (an evaluation can outlast the time left; the next run
  evaluates again). A signal that came before (`command_line/signals.py`) counts."""

  def act() -> None:
    if final_due():
      logging.warning('%s: got SIGUSR1 (the job\'s time limit is near): the final '
                      'checkpoint is there; finishing its evaluation', task_name)
      return
    logging.warning('%s: got SIGUSR1 (the job\'s time limit is near): stopping; it '
                    'evaluates again when the job continues', task_name)
    logging.flush()
    os._exit(STOPPED_EXIT_CODE)  # pylint: disable=protected-access

  def handler(signum, frame) -> None:
    del signum, frame
    if not STOP.is_set():
      STOP.set()
      act()

  signal.signal(STOP_SIGNAL, handler)
  if STOP.is_set():
    act()


def ignore_signal() -> None:
  """A ps serves on: the chief tells it when to exit; any role whose work is done has
  nothing to stop (ignored also through the interpreter's shutdown)."""
  signal.signal(STOP_SIGNAL, signal.SIG_IGN)


def stop_hook(stop: threading.Event, checkpoint_dir: str | None = None,
              max_steps: int = 0) -> Any:
  """A SessionRunHook that requests a stop after the step during which `stop` was set,
  unless that step reached `max_steps` (training ends as it would have). With
  `checkpoint_dir` (training on one machine) it writes the checkpoint there itself and
  raises `StoppedBeforeTheEnd`: the training session then closes without the evaluation
  of that checkpoint that `tf.estimator.train_and_evaluate` would run at its end."""
  import tensorflow as tf  # pylint: disable=import-outside-toplevel

  class StopHook(tf.compat.v1.train.SessionRunHook):

    def after_run(self, run_context, run_values) -> None:
      del run_values
      if not stop.is_set():
        return
      session = run_context.session
      step = session.run(tf.compat.v1.train.get_global_step())
      if max_steps and step >= max_steps:
        return  # the work is done: the session ends as it would have
      savers = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.SAVERS)
      if checkpoint_dir is None or not savers:  # the session's own end saves
        run_context.request_stop()
        return
      savers[0].save(session, os.path.join(checkpoint_dir, 'model.ckpt'), global_step=step)
      raise stopped_before_the_end('train', max_steps, f'checkpoint at step {step} written',
                                   int(step))

  return StopHook()

"""Session hooks the training model_fn attaches: progress lines with rate and ETA, and the
same values as events of the task's status file (`command_line/status_file.py`)."""

from __future__ import annotations

import time
from typing import NamedTuple

import tensorflow as tf
from absl import logging

from command_line import status_file
from command_line.progress import SESSION_READY, progress_line

tf1 = tf.compat.v1


class SkippedRecords(NamedTuple):
  """int64 scalars of the training input: bad records it dropped so far, and records it
  read so far (good and bad; every pass over the data counts again)."""
  skipped: tf.Tensor
  read: tf.Tensor


class ProgressHook(tf1.train.SessionRunHook):
  """Every `every_steps` steps: logs step, loss, examples/s and ETA to `max_steps`, and
  writes `examples_per_second` as a summary to `summary_dir` (if given). With `skipped`
  (this process's input), a line after the input dropped a bad record also says
  `skipped N bad of M records read`.

  Rates are measured between two log points, so the first line comes after warm-up.
  Status events (for launchers and benchmarks, never read from the console): graph_built
  (begin), session_ready {step, max_steps}, first_step {step}, and progress {step,
  max_steps, loss, examples_per_second, steps_per_second} with each progress line.
  """

  def __init__(self, loss: tf.Tensor, global_batch: int, max_steps: int, every_steps: int,
               summary_dir: str | None = None, skipped: SkippedRecords | None = None) -> None:
    self._loss = loss
    self._skipped = skipped
    self._global_batch = global_batch
    self._max_steps = max_steps
    self._every = every_steps
    self._summary_dir = summary_dir
    self._last: tuple[int, float] | None = None

  def begin(self) -> None:
    self._global_step = tf1.train.get_global_step()
    status_file.record('graph_built')

  def after_create_session(self, session, coord) -> None:
    """Logs 'training from step N to M' once the model is initialised or restored."""
    del coord
    step = int(session.run(self._global_step))
    logging.info('%s %d to %d', SESSION_READY, step, self._max_steps)
    status_file.record('session_ready', step=step, max_steps=self._max_steps)

  def before_run(self, run_context):
    fetches = {'step': self._global_step, 'loss': self._loss}
    if self._skipped is not None:
      fetches['skipped'] = self._skipped._asdict()
    return tf1.train.SessionRunArgs(fetches)

  def after_run(self, run_context, run_values) -> None:
    step, loss = run_values.results['step'], run_values.results['loss']
    now = time.time()
    if self._last is None:
      self._last = (step, now)
      status_file.record('first_step', step=int(step))
      return
    last_step, last_time = self._last
    if step - last_step < self._every and step < self._max_steps:
      return
    steps_per_sec = (step - last_step) / max(now - last_time, 1e-9)
    examples_per_sec = steps_per_sec * self._global_batch
    fields = [f'loss {loss:.4f}', f'{examples_per_sec:.1f} examples/s',
              f'{steps_per_sec:.2f} steps/s']
    skipped = run_values.results.get('skipped')
    counts = {}
    if skipped and skipped['skipped']:
      fields.append(f'skipped {skipped["skipped"]} bad of {skipped["read"]} records read')
      counts = dict(skipped_records=int(skipped['skipped']), records_read=int(skipped['read']))
    logging.info('%s', progress_line('step', step, self._max_steps, steps_per_sec, fields))
    status_file.record('progress', step=int(step), max_steps=self._max_steps, loss=float(loss),
                       examples_per_second=examples_per_sec, steps_per_second=steps_per_sec,
                       **counts)
    if self._summary_dir:
      writer = tf1.summary.FileWriterCache.get(self._summary_dir)
      writer.add_summary(tf1.Summary(value=[tf1.Summary.Value(
          tag='examples_per_second', simple_value=examples_per_sec)]), step)
    self._last = (step, now)


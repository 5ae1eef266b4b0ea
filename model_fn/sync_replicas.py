"""Synchronous updates across workers (SyncReplicasOptimizer) with a chief that ends promptly.

    optimizer = tf1.train.SyncReplicasOptimizer(...)
    hook = session_hook(optimizer, is_chief)   # instead of optimizer.make_session_run_hook
    status_line(num_workers, backup_workers)   # the line each worker logs

TensorFlow's own hook runs the chief's queue runner (take the workers' aggregated
gradients, apply them, hand out the next step's tokens) as a thread of the session's
coordinator. When training ends, that thread is blocked waiting for gradients no worker
will send again; the MonitoredSession then waits its `stop_grace_period_secs` (120 s; the
Estimator offers no way to set it) for the thread, closes the session, and the cancelled
thread prints a CancelledError traceback. Every synchronous run ended that way: 120 s
idle after the final checkpoint, then a traceback, then exit 0.

The hook here is TensorFlow's (same initialisation, tokens and queue runner ops) with two
changes: the queue runner's thread forwards errors and stop requests to the session's
coordinator (a failed update still stops training) without being joined by it, and a
cancellation ends the thread quietly. So the session closes as soon as the last hook has
ended, the close cancels the blocked wait, and the thread ends without a word.
"""

from __future__ import annotations

import tensorflow as tf
# TensorFlow 2.15.1's hook class (private there): its initialisation is reused as is.
from tensorflow.python.training import sync_replicas_optimizer as _tf_sync

tf1 = tf.compat.v1

# A blocked step of the chief's queue runner ends with one of these when the session
# closes: the end of training, not an error.
_ENDED = (tf.errors.OutOfRangeError, tf.errors.CancelledError)


def status_line(num_workers: int, backup_workers: int) -> str:
  """What each worker logs when it builds synchronous training of `num_workers` workers
  (chief included) of which `backup_workers` are dropped as stragglers each step."""
  aggregated = num_workers - backup_workers
  if not backup_workers:
    return f'synchronous updates: each step applies the gradients of all {num_workers} workers'
  return (f'synchronous updates: each step applies the gradients of the first {aggregated} of '
          f'{num_workers} workers (--backup_workers={backup_workers})')


def session_hook(optimizer: tf1.train.SyncReplicasOptimizer, is_chief: bool
                 ) -> tf1.train.SessionRunHook:
  """The session hook `optimizer` needs on this worker (after `apply_gradients`), as
  `optimizer.make_session_run_hook(is_chief)` but ending without the 120 s wait."""
  return _PromptEndHook(optimizer, is_chief, num_tokens=-1)


class _PromptEndHook(_tf_sync._SyncReplicasOptimizerHook):  # pylint: disable=protected-access

  def begin(self) -> None:
    super().begin()
    runner = self._q_runner
    if runner is not None:  # the chief
      self._q_runner = tf1.train.QueueRunner(
          runner.queue, runner.enqueue_ops, close_op=runner.close_op,
          cancel_op=runner.cancel_op, queue_closed_exception_types=_ENDED)

  def after_create_session(self, session: tf1.Session, coord: tf1.train.Coordinator) -> None:
    super().after_create_session(session, _NotJoined(coord))


class _NotJoined(tf1.train.Coordinator):
  """Stop requests, errors and waits go to `coordinator`; threads registered here are not
  in its list, so its `join` (when the session closes) does not wait for them."""

  def __init__(self, coordinator: tf1.train.Coordinator) -> None:
    super().__init__()
    self._coordinator = coordinator

  def request_stop(self, ex=None) -> None:
    self._coordinator.request_stop(ex)

  def should_stop(self) -> bool:
    return self._coordinator.should_stop()

  def wait_for_stop(self, timeout: float | None = None) -> bool:
    return self._coordinator.wait_for_stop(timeout)

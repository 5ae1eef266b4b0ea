"""A non-chief worker's quick wait for the chief to initialise the model.

A non-chief worker's `MonitoredTrainingSession` creates its session through TensorFlow's
`SessionManager.wait_for_session`, which checks whether the chief has initialised the
variables and, when not, sleeps `recovery_wait_secs` = 30 s before checking again
("Waiting for model to be ready"). Neither the Estimator nor `MonitoredTrainingSession`
lets that 30 s be changed. So a worker started together with its chief (as Slurm and
Kubeflow start them) usually idles 30 s after the chief is ready.

`ModelReadyHook` waits first, in `begin()` (before the session is created), checking every
`poll_secs` (default 0.5 s) whether every global variable is initialised on the cluster.
When it returns, the SessionManager's first check succeeds and it never sleeps.
This covers the worker's first session only: after a lost ps, `MonitoredSession`
re-creates its session without calling `begin()` again, and TensorFlow's 30 s poll applies.
"""

from __future__ import annotations

import time
from typing import Callable

import tensorflow as tf
from absl import logging

tf1 = tf.compat.v1

POLL_SECS = 0.5  # between two checks of the chief's initialisation


class ModelReadyHook(tf1.train.SessionRunHook):
  """Blocks `begin()` until the cluster's global variables are initialised, checking every
  `poll_secs`; gives up after `max_wait_secs` (TensorFlow's own wait then takes over).

  `master` is the worker's session target (e.g. 'grpc://127.0.0.1:2223') and `config`
  its session config (device filters). `sleep` and `clock` are injectable for tests.
  """

  def __init__(self, master: str, config: tf1.ConfigProto | None = None,
               poll_secs: float = POLL_SECS, max_wait_secs: float = 600.0,
               sleep: Callable[[float], None] = time.sleep,
               clock: Callable[[], float] = time.monotonic) -> None:
    self.master = master
    self.config = config
    self.poll_secs = poll_secs
    self.max_wait_secs = max_wait_secs
    self._sleep = sleep
    self._clock = clock
    self.checks = 0  # how many times begin() asked the cluster

  def begin(self) -> None:
    graph = tf1.get_default_graph()
    with graph.as_default(), tf.device(None):
      not_ready = tf1.report_uninitialized_variables(tf1.global_variables())
    started = self._clock()
    while True:
      self.checks += 1
      if self._initialised(graph, not_ready):
        if self.checks > 1:
          logging.info('the chief initialised the model: this worker starts after %.1f s '
                       'of waiting', self._clock() - started)
        return
      if self._clock() - started >= self.max_wait_secs:
        logging.warning('the model is still not initialised after %.0f s; leaving the '
                        'wait to TensorFlow (checks every 30 s)', self.max_wait_secs)
        return
      self._sleep(self.poll_secs)

  def _initialised(self, graph: tf.Graph, not_ready: tf.Tensor) -> bool:
    try:
      with tf1.Session(self.master, graph=graph, config=self.config) as session:
        return session.run(not_ready).size == 0
    except (tf.errors.UnavailableError, tf.errors.DeadlineExceededError,
            tf.errors.AbortedError) as e:  # a ps not up yet: check again
      logging.vlog(1, 'model readiness check failed: %s', e)
      return False

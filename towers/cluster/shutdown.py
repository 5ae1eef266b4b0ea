"""The end of training: how every task of a parameter-server cluster learns that training
is over and exits by itself, with no task stopped while another still needs it.

Two queues carry the news (TensorFlow FIFOQueues with a shared name, so any session of the
cluster reaches the same queue; they live as long as the task that holds them):

1. `workers_done`, on ps 0. A worker puts one token
   (its index, OK or FAILED, a message) once `Estimator.train` has returned, i.e. after its
   last update reached the ps, or once it has failed.
2. The chief, after its last step and *before* its final checkpoint (`WaitForWorkersHook`
   runs ahead of the chief's `CheckpointSaverHook`), takes one token per worker. So the
   final checkpoint holds every worker's last update (its global step may pass max_steps by
   the few steps the workers were still running). A worker that sends no token and whose
   port refuses connections for `lost_secs` is counted as failed for good; so is one whose
   port answers for `lost_secs` without a token (a stuck process: one step takes far less).
3. `training_done_ps<i>`, on each ps i. Once `Estimator.train` has returned (the checkpoint
   written), the chief puts one token there. `serve_until_training_done` waits for it and
   the ps then exits 0.

A chief or ps that dies and is restarted keeps the protocol working, except that tokens
held in a ps 0 that was restarted are lost: the chief then waits for those workers until
they are unreachable for `lost_secs`.
"""

from __future__ import annotations

import dataclasses
import queue
import socket
import threading
import time

import tensorflow as tf
from absl import logging

from command_line import status_file
from towers.cluster.ps_variables import NOT_HELD, read_ps_variables
from towers.cluster.spec import ClusterTask

tf1 = tf.compat.v1

OK, FAILED = 0, 1
WORKERS_DONE = 'towers_workers_done'
TRAINING_DONE = 'towers_training_done_ps{index}'
QUEUE_CAPACITY = 1024  # tokens; a cluster sends one per worker run and one per ps
POLL_SECS = 2.0


class TrainingIncomplete(RuntimeError):
  """Training reached max_steps, but some worker failed; the message names each one."""


# Where the `workers_done` queue lives: ps 0 (every cluster has one, `spec.validate`).
COORDINATOR_DEVICE = '/job:ps/task:0'


def _done_queue(device: str, shared_name: str) -> tf1.FIFOQueue:
  """The queue of (worker index int32, status int32, message string) tokens."""
  with tf1.device(device):
    return tf1.FIFOQueue(QUEUE_CAPACITY, [tf.int32, tf.int32, tf.string], shapes=[[], [], []],
                         shared_name=shared_name, name=shared_name)


def _address_of(task: ClusterTask, device: str) -> str:
  job, index = device.split('/')[1][4:], int(device.split('/')[2][5:])
  return task.cluster[job][index]


def reachable(address: str, timeout_secs: float = 2.0) -> bool:
  """True when `host:port` accepts a TCP connection now."""
  host, _, port = address.rpartition(':')
  try:
    with socket.create_connection((host, int(port)), timeout=timeout_secs):
      return True
  except OSError:
    return False


def _send(target: str, task: ClusterTask, device: str, shared_name: str, status: int,
          message: str, timeout_secs: float) -> bool:
  """Puts one token into the queue `shared_name` on `device`, through this task's server
  `target`. Waits up to `timeout_secs` for that task to accept connections; False (and a
  warning) when it never did."""
  address = _address_of(task, device)
  deadline = time.time() + timeout_secs
  while not reachable(address):
    if time.time() >= deadline:
      logging.warning('%s: %s (%s) unreachable for %.0f s; it was not told that training '
                      'is over', task.name, device, address, timeout_secs)
      return False
    time.sleep(POLL_SECS)
  graph = tf1.Graph()
  with graph.as_default():
    enqueue = _done_queue(device, shared_name).enqueue((task.task_index, status, message))
  config = tf1.ConfigProto(device_filters=[device, f'/job:{task.task_type}/task:{task.task_index}'])
  options = tf1.RunOptions(timeout_in_ms=int(max(1.0, deadline - time.time()) * 1000))
  try:
    with tf1.Session(target, graph=graph, config=config) as session:
      session.run(enqueue, options=options)
    return True
  except (tf.errors.DeadlineExceededError, tf.errors.UnavailableError) as e:
    logging.warning('%s: could not tell %s (%s) that training is over: %s', task.name, device,
                    address, e.message.splitlines()[0])
    return False


def report_worker_done(target: str, task: ClusterTask, status: int, message: str,
                       timeout_secs: float) -> bool:
  """A worker's last word: call once `Estimator.train` returned (OK) or failed (FAILED)."""
  return _send(target, task, COORDINATOR_DEVICE, WORKERS_DONE, status, message,
               timeout_secs)


def announce_training_done(target: str, task: ClusterTask, message: str,
                           timeout_secs: float) -> None:
  """The chief's last word, once its final checkpoint is written: every ps may exit."""
  for index in range(len(task.cluster.get('ps', ()))):
    _send(target, task, f'/job:ps/task:{index}', TRAINING_DONE.format(index=index), OK,
          message, timeout_secs)


def serve_until_training_done(server: tf.distribute.Server, task: ClusterTask) -> str:
  """A ps task's life: serves variables until the chief says training is over; returns
  the chief's message (also recorded: a `training_over` {message} status event)."""
  device = f'/job:ps/task:{task.task_index}'
  graph = tf1.Graph()
  with graph.as_default():
    dequeue = _done_queue(device, TRAINING_DONE.format(index=task.task_index)).dequeue()
  config = tf1.ConfigProto(device_filters=[device])
  with tf1.Session(server.target, graph=graph, config=config) as session:
    stop = threading.Event()
    stop.set()  # one token is all a ps waits for
    _, _, message = _next(_take_in_background(session, dequeue, stop))
    status_file.record('training_over', message=message.decode())
    return message.decode()


def record_final_step(server: tf.distribute.Server, task: ClusterTask) -> None:
  """Records the value of the `global_step` variable, if this ps task holds it, as its
  `ps_final_step` status event (`command_line/status_file.py`); nothing otherwise. Read
  when the chief has said training is over: every update that reached this ps is in it,
  so it can be set beside the final checkpoint's step (a larger value means updates the
  checkpoint lost)."""
  try:
    held = read_ps_variables(server.target, task.task_index, {'global_step': (tf.int64, [])})
  except NOT_HELD:
    return
  status_file.record('ps_final_step', step=int(held['global_step']))


def _take_in_background(session: tf1.Session, dequeue: tf.Tensor,
                        stop: threading.Event) -> queue.Queue:
  """Runs the blocking `dequeue` in a daemon thread, again after each token until `stop`
  is set, and returns the queue its tokens, or the error that ended it, arrive in. The caller
  waits on that queue, where Ctrl-C still reaches it; a blocking dequeue needs no timeout,
  whose every expiry TensorFlow would log."""
  tokens: queue.Queue = queue.Queue()

  def take() -> None:
    while True:
      try:
        tokens.put(session.run(dequeue))
      except tf.errors.OpError as e:
        tokens.put(e)
        return
      if stop.is_set():
        return

  threading.Thread(target=take, name='done-tokens', daemon=True).start()
  return tokens


def _next(tokens: queue.Queue, timeout_secs: float | None = None):
  """The next token; raises queue.Empty after `timeout_secs`, or the dequeue's error."""
  while True:
    try:
      token = tokens.get(timeout=timeout_secs if timeout_secs is not None else 1.0)
    except queue.Empty:
      if timeout_secs is not None:
        raise
      continue
    if isinstance(token, Exception):
      raise token
    return token


@dataclasses.dataclass
class _Pending:
  """A worker the chief still waits for: whether its port answered when last checked
  (None: not checked yet), and since when it has been so."""
  address: str
  answering: bool | None = None
  since: float = 0.0


class WaitForWorkersHook(tf1.train.SessionRunHook):
  """Chief only, placed before its CheckpointSaverHook: at the end of training, waits
  until every worker has reported done (or failed, or stayed unreachable `lost_secs`, or
  answered `lost_secs` without reporting), so that the final checkpoint holds every
  worker's last update.

  After `end`, `failures` maps each failed worker's name to what happened. Once `skip` is
  set (training stops early, before the job's time limit) it waits no more.
  """

  def __init__(self, task: ClusterTask, lost_secs: float, poll_secs: float = POLL_SECS,
               skip: threading.Event | None = None) -> None:
    self._task = task
    self._skip = skip or threading.Event()
    self._lost_secs = lost_secs
    self._poll_secs = poll_secs
    self._dequeue = None
    self._wake = None
    self.failures: dict[str, str] = {}

  def begin(self) -> None:
    done = _done_queue(COORDINATOR_DEVICE, WORKERS_DONE)
    self._dequeue = done.dequeue()
    self._wake = done.enqueue((-1, OK, 'the chief stops listening'))

  def end(self, session: tf1.Session) -> None:
    workers = self._task.cluster.get('worker', ())
    pending = {i: _Pending(address) for i, address in enumerate(workers)}
    stop = threading.Event()
    tokens = _take_in_background(session, self._dequeue, stop)
    last_log = 0.0
    while pending and not self._skip.is_set():
      if time.time() - last_log >= 30:
        if not last_log:
          status_file.record('waiting_for_workers', workers=sorted(pending))
        logging.info('chief: training reached max_steps; waiting for %d worker(s) to finish '
                     'their last step: %s', len(pending),
                     ', '.join(f'worker {i} ({p.address})' for i, p in pending.items()))
        last_log = time.time()
      try:
        index, status, message = _next(tokens, self._poll_secs)
      except queue.Empty:
        self._count_lost(pending)
        continue
      if index not in pending:
        continue  # a second token from a worker that was restarted
      name = f'worker {index} ({pending.pop(index).address})'
      if status != OK:
        self.failures[name] = message.decode()
    stop.set()
    session.run(self._wake)  # ends the background dequeue
    if pending:
      logging.info('chief: stopping before max_steps; not waiting for %d worker(s)',
                   len(pending))
    elif self.failures:
      logging.error('chief: training ended without %s', '; '.join(
          f'{name}: {what}' for name, what in self.failures.items()))
    else:
      logging.info('chief: every worker finished; writing the final checkpoint')
      status_file.record('workers_finished', workers=len(workers))

  def _count_lost(self, pending: dict[int, _Pending]) -> None:
    """Counts as failed each pending worker whose port has refused connections, or has
    answered without a token (stuck), for `lost_secs`."""
    now = time.time()
    for index, worker in list(pending.items()):
      answering = reachable(worker.address)
      if answering != worker.answering:
        worker.answering, worker.since = answering, now
      if now - worker.since < self._lost_secs:
        continue
      del pending[index]
      what = (f'answered for {self._lost_secs:.0f} s without finishing its last step '
              '(--worker_lost_secs): stuck' if answering else
              f'stopped answering for {self._lost_secs:.0f} s before it finished '
              '(--worker_lost_secs)')
      self.failures[f'worker {index} ({worker.address})'] = (
          f'{what}; its updates since the last one the ps received are lost')
      status_file.record('worker_lost', worker=index, address=worker.address, stuck=answering,
                         lost_secs=self._lost_secs)

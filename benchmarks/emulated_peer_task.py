"""One task of an emulated TensorFlow peer, as a library: its options (`PeerTaskOptions`), the
peer's strategy (`make_strategy`), its model_fn over the emulated variables and `run`.
The program and its whole description: benchmarks/emulated_peer_task_main.py.
"""

from __future__ import annotations

import dataclasses
import time

import tensorflow as tf

from benchmarks.emulated_task import STEP_EVENT, EmulatedModelOptions, variable_shapes
from command_line import status_file
from command_line.options import above, option

tf1 = tf.compat.v1

PEERS = ('ps_strategy', 'multi_worker_mirrored')
PLACEMENT_LINE = 'emulated_peer_task: variable bytes by device'
GRADIENT_SCALE = 1e-6  # what the wait returns: every gradient value (momentum updates are tiny)


@dataclasses.dataclass(frozen=True)
class PeerTaskOptions(EmulatedModelOptions):
  """What every task of an emulated peer is told (the emulator passes the same to all)."""
  peer: str = option('ps_strategy', 'Which TensorFlow strategy trains.', choices=PEERS)
  model_dir: str = option('', 'The Estimator\'s model_dir (nothing is saved there but '
                          'its graph).', path=True)
  max_seconds: float = option(900.0, 'A worker stops training after this long.', valid=above(0))


def make_strategy(peer: str) -> tf.distribute.Strategy:
  """The strategy of `peer`; both read the cluster and this task's role from TF_CONFIG."""
  if peer == 'ps_strategy':
    return tf1.distribute.experimental.ParameterServerStrategy()
  return tf.distribute.experimental.MultiWorkerMirroredStrategy()


class StepEvents(tf1.train.SessionRunHook):
  """Records the emulator's step and session-ready events; asks the session to stop after
  `max_seconds` of training."""

  def __init__(self, max_seconds: float) -> None:
    self._max_seconds = max_seconds
    self._index = 0
    self._start = 0.0
    self._deadline = 0.0

  def after_create_session(self, session, coord) -> None:
    del session, coord
    self._deadline = time.time() + self._max_seconds
    status_file.record('session_ready', step=0, max_steps=0)

  def before_run(self, run_context):
    self._start = time.time()

  def after_run(self, run_context, run_values) -> None:
    end = time.time()
    status_file.record(STEP_EVENT, index=self._index, end=end, seconds=end - self._start)
    self._index += 1
    if end > self._deadline:
      print('emulated_peer_task: stopped at --max_seconds', flush=True)
      run_context.request_stop()


def make_model_fn(options: PeerTaskOptions):
  """The emulated step as an Estimator model_fn (one replica per worker)."""
  shapes = variable_shapes(options.model, options.num_classes)
  wait_seconds = options.emulate_compute * options.time_scale

  def wait() -> float:
    time.sleep(wait_seconds)
    return GRADIENT_SCALE

  def model_fn(features, labels, mode):
    del features, labels
    variables = [tf1.get_variable(name, shape, tf.float32, tf1.zeros_initializer())
                 for name, shape in shapes]
    print_placement(variables)
    values = [tf.identity(v) for v in variables]  # one read (pull) per variable
    with tf.control_dependencies(values):  # compute starts once every parameter is here
      done = tf.py_function(wait, [], tf.float32, name='emulated_compute')
    done = tf.stop_gradient(tf.reshape(done, []))
    # d loss / d v = done broadcast to v's shape: one [shape] gradient per variable, after the wait.
    loss = tf.add_n([tf.reduce_sum(value * done) for value in values])
    optimizer = tf1.train.MomentumOptimizer(1e-6, 0.9)
    train_op = optimizer.minimize(loss, global_step=tf1.train.get_global_step(),
                                  var_list=variables)
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op,
                                      training_hooks=[StepEvents(options.max_seconds)])

  return model_fn


def print_placement(variables: list[tf.Variable]) -> None:
  """Prints the bytes of `variables` on each device, as the strategy placed them."""
  load: dict[str, int] = {}
  for v in variables:
    load[v.device] = load.get(v.device, 0) + v.shape.num_elements() * v.dtype.size
  print(f'{PLACEMENT_LINE} {sorted(load.items())}', flush=True)


def input_fn() -> tf.data.Dataset:
  """One tiny constant example per step: the emulated step reads no data."""
  return tf.data.Dataset.from_tensors(({'x': tf.zeros([1])}, tf.zeros([1]))).repeat()


def run(options: PeerTaskOptions) -> None:
  """Serves (ps) or trains (chief, workers) until the emulator stops this task."""
  # One CPU device per task; collective ops block inter-op threads while they wait for
  # the other workers, so give them more than this machine's 2 cores.
  session_config = tf1.ConfigProto(device_count={'CPU': 1}, inter_op_parallelism_threads=8)
  config = tf.estimator.RunConfig(
      model_dir=options.model_dir, save_checkpoints_steps=None, save_checkpoints_secs=None,
      save_summary_steps=None, log_step_count_steps=None, session_config=session_config,
      train_distribute=make_strategy(options.peer))
  estimator = tf.estimator.Estimator(make_model_fn(options), config=config)
  # train_and_evaluate: a ps task serves, chief and workers train; no evaluator is started.
  tf.estimator.train_and_evaluate(estimator,
                                  tf.estimator.TrainSpec(input_fn, max_steps=10 ** 9),
                                  tf.estimator.EvalSpec(input_fn, steps=1))

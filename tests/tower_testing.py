"""Helpers shared by the tower tests: virtual CPU sessions, where ops really ran, and the
one-device SGD step that every tower count must reproduce."""

from __future__ import annotations

import collections
from typing import Callable

import numpy as np
import tensorflow as tf
from tensorflow_estimator.python.estimator import estimator as estimator_lib

from model_fn.layers import TowerContext

tf1 = tf.compat.v1


def cpu_session_config(num_cpus: int) -> tf1.ConfigProto:
  """A session with `num_cpus` virtual CPU devices; soft placement stays OFF so that a
  request for a missing device fails instead of silently collapsing onto CPU:0."""
  return tf1.ConfigProto(device_count={'CPU': num_cpus}, allow_soft_placement=False,
                         inter_op_parallelism_threads=2 * num_cpus + 2)


def devices_that_ran(run_metadata: tf1.RunMetadata) -> dict[str, set[str]]:
  """Node name -> set of devices it executed on, from a FULL_TRACE run's step stats."""
  ran = collections.defaultdict(set)
  for device_stats in run_metadata.step_stats.dev_stats:
    device = tf.DeviceSpec.from_string(device_stats.device)
    short = f'{device.device_type}:{device.device_index}'
    for node in device_stats.node_stats:
      ran[node.node_name].add(short)
  return ran


def estimator_device_fn(config: tf.estimator.RunConfig) -> Callable | None:
  """The device function the Estimator builds its model_fn under for `config`: its
  `device_fn`, else the Estimator's default replica device setter (None on one machine)."""
  return config.device_fn or estimator_lib._get_replica_device_setter(config)  # pylint: disable=protected-access


def full_trace() -> tf1.RunOptions:
  return tf1.RunOptions(trace_level=tf1.RunOptions.FULL_TRACE)


def load_values(sess: tf1.Session, values: dict[str, np.ndarray]) -> None:
  """Sets every global variable named in `values` (op name -> value)."""
  for v in tf1.global_variables():
    if v.op.name in values:
      v.load(values[v.op.name], sess)


def reference_sgd_step(network: Callable[[tf.Tensor, TowerContext], tf.Tensor],
                       clips: np.ndarray, labels: np.ndarray, init: dict[str, np.ndarray],
                       learning_rate: float, weight_decay: float) -> dict[str, np.ndarray]:
  """The trainable variables after one plain SGD step on one device, from `init`, on
  mean cross-entropy over the whole batch + weight_decay * sum(l2_loss) of the variables
  named `w` or `kernel`: the reduction rule written out without towers."""
  with tf.Graph().as_default():
    logits = network(tf.constant(clips), TowerContext(is_training=True))
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.constant(labels), logits=logits))
    kernels = [v for v in tf1.trainable_variables() if v.op.name.split('/')[-1] in ('w', 'kernel')]
    loss += weight_decay * tf.add_n([tf.nn.l2_loss(v) for v in kernels])
    step = tf1.train.GradientDescentOptimizer(learning_rate).minimize(loss)
    with tf1.Session() as sess:
      sess.run(tf1.global_variables_initializer())
      load_values(sess, init)
      sess.run(step)
      return {v.op.name: sess.run(v) for v in tf1.trainable_variables()}


def model_fn_step(model_fn: Callable[..., tf.estimator.EstimatorSpec], clips: np.ndarray,
                  labels: np.ndarray, init: dict[str, np.ndarray], params,
                  trainable_only: bool = True) -> dict[str, np.ndarray]:
  """The variables (trainable ones, or every global one) after one TRAIN step of
  `model_fn(features, labels, mode, params)` from `init`, on `params.num_towers` virtual
  CPU devices."""
  with tf.Graph().as_default():
    spec = model_fn(tf.constant(clips), tf.constant(labels), tf.estimator.ModeKeys.TRAIN,
                    params)
    with tf1.Session(config=cpu_session_config(params.num_towers)) as sess:
      sess.run(tf1.global_variables_initializer())
      load_values(sess, init)
      sess.run(spec.train_op)
      variables = tf1.trainable_variables() if trainable_only else tf1.global_variables()
      return {v.op.name: sess.run(v) for v in variables}


def ancestors(op: tf.Operation) -> set[str]:
  """Names of every op `op` waits for, through data inputs and control inputs."""
  seen, stack = set(), [op]
  while stack:
    current = stack.pop()
    for parent in [t.op for t in current.inputs] + list(current.control_inputs):
      if parent.name not in seen:
        seen.add(parent.name)
        stack.append(parent)
  return seen

"""Specification: 16-bit transfers and the emulator's traffic arithmetic.

With `transfer_dtype` bfloat16 or float16, a pull casts on the variable's (ps) device
and a push on the gradient's (worker) device, so only 2 bytes per value cross the
network; the ps keeps and updates float32. float32 adds no cast. The emulator's bytes
per ps and the model's bytes per node per worker step follow by hand.
"""

import dataclasses

import numpy as np
import tensorflow as tf

from benchmarks import cluster_model, emulated_task
from command_line import options
from model_fn import transfer, tower_model_fn
from towers.params import TrainParams, make_params

tf1 = tf.compat.v1
PS, WORKER = '/device:CPU:1', '/device:CPU:0'


def two_device_session(graph):
  return tf1.Session(graph=graph, config=tf1.ConfigProto(device_count={'CPU': 2}))


class TransferTest(tf.test.TestCase):

  def build(self, dtype):
    graph = tf.Graph()
    with graph.as_default():
      with tf.device(PS):
        v = tf1.get_variable('v', initializer=np.array([1.0, 1.0 + 2**-10, 3e5], np.float32))
      pulled = transfer.pull(v, WORKER, dtype)
      with tf.device(WORKER):
        grad = pulled * 1.0
      pushed = transfer.push(grad, v, dtype)
    return graph, v, pulled, pushed

  def test_16_bit_pull_casts_on_the_ps_and_push_on_the_worker(self):
    graph, _, pulled, pushed = self.build(tf.bfloat16)
    casts = {op.name: op for op in graph.get_operations() if op.type == 'Cast'}
    pull_cast, push_cast = casts['pull_cast'], casts['push_cast']
    self.assertEqual(pull_cast.get_attr('DstT'), tf.bfloat16)
    self.assertEqual(pull_cast.device, PS)
    self.assertEqual(pulled.op.device, WORKER)
    self.assertEqual(push_cast.get_attr('DstT'), tf.bfloat16)
    self.assertEqual(push_cast.device, WORKER)
    self.assertEqual(pushed.op.device, PS)
    self.assertEqual(pushed.dtype, tf.float32)

  def test_bfloat16_values_round_to_8_bits_of_mantissa(self):
    graph, v, pulled, pushed = self.build(tf.bfloat16)
    with two_device_session(graph) as session:
      session.run(v.initializer)
      got_pulled, got_pushed = session.run([pulled, pushed])
    # 1 + 2^-10 is below bfloat16's resolution at 1 (2^-7): it rounds to 1.
    self.assertAllEqual(got_pulled[:2], [1.0, 1.0])
    self.assertAllClose(got_pulled[2], 3e5, rtol=2**-8)
    self.assertAllEqual(got_pushed, got_pulled)

  def test_float32_adds_no_cast(self):
    graph, v, pulled, pushed = self.build(tf.float32)
    self.assertEqual([op for op in graph.get_operations() if op.type == 'Cast'], [])
    with two_device_session(graph) as session:
      session.run(v.initializer)
      self.assertAllEqual(session.run(pulled), [1.0, 1.0 + 2**-10, 3e5])

  def test_unknown_dtype_names_the_choices(self):
    with self.assertRaises(ValueError):
      transfer.transfer_dtype('int8')
    # The types the library casts to are the choices --transfer_dtype offers.
    choices = next(f.metadata[options.CHOICES] for f in dataclasses.fields(TrainParams)
                   if f.name == 'transfer_dtype')
    self.assertEqual(tuple(transfer.TRANSFER_DTYPES), choices)


def tower_step(transfer_dtype: str, round_start_to_bfloat16: bool = False, seed: int = 0):
  """One SGD step of the 2-tower model_fn from a fixed start (optionally rounded to
  bfloat16 first): (start, end) values of every trainable variable, and the graph."""
  rng = np.random.default_rng(seed)
  clips = rng.uniform(-1, 1, size=(8, 4, 16, 16, 3)).astype(np.float32)
  labels = rng.integers(0, 5, size=8).astype(np.int64)
  params = make_params(model='c3d_small', num_classes=5, clip_frames=4, crop_size=16,
                       batch_norm=False, batch_size=8, num_towers=2, optimizer='sgd',
                       lr_schedule='constant', lr_values=[0.5], weight_decay=0.01,
                       model_dir='/tmp/unused', transfer_dtype=transfer_dtype)
  graph = tf.Graph()
  with graph.as_default():
    tf1.set_random_seed(1)
    spec = tower_model_fn.make_model_fn()(tf.constant(clips), tf.constant(labels),
                                          tf.estimator.ModeKeys.TRAIN, params)
    variables = tf1.trainable_variables()
    with two_device_session(graph) as session:
      session.run(tf1.global_variables_initializer())
      if round_start_to_bfloat16:
        session.run([v.assign(tf.cast(tf.cast(v, tf.bfloat16), tf.float32)) for v in variables])
      start = session.run(variables)
      session.run(spec.train_op)
      end = session.run(variables)
  names = [v.op.name for v in variables]
  return dict(zip(names, start)), dict(zip(names, end)), graph


class ModelFnTransferTest(tf.test.TestCase):
  """`--transfer_dtype=bfloat16` in the tower model_fn: one pull and one push cast per
  trainable variable (shared by both towers), float32 master weights, and a step whose
  update is the float32 step's from the bfloat16-rounded weights, each gradient value
  rounded to bfloat16 (relative error <= 2^-8)."""

  def test_bfloat16_step_is_the_float32_step_with_rounded_transfers(self):
    start32, end32, _ = tower_step('float32', round_start_to_bfloat16=True)
    start16, end16, graph = tower_step('bfloat16')
    casts = [op for op in graph.get_operations() if op.type == 'Cast']
    pulls = [op for op in casts if op.name.split('/')[-1].startswith('pull_cast')]
    pushes = [op for op in casts if op.name.split('/')[-1].startswith('push_cast')]
    self.assertLen(pulls, len(start16))
    self.assertLen(pushes, len(start16))
    moved_off_bfloat16 = 0
    for name, value in start16.items():
      rounded = tf.cast(tf.cast(value, tf.bfloat16), tf.float32).numpy()
      self.assertAllEqual(start32[name], rounded)  # the same weights, as the towers see them
      update32, update16 = end32[name] - start32[name], end16[name] - value
      self.assertGreater(np.abs(update32).max(), 0.0, name)
      self.assertAllClose(update16, update32, rtol=2**-7, atol=1e-7, msg=name)
      self.assertEqual(end16[name].dtype, np.float32)
      as_bfloat16 = tf.cast(tf.cast(end16[name], tf.bfloat16), tf.float32).numpy()
      moved_off_bfloat16 += int(np.any(as_bfloat16 != end16[name]))
    self.assertGreater(moved_off_bfloat16, 0, 'the master weights are not float32')


class TrafficArithmeticTest(tf.test.TestCase):

  SHAPES = [('a', (10,)), ('b', (30,)), ('c', (20,))]  # 60 values

  def test_ps_shares_greedy_in_creation_order(self):
    # a -> ps0 (40 B), b -> ps1 (120 B), c -> ps0 (40 + 80 B)
    self.assertEqual(emulated_task.ps_shares(self.SHAPES, 2, 'greedy', 4), [120.0, 120.0])
    self.assertEqual(emulated_task.ps_shares(self.SHAPES, 3, 'greedy', 4), [40.0, 120.0, 80.0])

  def test_ps_shares_largest_first(self):
    # b (120) -> ps0, c (80) -> ps1, a (40) -> ps1
    self.assertEqual(emulated_task.ps_shares(self.SHAPES, 2, 'largest_first', 4), [120.0, 120.0])
    self.assertEqual(emulated_task.ps_shares(self.SHAPES, 3, 'largest_first', 4),
                     [120.0, 80.0, 40.0])

  def test_16_bit_halves_every_share(self):
    self.assertEqual(emulated_task.ps_shares(self.SHAPES, 3, 'greedy', 2), [20.0, 60.0, 40.0])
    self.assertEqual(transfer.bytes_per_value('bfloat16'), 2)
    self.assertEqual(transfer.bytes_per_value('float16'), 2)
    self.assertEqual(transfer.bytes_per_value('float32'), 4)

  def test_node_bytes_per_worker_step(self):
    # 2 nodes, P = 100, node 0 holds 60: per global step (2 worker steps) node 0 sends
    # its 60 to worker 1 and its worker's 40 pushed to ps 1: 100 / 2 worker steps.
    self.assertEqual(cluster_model.node_bytes_per_worker_step([60.0, 40.0], 2, 0), 50.0)
    # one node alone moves nothing over its link
    self.assertEqual(cluster_model.node_bytes_per_worker_step([100.0], 1, 0), 0.0)
    # 4 workers, 4 equal shares of 25: 25 x 3 + (100 - 25) = 150 per 4 worker steps
    self.assertEqual(cluster_model.node_bytes_per_worker_step([25.0] * 4, 4, 2), 37.5)

  def test_node_bytes_follow_the_workers_step_mix(self):
    # 2 nodes, ps shares 80 and 20. Asynchronous worker 0 pulls only the remote 20 and
    # steps 3 times for worker 1's once: node 0 sends 80 per worker-1 step and 20 per
    # worker-0 step, (80 x 1 + 20 x 3) / 4 steps = 35 per worker step, not the equal
    # mix's 50.
    self.assertEqual(cluster_model.node_bytes_per_worker_step([80.0, 20.0], 2, 0,
                                                              [0.75, 0.25]), 35.0)
    self.assertEqual(cluster_model.node_bytes_per_worker_step([80.0, 20.0], 2, 0,
                                                              [0.5, 0.5]), 50.0)
    with self.assertRaises(ValueError):
      cluster_model.node_bytes_per_worker_step([80.0, 20.0], 2, 0, [0.5, 0.4])


if __name__ == '__main__':
  tf.test.main()

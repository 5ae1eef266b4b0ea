"""Specification: 16-bit transfers and the emulator's traffic arithmetic.

With `transfer_dtype` bfloat16 or float16, a pull casts on the variable's (ps) device
and a push on the gradient's (worker) device, so only 2 bytes per value cross the
network; the ps keeps and updates float32. float32 adds no cast. The emulator's bytes
per ps and the model's bytes per node per worker step follow by hand.
"""

import numpy as np
import tensorflow as tf

from benchmarks import cluster_model, emulated_task
from model_fn import transfer

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
    with self.assertRaisesRegex(ValueError, 'bfloat16'):
      transfer.transfer_dtype('int8')


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


if __name__ == '__main__':
  tf.test.main()

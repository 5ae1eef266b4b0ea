"""Specification: the cluster paper model's arithmetic and the graph FLOP counter.

The FLOP counter must count Conv3D gradients (TensorFlow registers no statistic for them):
on a two-conv network the backward pass is both filter gradients plus the second conv's
input gradient, each as many FLOPs as its forward conv.
"""

import tensorflow as tf

from benchmarks import cluster_model, flop_count
from model_fn import layers
from model_fn.network_variables import network_variables

tf1 = tf.compat.v1

PS = [60.0, 40.0]  # bytes on ps 0 (node 0) and ps 1 (node 1); P = 100


def tiny_network(clips, ctx):
  with tf1.variable_scope('tiny'):
    x = layers.conv3d(clips, 4, (3, 3, 3), name='conv1')  # 4x8x8x4 out: 1024 x 27 x 3 x 2
    x = layers.conv3d(x, 5, (1, 1, 1), name='conv2')      # 4x8x8x5 out: 1280 x 4 x 2
    return tf.reduce_mean(x, axis=[1, 2, 3])


class ClusterModelTest(tf.test.TestCase):

  def test_compute_time_is_flops_over_achieved_rate(self):
    self.assertAlmostEqual(cluster_model.compute_seconds(1e12, 6, 4e12, 0.5), 3.0)

  def test_phase_bytes_per_node(self):
    # 3 workers on nodes 0-2, 4 nodes. Node 0 serves 60 to 2 remote workers, receives 40.
    self.assertEqual(cluster_model.phase_bytes(PS, workers=3, nodes=4), [120, 80, 100, 0])

  def test_sync_step_adds_pull_and_push_at_the_busiest_nic(self):
    self.assertAlmostEqual(cluster_model.sync_step_seconds(1.0, PS, 3, 4, link=100.0), 3.4)

  def test_async_rate_is_bounded_by_workers_and_by_the_busiest_nic(self):
    unloaded = 1 / 1.8 + 1 / 2.2 + 1 / 3.0
    self.assertAlmostEqual(cluster_model.async_steps_per_second(1.0, PS, 3, 4, 100.0), unloaded)
    # No compute: node 0 moves (60 x 2 + 40) / 3 bytes per worker step -> 1.875 steps/s.
    self.assertAlmostEqual(cluster_model.async_steps_per_second(0.0, PS, 3, 4, 100.0), 1.875)
    self.assertAlmostEqual(cluster_model.efficiency(1.875, 3, 1.0), 0.625)

  def test_ps_traffic_and_best_ps_count(self):
    self.assertEqual(cluster_model.ps_traffic_per_step(PS, 3), [(180, 180), (120, 120)])
    shares = {1: [100.0], 2: PS}
    self.assertEqual(cluster_model.best_ps_count(1.0, shares, 3, 4, 100.0), 2)
    self.assertEqual(cluster_model.best_ps_count(1.0, {1: [50.0], 2: [25.0, 25.0]}, 1, 4,
                                                 100.0), 1)  # one worker: a tie, fewer ps

  def test_largest_first_shares_balance_better_than_creation_order(self):
    self.assertEqual(cluster_model.largest_first_shares([1, 1, 2, 4], 2), [4.0, 4.0])
    self.assertEqual(cluster_model.largest_first_shares([3], 2), [3.0, 0.0])


class FlopCountTest(tf.test.TestCase):

  def test_counts_conv3d_forward_and_gradients(self):
    conv1, conv2 = 1024 * 27 * 3 * 2, 1280 * 4 * 2
    flops = flop_count.training_flops(tiny_network, (4, 8, 8, 3))
    # The profiler's total over everything the gradients depend on: forward + backward.
    self.assertBetween(flops.total, 2 * conv1 + 3 * conv2, 1.05 * (2 * conv1 + 3 * conv2))
    self.assertBetween(flops.forward, conv1 + conv2, 1.05 * (conv1 + conv2))
    self.assertBetween(flops.backward, conv1 + 2 * conv2, 1.05 * (conv1 + 2 * conv2))

  def test_network_variables_in_creation_order_with_bytes(self):
    variables = network_variables(tiny_network, (4, 8, 8, 3))
    self.assertEqual([(v.name, v.num_bytes, v.trainable) for v in variables],
                     [('tiny/conv1/w', 27 * 3 * 4 * 4, True), ('tiny/conv2/w', 4 * 5 * 4, True)])


if __name__ == '__main__':
  tf.test.main()

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

  def test_overlapped_step_hides_pushes_behind_earlier_layers_backward(self):
    # Layer 0: forward 1 s, backward 2 s, 20% of the bytes; layer 1: 1 s, 1 s, 80%.
    # Pull phase 5 s: layer 0 arrives at 1, layer 1 at 5. Forward 0 runs 1-2, forward 1
    # 5-6; backward 1 runs 6-7, backward 0 7-9. Push 1 (4 s) runs 7-11, overlapping
    # backward 0; push 0 (1 s) 11-12.
    self.assertAlmostEqual(
        cluster_model.overlapped_step_seconds([1, 1], [2, 1], [0.2, 0.8], 5.0), 12.0)
    # 3 s of other micro-batches between forward and backward delay the pushes by 3 s:
    # push 1 runs 10-14, push 0 14-15.
    self.assertAlmostEqual(
        cluster_model.overlapped_step_seconds([1, 1], [2, 1], [0.2, 0.8], 5.0, 3.0), 15.0)
    # The same work as one layer cannot overlap: 5 + 2 + 3 + 5.
    self.assertAlmostEqual(cluster_model.overlapped_step_seconds([2], [3], [1.0], 5.0), 15.0)

  def test_one_layer_is_the_step_without_overlap_and_no_network_is_compute(self):
    phase = 120 / 100.0  # the busiest NIC's phase for PS, 3 workers, 4 nodes
    self.assertAlmostEqual(cluster_model.overlapped_step_seconds([1], [2], [1.0], phase),
                           cluster_model.sync_step_seconds(3.0, PS, 3, 4, 100.0))
    self.assertAlmostEqual(
        cluster_model.overlapped_step_seconds([1, 1], [2, 1], [0.2, 0.8], 0.0), 5.0)

  def test_sync_and_async_steps_take_the_overlapped_worker_step(self):
    def step(phase):
      return cluster_model.overlapped_step_seconds([0.5, 0.5], [0.0, 0.0], [0.5, 0.5], phase)
    # Busiest NIC phase 120 / 100 = 1.2 s: pulls end at 0.6 and 1.2, forwards at 1.1 and
    # 1.7; pushes 1.7-2.3 and 2.3-2.9.
    self.assertAlmostEqual(cluster_model.sync_step_seconds(1.0, PS, 3, 4, 100.0, step), 2.9)
    # Workers 0, 1, 2 pull 40, 60, 100 bytes (0.4, 0.6, 1.0 s). Worker 0: forward 0
    # ends at 0.7, forward 1 at 1.2, pushes end at 1.6; worker 1: 1.4 + 0.5, 1.9;
    # worker 2: 1.0 + 0.5 + 1.0. The busiest NIC (node 0, 160 / 3 bytes per worker step)
    # would allow 1.875 steps/s: not the bound here.
    self.assertAlmostEqual(cluster_model.async_steps_per_second(1.0, PS, 3, 4, 100.0, step),
                           1 / 1.6 + 1 / 1.9 + 1 / 2.5)

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

  def test_flops_per_variable_forward_and_backward(self):
    conv1, conv2 = 1024 * 27 * 3 * 2, 1280 * 4 * 2
    per_variable, totals = flop_count.variable_flops(tiny_network, (4, 8, 8, 3))
    # conv1's backward is its filter gradient only: nothing needs the clip's gradient.
    self.assertEqual(per_variable, [flop_count.VariableFlops('tiny/conv1/w', conv1, conv1),
                                    flop_count.VariableFlops('tiny/conv2/w', conv2, 2 * conv2)])
    self.assertEqual(totals, flop_count.training_flops(tiny_network, (4, 8, 8, 3)))

  def test_network_variables_in_creation_order_with_bytes(self):
    variables = network_variables(tiny_network, (4, 8, 8, 3))
    self.assertEqual([(v.name, v.num_bytes, v.trainable) for v in variables],
                     [('tiny/conv1/w', 27 * 3 * 4 * 4, True), ('tiny/conv2/w', 4 * 5 * 4, True)])


if __name__ == '__main__':
  tf.test.main()

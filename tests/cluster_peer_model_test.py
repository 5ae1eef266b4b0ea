"""Specification: the paper model of TensorFlow's peers in the cluster emulator.

* Ring all-reduce: each of N workers sends (and receives) (N - 1) / N x P bytes in the
  reduce-scatter phase and as much in the all-gather phase; per worker step, counted over
  all workers' steps, that is the ring's bytes / N; a synchronous step adds them at the
  link rate to the compute time.
* ParameterServerStrategy places variables round robin over the ps tasks, and under an
  Estimator the global step, created first in the strategy's scope, takes ps 0: checked
  against the placement TensorFlow's real strategy object makes.
"""


import tensorflow as tf

from benchmarks import cluster_model

tf1 = tf.compat.v1


class RingAllReduceTest(tf.test.TestCase):

  def test_bytes_per_worker_per_step(self):
    self.assertEqual(cluster_model.ring_allreduce_bytes(100.0, 1), 0.0)
    self.assertEqual(cluster_model.ring_allreduce_bytes(100.0, 2), 100.0)
    self.assertEqual(cluster_model.ring_allreduce_bytes(100.0, 4), 150.0)
    self.assertAlmostEqual(cluster_model.ring_allreduce_bytes(100.0, 10), 180.0)

  def test_bytes_per_worker_step_over_all_workers_steps(self):
    self.assertEqual(cluster_model.allreduce_node_bytes_per_worker_step(100.0, 2), 50.0)
    self.assertEqual(cluster_model.allreduce_node_bytes_per_worker_step(100.0, 4), 37.5)

  def test_sync_step_is_compute_plus_the_ring_at_the_link_rate(self):
    # 4 workers, P = 100 bytes, 50 bytes/s: 150 bytes each way take 3 s.
    self.assertAlmostEqual(cluster_model.allreduce_sync_step_seconds(1.0, 100.0, 4, 50.0), 4.0)
    self.assertAlmostEqual(cluster_model.allreduce_sync_step_seconds(1.0, 100.0, 1, 50.0), 1.0)


class RoundRobinTest(tf.test.TestCase):

  def test_shares_in_creation_order(self):
    self.assertEqual(cluster_model.round_robin_shares([1, 2, 4, 8, 16], 2), [21.0, 10.0])
    self.assertEqual(cluster_model.round_robin_shares([1, 2, 4, 8, 16], 2, first_task=1),
                     [10.0, 21.0])
    self.assertEqual(cluster_model.round_robin_shares([5], 3, first_task=1), [0.0, 5.0, 0.0])

  def test_matches_parameter_server_strategy_placement(self):
    num_ps = 3
    cluster = tf.train.ClusterSpec({'chief': ['localhost:1'], 'worker': ['localhost:2'],
                                    'ps': [f'localhost:{3 + i}' for i in range(num_ps)]})
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        cluster, task_type='worker', task_id=0)
    strategy = tf1.distribute.experimental.ParameterServerStrategy(resolver)
    shapes = [(3, 3), (3,), (5, 7), (7,), (2, 2, 2), (4,)]
    with tf.Graph().as_default(), strategy.scope():
      tf1.train.get_or_create_global_step()  # as the Estimator does, before the model_fn
      variables = [tf1.get_variable(f'v{i}', s, tf.float32) for i, s in enumerate(shapes)]
      placed = [0.0] * num_ps
      for v in variables:
        placed[tf.DeviceSpec.from_string(v.device).task] += v.shape.num_elements() * 4
    sizes = [4.0 * tf.TensorShape(s).num_elements() for s in shapes]
    self.assertEqual(cluster_model.round_robin_shares(sizes, num_ps, first_task=1), placed)


if __name__ == '__main__':
  tf.test.main()

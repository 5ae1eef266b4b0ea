"""Specification: `local_cluster` runs 2 ps, a chief, a worker and an evaluator on loopback,
trains the demo with 2 towers per worker to a checkpoint and exports the best model."""

import os

import tensorflow as tf

from tests.cluster_testing import checkpoint_step, make_cluster, progress_steps


class LocalClusterTest(tf.test.TestCase):

  def test_two_ps_two_workers_and_an_evaluator_train_and_export(self):
    model_dir = os.path.join(self.create_tempdir().full_path, 'model')
    cluster = make_cluster(model_dir, num_ps=2, num_workers=2, max_steps=160, evaluator=True)
    self.addCleanup(cluster.stop_all)
    self.assertEqual(cluster.run(evaluator_grace_secs=240), 0, cluster.failed_tasks())
    self.assertGreaterEqual(checkpoint_step(model_dir), 160)
    self.assertNotEmpty(progress_steps(cluster.output('chief')))
    evaluations = [l for l in cluster.output('evaluator') if 'Saving dict for global step' in l]
    self.assertNotEmpty(evaluations)
    self.assertTrue(any('Exiting evaluation' in l for l in cluster.output('evaluator')))
    best = os.path.join(model_dir, 'export', 'best')
    self.assertNotEmpty(tf.io.gfile.listdir(best))
    variables = {n for n, _ in tf.train.list_variables(tf.train.latest_checkpoint(model_dir))}
    self.assertIn('c3d_small/logits/kernel', variables)

  def test_a_failing_task_makes_the_launcher_fail(self):
    model_dir = os.path.join(self.create_tempdir().full_path, 'model')
    cluster = make_cluster(model_dir, num_ps=1, num_workers=1, max_steps=10,
                           extra_args=('--optimizer=adagrad',))
    self.addCleanup(cluster.stop_all)
    self.assertEqual(cluster.run(), 1)
    self.assertIn('chief', cluster.failed_tasks())


if __name__ == '__main__':
  tf.test.main()

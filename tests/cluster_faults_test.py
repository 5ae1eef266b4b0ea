"""Specification: real ps/chief/worker processes on loopback survive a cluster's faults.

Every test is bounded in time and stops all its processes, pass or fail.
"""

import os
import time

import tensorflow as tf

from tests import program_runs
from tests.cluster_testing import (TRAIN_ARGS, make_cluster, params_from_argv, progress_steps,
                                   session_steps, wait_until)
from towers.checkpoints import checkpoint_step
from towers.training import train_and_evaluate

LIMIT = 240  # seconds any single wait may take on a loaded 2-core machine


def model_files(model_dir: str) -> dict[str, float]:
  """Each file directly in model_dir (checkpoints, events, settings) -> its mtime."""
  return {name: os.path.getmtime(os.path.join(model_dir, name)) for name in os.listdir(model_dir)
          if os.path.isfile(os.path.join(model_dir, name))}


class ClusterFaultsTest(tf.test.TestCase):

  def run_cluster(self, *args, **kwargs):
    """(cluster, its model_dir); every process is stopped when the test ends."""
    model_dir = os.path.join(self.create_tempdir().full_path, 'model')
    cluster = make_cluster(model_dir, *args, **kwargs)
    self.addCleanup(cluster.stop_all)
    return cluster, model_dir

  def test_killed_worker_does_not_stop_the_chief_and_rejoins_when_restarted(self):
    # Far more steps than the test waits for: training must still run when the worker is back.
    cluster, _ = self.run_cluster(num_ps=1, num_workers=2, max_steps=100000)
    cluster.start_all()
    wait_until(lambda: progress_steps(cluster.events('worker1')), LIMIT, 'worker1 to train')
    cluster.kill('worker1')
    killed_at = max(progress_steps(cluster.events('chief')) or [0])
    wait_until(lambda: max(progress_steps(cluster.events('chief')) or [0]) > killed_at + 20,
               LIMIT, 'the chief to go on alone')
    before = len(cluster.events('worker1'))
    cluster.start('worker1')
    wait_until(lambda: progress_steps(cluster.events('worker1')[before:]), LIMIT,
               'the restarted worker to train again')
    rejoined_at = min(progress_steps(cluster.events('worker1')[before:]))
    self.assertGreater(rejoined_at, killed_at, 'the worker rejoins the running training')
    self.assertIsNone(cluster.tasks['chief'].process.poll(), 'the chief never stopped')
    # The rejoin is proven: stop_all (the cleanup) ends the cluster here.

  def test_restarted_chief_resumes_from_the_latest_checkpoint(self):
    cluster, model_dir = self.run_cluster(num_ps=1, num_workers=1, max_steps=300)
    cluster.start_all()
    wait_until(lambda: (checkpoint_step(model_dir) or 0) >= 80, LIMIT, 'a checkpoint at step >= 80')
    cluster.kill('chief')
    saved = checkpoint_step(model_dir)
    before = len(cluster.events('chief'))
    cluster.start('chief')
    self.assertEqual(cluster.wait('chief', timeout=LIMIT), 0)
    resumed = progress_steps(cluster.events('chief')[before:])
    self.assertNotEmpty(resumed)
    self.assertGreaterEqual(min(resumed), saved, 'the global step never falls below the checkpoint')
    # The final checkpoint also holds the worker's last steps, finished after the chief's.
    self.assertGreaterEqual(checkpoint_step(model_dir), 300)
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(model_dir))
    shapes = reader.get_variable_to_shape_map()
    for name in ('c3d_small/block1/conv_3d/w', 'c3d_small/logits/kernel',
                 'c3d_small/block3/batch_norm/moving_variance'):
      self.assertIn(name, shapes)
      self.assertTrue(tf.math.reduce_all(tf.math.is_finite(reader.get_tensor(name))))

  def test_restarted_ps_resumes_training_from_the_latest_checkpoint(self):
    cluster, model_dir = self.run_cluster(num_ps=1, num_workers=1, max_steps=300)
    cluster.start_all()
    wait_until(lambda: (checkpoint_step(model_dir) or 0) >= 80, LIMIT, 'a checkpoint at step >= 80')
    saved_before_kill = checkpoint_step(model_dir)
    cluster.kill('ps0')
    before = len(cluster.events('chief'))
    cluster.start('ps0')
    self.assertEqual(cluster.wait('chief', timeout=LIMIT), 0)
    chief_after = cluster.events('chief')[before:]
    restored = session_steps(chief_after)
    self.assertNotEmpty(restored, 'the chief starts a new session on the new ps')
    self.assertGreaterEqual(min(restored), saved_before_kill,
                            'the new ps holds the checkpoint, not fresh variables')
    self.assertGreaterEqual(min(progress_steps(chief_after)), saved_before_kill)
    # The final checkpoint also holds the worker's last steps, finished after the chief's.
    self.assertGreaterEqual(checkpoint_step(model_dir), 300)

  def test_a_ps_that_never_returns_ends_the_trainers_with_a_clear_message(self):
    cluster, _ = self.run_cluster(num_ps=1, num_workers=2, max_steps=100000,
                               extra_args=('--ps_unreachable_secs=6',))
    cluster.start_all()
    wait_until(lambda: progress_steps(cluster.events('worker1')), LIMIT, 'worker1 to train')
    cluster.kill('ps0')
    started = time.time()
    for name in ('chief', 'worker1'):
      self.assertEqual(cluster.wait(name, timeout=90), 3, name)
      lost = cluster.events(name, 'peer_lost')
      self.assertEqual([(e['address'], e['limit_secs'], e['exit_code']) for e in lost],
                       [(cluster.cluster['ps'][0], 6, 3)], name)
      self.assertGreaterEqual(lost[0]['down_secs'], 6)
    self.assertLess(time.time() - started, 90)

  def test_a_second_run_on_a_finished_model_dir_returns_at_once(self):
    model_dir = os.path.join(self.create_tempdir().full_path, 'model')
    args = [*TRAIN_ARGS, f'--model_dir={model_dir}', '--max_steps=20',
            '--export_savedmodel=false']
    train_and_evaluate(params_from_argv(args))  # the finished run: what the binary trains
    self.assertEqual(checkpoint_step(model_dir), 20)
    files = model_files(model_dir)
    again = program_runs.run('towers.train_main', *args, timeout=LIMIT)
    self.assertEqual(again.code, 0, again.output())
    self.assertEqual([(e['event'], e['step'], e['max_steps']) for e in again.events],
                     [('already_trained', 20, 20)], 'no graph, session nor step')
    self.assertEqual(model_files(model_dir), files, 'nothing is trained nor saved again')
    cluster = make_cluster(model_dir, num_ps=1, num_workers=1, max_steps=20,
                           extra_args=('--ps_unreachable_secs=3',))
    self.addCleanup(cluster.stop_all)
    cluster.start('chief')  # no ps is even running: the chief must not need one
    self.assertEqual(cluster.wait('chief', timeout=LIMIT), 0)
    # Its GPUs decided, then nothing to do: no graph, session nor step.
    self.assertEqual([e['event'] for e in cluster.events('chief')],
                     ['gpus', 'cluster_task', 'already_trained'])
    self.assertEqual(checkpoint_step(model_dir), 20)


if __name__ == '__main__':
  tf.test.main()

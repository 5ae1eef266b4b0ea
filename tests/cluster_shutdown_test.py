"""Specification: a cluster ends by itself when training is done (real processes on
loopback). The chief waits for the workers before its final checkpoint, so a worker that
finishes late still has its last update in it (the ps, told to exit, holds no later step);
then every ps exits 0. A worker that never finishes (never started, or stuck: its port
answers, its step never ends) is named by the chief after --worker_lost_secs, and the chief
exits non-zero; the ps tasks still exit 0. While it trains, the chief holds model_dir's
writer lock for the whole cluster (towers/model_dir_lock.py).
"""

import json
import os
import signal

import tensorflow as tf

from tests.cluster_testing import make_cluster
from towers import model_dir_lock
from towers.checkpoints import checkpoint_step

LIMIT = 240  # seconds any single wait may take on a loaded 2-core machine
MAX_STEPS = 20


class ClusterShutdownTest(tf.test.TestCase):

  def run_cluster(self, **kwargs):
    model_dir = os.path.join(self.create_tempdir().full_path, 'model')
    cluster = make_cluster(model_dir, num_ps=1, num_workers=2, max_steps=MAX_STEPS, **kwargs)
    self.addCleanup(cluster.stop_all)
    for name in ('ps0', 'chief'):
      cluster.start(name)
    return cluster, model_dir

  def assert_chief_ends_without_worker_0(self, cluster, model_dir: str, stuck: bool,
                                         lost_secs: int) -> None:
    """The chief exits 1 through its error line, having counted worker 0 lost (`stuck`: it
    still answered) after `lost_secs`, after writing the checkpoint at max_steps; the ps
    still exits 0."""
    self.assertEqual(cluster.wait('chief', timeout=LIMIT), 1, cluster.output('chief')[-20:])
    self.assertEqual([(e['program'], e['exit_code']) for e in cluster.events('chief', 'error')],
                     [('train', 1)])
    lost = [(e['worker'], e['address'], e['stuck'], e['lost_secs'])
            for e in cluster.events('chief', 'worker_lost')]
    self.assertEqual(lost, [(0, cluster.cluster['worker'][0], stuck, lost_secs)])
    self.assertGreaterEqual(checkpoint_step(model_dir), MAX_STEPS)
    self.assertEqual(cluster.wait('ps0', timeout=LIMIT), 0)

  def test_a_late_worker_s_last_update_is_in_the_final_checkpoint_and_every_task_exits_0(self):
    cluster, model_dir = self.run_cluster()
    self.assertTrue(cluster.wait_for_event('chief', 'waiting_for_workers', LIMIT),
                    cluster.output('chief'))
    self.assertEqual([e['workers'] for e in cluster.events('chief', 'waiting_for_workers')],
                     [[0]], 'the chief reached max_steps and waits for worker 0 alone')
    # The cluster is one writer: its chief holds model_dir's lock, the other tasks run.
    lock = os.path.join(model_dir, model_dir_lock.LOCK_FILE)
    with open(lock) as f:
      self.assertEqual(json.load(f)['pid'], cluster.tasks['chief'].process.pid)
    cluster.start('worker1')  # starts only now: it runs one step past max_steps
    for name in ('worker1', 'chief', 'ps0'):
      self.assertEqual(cluster.wait(name, timeout=LIMIT), 0, cluster.output(name)[-20:])
    self.assertFalse(os.path.exists(lock), 'the chief releases it when it ends')
    self.assertGreater(checkpoint_step(model_dir), MAX_STEPS)
    # The ps records the global step it held when told to exit: no update after the checkpoint.
    self.assertEqual([e['message'] for e in cluster.events('ps0', 'training_over')],
                     ['every worker done'], cluster.output('ps0')[-5:])
    self.assertEqual([e['step'] for e in cluster.events('ps0', 'ps_final_step')],
                     [checkpoint_step(model_dir)], cluster.output('ps0')[-5:])
    self.assertEqual(cluster.failed_tasks(), [])

  def test_a_worker_that_never_finishes_is_named_and_the_ps_still_exits_0(self):
    cluster, model_dir = self.run_cluster(extra_args=('--worker_lost_secs=4',))
    # worker1 is never started: its port refuses connections.
    self.assert_chief_ends_without_worker_0(cluster, model_dir, stuck=False, lost_secs=4)

  def test_a_stuck_worker_that_still_answers_is_named_and_the_ps_still_exits_0(self):
    cluster, model_dir = self.run_cluster(extra_args=('--worker_lost_secs=6',))
    cluster.start('worker1')
    self.assertTrue(cluster.wait_for_event('worker1', 'session_ready', LIMIT),
                    cluster.output('worker1'))
    self.addCleanup(cluster.kill, 'worker1')
    # Stopped, its port still accepts connections (the kernel answers), its step never ends.
    cluster.tasks['worker1'].process.send_signal(signal.SIGSTOP)
    self.assert_chief_ends_without_worker_0(cluster, model_dir, stuck=True, lost_secs=6)


if __name__ == '__main__':
  tf.test.main()

"""Specification: `local_cluster` runs 2 ps, a chief, a worker and an evaluator on loopback,
trains the demo with 2 towers per worker to a checkpoint and exports the best model."""

import contextlib
import io
import os
import signal
import subprocess
import sys
import time

import tensorflow as tf

from command_line import status_file
from tests.cluster_testing import TRAIN_ARGS, make_cluster, progress_steps, wait_until
from towers.checkpoints import checkpoint_step
from towers.cluster import local_cluster


class LocalClusterTest(tf.test.TestCase):

  def test_two_ps_two_workers_and_an_evaluator_train_and_export(self):
    model_dir = os.path.join(self.create_tempdir().full_path, 'model')
    cluster = make_cluster(model_dir, num_ps=2, num_workers=2, max_steps=80, evaluator=True)
    self.addCleanup(cluster.stop_all)
    self.assertEqual(cluster.run(timeout_secs=600), 0, cluster.failed_tasks())
    self.assertGreaterEqual(checkpoint_step(model_dir), 80)
    self.assertNotEmpty(progress_steps(cluster.events('chief')))
    evaluated = [e['step'] for e in cluster.events('evaluator', 'evaluation')]
    self.assertNotEmpty(evaluated, 'the evaluator records one event per evaluation')
    self.assertGreaterEqual(max(evaluated), 80, 'the last evaluation is of the final checkpoint')
    self.assertEqual(cluster.tasks['evaluator'].process.returncode, 0)
    self.assertEqual(evaluated[-1], checkpoint_step(model_dir),
                     'the evaluator evaluated the final checkpoint last')
    best = os.path.join(model_dir, 'export', 'best')
    self.assertNotEmpty(tf.io.gfile.listdir(best))
    variables = {n for n, _ in tf.train.list_variables(tf.train.latest_checkpoint(model_dir))}
    self.assertIn('c3d_small/logits/kernel', variables)

  def test_synchronous_training_with_a_backup_worker(self):
    model_dir = os.path.join(self.create_tempdir().full_path, 'model')
    # No checkpoint at max_steps before the chief has waited for the workers (the next save
    # is at 1000): a worker that starts late still finds training unfinished and joins it.
    cluster = make_cluster(model_dir, num_ps=1, num_workers=3, max_steps=40,
                           extra_args=('--sync_replicas', '--backup_workers=1',
                                       '--save_checkpoints_steps=1000'))
    self.addCleanup(cluster.stop_all)
    self.assertEqual(cluster.run(timeout_secs=600), 0, cluster.failed_tasks())
    self.assertGreaterEqual(checkpoint_step(model_dir), 40)
    # Each worker built synchronous training: the first 2 of 3 workers' gradients per step.
    built_sync = {n: [(e['workers'], e['aggregated']) for e in cluster.events(n, 'sync_replicas')]
                  for n in ('chief', 'worker1', 'worker2')}
    self.assertEqual(built_sync, {n: [(3, 2)] for n in ('chief', 'worker1', 'worker2')})
    # TensorFlow's own SyncReplicasOptimizer hook left the chief's session waiting its
    # 120 s stop grace period for a queue runner blocked on gradients that no longer come
    # (model_fn/sync_replicas.py): from every worker finished (the final checkpoint next)
    # to the chief's exit is well under it, and the chief ends without an error.
    chief = cluster.output('chief')
    self.assertEqual(cluster.events('chief', 'error'), [])
    finished = cluster.events('chief', 'workers_finished')
    self.assertLen(finished, 1, chief[-20:])
    self.assertEqual(cluster.tasks['chief'].process.returncode, 0)
    wait_until(lambda: cluster.tasks['chief'].output_closed, 10, 'the end of the chief\'s output')
    self.assertLess(cluster.tasks['chief'].output_closed - finished[0]['time'], 100)

  def test_a_failing_task_makes_the_launcher_fail(self):
    model_dir = os.path.join(self.create_tempdir().full_path, 'model')
    cluster = make_cluster(model_dir, num_ps=1, num_workers=1, max_steps=10,
                           extra_args=('--optimizer=adagrad',))
    self.addCleanup(cluster.stop_all)
    with contextlib.redirect_stderr(io.StringIO()):
      self.assertEqual(cluster.run(timeout_secs=600), 1)
    self.assertIn('chief', cluster.failed_tasks())
    # Each task that ended refused the optimizer (exit 2) through its entry, no traceback.
    for name in cluster.failed_tasks():
      self.assertEqual(cluster.tasks[name].process.returncode, 2, name)
      errors = cluster.events(name, 'error')
      self.assertEqual([(e['exit_code'], e['error']) for e in errors],
                       [(2, 'IllegalFlagValueError')], name)


  def _launch(self, model_dir, max_steps, cwd=None, stdout=subprocess.PIPE, env=None):
    """The launcher as a user starts it (from `cwd`: its task logs and status files go to
    `cwd`/runs/local_cluster_logs)."""
    command = [sys.executable, '-m', 'towers.cluster.local_cluster_main', '--ps=1', '--workers=2',
               '--noevaluator', *TRAIN_ARGS, f'--model_dir={model_dir}',
               f'--max_steps={max_steps}']
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.getcwd(), *filter(None, [os.environ.get('PYTHONPATH')])]), **(env or {}))
    process = subprocess.Popen(command, stdout=stdout, stderr=subprocess.STDOUT,
                               text=True, cwd=cwd, env=env)
    self.addCleanup(lambda: process.poll() is None and process.kill())
    return process

  def test_the_command_runs_the_cluster_in_a_private_loopback_only_network(self):
    if local_cluster.isolation_command() is None:
      self.skipTest('this machine does not allow unprivileged network namespaces')
    root = self.create_tempdir().full_path
    model_dir = os.path.join(root, 'model')
    launcher_events = os.path.join(root, 'launcher.jsonl')
    process = self._launch(model_dir, 30, cwd=root,
                           env={status_file.STATUS_FILE_ENV: launcher_events})
    output, _ = process.communicate(timeout=300)
    self.assertEqual(process.returncode, 0, output[-3000:])
    self.assertEqual(status_file.values(status_file.read(launcher_events), 'network',
                                        'isolated'), [True])
    chief = status_file.read(os.path.join(root, 'runs', 'local_cluster_logs',
                                          'chief.events.jsonl'))
    self.assertNotEmpty(status_file.values(chief, 'session_ready', 'step'))
    # Asynchronous: the final checkpoint waits for the worker's last update, so it holds
    # max_steps plus at most one step in flight per worker besides the one that hit it.
    self.assertBetween(checkpoint_step(model_dir), 30, 31)

  def test_ctrl_c_stops_every_task(self):
    root = self.create_tempdir().full_path
    model_dir = os.path.join(root, 'model')
    process = self._launch(model_dir, 100000, cwd=root, stdout=subprocess.DEVNULL)
    events = os.path.join(root, 'runs', 'local_cluster_logs', 'chief.events.jsonl')
    wait_until(lambda: progress_steps(status_file.read(events)), 240, 'the chief to train')
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=60)
    self.assertEqual(process.returncode, 130)
    time.sleep(1)
    leftover = subprocess.run(['pgrep', '-f', model_dir], capture_output=True, text=True)
    self.assertEqual(leftover.stdout.strip(), '', 'no task outlives the launcher')


  def test_no_task_outlives_a_killed_launcher(self):
    model_dir = os.path.join(self.create_tempdir().full_path, 'model')
    code = ('import sys, time\n'
            'from tests.cluster_testing import make_cluster\n'
            f'cluster = make_cluster({model_dir!r}, 0, 1, 100000)\n'
            'cluster.start("chief")\n'
            'print(cluster.tasks["chief"].process.pid, flush=True)\n'
            'time.sleep(600)\n')
    launcher = subprocess.Popen([sys.executable, '-c', code], stdout=subprocess.PIPE, text=True)
    self.addCleanup(lambda: launcher.poll() is None and launcher.kill())
    chief_pid = int(launcher.stdout.readline())
    launcher.kill()  # SIGKILL: the launcher gets no chance to clean up
    launcher.wait()
    def chief_is_gone():
      try:
        with open(f'/proc/{chief_pid}/stat') as f:
          return f.read().split()[2] == 'Z'
      except FileNotFoundError:
        return True
    wait_until(chief_is_gone, 30, 'the chief to die with its launcher')


if __name__ == '__main__':
  tf.test.main()

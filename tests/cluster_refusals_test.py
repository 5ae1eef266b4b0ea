"""Specification: a cluster that cannot train stops before any task starts, with one line.

`local_cluster` refuses a cluster without a ps task (with workers the chief would wait
for them forever; alone it fails after training),
--sync_replicas with as many --backup_workers as workers (no gradient per step), train
flags that no task could run with (checked once by the launcher: a zero or negative
--chief_lost_secs or --worker_lost_secs, --backup_workers without --sync_replicas, a NaN
learning rate) and a working directory it cannot write its task logs into; each is one
`local_cluster:` line and exit code 2 within seconds. `//towers:train` refuses the same cluster from its flags, and a TF_CONFIG task without
its index.
"""

import json
import os
import shutil
import subprocess
import tempfile

import tensorflow as tf

from tests import program_runs
from towers.cluster import local_cluster_main, spec
from towers.params import make_params

LIMIT = 120  # seconds; each refusal comes before any task starts
LOGS = os.path.join('runs', 'local_cluster_logs')  # where the tasks' logs would be


def launch(*args: str, cwd: str | None = None, prefix: tuple[str, ...] = ()
           ) -> program_runs.ProgramRun:
  return program_runs.run('towers.cluster.local_cluster_main', '--network=host', *args,
                          timeout=LIMIT, cwd=cwd or tempfile.mkdtemp(), prefix=prefix)


class ClusterRefusalsTest(tf.test.TestCase):

  def assert_refused(self, done: program_runs.ProgramRun, options: list[str],
                     cwd: str | None = None, error: str = 'Refused') -> None:
    """local_cluster ended through its entry (exit 2, one `error` event of type `error`
    naming `options`) before any task started: no task wrote a status event or a log in
    `cwd`."""
    self.assertEqual(done.code, 2, done.output())
    self.assertEqual([e['event'] for e in done.events], ['error'], done.output())
    self.assertEqual((done.error['program'], done.error['error'], done.error_options),
                     ('local_cluster', error, options), done.output())
    if cwd:
      self.assertEqual(os.listdir(os.path.join(cwd, LOGS)) if os.path.isdir(
          os.path.join(cwd, LOGS)) else [], [])

  def test_a_cluster_without_a_ps_task_is_refused(self):
    for workers in (2, 1):
      here = tempfile.mkdtemp()
      self.assert_refused(launch('--ps=0', f'--workers={workers}', '--max_steps=2', cwd=here),
                          ['ps'], here, error='OptionsError')  # its range, beside it
    with self.assertRaises(spec.ClusterError) as caught:
      spec.resolve_cluster(make_params(worker_hosts=['127.0.0.1:1', '127.0.0.1:2'],
                                       task_type='worker', task_index=0), environ={})
    self.assertEqual((caught.exception.field, caught.exception.value),
                     ('cluster (from flags).ps', 1))  # 1 worker besides the chief

  def test_as_many_backup_workers_as_workers_are_refused_also_from_a_flagfile(self):
    self.assert_refused(launch('--workers=2', '--sync_replicas', '--backup_workers=2'),
                        ['backup_workers'])
    here = tempfile.mkdtemp()
    with open(os.path.join(here, 'sync.flags'), 'w') as f:
      f.write('--sync_replicas\n--backup_workers=3\n')
    self.assert_refused(launch('--workers=3', '--flagfile=sync.flags', cwd=here),
                        ['backup_workers'], here)
    # One backup worker of three is fine: those flags pass the launcher's checks.
    self.assertIsNone(
        local_cluster_main._sync_problem(['--sync_replicas', '--backup_workers=2'], 3))

  def test_task_flags_that_cannot_work_are_refused_once_by_the_launcher(self):
    # Each used to be refused by every task separately (or, --chief_lost_secs=0, ran with
    # a different outcome each time); the launcher checks the train flags once.
    for args, options in ((('--chief_lost_secs=0',), ['chief_lost_secs']),
                          (('--worker_lost_secs=-5',), ['worker_lost_secs']),
                          (('--chief_lost_secs=-1',), ['chief_lost_secs']),
                          (('--lr_schedule=constant', '--lr_boundaries=', '--lr_values=nan'),
                           ['lr_values'])):
      with self.subTest(args):
        here = tempfile.mkdtemp()
        self.assert_refused(launch('--workers=2', '--max_steps=2', *args, cwd=here), options,
                            here)
    # A rule between two options: the train binary's check names the one it belongs to.
    done = launch('--workers=2', '--max_steps=2', '--backup_workers=1')
    self.assertEqual((done.code, done.error['error'], done.error_options),
                     (2, 'Refused', ['backup_workers']), done.output())

  def test_a_tf_config_task_without_index_is_refused_by_train_in_one_line(self):
    # TensorFlow's RunConfig stopped on it with a ValueError traceback (exit 1).
    hosts = {'chief': ['localhost:2222'], 'ps': ['localhost:2223'],
             'worker': ['localhost:2224']}
    for task in ({'type': 'worker'}, {'type': 'chief'}):
      with self.subTest(task=task):
        done = program_runs.run(
            'towers.train_main', '--model=c3d_small', '--num_classes=3', '--max_steps=2',
            f'--model_dir={tempfile.mkdtemp()}/run', timeout=LIMIT,
            env={'TF_CONFIG': json.dumps({'cluster': hosts, 'task': task})})
        self.assertEqual((done.code, done.error['error']), (2, 'ClusterError'), done.output())
        self.assertTrue(done.error['message'].startswith('TF_CONFIG.task.index'))
        self.assertNotIn('Traceback', done.stderr)

  def test_a_read_only_working_directory_is_refused(self):
    here = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, here, True)
    prefix: tuple[str, ...] = ()
    if os.geteuid() == 0:  # root writes through file modes: mount the directory read-only
      if not shutil.which('unshare'):
        self.skipTest('running as root without unshare: cannot make a read-only directory')
      prefix = ('unshare', '--mount', 'sh', '-c',
                f'mount --bind -o ro {here} {here} && cd {here} && exec "$@"', 'ro')
      probe = subprocess.run([*prefix, 'true'], capture_output=True, check=False)
      if probe.returncode:
        self.skipTest(f'cannot mount read-only here: {probe.stderr.decode()[-200:]}')
    else:
      os.chmod(here, 0o555)
    done = launch('--workers=1', '--max_steps=2', cwd=here, prefix=prefix)
    self.assert_refused(done, [])
    self.assertFalse(os.path.exists(os.path.join(here, LOGS)))


if __name__ == '__main__':
  tf.test.main()

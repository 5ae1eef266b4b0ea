"""Specification: a cluster that cannot train stops before any task starts, with one line.

`local_cluster` refuses a cluster without a ps task (with workers the chief would wait
for them forever; alone it fails after training),
--sync_replicas with as many --backup_workers as workers (no gradient per step), train
flags that no task could run with (checked once by the launcher: a zero or negative
--chief_lost_secs or --worker_lost_secs, --backup_workers without --sync_replicas, a NaN
learning rate) and a working directory it cannot write its task logs into; each is one
`local_cluster:` line and exit code 2 within seconds. `//towers:train` refuses the same cluster from its flags.
"""

import os
import shutil
import subprocess
import sys
import tempfile

import tensorflow as tf

from towers.cluster import spec
from towers.params import make_params

LIMIT = 120  # seconds; each refusal comes before any task starts
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, PYTHONPATH=ROOT)


def launch(*args: str, cwd: str | None = None, prefix: tuple[str, ...] = ()
           ) -> subprocess.CompletedProcess:
  return subprocess.run([*prefix, sys.executable, '-m', 'towers.cluster.local_cluster_main',
                         '--network=host', *args], capture_output=True, text=True,
                        timeout=LIMIT, check=False, env=ENV, cwd=cwd or tempfile.mkdtemp())


class ClusterRefusalsTest(tf.test.TestCase):

  def assert_refused(self, done: subprocess.CompletedProcess, *parts: str) -> None:
    self.assertEqual(done.returncode, 2, done.stdout[-2000:] + done.stderr[-2000:])
    lines = [l for l in done.stderr.splitlines() if l.startswith('local_cluster: error: ')]
    self.assertLen(lines, 1, done.stderr)
    for part in parts:
      self.assertIn(part, lines[0])
    self.assertNotIn('[chief]', done.stdout)  # no task was started

  def test_a_cluster_without_a_ps_task_is_refused(self):
    for workers in (2, 1):
      self.assert_refused(launch('--ps=0', f'--workers={workers}', '--max_steps=2'),
                          f'--ps=0 --workers={workers}', 'use --ps=1')
    with self.assertRaisesRegex(spec.ClusterError, r'ps: no ps task, but 1 worker'):
      spec.resolve_cluster(make_params(worker_hosts=['127.0.0.1:1', '127.0.0.1:2'],
                                       task_type='worker', task_index=0), environ={})

  def test_as_many_backup_workers_as_workers_are_refused_also_from_a_flagfile(self):
    self.assert_refused(launch('--workers=2', '--sync_replicas', '--backup_workers=2'),
                        '--backup_workers=2 with --workers=2', 'below 2')
    here = tempfile.mkdtemp()
    with open(os.path.join(here, 'sync.flags'), 'w') as f:
      f.write('--sync_replicas\n--backup_workers=3\n')
    self.assert_refused(launch('--workers=3', '--flagfile=sync.flags', cwd=here),
                        '--backup_workers=3 with --workers=3')

  def test_task_flags_that_cannot_work_are_refused_once_by_the_launcher(self):
    # Each used to be refused by every task separately (or, --chief_lost_secs=0, ran with
    # a different outcome each time); the launcher checks the train flags once.
    for args, text in ((('--chief_lost_secs=0',), 'chief_lost_secs must be positive, got 0'),
                       (('--worker_lost_secs=-5',), 'worker_lost_secs must be positive'),
                       (('--chief_lost_secs=-1',), 'chief_lost_secs must be positive'),
                       (('--backup_workers=1',), 'backup_workers=1 needs sync_replicas'),
                       (('--lr_schedule=constant', '--lr_boundaries=', '--lr_values=nan'),
                        'lr_values must all be > 0, got (nan,)')):
      with self.subTest(args):
        self.assert_refused(launch('--workers=2', '--max_steps=2', *args), text)

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
    self.assert_refused(done, 'cannot write the task logs to', 'writable working directory')


if __name__ == '__main__':
  tf.test.main()

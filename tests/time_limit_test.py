"""Specification: the time-limit signal (SIGUSR1) at every moment of a process's life.

- `//towers:train` on one machine catches it before anything slow (before TensorFlow
  loads); then it writes a checkpoint, skips the evaluation of it and exits 75 with one
  status line, as a cluster trainer does.
- Once its work is done a process ignores it, through the interpreter's shutdown: a
  training that reached max_steps and exported exits 0 however often the signal comes.
- The cluster's evaluator that finds the final checkpoint finishes its evaluation and
  exits 0 (an evaluator stopped before it would leave the run without its final numbers).
- `local_cluster` counts exit 75 as a stop, not a failure: one line, exit 75.
The batch script's requeue after such a stop: slurm_nodes_test.
"""

import contextlib
import io
import os
import signal
import subprocess
import sys
import time

import tensorflow as tf

from command_line import status_file
from benchmarks.program_cluster import ProgramCluster
from tests.cluster_testing import TRAIN_ARGS, wait_until
from towers.checkpoints import checkpoint_step
from towers.cluster import local_cluster
from towers.cluster.spec import pick_free_ports

LIMIT = 240
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, PYTHONPATH=ROOT, PYTHONUNBUFFERED='1')
for name in ('TF_CONFIG', 'SLURM_JOB_ID'):
  ENV.pop(name, None)
USR1_BIT = 1 << (signal.SIGUSR1 - 1)


def catches_usr1(pid: int) -> bool:
  """Whether the process has a handler for SIGUSR1 now (/proc/<pid>/status SigCgt)."""
  try:
    with open(f'/proc/{pid}/status') as f:
      line = next(l for l in f if l.startswith('SigCgt:'))
  except (OSError, StopIteration):
    return False
  return bool(int(line.split()[1], 16) & USR1_BIT)


class TimeLimitTest(tf.test.TestCase):

  def train(self, model_dir: str, *args: str, status: str | None = None) -> subprocess.Popen:
    """`towers.train_main` with `args`; its status events go to `status`, if given."""
    env = dict(ENV, **{status_file.STATUS_FILE_ENV: status}) if status else ENV
    process = subprocess.Popen([sys.executable, '-m', 'towers.train_main', *TRAIN_ARGS,
                                '--num_towers=1', f'--model_dir={model_dir}', *args],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    self.addCleanup(lambda: process.poll() is None and process.kill())
    self.addCleanup(process.stdout.close)
    self.addCleanup(process.stderr.close)
    return process

  def test_one_machine_stops_at_a_checkpoint_on_a_signal_that_comes_before_tensorflow(self):
    model_dir = os.path.join(self.create_tempdir().full_path, 'run')
    status = os.path.join(self.create_tempdir().full_path, 'train.events.jsonl')
    process = self.train(model_dir, '--max_steps=100000', '--save_checkpoints_steps=100000',
                         status=status)
    wait_until(lambda: catches_usr1(process.pid) or process.poll() is not None, 60,
               'a SIGUSR1 handler', period=0.01)
    process.send_signal(signal.SIGUSR1)  # TensorFlow is still loading: no role yet
    _, stderr = process.communicate(timeout=LIMIT)
    self.assertEqual(process.returncode, 75, stderr[-3000:])
    self.assertGreaterEqual(checkpoint_step(model_dir), 1)  # the stop's, not step 0's
    stopped = [e for e in status_file.read(status) if e['event'] in ('stopped', 'error')]
    self.assertEqual([(e['event'], e['step'], e['max_steps']) for e in stopped],
                     [('stopped', checkpoint_step(model_dir), 100000)])
    self.assertFalse(os.path.exists(os.path.join(model_dir, 'eval')), 'no evaluation')

  def test_after_the_work_the_signal_is_ignored_and_a_due_final_evaluation_is_finished(self):
    model_dir = os.path.join(self.create_tempdir().full_path, 'run')
    process = self.train(model_dir, '--max_steps=4')
    best = os.path.join(model_dir, 'export', 'best')
    wait_until(lambda: process.poll() is not None or
               (os.path.isdir(best) and any(n.isdigit() for n in os.listdir(best))),
               LIMIT, 'the export', period=0.05)
    while process.poll() is None:  # from the export to the interpreter's very end
      with contextlib.suppress(ProcessLookupError):
        process.send_signal(signal.SIGUSR1)
      time.sleep(0.005)
    _, stderr = process.communicate(timeout=LIMIT)
    self.assertEqual(process.returncode, 0, stderr[-3000:])
    # The final checkpoint is there without its final evaluation, as a cluster's chief
    # leaves it: the evaluator evaluates it despite the signal (here its chief is already
    # gone, as after a finished training).
    os.remove(os.path.join(model_dir, 'final_evaluation.json'))
    chief = f'127.0.0.1:{pick_free_ports(1)[0]}'
    status = os.path.join(self.create_tempdir().full_path, 'evaluator.events.jsonl')
    evaluator = self.train(model_dir, '--max_steps=4', '--task_type=evaluator',
                           f'--worker_hosts={chief}', '--ps_hosts=127.0.0.1:1', status=status)
    wait_until(lambda: catches_usr1(evaluator.pid) or evaluator.poll() is not None, 60,
               'a SIGUSR1 handler')
    evaluator.send_signal(signal.SIGUSR1)
    _, stderr = evaluator.communicate(timeout=LIMIT)
    self.assertEqual(evaluator.returncode, 0, stderr[-3000:])
    evaluated = status_file.values(status_file.read(status), 'evaluation', 'step')
    self.assertNotEmpty(evaluated, stderr[-3000:])
    self.assertEqual(evaluated[-1], 4, 'the final checkpoint was evaluated last')
    self.assertTrue(os.path.exists(os.path.join(model_dir, 'final_evaluation.json')),
                    'the run is finished')

  def test_local_cluster_counts_a_stop_for_the_time_limit_as_a_stop(self):
    # The tasks' own side is above; here, what the launcher makes of their exit codes.
    for stopping in ('chief', 'evaluator'):
      role = local_cluster.LocalCluster(1, 1, [], echo=None)
      args = role.role_args(role.tasks[stopping])[-2:]  # --task_type, --task_index
      code = f'import sys; sys.exit(75 if all(a in sys.argv for a in {args!r}) else 0)'
      cluster = ProgramCluster(1, 1, [], program=('-c', code), echo=None)
      stderr = io.StringIO()
      with contextlib.redirect_stderr(stderr):
        self.assertEqual(cluster.run(timeout_secs=60), 75, stderr.getvalue())
      # A stop, not a failure: the task that stopped is named as stopped, none as failed.
      self.assertEqual((cluster.stopped_tasks(), cluster.failed_tasks()), ([stopping], []))


if __name__ == '__main__':
  tf.test.main()

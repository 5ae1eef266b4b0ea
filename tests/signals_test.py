"""Specification: SIGUSR1 (the job's time limit) and SIGINT (Ctrl-C) end every program the
same way, at any instant of its life (`command_line/signals.py`; the table in
docs/cluster.md):

- SIGUSR1: the work finished is kept (//towers:train writes a checkpoint if a step ran),
  a `stopped` event, exit 75; once training reached max_steps it stops nothing: exit 0.
- SIGINT: exit 130 and an `error` event, never a traceback.
- SIGTERM to prepare or extract_flow (kill, docker stop, scancel): as SIGINT, one line,
  exit 143; the work finished is kept.

"The first instant": a program started with both signals blocked, as local_cluster starts
its tasks, gets the signal before its first instruction; it must act on it once its
handlers exist. The console lines: training_console_test and data_tools_console_test.
"""

import glob
import os
import shutil
import signal
import subprocess
import tempfile
import time

from absl.testing import absltest

from command_line import signals
from data_tools import make_synthetic_ucf101
from tests import program_runs, tiny_records
from tests.cluster_testing import wait_until
from towers.checkpoints import checkpoint_step

LIMIT = 240
TRAIN = ['--model=c3d_small', '--num_classes=3', '--clip_frames=4', '--crop_size=16',
         '--batch_size=2', '--num_towers=1', '--synthetic_eval_examples=4']


class SignalsTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.root = tempfile.mkdtemp()
    cls.data = tiny_records.make(cls.root, (), classes=2, groups=8, width=24, height=20,
                                 min_frames=6, max_frames=8, object_size=10).data

  @classmethod
  def tearDownClass(cls):
    shutil.rmtree(cls.root, ignore_errors=True)
    super().tearDownClass()

  def start(self, module: str, *args: str, blocked: bool = False,
            cwd: str | None = None) -> program_runs.Started:
    return program_runs.start(self, module, *args, cwd=cwd,
                              preexec_fn=signals.blocked_in_child if blocked else None)

  def assertStopped(self, done: program_runs.ProgramRun, program: str) -> None:
    self.assertEqual((done.code, done.error), (75, None), done.output())
    self.assertEqual([e['program'] for e in done.events if e['event'] == 'stopped'], [program])

  def assertInterrupted(self, done: program_runs.ProgramRun, program: str) -> None:
    self.assertEqual(done.code, 130, done.output())
    self.assertEqual((done.error['program'], done.error['exit_code'], done.error['error']),
                     (program, 130, 'KeyboardInterrupt'))

  def assertTerminated(self, done: program_runs.ProgramRun, program: str) -> None:
    self.assertEqual(done.code, 143, done.output())
    self.assertEqual((done.error['program'], done.error['exit_code'], done.error['error']),
                     (program, 143, 'Terminated'))
    self.assertIn(f'{program}: error: terminated (SIGTERM)', done.stderr)
    self.assertNotIn('Traceback', done.stderr)

  def model_dir(self) -> str:
    return os.path.join(self.create_tempdir().full_path, 'run')

  # --- //towers:train ---------------------------------------------------------------------

  def test_train_usr1_at_any_early_instant_stops_at_a_checkpoint(self):
    for blocked, delay in ((True, 0.0), (False, 1.0)):
      with self.subTest(blocked=blocked, delay=delay):
        model_dir = self.model_dir()
        started = self.start('towers.train_main', *TRAIN, f'--model_dir={model_dir}',
                             '--max_steps=40', '--save_checkpoints_steps=1000',
                             blocked=blocked)
        time.sleep(delay)
        started.process.send_signal(signal.SIGUSR1)
        done = started.finish(LIMIT)
        self.assertStopped(done, 'train')
        step = checkpoint_step(model_dir)
        self.assertBetween(step, 1, 39)  # a step ran, and its checkpoint is written
        self.assertEqual([e['step'] for e in done.events if e['event'] == 'stopped'], [step])

  def test_train_usr1_once_max_steps_is_reached_stops_nothing(self):
    model_dir = self.model_dir()
    started = self.start('towers.train_main', *TRAIN, f'--model_dir={model_dir}',
                         '--max_steps=3', '--save_checkpoints_steps=1')
    # The checkpoint at max_steps is written while its last step's hooks run.
    wait_until(lambda: glob.glob(os.path.join(model_dir, 'model.ckpt-3.index')) or
               started.process.poll() is not None, LIMIT, 'the last checkpoint', period=0.005)
    started.process.send_signal(signal.SIGUSR1)
    done = started.finish(LIMIT)
    self.assertEqual((done.code, done.error), (0, None), done.output())
    self.assertNotIn('stopped', [e['event'] for e in done.events])
    self.assertEqual(checkpoint_step(model_dir), 3)

  def test_train_interrupted_in_its_final_evaluation_finishes_it_when_run_again(self):
    # The rerun found the checkpoint at max_steps and said "nothing to do", exit 0: a
    # model without its final evaluation and without export/best.
    model_dir = self.model_dir()
    args = (*TRAIN, f'--model_dir={model_dir}', '--max_steps=3', '--save_checkpoints_steps=3')
    started = self.start('towers.train_main', *args)
    wait_until(lambda: checkpoint_step(model_dir) == 3 or started.process.poll() is not None,
               LIMIT, 'the last checkpoint', period=0.01)
    started.process.send_signal(signal.SIGINT)  # the final evaluation has just begun
    self.assertInterrupted(started.finish(LIMIT), 'train')
    self.assertEqual(checkpoint_step(model_dir), 3)
    again = program_runs.run('towers.train_main', *args, timeout=LIMIT)
    self.assertEqual(again.code, 0, again.output())
    self.assertEqual([(e['event'], e.get('checkpoint_step')) for e in again.events
                      if e['event'] in ('evaluation', 'already_trained')], [('evaluation', 3)])
    self.assertLen(glob.glob(os.path.join(model_dir, 'export', 'best', '*', 'saved_model.pb')),
                   1)
    third = program_runs.run('towers.train_main', *args, timeout=LIMIT)
    self.assertEqual([e['step'] for e in third.events if e['event'] == 'already_trained'], [3],
                     third.output())

  def test_train_sigint_at_any_instant_is_exit_130(self):
    def handler_installed(started):
      return lambda: signals.STOP_SIGNAL in _caught(started.process.pid)

    def training(started):
      return lambda: 'first_step' in [e['event'] for e in started.events()]

    for name, blocked, ready in (('first instant', True, None),
                                 ('while importing', False, handler_installed),
                                 ('while training', False, training)):
      with self.subTest(name):
        model_dir = self.model_dir()
        started = self.start('towers.train_main', *TRAIN, f'--model_dir={model_dir}',
                             '--max_steps=100000', '--save_checkpoints_steps=100000',
                             blocked=blocked)
        if ready:
          wait_until(lambda: ready(started)() or started.process.poll() is not None, LIMIT,
                     name, period=0.005)
        started.process.send_signal(signal.SIGINT)
        done = started.finish(LIMIT)
        self.assertInterrupted(done, 'train')
        self.assertFalse(os.path.exists(os.path.join(model_dir, 'writer.lock')))

  # --- //data_tools:prepare and //data_tools:extract_flow --------------------------------

  def test_prepare_keeps_its_finished_shards_and_continues(self):
    out = os.path.join(self.create_tempdir().full_path, 'records')
    args = (f'--data_dir={self.data}', f'--out={out}', '--short_side=0', '--workers=1',
            '--videos_per_shard=1')
    done = self.start('data_tools.prepare_main', *args, blocked=True)
    done.process.send_signal(signal.SIGUSR1)
    self.assertStopped(done.finish(LIMIT), 'prepare')
    started = self.start('data_tools.prepare_main', *args)
    wait_until(lambda: glob.glob(os.path.join(out, '.shards', '*.tfrecord.json')) or
               started.process.poll() is not None, LIMIT, 'a finished shard', period=0.01)
    started.process.send_signal(signal.SIGUSR1)
    self.assertStopped(started.finish(LIMIT), 'prepare')
    again = program_runs.run('data_tools.prepare_main', *args, timeout=LIMIT)
    self.assertEqual(again.code, 0, again.output())
    plan = [e for e in again.events if e['event'] == 'prepare_plan'][0]
    self.assertGreaterEqual(sum(s['already_done'] for s in plan['subsets'].values()), 1)
    interrupted = self.start('data_tools.prepare_main', *args, '--overwrite', blocked=True)
    interrupted.process.send_signal(signal.SIGINT)
    self.assertInterrupted(interrupted.finish(LIMIT), 'prepare')

  def test_prepare_ended_by_sigterm_says_so_and_continues(self):
    out = os.path.join(self.create_tempdir().full_path, 'records')
    args = (f'--data_dir={self.data}', f'--out={out}', '--short_side=0', '--workers=2',
            '--videos_per_shard=1')
    started = self.start('data_tools.prepare_main', *args)
    wait_until(lambda: 'prepare_plan' in [e['event'] for e in started.events()] or
               started.process.poll() is not None, LIMIT, 'the plan', period=0.01)
    time.sleep(0.5)  # the workers are starting, or converting
    started.process.send_signal(signal.SIGTERM)  # to prepare alone, as kill does
    self.assertTerminated(started.finish(LIMIT), 'prepare')
    self.assertEqual(glob.glob(os.path.join(out, '*.manifest.json')), [])
    again = program_runs.run('data_tools.prepare_main', *args, timeout=LIMIT)
    self.assertEqual(again.code, 0, again.output())

  def test_prepare_with_workers_answers_a_signal_to_its_process_group_alone(self):
    # A terminal's Ctrl-C goes to the whole process group: the workers and multiprocessing's
    # resource tracker printed tracebacks of their own (or died of SIGUSR1).
    for signum, code, delay in ((signal.SIGINT, 130, 0.0), (signal.SIGINT, 130, 1.0),
                                (signal.SIGUSR1, 75, 0.0), (signal.SIGUSR1, 75, 1.0)):
      with self.subTest(signal=signum.name, delay=delay):
        out = os.path.join(self.create_tempdir().full_path, 'records')
        started = program_runs.start(
            self, 'data_tools.prepare_main', f'--data_dir={self.data}', f'--out={out}',
            '--short_side=0', '--workers=2', '--videos_per_shard=1', preexec_fn=os.setpgrp)
        wait_until(lambda: 'prepare_plan' in [e['event'] for e in started.events()] or
                   started.process.poll() is not None, LIMIT, 'the plan', period=0.01)
        time.sleep(delay)  # the workers are starting (importing), or converting
        os.killpg(started.process.pid, signum)
        done = started.finish(LIMIT)
        self.assertEqual(done.code, code, done.output())
        self.assertNotIn('Traceback', done.stderr)
        self.assertEqual(glob.glob(os.path.join(out, '*.manifest.json')), [])

  def test_extract_flow_stops_and_is_interrupted_at_its_first_instant(self):
    args = (f'--data_dir={self.data}', f'--out={self.create_tempdir().full_path}/flow',
            '--workers=1', '--short_side=0')
    started = self.start('data_tools.extract_flow_main', *args, blocked=True)
    started.process.send_signal(signal.SIGUSR1)
    self.assertStopped(started.finish(LIMIT), 'extract_flow')
    started = self.start('data_tools.extract_flow_main', *args, blocked=True)
    started.process.send_signal(signal.SIGINT)
    self.assertInterrupted(started.finish(LIMIT), 'extract_flow')

  def test_extract_flow_ended_by_sigterm_says_so_and_leaves_no_worker_running(self):
    # Forked workers keep their parent's command line, so its unique --out finds them.
    data = os.path.join(self.create_tempdir().full_path, 'big')
    make_synthetic_ucf101.make_dataset(data, classes=2, groups=8, width=160, height=120,
                                       min_frames=30, max_frames=30, object_size=30)
    out = os.path.join(self.create_tempdir().full_path, 'flow_sigterm')
    started = self.start('data_tools.extract_flow_main', f'--data_dir={data}', f'--out={out}',
                         '--workers=2', '--short_side=0', '--tvl1_scales=5', '--tvl1_warps=5')
    wait_until(lambda: os.path.isdir(os.path.join(out, 'u')) or
               started.process.poll() is not None, LIMIT, 'the workers', period=0.01)
    time.sleep(0.5)  # inside their first videos
    started.process.send_signal(signal.SIGTERM)
    self.assertTerminated(started.finish(LIMIT), 'extract_flow')
    def workers() -> list[str]:
      found = subprocess.run(['pgrep', '-f', '--', f'--out={out}'], capture_output=True,
                             text=True, check=False)
      self.assertIn(found.returncode, (0, 1), found.stderr)  # found, none found
      return found.stdout.split()
    wait_until(lambda: not workers(), 5, 'the workers to end', period=0.05)

  def test_prepare_refuses_the_flow_of_a_stopped_extract_flow_until_it_is_resumed(self):
    # The stopped run's folder held a manifest of settings only: prepare took it for
    # finished flow, exit 0, with the videos not yet computed counted as missing flow.
    out = os.path.join(self.create_tempdir().full_path, 'flow')
    extract = (f'--data_dir={self.data}', f'--out={out}', '--workers=1', '--short_side=0',
               '--tvl1_scales=3', '--tvl1_warps=3', '--tvl1_epsilon=0.05')
    started = self.start('data_tools.extract_flow_main', *extract)
    wait_until(lambda: os.path.exists(os.path.join(out, '.flow_sources.jsonl')) or
               started.process.poll() is not None, LIMIT, 'a first video', period=0.005)
    started.process.send_signal(signal.SIGUSR1)
    self.assertStopped(started.finish(LIMIT), 'extract_flow')
    records = os.path.join(self.create_tempdir().full_path, 'records')
    prepare = (f'--data_dir={self.data}', '--source=flow', f'--flow_dir={out}',
               f'--out={records}', '--short_side=0', '--workers=1')
    refused = program_runs.run('data_tools.prepare_main', *prepare, timeout=LIMIT)
    self.assertEqual((refused.code, refused.error_options), (2, ['flow_dir']),
                     refused.output())
    self.assertFalse(os.path.exists(records))
    resumed = program_runs.run('data_tools.extract_flow_main', *extract, timeout=LIMIT)
    self.assertEqual(resumed.code, 0, resumed.output())
    done = program_runs.run('data_tools.prepare_main', *prepare, timeout=LIMIT)
    self.assertEqual(done.code, 0, done.output())

  # --- //towers/cluster:local_cluster ----------------------------------------------------

  def test_local_cluster_stops_and_is_interrupted_at_its_first_instant(self):
    root = self.create_tempdir().full_path
    args = ('--ps=1', '--workers=1', '--noevaluator', '--network=host', *TRAIN,
            f'--model_dir={root}/run', '--max_steps=20')
    started = self.start('towers.cluster.local_cluster_main', *args, blocked=True, cwd=root)
    started.process.send_signal(signal.SIGUSR1)
    done = started.finish(LIMIT)
    self.assertStopped(done, 'local_cluster')
    self.assertIsNone(checkpoint_step(f'{root}/run'))  # no task was started
    started = self.start('towers.cluster.local_cluster_main', *args, blocked=True, cwd=root)
    started.process.send_signal(signal.SIGINT)
    self.assertInterrupted(started.finish(LIMIT), 'local_cluster')


def _caught(pid: int) -> set[int]:
  """The signals process `pid` has a handler for now (/proc/<pid>/status SigCgt)."""
  try:
    with open(f'/proc/{pid}/status') as f:
      mask = int(next(l for l in f if l.startswith('SigCgt:')).split()[1], 16)
  except (OSError, StopIteration):
    return set()
  return {n for n in range(1, 65) if mask & (1 << (n - 1))}


if __name__ == '__main__':
  absltest.main()

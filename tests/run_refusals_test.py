"""Specification: a parameter that cannot work stops the run before any work, in one line.

Making a `TrainParams` (so `build_estimator`, `train_and_evaluate` and `//towers:train`
alike) refuses counts below their minimum (--eval_clips=0, --input_threads=-1,
--shuffle_buffer=0, --eval_steps=-1), an empty --model_dir, and options that
--strategy=mirrored does not apply (--transfer_dtype=float16 among them). The
preflight refuses --tower_devices naming GPUs the machine does not have (soft placement
would put those towers on the CPU without a word), a model_dir that cannot be written and
--backup_workers that leave no worker to aggregate. The binary prints one
`train: error: ...` line and exits 2, without a traceback; so it does for a misspelt flag or
a stray argument.
"""

import os
import subprocess
import sys

import tensorflow as tf

from towers import build_estimator, preflight
from towers.params import ParamsError, make_params
from tests import program_runs

LIMIT = 240
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, PYTHONPATH=ROOT)
for name in ('TF_CONFIG', 'SLURM_JOB_ID'):
  ENV.pop(name, None)
TINY = dict(model='c3d_small', num_classes=3, clip_frames=4, crop_size=16, batch_size=2,
            max_steps=1, num_towers=1)
# Flags -> the option the refusal names.
REFUSED = {
    'eval_clips=0': 'eval_clips',
    'input_threads=-1': 'input_threads',
    'shuffle_buffer=0': 'shuffle_buffer',
    'eval_steps=-1': 'eval_steps',
    'strategy=mirrored transfer_dtype=float16': 'strategy',
    'model_dir=': 'model_dir',
}


def values(flags: str) -> dict:
  """'a=1 b=x' -> {'a': 1, 'b': 'x'}."""
  pairs = (item.split('=') for item in flags.split())
  return {k: int(v) if v.lstrip('-').isdigit() else v for k, v in pairs}


class RunRefusalsTest(tf.test.TestCase):

  def train_binary(self, *args: str) -> subprocess.CompletedProcess:
    model_dir = os.path.join(self.create_tempdir().full_path, 'run')
    flags = [f'--{k}={v}' for k, v in TINY.items()]
    return subprocess.run([sys.executable, '-m', 'towers.train_main', *flags,
                           f'--model_dir={model_dir}', *args], capture_output=True, text=True,
                          timeout=LIMIT, check=False, env=ENV)

  def assert_one_error_line(self, done: subprocess.CompletedProcess, text: str) -> None:
    self.assertEqual(done.returncode, 2, done.stderr[-3000:])
    self.assertNotIn('Traceback', done.stderr)
    errors = [l for l in done.stderr.splitlines() if l.startswith('train: error: ')]
    self.assertLen(errors, 1, done.stderr[-3000:])
    self.assertIn(text, done.stderr)

  def refused(self, *args: str) -> program_runs.ProgramRun:
    """`//towers:train` on TINY with `args`, which must end it as a refusal (exit 2)
    through its entry (an `error` event, so no traceback), having written no checkpoint."""
    model_dir = os.path.join(self.create_tempdir().full_path, 'run')
    flags = [f'--{k}={v}' for k, v in TINY.items()]
    done = program_runs.run('towers.train_main', *flags, f'--model_dir={model_dir}', *args,
                            timeout=LIMIT)
    self.assertEqual(done.code, 2, done.output())
    self.assertIsNotNone(done.error, done.output())
    self.assertEqual(done.error['exit_code'], 2)
    self.assertFalse(os.path.exists(model_dir))
    return done

  def test_the_library_refuses_each_before_building_anything(self):
    for flags, option in REFUSED.items():
      with self.subTest(flags):
        with self.assertRaises(ParamsError) as caught:
          make_params(TINY, **values(flags))
        self.assertEqual(caught.exception.option, option)
        with self.assertRaises(ParamsError) as caught:
          build_estimator(dict(TINY, **values(flags)))
        self.assertEqual(caught.exception.option, option)

  def test_the_binary_refuses_each_in_one_line(self):
    for flags, option in REFUSED.items():
      with self.subTest(flags):
        done = self.refused(*(f'--{f}' for f in flags.split()))
        self.assertEqual((done.error['error'], done.error_options), ('ParamsError', [option]))

  def test_a_misspelt_flag_or_a_stray_argument_is_refused_in_one_line(self):
    misspelt = self.refused('--num_tower=2')
    self.assertEqual((misspelt.error['error'], misspelt.error_options),
                     ('UnrecognizedFlagError', ['num_tower']))
    stray = self.refused('ucf101.flags')
    self.assertEqual((stray.error['error'], stray.error_options), ('Refused', []))

  def test_towers_on_gpus_the_machine_lacks_are_refused(self):
    if tf.config.list_physical_devices('GPU'):
      self.skipTest('this machine has a GPU: /gpu:0 exists')
    params = make_params(TINY, num_towers=2, tower_devices=['/gpu:0', '/gpu:1'],
                         model_dir=self.create_tempdir().full_path)
    found = preflight.problems(params)
    self.assertLen(found, 1)
    self.assertRegex(found[0], r'^tower_devices=/gpu:0,/gpu:1 names /gpu:0, /gpu:1, but this '
                               r'machine has 0 GPU\(s\)')
    self.assert_one_error_line(self.train_binary('--num_towers=2',
                                                 '--tower_devices=/gpu:0,/gpu:1'),
                               'names /gpu:0, /gpu:1, but this machine has 0 GPU(s)')

  def test_a_model_dir_that_cannot_be_written_is_refused(self):
    model_dir = f'/sys/video_towers_run_{os.getpid()}'
    found = preflight.problems(make_params(TINY, model_dir=model_dir))
    self.assertLen(found, 1)
    self.assertRegex(found[0], rf'^model_dir={model_dir} cannot be created: /sys is not '
                               r'writable')
    done = self.train_binary(f'--model_dir={model_dir}')
    self.assert_one_error_line(done, f'model_dir={model_dir} cannot be created')

  def test_backup_workers_that_leave_no_gradient_are_refused(self):
    params = make_params(TINY, sync_replicas=True, backup_workers=2,
                         model_dir=self.create_tempdir().full_path)
    self.assertRegex(preflight.problems(params, num_workers=2)[0],
                     r'^backup_workers=2 with 2 training worker\(s\) would aggregate no '
                     r'gradient per step .*: set --backup_workers below 2')
    self.assertEqual(preflight.problems(params, num_workers=3), [])


if __name__ == '__main__':
  tf.test.main()

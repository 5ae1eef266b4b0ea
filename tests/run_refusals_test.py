"""Specification: a parameter that cannot work stops the run before any work, in one line.

Making a `TrainParams` (so `build_estimator`, `train_and_evaluate` and `//towers:train`
alike) refuses counts below their minimum (--eval_clips=0, --input_threads=-1,
--shuffle_buffer=0, --eval_steps=-1), an empty --model_dir, and options that
--strategy=mirrored does not apply (--transfer_dtype=float16 among them). The
preflight refuses --tower_devices naming GPUs the machine does not have (soft placement
would put those towers on the CPU without a word), a model_dir that cannot be written or is
the data_dir, and
--backup_workers that leave no worker to aggregate. The binary prints one
`train: error: ...` line and exits 2, without a traceback; so it does for a misspelt flag or
a stray argument.
"""

import os

import tensorflow as tf

from towers import build_estimator, preflight
from towers.params import ParamsError, make_params
from tests import program_runs, tiny_records

LIMIT = 240
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

  def test_a_data_dir_with_the_synthetic_source_is_refused(self):
    # The default source is synthetic: the data_dir would be left unread.
    done = self.refused(f'--data_dir={self.create_tempdir().full_path}')
    self.assertEqual((done.error['error'], done.error_options), ('ParamsError', ['data_source']))
    # A recipe's data_dir with the synthetic source asked (the TFJob pods' tiny runs) is
    # refused the same: they clear it with --data_dir=.
    flags = [f'--{k}={v}' for k, v in TINY.items()]
    done = self.refused(f'--data_dir={self.create_tempdir().full_path}',
                        '--data_source=synthetic')
    self.assertEqual(done.error_options, ['data_source'])
    done = program_runs.run('towers.train_main', *flags, '--check_flags',
                            f'--data_dir={self.create_tempdir().full_path}',
                            '--data_source=synthetic', '--data_dir=', timeout=LIMIT)
    self.assertEqual(done.code, 0, done.output())

  def test_check_flags_checks_the_cluster_the_run_would_refuse(self):
    cluster = ('--ps_hosts=127.0.0.1:2224', '--worker_hosts=127.0.0.1:2223',
               '--task_type=worker')
    done = self.refused(*cluster, '--task_index=3', '--check_flags')
    self.assertEqual(done.error['error'], 'ClusterError')
    flags = [f'--{k}={v}' for k, v in TINY.items()]
    done = program_runs.run('towers.train_main', *flags, '--check_flags',
                            env={'TF_CONFIG': 'not json'}, timeout=LIMIT)
    self.assertEqual((done.code, done.error['error'] if done.error else None),
                     (2, 'ClusterError'), done.output())
    done = program_runs.run('towers.train_main', *flags, *cluster, '--task_index=0',
                            '--check_flags', timeout=LIMIT)
    self.assertEqual(done.code, 0, done.output())

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
    self.assertEqual([p.option for p in preflight.problems(params)], ['tower_devices'])
    done = self.refused('--num_towers=2', '--tower_devices=/gpu:0,/gpu:1')
    self.assertEqual((done.error['error'], done.error_options),
                     ('PreflightError', ['tower_devices']))

  def test_a_model_dir_that_cannot_be_written_is_refused(self):
    model_dir = f'/sys/video_towers_run_{os.getpid()}'
    found = preflight.problems(make_params(TINY, model_dir=model_dir))
    self.assertEqual([p.option for p in found], ['model_dir'])
    done = self.refused(f'--model_dir={model_dir}')
    self.assertEqual((done.error['error'], done.error_options), ('PreflightError', ['model_dir']))
    self.assertFalse(os.path.exists(model_dir))

  def test_a_model_dir_that_is_the_data_dir_is_refused(self):
    records = tiny_records.make(self.create_tempdir().full_path, ('videos',), classes=3,
                                groups=8, width=24, height=20, min_frames=4, max_frames=5,
                                object_size=8).records['videos']
    params = make_params(TINY, data_source='tfrecord', data_dir=records,
                         model_dir=os.path.join(records, '.'))  # another spelling of it
    self.assertIn('model_dir', [p.option for p in preflight.problems(params)])
    params = make_params(TINY, data_source='tfrecord', data_dir=records,
                         model_dir=os.path.join(records, 'run'))  # beside its shards: allowed
    self.assertNotIn('model_dir', [p.option for p in preflight.problems(params)])

  def test_backup_workers_that_leave_no_gradient_are_refused(self):
    params = make_params(TINY, sync_replicas=True, backup_workers=2,
                         model_dir=self.create_tempdir().full_path)
    self.assertEqual([p.option for p in preflight.problems(params, num_workers=2)],
                     ['backup_workers'])
    self.assertEqual(preflight.problems(params, num_workers=3), [])


if __name__ == '__main__':
  tf.test.main()

"""Specification: one config, valid whenever it exists, and one way to train from Python.

A `TrainParams` is checked when it is made, however it is made (directly,
`dataclasses.replace`, `make_params`, a dict given to `build_estimator`), and every field
says how a resume treats it. `towers.train_and_evaluate(dict(...))` gives the guarantees of
`//towers:train`: it trains, records the learning settings, and stops a resume with other
settings with the error the binary ends with (`ResumeSettingsError`, naming the flag). The
config, its flags and the training binary's module load no TensorFlow, so flags that cannot
work are refused before TensorFlow starts.
"""

import dataclasses
import json
import os
import subprocess
import sys

import tensorflow as tf

from tests import program_runs
from towers import ParamsError, TrainParams, build_estimator, train_and_evaluate
from towers import params as params_lib
from towers import checkpoint_shapes, train_settings

LIMIT = 300
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, PYTHONPATH=ROOT)
for name in ('TF_CONFIG', 'SLURM_JOB_ID'):
  ENV.pop(name, None)
TINY = dict(model='c3d_small', num_classes=3, clip_frames=4, crop_size=16, batch_size=2,
            num_towers=1, max_steps=2, save_checkpoints_steps=2, log_every_steps=1,
            synthetic_train_examples=8, synthetic_eval_examples=4, eval_clips=1,
            export_savedmodel=False)


class OneConfigTest(tf.test.TestCase):

  def assert_refused(self, make, option: str) -> None:
    """`make()` raises a ParamsError naming `option`."""
    with self.assertRaises(ParamsError) as caught:
      make()
    self.assertEqual(caught.exception.option, option)

  def test_a_trainparams_made_any_way_is_checked(self):
    self.assert_refused(lambda: TrainParams(batch_size=-3), 'batch_size')
    self.assert_refused(lambda: build_estimator(TrainParams(batch_size=-3)), 'batch_size')
    self.assert_refused(lambda: build_estimator({'batch_size': -3}), 'batch_size')
    self.assert_refused(lambda: dataclasses.replace(TrainParams(), optimizer='adagrad'),
                        'optimizer')
    self.assert_refused(lambda: TrainParams(lr_schedule='constant', lr_values=(-1.0,)),
                        'lr_values')

  def test_the_config_and_the_train_binary_load_no_tensorflow_until_training(self):
    program = ('import sys; import towers.params, towers.flags, towers.train_main; '
               'print(sorted(m for m in ("tensorflow", "numpy") if m in sys.modules))')
    done = subprocess.run([sys.executable, '-c', program], capture_output=True, text=True,
                          env=ENV, timeout=LIMIT, check=True)
    self.assertEqual(done.stdout.strip(), '[]', done.stderr)
    refused = program_runs.run('towers.train_main', '--batch_size=-3', timeout=LIMIT)
    self.assertEqual((refused.code, refused.error['error'], refused.error_options),
                     (2, 'ParamsError', ['batch_size']), refused.output())

  def test_lists_become_tuples_so_params_stay_immutable(self):
    params = TrainParams(lr_boundaries=[1, 2], lr_values=[0.1, 0.01, 0.001])
    self.assertEqual(params.lr_values, (0.1, 0.01, 0.001))
    self.assertEqual(hash(params), hash(dataclasses.replace(params)))

  def test_network_checks_come_from_the_registry(self):
    self.assert_refused(lambda: TrainParams(trainable_from='Mixed_4b'), 'trainable_from')
    self.assertEqual(TrainParams(model='i3d', trainable_from='Mixed_4b').trainable_from,
                     'Mixed_4b')
    self.assert_refused(lambda: TrainParams(warm_start_from='/nowhere'), 'warm_start_from')
    self.assert_refused(lambda: TrainParams(model='i3d', head='keep', warm_start_from='/nowhere',
                                            num_classes=101), 'head')
    self.assertEqual(TrainParams(model='i3d', head='keep', warm_start_from='/nowhere',
                                 num_classes=400).head, 'keep')

  def test_every_field_declares_how_a_resume_treats_it(self):
    kinds = (params_lib.STRUCTURE, params_lib.MUST_MATCH, params_lib.MAY_CHANGE)
    for f in dataclasses.fields(TrainParams):
      with self.subTest(f.name):
        self.assertIn(f.metadata.get(params_lib.RESUME), kinds)
    self.assertEqual(set(train_settings.FIELD_SETTINGS),
                     set(params_lib.fields_by_resume(params_lib.STRUCTURE,
                                                     params_lib.MUST_MATCH)))
    self.assertEqual(set(train_settings.STRUCTURE_SETTINGS) - set(train_settings.DERIVED_SETTINGS),
                     set(params_lib.fields_by_resume(params_lib.STRUCTURE)))
    self.assertIn('batch_size', train_settings.FIELD_SETTINGS)
    self.assertNotIn('max_steps', train_settings.FIELD_SETTINGS)


class OneWayToTrainTest(tf.test.TestCase):

  def test_a_dict_trains_and_a_mismatched_resume_stops_as_the_binary_does(self):
    model_dir = os.path.join(self.create_tempdir().full_path, 'run')
    metrics = train_and_evaluate(dict(TINY, model_dir=model_dir))
    self.assertEqual(int(metrics['global_step']), 2)
    with open(os.path.join(model_dir, train_settings.RECORD_FILE)) as f:
      self.assertEqual(json.load(f)['settings']['batch_size'], 2)

    changed = dict(TINY, model_dir=model_dir, max_steps=4, batch_size=1)
    with self.assertRaises(train_settings.ResumeSettingsError) as stopped:
      train_and_evaluate(changed)
    self.assertEqual((stopped.exception.option, stopped.exception.settings),
                     ('batch_size', ('batch_size',)))

    done = program_runs.run('towers.train_main', *(f'--{k}={v}' for k, v in changed.items()),
                            timeout=LIMIT)
    self.assertEqual(done.code, 2, done.output())
    self.assertEqual((done.error['error'], done.error_options),
                     ('ResumeSettingsError', ['batch_size']))
    self.assertEqual(tf.train.latest_checkpoint(model_dir).rsplit('-', 1)[1], '2')
    with open(os.path.join(model_dir, train_settings.RECORD_FILE)) as f:
      self.assertEqual(json.load(f)['settings']['batch_size'], 2)  # neither run changed it

  def test_a_resume_with_another_structure_names_the_flag(self):
    model_dir = os.path.join(self.create_tempdir().full_path, 'run')
    train_and_evaluate(dict(TINY, model_dir=model_dir))
    found = checkpoint_shapes.problems(params_lib.make_params(TINY, model_dir=model_dir,
                                                         num_classes=4))
    self.assertLen(found, 1)
    self.assertEqual((found[0].option, found[0].stored[-1], found[0].wanted[-1]),
                     ('num_classes', 3, 4))


if __name__ == '__main__':
  tf.test.main()

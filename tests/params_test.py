"""Specification: parameters are validated up front with errors that name the problem."""

import dataclasses
import os
import sys
import tempfile

import tensorflow as tf
from absl import flags

from command_line import options
from model_fn import batch_split
from model_fn.devices import resolve_tower_devices
from towers import build_estimator, flags as towers_flags
from towers.params import FIELD_NAMES, ParamsError, TrainParams, make_params


class ParamsTest(tf.test.TestCase):

  def test_missing_keys_take_the_flag_defaults(self):
    params = make_params({'num_towers': 2})
    self.assertEqual(params.num_towers, 2)
    self.assertEqual(params.optimizer, TrainParams().optimizer)

  def test_unknown_key_is_named(self):
    with self.assertRaisesRegex(ParamsError, 'unknown parameter.*num_tower\\b'):
      make_params({'num_tower': 2})

  def test_zero_towers(self):
    with self.assertRaisesRegex(ParamsError, 'num_towers=0'):
      make_params(num_towers=0)

  def test_batch_smaller_than_tower_count(self):
    with self.assertRaisesRegex(ParamsError, 'batch_size=3 is smaller than the 4 towers'):
      make_params(num_towers=4, batch_size=3)

  def test_accumulate_steps_must_be_positive(self):
    with self.assertRaisesRegex(ParamsError, 'accumulate_steps must be positive, got 0'):
      make_params(accumulate_steps=0)

  def test_accumulation_is_not_built_for_mirrored(self):
    with self.assertRaisesRegex(ParamsError, 'strategy=mirrored does not apply '
                                'accumulate_steps=2.*strategy=towers'):
      make_params(strategy='mirrored', accumulate_steps=2)

  def test_i3d_refuses_batch_norm_false_that_it_would_ignore(self):
    with self.assertRaisesRegex(ParamsError, 'batch_norm=false does not apply to model=i3d'):
      make_params(model='i3d', batch_norm=False)
    self.assertFalse(make_params(model='c3d_small', batch_norm=False).batch_norm)

  def test_unknown_optimizer(self):
    with self.assertRaisesRegex(ParamsError, "optimizer='adagrad' is not one of"):
      make_params(optimizer='adagrad')

  def test_learning_rates_must_be_positive(self):
    with self.assertRaisesRegex(ParamsError, r'lr_values must all be > 0.*-0.1'):
      make_params(lr_schedule='constant', lr_boundaries=[], lr_values=[-0.1])

  def test_each_numeric_range_is_declared_and_refused_up_front(self):
    for values, message in (
        (dict(num_classes=1), 'num_classes must be >= 2, got 1'),
        (dict(chief_lost_secs=0), 'chief_lost_secs must be positive, got 0'),
        (dict(worker_lost_secs=-1), 'worker_lost_secs must be positive, got -1'),
        (dict(lr_schedule='constant', lr_boundaries='', lr_values='nan'),
         r'lr_values must all be > 0, got \(nan,\)'),
        (dict(momentum=float('nan')), 'momentum must be >= 0, got nan'),
        (dict(weight_decay=float('inf')), 'weight_decay must be >= 0, got inf'),
        (dict(dropout_keep=0.0), r'dropout_keep must be in \(0, 1\], got 0.0'),
        (dict(backup_workers=1), 'backup_workers=1 needs sync_replicas')):
      with self.subTest(values):
        with self.assertRaisesRegex(ParamsError, message):
          make_params(values)
    # Declared beside the option, so the flag's help says it too.
    num_classes = next(f for f in dataclasses.fields(TrainParams) if f.name == 'num_classes')
    self.assertEqual(num_classes.metadata[options.RANGE].describe(), '>= 2')

  def test_params_that_are_not_a_mapping_are_one_params_error(self):
    from towers import train_and_evaluate  # pylint: disable=g-import-not-at-top
    with self.assertRaisesRegex(ParamsError, r'params must be a TrainParams or a dict .* got '
                                             r'a list'):
      train_and_evaluate(['batch_size', 8])

  def test_piecewise_without_boundaries_is_a_constant_rate(self):
    from model_fn import optimization  # pylint: disable=g-import-not-at-top
    params = make_params(lr_schedule='piecewise', lr_boundaries='', lr_values='0.01')
    with tf.Graph().as_default():
      rate = optimization.learning_rate(params, tf.constant(5, tf.int64))
      with tf.compat.v1.Session() as session:
        self.assertAllClose(session.run(rate), 0.01)

  def test_strict_eval_needs_the_whole_eval_set(self):
    with self.assertRaisesRegex(ParamsError, 'strict_eval needs the whole eval set.*eval_steps=3'):
      make_params(strict_eval=True, eval_steps=3)

  def test_lr_values_must_match_boundaries(self):
    with self.assertRaisesRegex(ParamsError, 'lr_values has 2 values but lr_boundaries has 2'):
      make_params(lr_boundaries=[10, 20], lr_values=[0.1, 0.01])

  def test_lists_accept_comma_strings_and_become_tuples(self):
    params = make_params(lr_boundaries='10,20', lr_values='0.1,0.01,0.001')
    self.assertEqual(params.lr_boundaries, (10, 20))
    self.assertEqual(params.lr_values, (0.1, 0.01, 0.001))

  def test_bad_list_element_is_named(self):
    with self.assertRaisesRegex(ParamsError, 'lr_values: cannot read'):
      make_params(lr_values='0.1,fast')

  def test_a_value_of_the_wrong_type_is_named(self):
    with self.assertRaisesRegex(ParamsError, r"num_towers='2' must be a whole number"):
      make_params(num_towers='2')
    with self.assertRaisesRegex(ParamsError, r'batch_size=2.5 must be a whole number'):
      make_params(batch_size=2.5)
    self.assertEqual(make_params(weight_decay=0).weight_decay, 0.0)

  def test_build_estimator_rejects_unknown_keys(self):
    with self.assertRaisesRegex(ParamsError, 'unknown parameter.*learning_rat'):
      build_estimator({'learning_rat': 0.1})

  def test_build_estimator_session_exposes_one_cpu_per_tower(self):
    estimator = build_estimator({'num_towers': 3, 'model_dir': self.get_temp_dir()})
    self.assertEqual(estimator.config.session_config.device_count['CPU'], 3)
    self.assertEqual(estimator.config.model_dir, self.get_temp_dir())


class BatchSplitTest(tf.test.TestCase):

  def test_sizes_differ_by_at_most_one(self):
    self.assertEqual(batch_split.tower_sizes(10, 4), [3, 3, 2, 2])
    self.assertEqual(batch_split.tower_sizes(8, 4), [2, 2, 2, 2])

  def test_static_batch_smaller_than_towers_is_an_error(self):
    with tf.Graph().as_default():
      with self.assertRaisesRegex(ValueError, 'a batch of 2 cannot be split over 3 towers'):
        batch_split.split_batch(tf.zeros([2, 5]), 3)

  def test_dynamic_batch_is_split_at_run_time(self):
    with tf.Graph().as_default():
      x = tf.compat.v1.placeholder(tf.float32, [None])
      parts = batch_split.split_batch(x, 3)
      with tf.compat.v1.Session() as sess:
        got = sess.run(parts, {x: list(range(7))})
    self.assertEqual([list(p) for p in got], [[0, 1, 2], [3, 4], [5, 6]])

  def test_no_gpu_means_virtual_cpus(self):
    devices = resolve_tower_devices(-1, num_gpus=0)
    self.assertEqual(devices.devices, ('/device:CPU:0',))
    self.assertEqual(resolve_tower_devices(-1, num_gpus=2).devices,
                     ('/device:GPU:0', '/device:GPU:1'))
    with self.assertRaisesRegex(ValueError, 'only 1 GPU'):
      resolve_tower_devices(2, num_gpus=1)


class FlagsTest(tf.test.TestCase):

  def test_every_field_is_a_flag_and_relative_paths_follow_the_users_directory(self):
    flag_values = flags.FlagValues()
    towers_flags.define_flags(flag_values)
    self.assertCountEqual([n for n in FIELD_NAMES], [n for n in FIELD_NAMES if n in flag_values])
    user_dir = tempfile.mkdtemp()
    with open(os.path.join(user_dir, 'run.flags'), 'w') as f:
      f.write('--model_dir=runs/a\n--num_towers=2\n--lr_boundaries=5\n--lr_values=0.1,0.01\n')
    cwd = os.getcwd()
    os.chdir(user_dir)
    try:
      flag_values(['train', '--flagfile=run.flags'])
    finally:
      os.chdir(cwd)
    params = towers_flags.params_from_flags(flag_values, working_dir=user_dir)
    self.assertEqual(params.model_dir, os.path.join(user_dir, 'runs', 'a'))
    self.assertEqual(params.num_towers, 2)
    self.assertEqual(params.lr_values, (0.1, 0.01))

  def test_help_lists_the_flags_a_run_starts_with_and_helpfull_the_rest(self):
    flag_values = flags.FlagValues()
    towers_flags.define_flags(flag_values)
    key = {f.name for f in flag_values.get_key_flags_for_module(sys.argv[0])}
    self.assertEqual(key, {'model', 'num_classes', 'stream', 'warm_start_from', 'dataset',
                           'data_source', 'data_dir', 'model_dir', 'num_towers',
                           'batch_size', 'max_steps'})
    self.assertIn('shuffle_buffer', flag_values.get_help())  # --helpfull


if __name__ == '__main__':
  tf.test.main()

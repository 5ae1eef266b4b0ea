"""Specification: parameters are validated up front with errors that name the problem."""

import dataclasses
import os
import sys
import tempfile

import numpy as np
import tensorflow as tf
from absl import flags

from command_line import options
from model_fn import batch_split
from model_fn.devices import resolve_tower_devices
from towers import build_estimator, flags as towers_flags, params as params_lib
from towers.params import FIELD_NAMES, ParamsError, TrainParams, make_params


class ParamsTest(tf.test.TestCase):

  def test_missing_keys_take_the_flag_defaults(self):
    params = make_params({'num_towers': 2})
    self.assertEqual(params.num_towers, 2)
    self.assertEqual(params.optimizer, TrainParams().optimizer)

  def refused_option(self, *args, **kwargs) -> str:
    """The option named by the ParamsError that `make_params(*args, **kwargs)` raises."""
    with self.assertRaises(ParamsError) as caught:
      make_params(*args, **kwargs)
    return caught.exception.option

  def test_unknown_key_is_named(self):
    self.assertEqual(self.refused_option({'num_tower': 2}), 'num_tower')

  def test_zero_towers(self):
    self.assertEqual(self.refused_option(num_towers=0), 'num_towers')
    self.assertEqual(self.refused_option(num_towers=-2), 'num_towers')
    self.assertEqual(make_params(num_towers=-1).num_towers, -1)

  def test_number_choices_are_declared_beside_their_option(self):
    # One declaration each (input_fn.datasets), refused up front naming the option.
    for values, option, choices in ((dict(eval_crops=2), 'eval_crops', (1, 3)),
                                    (dict(split=4), 'split', (1, 2, 3)),
                                    (dict(split=0), 'split', (1, 2, 3))):
      with self.subTest(values):
        self.assertEqual(self.refused_option(values), option)
        field = next(f for f in dataclasses.fields(TrainParams) if f.name == option)
        self.assertEqual(field.metadata[options.CHOICES], choices)
    self.assertEqual(make_params(eval_crops=3, data_source='tfrecord', split=3).split, 3)

  def test_exponential_decay_needs_positive_steps_and_rate(self):
    self.assertEqual(self.refused_option(lr_decay_steps=0), 'lr_decay_steps')
    self.assertEqual(self.refused_option(lr_decay_rate=0.0), 'lr_decay_rate')

  def test_batch_smaller_than_tower_count(self):
    self.assertEqual(self.refused_option(num_towers=4, batch_size=3), 'batch_size')
    self.assertEqual(self.refused_option(tower_devices='/cpu:0,/cpu:1', batch_size=1),
                     'batch_size')
    self.assertEqual(make_params(num_towers=4, batch_size=4).batch_size, 4)

  def test_accumulate_steps_must_be_positive(self):
    self.assertEqual(self.refused_option(accumulate_steps=0), 'accumulate_steps')

  def test_accumulation_is_not_built_for_mirrored(self):
    self.assertEqual(self.refused_option(strategy='mirrored', accumulate_steps=2), 'strategy')

  def test_i3d_refuses_batch_norm_false_that_it_would_ignore(self):
    self.assertEqual(self.refused_option(model='i3d', batch_norm=False), 'batch_norm')
    self.assertFalse(make_params(model='c3d_small', batch_norm=False).batch_norm)

  def test_unknown_optimizer(self):
    self.assertEqual(self.refused_option(optimizer='adagrad'), 'optimizer')

  def test_learning_rates_must_be_positive(self):
    self.assertEqual(
        self.refused_option(lr_schedule='constant', lr_boundaries=[], lr_values=[-0.1]),
        'lr_values')

  def test_each_numeric_range_is_declared_and_refused_up_front(self):
    for values, option in (
        (dict(num_classes=1), 'num_classes'),
        (dict(chief_lost_secs=0), 'chief_lost_secs'),
        (dict(worker_lost_secs=-1), 'worker_lost_secs'),
        (dict(lr_schedule='constant', lr_boundaries='', lr_values='nan'), 'lr_values'),
        (dict(momentum=float('nan')), 'momentum'),
        (dict(weight_decay=float('inf')), 'weight_decay'),
        (dict(dropout_keep=0.0), 'dropout_keep'),
        (dict(backup_workers=1), 'backup_workers'),
        (dict(task_index=2), 'task_index')):
      with self.subTest(values):
        self.assertEqual(self.refused_option(values), option)
        fixed = (dict(values, sync_replicas=True) if option == 'backup_workers' else
                 dict(values, **{option: getattr(TrainParams(), option)}))
        self.assertIsInstance(make_params(fixed), TrainParams)  # that option was the problem
    # Declared beside the option, so the flag's help says it too.
    num_classes = next(f for f in dataclasses.fields(TrainParams) if f.name == 'num_classes')
    self.assertEqual(num_classes.metadata[options.RANGE].describe(), '>= 2')

  def test_params_are_sections_read_flat(self):
    params = make_params(batch_size=8, model='i3d', data_source='tfrecord')
    self.assertIsInstance(params, params_lib.RunSection)
    self.assertIsInstance(params, params_lib.ModelSection)
    self.assertEqual((params.batch_size, params.model, params.data_source),
                     (8, 'i3d', 'tfrecord'))
    declared = [f.name for section in params_lib.SECTIONS for f in dataclasses.fields(section)]
    self.assertCountEqual(declared, FIELD_NAMES)  # every field in exactly one section
    self.assertEqual({options.section_of(TrainParams, 'batch_size'),
                      options.section_of(TrainParams, 'stream')}, {'Run', 'Model'})

  def test_a_section_made_alone_is_checked_by_its_own_rules(self):
    self.assertEqual(params_lib.ModelSection(model='i3d').model, 'i3d')
    with self.assertRaises(ParamsError) as caught:
      params_lib.ModelSection(trainable_from='Mixed_4b')
    self.assertEqual(caught.exception.option, 'trainable_from')
    with self.assertRaises(ParamsError) as caught:
      params_lib.OptimizationSection(lr_boundaries=[20, 10], lr_values=[0.1, 0.01, 0.001])
    self.assertEqual(caught.exception.option, 'lr_boundaries')

  def test_every_rule_is_declared_once(self):
    rules = options.rules_of(TrainParams)
    self.assertLen(set(rules), len(rules))
    self.assertGreater(len(rules), len(params_lib.SECTIONS))

  def test_params_that_are_not_a_mapping_are_one_params_error(self):
    from towers import train_and_evaluate  # pylint: disable=g-import-not-at-top
    with self.assertRaises(ParamsError) as caught:
      train_and_evaluate(['batch_size', 8])
    self.assertIsNone(caught.exception.option)  # the argument itself, no single parameter

  def test_piecewise_without_boundaries_is_a_constant_rate(self):
    from model_fn import optimization  # pylint: disable=g-import-not-at-top
    params = make_params(lr_schedule='piecewise', lr_boundaries='', lr_values='0.01')
    with tf.Graph().as_default():
      rate = optimization.learning_rate(params, tf.constant(5, tf.int64))
      with tf.compat.v1.Session() as session:
        self.assertAllClose(session.run(rate), 0.01)

  def test_strict_eval_needs_the_whole_eval_set(self):
    self.assertEqual(self.refused_option(strict_eval=True, eval_steps=3), 'strict_eval')
    self.assertTrue(make_params(strict_eval=True, eval_steps=0).strict_eval)

  def test_a_data_dir_with_the_synthetic_source_is_refused(self):
    # The default source reads no files: records named without data_source would be left
    # unread and the run would train on built-in clips.
    with self.assertRaises(ParamsError) as raised:
      make_params({'data_dir': '/data/ucf101/tfrecord', 'num_classes': 101})
    self.assertEqual(raised.exception.option, 'data_source')
    self.assertIn('data_dir=/data/ucf101/tfrecord', str(raised.exception))
    make_params({'data_dir': '/data/ucf101/tfrecord', 'data_source': 'tfrecord'})

  def test_lr_values_must_match_boundaries(self):
    self.assertEqual(self.refused_option(lr_boundaries=[10, 20], lr_values=[0.1, 0.01]),
                     'lr_values')

  def test_lists_accept_comma_strings_and_become_tuples(self):
    params = make_params(lr_boundaries='10,20', lr_values='0.1,0.01,0.001')
    self.assertEqual(params.lr_boundaries, (10, 20))
    self.assertEqual(params.lr_values, (0.1, 0.01, 0.001))

  def test_bad_list_element_is_named(self):
    self.assertEqual(self.refused_option(lr_values='0.1,fast'), 'lr_values')

  def test_a_value_of_the_wrong_type_is_named(self):
    self.assertEqual(self.refused_option(num_towers='2'), 'num_towers')
    self.assertEqual(self.refused_option(batch_size=2.5), 'batch_size')
    self.assertEqual(make_params(weight_decay=0).weight_decay, 0.0)
    # NumPy's numbers, as a notebook holds them, are the Python numbers they stand for.
    made = make_params(batch_size=np.int64(4), num_classes=np.int32(3),
                       weight_decay=np.float32(0.5))
    self.assertEqual((made.batch_size, made.num_classes, made.weight_decay), (4, 3, 0.5))
    self.assertIs(type(made.batch_size), int)
    self.assertEqual(self.refused_option(batch_size=np.float64(4.0)), 'batch_size')

  def test_build_estimator_rejects_unknown_keys(self):
    with self.assertRaises(ParamsError) as caught:
      build_estimator({'learning_rat': 0.1})
    self.assertEqual(caught.exception.option, 'learning_rat')

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
      with self.assertRaises(ValueError):  # a library precondition, below every TrainParams
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
    with self.assertRaises(ValueError):  # more towers than GPUs: known only at run time
      resolve_tower_devices(2, num_gpus=1)


class ToolOptionsTest(tf.test.TestCase):
  """Every program's options object gets the one check when made, as TrainParams does."""

  def test_a_tool_options_object_is_checked_when_made(self):
    from towers.cluster.local_cluster import LocalClusterOptions  # pylint: disable=g-import-not-at-top
    from serving.two_stream_options import EvaluateTwoStreamOptions  # pylint: disable=g-import-not-at-top
    self.assertEqual(LocalClusterOptions(workers=3).workers, 3)
    self.assertEqual(EvaluateTwoStreamOptions(flow_weight=1).flow_weight, 1.0)
    for make, option in ((lambda: LocalClusterOptions(workers=0), 'workers'),
                         (lambda: LocalClusterOptions(network='bridge'), 'network'),
                         (lambda: LocalClusterOptions(ps='1'), 'ps'),
                         (lambda: EvaluateTwoStreamOptions(flow_weight=float('nan')),
                          'flow_weight'),
                         (lambda: options.build(LocalClusterOptions, {'worker': 2}), 'worker')):
      with self.subTest(option):
        with self.assertRaises(options.OptionsError) as caught:
          make()
        self.assertEqual(caught.exception.option, option)

  def test_an_options_type_must_derive_from_options(self):
    @dataclasses.dataclass(frozen=True)
    class Unchecked:
      size: int = options.option(1, 'Size.')
    with self.assertRaises(TypeError):
      options.build(Unchecked, {'size': 2})


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
    helpfull = flag_values.get_help()
    self.assertIn('shuffle_buffer', helpfull)
    for section in params_lib.SECTIONS:  # absl's --helpfull lists flags by defining module
      for f in dataclasses.fields(section):
        self.assertEqual(flag_values.find_module_defining_flag(f.name),
                         f'{section.TITLE} (TrainParams)')


if __name__ == '__main__':
  tf.test.main()

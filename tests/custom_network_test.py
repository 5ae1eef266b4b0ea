"""Specification: a user's own network trains like a built-in one.

The README's custom-network example runs as written (2 towers, batch norm updated once
per step, one shared set of variables); networks that would silently train copies or
frozen statistics are refused; a registered network is selected and partly frozen by
name. (That a custom network's 2- and 3-tower step equals its 1-device step is in
tower_equivalence_test.)
"""

from __future__ import annotations

import functools
import glob
import json
import os
import re
import shutil

import tensorflow as tf

from model_fn import eval_spec, freezing, layers, networks, tower_graph, tower_model_fn
from towers import (ParamsError, build_estimator, checkpoint_shapes, make_params,
                    train_and_evaluate, train_settings, training)

tf1 = tf.compat.v1

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'README.md')


def readme_example() -> str:
  """The first python code block of the README's "Your own network" section."""
  with open(README) as f:
    text = f.read()
  section = text.split('\n## Your own network\n', 1)[1].split('\n## ', 1)[0]
  return re.search(r'```python\n(.*?)```', section, re.DOTALL).group(1)


def tiny_network(clips, ctx):
  with tf1.variable_scope('tiny'):
    x = tf.reduce_mean(clips, axis=[1, 2, 3])
    for name in ('block1', 'block2'):
      x = tf.nn.relu(layers.dense(x, 4, name=name))
    return layers.dense(x, 3, name='logits')


class ReadmeExampleTest(tf.test.TestCase):

  def test_readme_example_trains_evaluates_and_exports(self):
    namespace = {'__name__': 'readme_example'}
    exec(compile(readme_example(), README, 'exec'), namespace)  # pylint: disable=exec-used
    model_dir, metrics = namespace['params']['model_dir'], namespace['metrics']
    self.addCleanup(shutil.rmtree, model_dir, True)
    self.assertEqual(metrics['global_step'], 60)
    for key in ('accuracy/top_1', 'accuracy/top_5', 'accuracy/mean_per_class', 'loss'):
      self.assertIn(key, metrics)
    checkpoint = tf.train.latest_checkpoint(model_dir)
    names = dict(tf.train.list_variables(checkpoint))
    # One set of variables, named as in a one-tower graph.
    self.assertFalse([n for n in names if n.startswith('tower_')])
    self.assertIn('my_net/temperature', names)
    self.assertEqual(names['my_net/bn2/gamma'], [16])
    # The towers ran the batch-norm updates: moving statistics left their initial 0 and 1.
    moving_mean = tf.train.load_variable(checkpoint, 'my_net/bn1/moving_mean')
    moving_variance = tf.train.load_variable(checkpoint, 'my_net/bn2/moving_variance')
    self.assertGreater(abs(moving_mean).max(), 1e-3)
    self.assertGreater(abs(moving_variance - 1.0).max(), 1e-3)
    self.assertTrue(os.listdir(os.path.join(model_dir, 'export', 'best')))
    # The same network continues its model_dir (the checkpoint is checked against it, not
    # against --model).
    more = namespace['train_and_evaluate'](dict(namespace['params'], max_steps=62),
                                           network=namespace['my_network'])
    self.assertEqual(more['global_step'], 62)


class RefusedNetworksTest(tf.test.TestCase):

  def _build(self, network):
    with tf.Graph().as_default():
      tower_graph.build_towers(network, tf.zeros([4, 2, 4, 4, 3]), tf.zeros([4], tf.int64),
                               ('/cpu:0', '/cpu:0'), None, True)

  def test_keras_layers_would_train_one_copy_per_tower(self):
    def keras_network(clips, ctx):
      del ctx
      return tf.keras.layers.Dense(3)(tf.reduce_mean(clips, axis=[1, 2, 3]))
    with self.assertRaises(tower_graph.NetworkError) as caught:
      self._build(keras_network)
    self.assertEqual((caught.exception.rule, caught.exception.count),
                     (tower_graph.OWN_VARIABLES, 2))  # tower 1's kernel and bias

  def test_update_ops_would_never_run(self):
    def update_ops_network(clips, ctx):
      x = tf1.layers.batch_normalization(tf.reduce_mean(clips, axis=[1, 2, 3]),
                                         training=ctx.is_training)
      return layers.dense(x, 3)
    with self.assertRaises(tower_graph.NetworkError) as caught:
      self._build(update_ops_network)
    self.assertEqual(caught.exception.rule, tower_graph.UPDATE_OPS)
    self.assertGreater(caught.exception.count, 0)

  def test_logits_wider_or_narrower_than_num_classes(self):
    # 3 logits with num_classes=101 would average mean_per_class over 98 empty classes.
    with tf.Graph().as_default():
      with self.assertRaises(tower_graph.NetworkError) as caught:
        tower_model_fn.make_model_fn(tiny_network)(
            tf.zeros([4, 1, 1, 1, 3]), tf.zeros([4], tf.int64), tf.estimator.ModeKeys.EVAL,
            make_params(num_towers=1, batch_size=4, num_classes=101))
    self.assertEqual(caught.exception.rule, tower_graph.LOGITS_SHAPE)

  def test_passed_network_refuses_registry_options(self):
    for option in ({'trainable_from': 'Mixed_4b', 'model': 'i3d'},
                   {'warm_start_from': '/nowhere/model.ckpt', 'model': 'i3d'}):
      params = make_params(option)  # valid for the registered network
      with self.assertRaises(ParamsError):
        build_estimator(params, network=tiny_network)


def other_tiny_network(clips, ctx):
  """Another network with tiny_network's variables (names and shapes): a checkpoint of one
  restores into the other without a word."""
  with tf1.variable_scope('tiny'):
    x = tf.reduce_max(clips, axis=[1, 2, 3])
    for name in ('block1', 'block2'):
      x = tf.nn.tanh(layers.dense(x, 4, name=name))
    return layers.dense(x, 3, name='logits')


class NamedNetworkTest(tf.test.TestCase):
  """A model_dir and its export name the caller's own network (module and function), so
  another function with the same variables never continues it as if it were the same."""

  def params(self, **changes):
    return dict(dict(num_towers=1, batch_size=4, num_classes=3, clip_frames=4, crop_size=16,
                     optimizer='sgd', lr_schedule='constant', lr_values=[0.01], max_steps=2,
                     save_checkpoints_steps=2, data_source='synthetic', eval_steps=1,
                     model_dir=self.create_tempdir().full_path), **changes)

  def record(self, model_dir):
    with open(os.path.join(model_dir, train_settings.RECORD_FILE)) as f:
      return json.load(f)

  def test_record_and_export_name_the_network(self):
    params = self.params()
    train_and_evaluate(params, network=tiny_network)
    name = f'{__name__}.tiny_network'
    self.assertEqual(self.record(params['model_dir'])['settings']['network'], name)
    info = glob.glob(os.path.join(params['model_dir'], 'export', 'best', '*', 'assets.extra',
                                  'video_model.json'))
    self.assertLen(info, 1)
    with open(info[0]) as f:
      self.assertEqual(json.load(f)['model'], name)
    assets = os.path.join(params['model_dir'], 'export_assets', 'video_model.json')
    with open(assets) as f:
      exported = f.read()
    # Another function with the same variables is refused, naming both; so is a resume
    # of its finished model_dir (evaluated, not trained) and a registered network.
    for max_steps in (4, 2):
      with self.assertRaises(train_settings.ResumeSettingsError) as caught:
        train_and_evaluate(dict(params, max_steps=max_steps), network=other_tiny_network)
      self.assertEqual(caught.exception.settings, ('network',))
      self.assertFalse(caught.exception.allowable)
      self.assertIn(name, str(caught.exception))
      self.assertIn(f'{__name__}.other_tiny_network', str(caught.exception))
    # The preflight of a run by flags names the function and how to continue (no run.flags).
    found = checkpoint_shapes.problems(make_params(dict(params, max_steps=4)))
    self.assertEqual(found[0].option, 'model')
    self.assertIn(f'trained by your own network {name}', str(found[0]))
    self.assertIn('train_and_evaluate(params, network=tiny_network)', str(found[0]))
    with open(assets) as f:  # the refused runs left the last export's files as they were
      self.assertEqual(f.read(), exported)
    with self.assertRaises(train_settings.ResumeSettingsError) as caught:
      # What build_estimator(params) decides before training (train_and_evaluate's
      # preflight stops sooner: the checkpoint lacks c3d_small's variables).
      train_settings.checked_record(make_params(dict(params, max_steps=4)))
    self.assertIn('the registered --model=c3d_small', str(caught.exception))
    # The same function continues it.
    self.assertEqual(train_and_evaluate(dict(params, max_steps=4),
                                        network=tiny_network)['global_step'], 4)

  def test_a_record_that_predates_network_names_gets_one(self):
    params = self.params()
    train_and_evaluate(params, network=tiny_network)
    path = os.path.join(params['model_dir'], train_settings.RECORD_FILE)
    record = self.record(params['model_dir'])
    del record['settings']['network']
    with open(path, 'w') as f:
      json.dump(record, f)
    with self.assertLogs(level='WARNING') as logs:
      train_and_evaluate(dict(params, max_steps=4), network=tiny_network)
    self.assertTrue([line for line in logs.output if 'cannot be told' in line])
    self.assertEqual(self.record(params['model_dir'])['settings']['network'],
                     f'{__name__}.tiny_network')

  def test_names_of_functions_partials_and_callables(self):
    class Net:
      def __call__(self, clips, ctx):
        return tiny_network(clips, ctx)
    self.assertEqual(networks.caller_network_name(tiny_network), f'{__name__}.tiny_network')
    self.assertEqual(networks.caller_network_name(functools.partial(tiny_network)),
                     f'{__name__}.tiny_network')
    self.assertEqual(
        networks.caller_network_name(Net()),
        f'{__name__}.NamedNetworkTest.test_names_of_functions_partials_and_callables.<locals>.Net')


class CallerInputTest(tf.test.TestCase):

  def test_raw_pixels_from_the_callers_input_fn_fail_the_step_naming_the_range(self):
    def raw_pixels():  # an input_fn that forgot x / 127.5 - 1
      clips = tf.random.uniform([4, 2, 8, 8, 3], 0, 255)
      return clips, tf.zeros([4], tf.int64)
    estimator = build_estimator(dict(num_towers=1, batch_size=4, num_classes=3, clip_frames=2,
                                     crop_size=8, model_dir=self.create_tempdir().full_path),
                                network=tiny_network)
    with self.assertRaisesRegex(tf.errors.InvalidArgumentError, 'must be float32 in'):
      estimator.train(raw_pixels, max_steps=1)
    scaled = lambda: (lambda c, l: (c / 127.5 - 1, l))(*raw_pixels())
    estimator.train(scaled, max_steps=1)


class ModelFnTest(tf.test.TestCase):

  def test_every_model_fn_is_accepted_by_the_estimator(self):
    for fn in (tower_model_fn.make_model_fn(), tower_model_fn.make_model_fn(strategy='mirrored'),
               tower_model_fn.make_model_fn(tiny_network),
               tower_model_fn.make_model_fn(tiny_network, 'mirrored')):
      tf.estimator.Estimator(fn, model_dir=self.get_temp_dir(), params=make_params())


class RegistryTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    networks.register('tiny', lambda params: tiny_network, endpoints=('block1', 'block2'),
                      endpoint_of=lambda name: name.split('/')[1] if '/' in name else None)

  def test_builtins_are_registered(self):
    self.assertEqual(networks.names()[:2], ('c3d_small', 'i3d'))
    self.assertIn('Mixed_4b', networks.spec('i3d').endpoints)
    self.assertNotIn('MaxPool3d_2a_3x3', networks.spec('i3d').endpoints)

  def test_model_is_checked_against_the_registry(self):
    self.assertEqual(make_params(model='tiny').model, 'tiny')
    with self.assertRaises(ParamsError) as caught:
      make_params(model='tyni')
    self.assertEqual(caught.exception.option, 'model')
    with self.assertRaises(ValueError):  # the name is taken: the first registration stays
      networks.register('tiny', lambda params: tiny_network)
    self.assertEqual(networks.spec('tiny').endpoints, ('block1', 'block2'))

  def test_trainable_from_freezes_the_registered_endpoints(self):
    params = make_params(model='tiny', trainable_from='block2')
    with tf.Graph().as_default():
      networks.build_network(params)(tf.zeros([2, 1, 1, 1, 3]), layers.TowerContext())
      trainable = freezing.trainable_variables(params, tf1.trainable_variables())
    self.assertEqual([v.op.name for v in trainable],
                     ['tiny/block2/kernel', 'tiny/block2/bias', 'tiny/logits/kernel',
                      'tiny/logits/bias'])
    with self.assertRaises(ParamsError) as caught:
      make_params(model='tiny', trainable_from='block3')
    self.assertEqual(caught.exception.option, 'trainable_from')


class DivergedNetworkTest(tf.test.TestCase):
  """NaN outputs never become numbers: argmax of NaN logits is class 0, so an evaluation of
  them would score every clip as class 0 (and export it as the best model)."""

  def params(self, **changes):
    return dict(dict(num_towers=1, batch_size=4, num_classes=3, clip_frames=4, crop_size=16,
                     optimizer='sgd', lr_schedule='constant', lr_values=[0.01], max_steps=2,
                     save_checkpoints_steps=2, data_source='synthetic',
                     model_dir=self.create_tempdir().full_path), **changes)

  def test_an_evaluation_of_nan_outputs_fails_and_exports_nothing(self):
    def nan_in_eval(clips, ctx):
      logits = tiny_network(clips, ctx)
      return logits if ctx.is_training else logits * float('nan')  # broken moving statistics
    params = self.params()
    with self.assertRaises(tf.errors.InvalidArgumentError) as caught:
      train_and_evaluate(params, network=nan_in_eval)
    line = eval_spec.nonfinite_outputs_line(caught.exception.message)
    self.assertIsNotNone(line)
    self.assertNotIn('\n', line)
    self.assertFalse(os.path.exists(os.path.join(params['model_dir'], 'export', 'best')))
    self.assertFalse(os.path.exists(os.path.join(params['model_dir'], 'final_evaluation.json')))
    self.assertIsNone(eval_spec.nonfinite_outputs_line('another error'))

  def test_a_loss_gone_nan_names_the_learning_rate(self):
    def nan_in_training(clips, ctx):
      return tiny_network(clips, ctx) * float('nan')
    params = self.params(lr_values=[1e30])
    with self.assertRaises(tf1.train.NanLossDuringTrainingError):
      train_and_evaluate(params, network=nan_in_training)
    line = training.diverged_line(make_params(params))
    self.assertIn('--lr_values=1e+30', line)
    self.assertNotIn('\n', line)


if __name__ == '__main__':
  tf1.disable_eager_execution()
  tf.test.main()

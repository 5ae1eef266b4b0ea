"""Warm start of I3D from checkpoints fabricated with DeepMind's exact names and shapes
(random values), and freezing with `trainable_from`."""

from __future__ import annotations

import os
import shutil
import tempfile
import types

import numpy as np
import tensorflow as tf

from tests import i3d_test_lib as lib
from command_line.options import options_named
from model_fn import freezing, layers, tower_model_fn, warm_start
from towers import preflight
from model_fn.networks import build_network
from towers import params as params_lib

tf1 = tf.compat.v1

CLIP = [2, 8, 32, 32]  # batch, frames, height, width: Mixed_5c is 1x1x1


def make(**overrides) -> params_lib.TrainParams:
  values = dict(model='i3d', num_classes=101, model_dir=tempfile.mkdtemp(), clip_frames=CLIP[1], crop_size=CLIP[2],
                batch_size=CLIP[0])
  values.update(overrides)
  return params_lib.make_params(values)


def build(params, device: str | None = None, is_training: bool = True):
  """Builds the network once in the current graph; returns (clips, logits)."""
  channels = 2 if params.stream == 'flow' else 3
  clips = tf1.placeholder(tf.float32, [*CLIP, channels])
  with tf.device(device):
    logits = build_network(params)(clips, layers.TowerContext(is_training=is_training))
  return clips, logits


def by_name() -> dict[str, tf.Variable]:
  return {v.op.name: v for v in tf1.global_variables()}


class WarmStartTest(tf.test.TestCase):
  """Specs that only restore share one graph per network and device (`graph`)."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.graphs = {}
    cls.dir = tempfile.mkdtemp()
    cls.rgb_prefix = os.path.join(cls.dir, 'rgb_imagenet', 'model.ckpt')
    cls.rgb = lib.write_checkpoint(cls.rgb_prefix, lib.fixture('rgb_imagenet'), seed=1)
    cls.kin600_prefix = os.path.join(cls.dir, 'rgb_scratch_kin600', 'model.ckpt')
    cls.kin600 = lib.write_checkpoint(cls.kin600_prefix, lib.fixture('rgb_scratch_kin600'),
                                      seed=2)

  @classmethod
  def tearDownClass(cls):
    shutil.rmtree(cls.dir, ignore_errors=True)
    super().tearDownClass()

  def graph(self, params, device: str | None = None) -> tf.Graph:
    """The graph holding `build(params, device)`, built once per network and device: each
    spec only adds its restore ops to it and runs it in a session of its own."""
    key = (params.stream, params.num_classes, params.head, params.pretrained_classes, device)
    if key not in self.graphs:
      self.graphs[key] = tf.Graph()
      with self.graphs[key].as_default():
        build(params, device)
    return self.graphs[key]

  def restore(self, params, device=None, config=None):
    """Initialises, warm-starts; returns ({name: value before}, {name: after})."""
    with self.graph(params, device).as_default():
      init_fn = warm_start.make_warm_start_init_fn(params, tf1.global_variables())
      self.assertIsNotNone(init_fn)
      variables = by_name()
      with tf1.Session(config=config) as sess:
        sess.run(tf1.global_variables_initializer())
        before = sess.run(variables)
        init_fn(tf1.train.Scaffold(), sess)
        after = sess.run(variables)
    return before, after

  def test_none_without_checkpoint_flag(self):
    with self.graph(make()).as_default():
      self.assertIsNone(warm_start.make_warm_start_init_fn(make(), tf1.global_variables()))

  def test_keep_restores_all_230_exactly(self):
    _, after = self.restore(make(num_classes=400, head='keep', warm_start_from=self.rgb_prefix))
    self.assertEqual(set(after), set(self.rgb))
    for name, value in self.rgb.items():
      self.assertAllEqual(after[name], value, msg=name)

  def test_replace_head_is_fresh(self):
    before, after = self.restore(make(warm_start_from=self.rgb_prefix))
    logits = 'RGB/inception_i3d/Logits/Conv3d_0c_1x1/conv_3d/'
    self.assertEqual(after[logits + 'w'].shape, (1, 1, 1, 1024, 101))
    self.assertAllEqual(after[logits + 'w'], before[logits + 'w'])  # initializer's values
    self.assertAllEqual(after[logits + 'b'], np.zeros(101))
    self.assertGreater(np.std(after[logits + 'w']), 0.01)  # variance scaling, not zeros
    for name, value in self.rgb.items():
      if not name.startswith(logits):
        self.assertAllEqual(after[name], value, msg=name)

  def test_directory_resolves_to_checkpoint(self):
    _, after = self.restore(make(warm_start_from=os.path.dirname(self.rgb_prefix)))
    name = 'RGB/inception_i3d/Mixed_4d/Branch_1/Conv3d_0b_3x3/conv_3d/w'
    self.assertAllEqual(after[name], self.rgb[name])

  def test_kinetics600_layout_reshapes(self):
    params = make(warm_start_from=self.kin600_prefix, warm_start_scope='RGB/inception_i3d/=')
    with self.graph(params).as_default():
      plan = warm_start.plan_warm_start(params, tf1.global_variables())
    self.assertLen(plan.restored, 228)
    self.assertIn('Logits/Conv3d_0c_1x1/conv_3d/w', plan.unused)
    self.assertIn('Conv3d_1a_7x7/conv_3d/w/Momentum', plan.unused)
    _, after = self.restore(params)
    beta = 'Mixed_5b/Branch_2/Conv3d_0a_3x3/batch_norm/beta'
    self.assertEqual(self.kin600[beta].shape, (1, 1, 1, 1, 128))
    self.assertAllEqual(after['RGB/inception_i3d/' + beta], self.kin600[beta].reshape([128]))
    for name, value in self.kin600.items():
      graph_name = 'RGB/inception_i3d/' + name
      if graph_name in after and not name.startswith('Logits'):
        self.assertAllEqual(after[graph_name], value.reshape(after[graph_name].shape), msg=name)

  def test_stack_head_restores_600_logits_and_adds_fresh_dense(self):
    params = make(warm_start_from=self.kin600_prefix, warm_start_scope='RGB/inception_i3d/=',
                  head='stack', pretrained_classes=600)
    before, after = self.restore(params)
    self.assertAllEqual(after['RGB/inception_i3d/Logits/Conv3d_0c_1x1/conv_3d/w'],
                        self.kin600['Logits/Conv3d_0c_1x1/conv_3d/w'])
    self.assertEqual(after['RGB/stacked_head/kernel'].shape, (600, 101))
    self.assertAllEqual(after['RGB/stacked_head/kernel'], before['RGB/stacked_head/kernel'])

  def test_variables_on_another_device(self):
    config = tf1.ConfigProto(device_count={'CPU': 2})
    _, after = self.restore(make(warm_start_from=self.rgb_prefix), device='/device:CPU:1',
                            config=config)
    name = 'RGB/inception_i3d/Conv3d_1a_7x7/conv_3d/w'
    self.assertAllEqual(after[name], self.rgb[name])

  def test_missing_checkpoint_says_what_to_download(self):
    missing = os.path.join(self.dir, 'data', 'checkpoints', 'rgb_imagenet', 'model.ckpt')
    with self.graph(make()).as_default():
      with self.assertRaises(warm_start.WarmStartError) as e:
        warm_start.make_warm_start_init_fn(make(warm_start_from=missing), tf1.global_variables())
    self.assertEqual((e.exception.option, e.exception.path, e.exception.download),
                     ('warm_start_from', missing + '.index',
                      'data/checkpoints/rgb_imagenet/model.ckpt'))
    with self.assertRaises(preflight.PreflightError) as refused:
      preflight.check(make(warm_start_from=missing))
    self.assertEqual([p.option for p in refused.exception.problems], ['warm_start_from'])

  def test_index_without_weights_is_an_error(self):
    index_only = os.path.join(self.dir, 'index_only', 'model.ckpt')
    os.makedirs(os.path.dirname(index_only))
    shutil.copy(self.rgb_prefix + '.index', index_only + '.index')
    with self.assertRaises(warm_start.WarmStartError) as e:
      warm_start.resolve_checkpoint(index_only)
    self.assertEqual(e.exception.path, index_only + '.data-00000-of-00001')
    self.assertTrue(os.path.exists(index_only + '.index'))

  def test_mismatches_are_listed(self):
    # Kinetics-600 names without the scope mapping: every variable is missing.
    with self.graph(make()).as_default():
      with self.assertRaises(warm_start.WarmStartError) as e:
        warm_start.make_warm_start_init_fn(make(warm_start_from=self.kin600_prefix),
                                           tf1.global_variables())
    self.assertLen(e.exception.missing, 228)
    self.assertIn('RGB/inception_i3d/Mixed_5c/Branch_3/Conv3d_0b_1x1/conv_3d/w',
                  e.exception.missing)
    self.assertEqual(e.exception.option, 'warm_start_scope')  # the Kinetics-600 layout
    self.assertIn('--warm_start_scope=RGB/inception_i3d/=', str(e.exception))
    self.assertNotIn('\n', str(e.exception))  # one line; each tensor is logged
    # The Flow stream's checkpoint for the RGB stream: the stream is the flag to change.
    flow_prefix = os.path.join(self.dir, 'flow_imagenet', 'model.ckpt')
    lib.write_checkpoint(flow_prefix, lib.fixture('flow_imagenet'))
    with self.graph(make()).as_default():
      with self.assertRaises(warm_start.WarmStartError) as e:
        warm_start.make_warm_start_init_fn(make(warm_start_from=flow_prefix),
                                           tf1.global_variables())
    self.assertEqual(e.exception.option, 'stream')
    self.assertIn('set --stream=flow', str(e.exception))
    # head=keep with 101 classes against a 400-class checkpoint (pretrained_classes wrongly
    # says 101, so the params pass): the Logits shapes differ.
    params = make(head='keep', warm_start_from=self.rgb_prefix, pretrained_classes=101)
    with self.graph(params).as_default():
      with self.assertRaises(warm_start.WarmStartError) as e:
        warm_start.make_warm_start_init_fn(params, tf1.global_variables())
    self.assertLen(e.exception.mismatched, 2)
    self.assertIn([1, 1, 1, 1024, 101], [graph for _, graph, _ in e.exception.mismatched])
    self.assertEqual(e.exception.option, 'head')

  def test_optimizer_slots_are_not_restored(self):
    params = make(warm_start_from=self.rgb_prefix)
    with tf.Graph().as_default():  # its own graph: the optimizer adds slot variables
      clips, logits = build(params)
      tf1.train.MomentumOptimizer(0.1, 0.9).minimize(tf.reduce_sum(logits))
      plan = warm_start.plan_warm_start(params, tf1.global_variables())
    self.assertLen(plan.restored, 228)
    self.assertFalse(any('Momentum' in r.name for r in plan.restored))


class FreezingTest(tf.test.TestCase):

  def test_frozen_endpoints(self):
    self.assertEqual(freezing.frozen_endpoints('i3d', ''), ())
    self.assertEqual(freezing.frozen_endpoints('i3d', 'Mixed_3b'),
                     ('Conv3d_1a_7x7', 'Conv3d_2b_1x1', 'Conv3d_2c_3x3'))

  def test_frozen_variables_do_not_change_in_a_training_step(self):
    # One step of the real tower model_fn: the freezing must reach its optimizer.
    params = make(trainable_from='Mixed_4b', optimizer='sgd', lr_schedule='constant',
                  lr_values=[1.0])
    frozen_endpoints = ('Conv3d_1a_7x7', 'Conv3d_2b_1x1', 'Conv3d_2c_3x3', 'Mixed_3b',
                        'Mixed_3c')
    x = np.random.default_rng(0).uniform(-1, 1, CLIP + [3]).astype(np.float32)
    with tf.Graph().as_default():
      tf1.set_random_seed(0)
      spec = tower_model_fn.make_model_fn()(tf.constant(x), tf.constant([1, 2], tf.int64),
                                            tf.estimator.ModeKeys.TRAIN, params)
      all_trainable = tf1.trainable_variables()
      with tf1.Session() as sess:
        sess.run(tf1.global_variables_initializer())
        before = sess.run(all_trainable)
        sess.run(spec.train_op)
        after = sess.run(all_trainable)
    frozen = [v.op.name for v in all_trainable if v.op.name.split('/')[2] in frozen_endpoints]
    # Conv3d_1a_7x7, 2b, 2c: 3 units; Mixed_3b, 3c: 6 units each; w and beta per unit.
    self.assertLen(frozen, (3 + 12) * 2)
    changed = {v.op.name for v, b, a in zip(all_trainable, before, after)
               if not np.array_equal(a, b)}
    self.assertEmpty(changed.intersection(frozen))
    self.assertLen(changed, len(all_trainable) - len(frozen))
    self.assertIn('RGB/inception_i3d/Logits/Conv3d_0c_1x1/conv_3d/w', changed)
    self.assertIn('RGB/inception_i3d/Mixed_4b/Branch_0/Conv3d_0a_1x1/conv_3d/w', changed)

  def test_trainable_from_needs_i3d(self):
    with tf.Graph().as_default():
      v = tf1.get_variable('c3d_small/block1/conv_3d/w', [1])
      with self.assertRaises(params_lib.ParamsError):  # refused when the params are made
        params_lib.make_params(trainable_from='Mixed_4b')
      # The library's own check, for params that did not come from make_params.
      with self.assertRaises(ValueError) as caught:
        freezing.trainable_variables(
            types.SimpleNamespace(model='c3d_small', trainable_from='Mixed_4b'), [v])
    self.assertEqual(options_named(caught.exception), ['trainable_from'])


if __name__ == '__main__':
  tf1.disable_eager_execution()
  tf.test.main()

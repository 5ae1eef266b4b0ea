"""I3D: DeepMind's names and shapes (fixture always, real index when ../shared exists),
endpoints, small inputs, the network registry and the params contract."""

from __future__ import annotations

import functools
import os

import numpy as np
import tensorflow as tf

from tests import i3d_test_lib as lib
from command_line.options import options_named
from model_fn import layers
from model_fn.networks import build_network, i3d, i3d_names
from towers import params as params_lib

tf1 = tf.compat.v1


@functools.lru_cache(maxsize=None)
def graph_variables(stream: str, num_classes: int = 400, shape=(None, 64, 224, 224)
                    ) -> tuple[dict[str, list[int]], dict[str, tf.Tensor]]:
  """Builds I3D in a fresh graph (no computation) and returns its variables and endpoints;
  built once per arguments (the specs only read the result)."""
  with tf.Graph().as_default():
    channels = i3d_names.STREAMS[stream][1]
    clips = tf1.placeholder(tf.float32, [*shape, channels])
    _, end_points = i3d.inception_i3d(clips, layers.TowerContext(is_training=True),
                                      num_classes, stream)
    return ({v.op.name: v.shape.as_list() for v in tf1.global_variables()},
            {k: v.shape.as_list() for k, v in end_points.items()})


class I3dNamesTest(tf.test.TestCase):

  def test_rgb_equals_fixture(self):
    expected = dict(lib.fixture('rgb_imagenet'))
    self.assertLen(expected, 230)
    got, _ = graph_variables('rgb')
    self.assertEqual(got, expected)
    self.assertIn('RGB/inception_i3d/Mixed_5b/Branch_2/Conv3d_0a_3x3/conv_3d/w', got)

  def test_flow_equals_fixture(self):
    expected = dict(lib.fixture('flow_imagenet'))
    self.assertLen(expected, 230)
    got, _ = graph_variables('flow')
    self.assertEqual(got, expected)
    self.assertEqual(got['Flow/inception_i3d/Conv3d_1a_7x7/conv_3d/w'], [7, 7, 7, 2, 64])

  def test_equals_real_index(self):
    shared = lib.shared_i3d_dir()
    if shared is None:
      self.skipTest('../shared/i3d (DeepMind\'s index files) is not beside the checkout')
    for stream, name in (('rgb', 'rgb_imagenet'), ('flow', 'flow_imagenet')):
      real = dict(tf.train.list_variables(os.path.join(shared, f'{name}.model.ckpt')))
      self.assertLen(real, 230)
      got, _ = graph_variables(stream)
      self.assertEqual(got, real, stream)
      # The fixture is what the real index says.
      self.assertEqual(dict(lib.fixture(name)), real, name)
    kin600 = dict(tf.train.list_variables(os.path.join(shared, 'rgb_scratch_kin600.model.ckpt')))
    self.assertEqual(dict(lib.fixture('rgb_scratch_kin600')), kin600)

  def test_standard_endpoint_shapes(self):
    _, end_points = graph_variables('rgb')  # 64 frames of 224x224
    self.assertEqual(list(end_points), list(i3d_names.ENDPOINTS[:-1]))  # up to Logits
    self.assertEqual(end_points['Conv3d_1a_7x7'], [None, 32, 112, 112, 64])
    self.assertEqual(end_points['Mixed_4f'], [None, 16, 14, 14, 832])
    self.assertEqual(end_points['Mixed_5c'], [None, 8, 7, 7, 1024])
    self.assertEqual(end_points['Logits'], [None, 400])
    self.assertEqual(i3d.logits_pool_kernel([8, 7, 7]), [2, 7, 7])  # DeepMind's, unchanged
    self.assertEqual(i3d.logits_pool_kernel([1, 2, 2]), [1, 2, 2])
    self.assertEqual(i3d.logits_pool_kernel([None, None, None]), [2, 7, 7])

  def test_final_endpoint(self):
    with tf.Graph().as_default():
      clips = tf1.placeholder(tf.float32, [1, 16, 64, 64, 3])
      net, end_points = i3d.inception_i3d(clips, layers.TowerContext(), 10,
                                          final_endpoint='Mixed_3c')
      self.assertEqual(list(end_points)[-1], 'Mixed_3c')
      self.assertEqual(net.shape.as_list(), [1, 8, 8, 8, 480])
      names = [v.op.name for v in tf1.global_variables()]
      self.assertFalse(any('Mixed_4' in n or 'Logits' in n for n in names))
      with self.assertRaises(ValueError) as caught:
        i3d.inception_i3d(clips, layers.TowerContext(), 10, final_endpoint='Mixed_9z')
      self.assertEqual(options_named(caught.exception), ['final_endpoint'])
      with self.assertRaises(ValueError) as caught:  # 3-channel clips for the flow stream
        i3d.inception_i3d(clips, layers.TowerContext(), 10, stream='flow')
      self.assertEqual(options_named(caught.exception), ['stream'])

  def test_small_input_runs(self):
    """8 frames at 32x32 (Mixed_5c is 1x1x1): logits, predictions, train and eval mode."""
    params = params_lib.make_params(model='i3d', num_classes=5, clip_frames=8, crop_size=32,
                                    dropout_keep=0.5)
    with tf.Graph().as_default():
      network = build_network(params)
      clips = tf1.placeholder(tf.float32, [2, 8, 32, 32, 3])
      train_ctx = layers.TowerContext(is_training=True)
      train_logits = network(clips, train_ctx)
      with tf1.variable_scope(tf1.get_variable_scope(), reuse=True):
        eval_logits = network(clips, layers.TowerContext(is_training=False))
      self.assertLen(train_ctx.bn_moments, 57)  # every Unit3D but the Logits conv
      self.assertLen(tf1.trainable_variables(), 57 * 2 + 2)
      with self.session() as sess:
        sess.run(tf1.global_variables_initializer())
        x = np.random.default_rng(0).uniform(-1, 1, [2, 8, 32, 32, 3]).astype(np.float32)
        a, b = sess.run([train_logits, eval_logits], {clips: x})
      self.assertEqual(a.shape, (2, 5))
      self.assertEqual(b.shape, (2, 5))
      self.assertTrue(np.all(np.isfinite(a)) and np.all(np.isfinite(b)))

  def test_stack_head_variables(self):
    params = params_lib.make_params(model='i3d', num_classes=7, head='stack',
                                    pretrained_classes=400, stream='flow',
                                    data_source='tfrecord')
    with tf.Graph().as_default():
      logits = build_network(params)(tf1.placeholder(tf.float32, [1, 8, 32, 32, 2]),
                                     layers.TowerContext())
      self.assertEqual(logits.shape.as_list(), [1, 7])
      got = {v.op.name: v.shape.as_list() for v in tf1.global_variables()}
    expected = dict(lib.fixture('flow_imagenet'))
    expected['Flow/stacked_head/kernel'] = [400, 7]
    expected['Flow/stacked_head/bias'] = [7]
    self.assertEqual(got, expected)


if __name__ == '__main__':
  tf1.disable_eager_execution()
  tf.test.main()

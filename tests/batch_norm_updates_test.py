"""Specification: batch-norm moving statistics follow the main tower (default) or all
towers' examples as one batch (`bn_update=mean`); either way one update per step."""

import numpy as np
import tensorflow as tf

from model_fn import tower_model_fn
from tests import tower_testing
from towers.params import make_params

tf1 = tf.compat.v1
DECAY = 0.9  # c3d_small's batch-norm decay


def moving_mean_after_one_step(bn_update, num_towers, clips):
  params = make_params(model='c3d_small', num_classes=3, clip_frames=4, crop_size=8,
                       batch_size=len(clips), num_towers=num_towers, bn_update=bn_update,
                       optimizer='sgd', lr_schedule='constant', lr_values=[0.0],
                       model_dir='/tmp/unused')
  with tf.Graph().as_default():
    tf1.set_random_seed(3)
    spec = tower_model_fn.model_fn(tf.constant(clips), tf.zeros([len(clips)], tf.int64),
                                   tf.estimator.ModeKeys.TRAIN, params)
    variables = {v.op.name: v for v in tf1.global_variables()}
    w = variables['c3d_small/block1/conv_3d/w']
    moving = variables['c3d_small/block1/batch_norm/moving_mean']
    with tf1.Session(config=tower_testing.cpu_session_config(num_towers)) as sess:
      sess.run(tf1.global_variables_initializer())
      kernel = sess.run(w)
      sess.run(spec.train_op)
      return sess.run(moving), kernel


def conv_channel_means(clips, kernel):
  """Per-channel mean of block1's convolution output, computed independently."""
  with tf.Graph().as_default(), tf1.Session() as sess:
    y = tf.nn.conv3d(clips, kernel, [1, 1, 1, 1, 1], 'SAME')
    return sess.run(tf.reduce_mean(y, axis=[0, 1, 2, 3]))


class BatchNormUpdatesTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    rng = np.random.default_rng(0)
    # The two halves differ a lot, so main-tower and all-tower statistics differ.
    first = rng.uniform(-1, 0, (4, 4, 8, 8, 3))
    second = rng.uniform(0, 1, (4, 4, 8, 8, 3))
    self.clips = np.concatenate([first, second]).astype(np.float32)

  def test_main_tower_statistics(self):
    moving, kernel = moving_mean_after_one_step('main', 2, self.clips)
    expected = (1 - DECAY) * conv_channel_means(self.clips[:4], kernel)
    self.assertAllClose(moving, expected, rtol=1e-4, atol=1e-6)

  def test_mean_over_towers_equals_one_big_batch(self):
    moving, kernel = moving_mean_after_one_step('mean', 2, self.clips)
    expected = (1 - DECAY) * conv_channel_means(self.clips, kernel)
    self.assertAllClose(moving, expected, rtol=1e-4, atol=1e-6)
    one_tower, _ = moving_mean_after_one_step('main', 1, self.clips)
    self.assertAllClose(moving, one_tower, rtol=1e-4, atol=1e-6)


if __name__ == '__main__':
  tf.test.main()

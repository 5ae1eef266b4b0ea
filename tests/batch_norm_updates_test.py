"""Specification: batch-norm moving statistics follow the main tower (default) or all
towers' examples as one batch (`bn_update=mean`); either way one update per step."""

import numpy as np
import tensorflow as tf

from model_fn import tower_model_fn
from tests import tower_testing
from towers.params import make_params

tf1 = tf.compat.v1
DECAY = 0.9  # c3d_small's batch-norm decay


def moving_statistics_after_one_step(bn_update, num_towers, clips):
  """(moving_mean, moving_variance, conv kernel) of block1 after one step from 0 and 1."""
  params = make_params(model='c3d_small', num_classes=3, clip_frames=4, crop_size=8,
                       batch_size=len(clips), num_towers=num_towers, bn_update=bn_update,
                       optimizer='sgd', lr_schedule='constant', lr_values=[1e-3],
                       model_dir='/tmp/unused')
  with tf.Graph().as_default():
    tf1.set_random_seed(3)
    spec = tower_model_fn.make_model_fn()(tf.constant(clips), tf.zeros([len(clips)], tf.int64),
                                          tf.estimator.ModeKeys.TRAIN, params)
    variables = {v.op.name: v for v in tf1.global_variables()}
    w = variables['c3d_small/block1/conv_3d/w']
    moving = [variables[f'c3d_small/block1/batch_norm/moving_{s}'] for s in ('mean', 'variance')]
    with tf1.Session(config=tower_testing.cpu_session_config(num_towers)) as sess:
      sess.run(tf1.global_variables_initializer())
      kernel = sess.run(w)
      sess.run(spec.train_op)
      return (*sess.run(moving), kernel)


def conv_channel_moments(clips, kernel):
  """Per-channel mean and (population) variance of block1's convolution output over
  `clips`, computed independently in numpy."""
  with tf.Graph().as_default(), tf1.Session() as sess:
    y = sess.run(tf.nn.conv3d(clips, kernel, [1, 1, 1, 1, 1], 'SAME'))
  flat = y.reshape(-1, y.shape[-1]).astype(np.float64)
  return flat.mean(axis=0), flat.var(axis=0)


def after_one_update(mean, variance):
  """Moving statistics after one update from their initial 0 (mean) and 1 (variance)."""
  return (1 - DECAY) * mean, DECAY * 1.0 + (1 - DECAY) * variance


class BatchNormUpdatesTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    rng = np.random.default_rng(0)
    # The two halves differ a lot, so main-tower and all-tower statistics differ.
    first = rng.uniform(-1, 0, (4, 4, 8, 8, 3))
    second = rng.uniform(0, 1, (4, 4, 8, 8, 3))
    self.clips = np.concatenate([first, second]).astype(np.float32)

  def _check(self, actual, clips, kernel):
    expected = after_one_update(*conv_channel_moments(clips, kernel))
    self.assertAllClose(actual[0], expected[0], rtol=1e-4, atol=1e-6, msg='moving_mean')
    self.assertAllClose(actual[1], expected[1], rtol=1e-4, atol=1e-6, msg='moving_variance')

  def test_main_tower_statistics(self):
    mean, variance, kernel = moving_statistics_after_one_step('main', 2, self.clips)
    self._check((mean, variance), self.clips[:4], kernel)

  def test_mean_over_towers_equals_one_big_batch(self):
    mean, variance, kernel = moving_statistics_after_one_step('mean', 2, self.clips)
    self._check((mean, variance), self.clips, kernel)

  def test_mean_over_uneven_towers_weights_by_size(self):
    # 3, 3, 2 examples: an unweighted mean of the towers' moments would differ.
    mean, variance, kernel = moving_statistics_after_one_step('mean', 3, self.clips)
    self._check((mean, variance), self.clips, kernel)

if __name__ == '__main__':
  tf.test.main()

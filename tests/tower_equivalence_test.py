"""Specification: towers change where work runs, never what one training step computes.

For 1, 2, 3 and 4 towers, with even and uneven splits, one SGD step of the tower model_fn
gives the same variables as one plain step on a single device with the whole batch
(network without batch norm; L2 weight decay on; tight tolerance). The same holds for a
user's own network passed to the model_fn (`build_estimator(params, network=...)`).
"""

import numpy as np
import tensorflow as tf

from model_fn import tower_model_fn
from model_fn.layers import TowerContext
from model_fn.networks import c3d_small
from tests import tower_testing
from towers.params import make_params

tf1 = tf.compat.v1

CLASSES = 5
WEIGHT_DECAY = 0.01
LR = 0.5


def _params(num_towers, batch):
  return make_params(model='c3d_small', num_classes=CLASSES, clip_frames=4, crop_size=16,
                     batch_norm=False, batch_size=batch, num_towers=num_towers,
                     optimizer='sgd', lr_schedule='constant', lr_values=[LR],
                     weight_decay=WEIGHT_DECAY, model_dir='/tmp/unused')


def _data(batch, seed=0):
  rng = np.random.default_rng(seed)
  clips = rng.uniform(-1, 1, size=(batch, 4, 16, 16, 3)).astype(np.float32)
  labels = rng.integers(0, CLASSES, size=batch).astype(np.int64)
  return clips, labels


def builtin_network():
  return c3d_small.build(CLASSES, use_batch_norm=False)


def custom_network(clips, ctx):
  """A user's network, written with plain tf.compat.v1.get_variable: conv, ReLU, mean, dense."""
  del ctx  # no batch norm, no dropout
  with tf1.variable_scope('custom'):
    w = tf1.get_variable('conv/w', [3, 3, 3, 3, 4], initializer=tf1.glorot_uniform_initializer())
    b = tf1.get_variable('conv/b', [4], initializer=tf1.constant_initializer(0.1))
    x = tf.nn.relu(tf.nn.conv3d(clips, w, [1] * 5, 'SAME') + b)
    x = tf.reduce_mean(x, axis=[1, 2, 3])
    kernel = tf1.get_variable('logits/kernel', [4, CLASSES],
                              initializer=tf1.glorot_uniform_initializer())
    return tf.matmul(x, kernel)


def _initial_values(batch, make_network=builtin_network):
  """Variable values of a freshly initialised network, to start every graph alike."""
  with tf.Graph().as_default():
    tf1.set_random_seed(1)
    make_network()(tf.zeros([batch, 4, 16, 16, 3]), TowerContext(is_training=True))
    with tf1.Session() as sess:
      sess.run(tf1.global_variables_initializer())
      return {v.op.name: sess.run(v) for v in tf1.global_variables()}


def reference_step(clips, labels, init, make_network=builtin_network):
  """One SGD step on one device: mean cross-entropy + weight_decay * sum(l2_loss(w))."""
  return tower_testing.reference_sgd_step(make_network(), clips, labels, init, LR, WEIGHT_DECAY)


def tower_step(clips, labels, init, num_towers, network=None):
  """One step of the tower model_fn; `network` None trains the built-in `params.model`."""
  return tower_testing.model_fn_step(tower_model_fn.make_model_fn(network), clips, labels,
                                     init, _params(num_towers, len(labels)))


class TowerEquivalenceTest(tf.test.TestCase):

  def _check(self, num_towers, batch, custom=False):
    # The custom network's conv bias gradient sums 8 x 4 x 16 x 16 ReLU outputs: split over
    # towers, float32 rounding moves it by ~1e-6 (a reduction error would be ~1e-2).
    atol = 1e-5 if custom else 1e-6
    clips, labels = _data(batch)
    make_network = (lambda: custom_network) if custom else builtin_network
    init = _initial_values(batch, make_network)
    expected = reference_step(clips, labels, init, make_network)
    actual = tower_step(clips, labels, init, num_towers, custom_network if custom else None)
    self.assertCountEqual(expected.keys(), actual.keys())
    for name, value in expected.items():
      self.assertGreater(np.abs(value - init[name]).max(), 0.0, f'{name} did not move')
      self.assertAllClose(value, actual[name], rtol=1e-5, atol=atol, msg=name)

  def test_one_tower_equals_single_device(self):
    self._check(1, 8)

  def test_two_towers_even(self):
    self._check(2, 8)

  def test_three_towers_uneven(self):
    self._check(3, 8)  # 3, 3, 2

  def test_four_towers_even(self):
    self._check(4, 8)

  def test_four_towers_uneven(self):
    self._check(4, 7)  # 2, 2, 2, 1

  def test_custom_network_one_tower(self):
    self._check(1, 8, custom=True)

  def test_custom_network_two_towers(self):
    self._check(2, 8, custom=True)

  def test_custom_network_three_towers_uneven(self):
    self._check(3, 8, custom=True)  # 3, 3, 2


if __name__ == '__main__':
  tf.test.main()

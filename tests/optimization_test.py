"""Specification: learning-rate schedules, warm-up, scaling and gradient clipping."""

import numpy as np
import tensorflow as tf

from model_fn import gradients, optimization
from towers.params import make_params

tf1 = tf.compat.v1


def rates(params, steps):
  with tf.Graph().as_default():
    step = tf1.placeholder(tf.int64, [])
    rate = optimization.learning_rate(params, step)
    with tf1.Session() as sess:
      return [float(sess.run(rate, {step: s})) for s in steps]


class LearningRateTest(tf.test.TestCase):

  def test_piecewise_holds_each_rate_up_to_and_including_its_boundary(self):
    params = make_params(lr_schedule='piecewise', lr_values=[0.3, 0.2, 0.1],
                         lr_boundaries=[10, 20])
    got = rates(params, [0, 10, 11, 20, 21, 100000])
    self.assertAllClose(got, [0.3, 0.3, 0.2, 0.2, 0.1, 0.1])

  def test_linear_warmup_then_schedule(self):
    params = make_params(lr_schedule='constant', lr_values=[0.4], warmup_steps=4)
    self.assertAllClose(rates(params, [0, 1, 3, 4, 100]), [0.1, 0.2, 0.4, 0.4, 0.4])

  def test_cosine_and_exponential(self):
    cosine = make_params(lr_schedule='cosine', lr_values=[1.0], max_steps=100)
    self.assertAllClose(rates(cosine, [0, 50, 100]), [1.0, 0.5, 0.0], atol=1e-6)
    exponential = make_params(lr_schedule='exponential', lr_values=[1.0],
                              lr_decay_steps=10, lr_decay_rate=0.5)
    self.assertAllClose(rates(exponential, [0, 10, 20]), [1.0, 0.5, 0.25])

  def test_linear_scaling_with_global_batch(self):
    params = make_params(lr_schedule='constant', lr_values=[0.1], batch_size=64,
                         lr_reference_batch=16)
    self.assertAllClose(rates(params, [0]), [0.4])

  def test_linear_scaling_counts_every_micro_batch_of_an_update(self):
    # 4 micro-batches of 16 clips: one update on 64 clips, scaled as batch_size=64.
    accumulated = make_params(lr_schedule='constant', lr_values=[0.1], batch_size=16,
                              accumulate_steps=4, lr_reference_batch=16)
    one_batch = make_params(lr_schedule='constant', lr_values=[0.1], batch_size=64,
                            lr_reference_batch=16)
    self.assertAllClose(rates(accumulated, [0, 5]), rates(one_batch, [0, 5]))
    self.assertAllClose(rates(accumulated, [0]), [0.4])
    self.assertAllClose(rates(make_params(lr_schedule='constant', lr_values=[0.1],
                                          batch_size=16, accumulate_steps=4), [0]), [0.1])

  def test_each_optimizer_is_built(self):
    for name, cls in [('momentum', tf1.train.MomentumOptimizer),
                      ('sgd', tf1.train.GradientDescentOptimizer),
                      ('adam', tf1.train.AdamOptimizer),
                      ('rmsprop', tf1.train.RMSPropOptimizer)]:
      self.assertIsInstance(optimization.make_optimizer(make_params(optimizer=name), 0.1), cls)


class ClippingTest(tf.test.TestCase):

  def test_clipping_bounds_the_global_norm(self):
    with tf.Graph().as_default():
      v1, v2 = tf.Variable([0.0, 0.0]), tf.Variable([0.0])
      pairs = [(tf.constant([3.0, 4.0]), v1), (tf.constant([12.0]), v2)]
      clipped, norm = gradients.clip_by_global_norm(pairs, 1.0)
      unclipped, _ = gradients.clip_by_global_norm(pairs, 0.0)
      with tf1.Session() as sess:
        norm, clipped, unclipped = sess.run([norm, [g for g, _ in clipped],
                                             [g for g, _ in unclipped]])
    self.assertAllClose(norm, 13.0)
    self.assertAllClose(np.sqrt(sum(np.sum(g ** 2) for g in clipped)), 1.0)
    self.assertAllClose(clipped[0], [3 / 13, 4 / 13])
    self.assertAllClose(unclipped[1], [12.0])

  def test_weight_decay_applies_to_kernels_only(self):
    with tf.Graph().as_default():
      with tf1.variable_scope('layer'):
        w = tf1.get_variable('w', initializer=[2.0])
        b = tf1.get_variable('b', initializer=[5.0])
      loss = gradients.weight_loss([w, b], 0.1)
      with tf1.Session() as sess:
        sess.run(tf1.global_variables_initializer())
        self.assertAllClose(sess.run(loss), 0.1 * 2.0)  # 0.1 * l2_loss([2]) = 0.1 * 4 / 2


if __name__ == '__main__':
  tf.test.main()

"""Specification: the Estimator built by `build_estimator` trains over towers, restores
checkpoints across tower counts, evaluates with EMA weights, serves, and learns."""

import os

import numpy as np
import tensorflow as tf

from model_fn.layers import TowerContext
from model_fn.networks import c3d_small
from towers import build_estimator
from towers.params import make_params
from towers.training import train_and_evaluate

tf1 = tf.compat.v1

SMALL = dict(model='c3d_small', num_classes=3, clip_frames=4, crop_size=16, batch_size=8,
             log_every_steps=1, save_checkpoints_steps=100)
RNG = np.random.default_rng(0)
CLIPS = RNG.uniform(-1, 1, (8, 4, 16, 16, 3)).astype(np.float32)
LABELS = (np.arange(8) % 3).astype(np.int64)


def train_input_fn():
  return tf.data.Dataset.from_tensors((CLIPS, LABELS)).repeat()


def predict_input_fn():
  return tf.data.Dataset.from_tensors(CLIPS)


def logits_of(estimator):
  return np.stack([p['logits'] for p in estimator.predict(predict_input_fn)])


class EstimatorTest(tf.test.TestCase):

  def test_checkpoints_interchange_between_tower_counts(self):
    model_dir = os.path.join(self.get_temp_dir(), 'interchange')
    four = build_estimator(dict(SMALL, num_towers=4, model_dir=model_dir))
    four.train(train_input_fn, max_steps=3)
    one = build_estimator(dict(SMALL, num_towers=1, model_dir=model_dir))
    self.assertAllClose(logits_of(one), logits_of(four), rtol=1e-5, atol=1e-5)
    one.train(train_input_fn, max_steps=5)  # continues the 4-tower checkpoint
    self.assertEqual(one.get_variable_value('global_step'), 5)
    self.assertAllClose(logits_of(four), logits_of(one), rtol=1e-5, atol=1e-5)

  def test_eval_and_predict_use_the_moving_average_weights(self):
    model_dir = os.path.join(self.get_temp_dir(), 'ema')
    estimator = build_estimator(dict(SMALL, num_towers=2, model_dir=model_dir, batch_norm=False,
                                     ema_decay=0.5, lr_schedule='constant', lr_values=[0.5]))
    estimator.train(train_input_fn, max_steps=4)
    checkpoint = estimator.latest_checkpoint()
    kernel = 'c3d_small/logits/kernel'
    raw = tf.train.load_variable(checkpoint, kernel)
    averaged = tf.train.load_variable(checkpoint, kernel + '/ExponentialMovingAverage')
    self.assertGreater(np.abs(raw - averaged).max(), 1e-4)

    def reference_logits(suffix):
      with tf.Graph().as_default():
        logits = c3d_small.build(3, use_batch_norm=False)(tf.constant(CLIPS), TowerContext())
        saver = tf1.train.Saver({v.op.name + suffix: v for v in tf1.global_variables()})
        with tf1.Session() as sess:
          saver.restore(sess, checkpoint)
          return sess.run(logits)

    predicted = logits_of(estimator)
    self.assertAllClose(predicted, reference_logits('/ExponentialMovingAverage'), atol=1e-5)
    self.assertNotAllClose(predicted, reference_logits(''), atol=1e-5)

  def test_predict_outputs_and_saved_model_export(self):
    from towers.estimator import serving_input_receiver_fn
    params = make_params(dict(SMALL, num_towers=2,
                              model_dir=os.path.join(self.get_temp_dir(), 'export')))
    estimator = build_estimator(params)
    estimator.train(train_input_fn, max_steps=1)
    prediction = next(estimator.predict(predict_input_fn))
    self.assertCountEqual(prediction, ['classes', 'probabilities', 'logits'])
    self.assertAllClose(prediction['probabilities'].sum(), 1.0, atol=1e-5)
    export_dir = estimator.export_saved_model(os.path.join(params.model_dir, 'export'),
                                              serving_input_receiver_fn(params))
    self.assertTrue(os.path.exists(os.path.join(export_dir, b'saved_model.pb')))

  def test_two_towers_learn_the_synthetic_motion_task(self):
    # 100 steps: the task is learned (top-1 1.0) from 60 on.
    params = make_params(model='c3d_small', data_source='synthetic', num_classes=4,
                         clip_frames=8, crop_size=32, batch_size=16, num_towers=2,
                         lr_boundaries=[75], lr_values=[0.05, 0.01], warmup_steps=10,
                         weight_decay=1e-4, max_steps=100, save_checkpoints_steps=100,
                         log_every_steps=100, synthetic_eval_examples=64,
                         model_dir=os.path.join(self.get_temp_dir(), 'learn'))
    metrics = train_and_evaluate(params)
    self.assertEqual(metrics['global_step'], 100)
    self.assertGreater(metrics['accuracy/top_1'], 0.7)  # chance is 0.25
    self.assertTrue(os.path.isdir(os.path.join(params.model_dir, 'export', 'best')))


if __name__ == '__main__':
  tf.test.main()

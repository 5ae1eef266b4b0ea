"""I3D through the tower model_fn: one warm-started training step on 2 towers (virtual CPU
devices), frozen endpoints, resume without warm start, and an evaluation."""

from __future__ import annotations

import os
import shutil
import tempfile

import numpy as np
import tensorflow as tf

from tests import i3d_test_lib as lib
from model_fn import tower_model_fn
from towers import params as params_lib

tf1 = tf.compat.v1

CLIP = (8, 32, 32, 3)
BATCH = 4
CLASSES = 5


def input_fn():
  rng = np.random.default_rng(0)
  clips = rng.uniform(-1, 1, (BATCH * 2, *CLIP)).astype(np.float32)
  labels = rng.integers(0, CLASSES, BATCH * 2).astype(np.int64)
  return tf.data.Dataset.from_tensor_slices((clips, labels)).repeat().batch(BATCH)


class I3dTowersTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.dir = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, self.dir, True)

  def test_warm_started_step_on_two_towers(self):
    prefix = os.path.join(self.dir, 'rgb_imagenet', 'model.ckpt')
    saved = lib.write_checkpoint(prefix, lib.fixture('rgb_imagenet'), seed=3)
    model_dir = os.path.join(self.dir, 'model')
    params = params_lib.make_params(
        model='i3d', num_classes=CLASSES, clip_frames=CLIP[0], crop_size=CLIP[1],
        batch_size=BATCH, num_towers=2, variable_device='cpu', optimizer='momentum',
        lr_schedule='constant', lr_values=(0.01,), weight_decay=7e-7, dropout_keep=0.5,
        warm_start_from=prefix, trainable_from='Mixed_5b', model_dir=model_dir,
        max_steps=2)
    config = tf.estimator.RunConfig(
        model_dir=model_dir, save_checkpoints_steps=100, tf_random_seed=0,
        session_config=tf1.ConfigProto(device_count={'CPU': 2}, allow_soft_placement=True))
    estimator = tf.estimator.Estimator(tower_model_fn.make_model_fn(), config=config,
                                       params=params)
    estimator.train(input_fn, steps=1)

    reader = tf.train.load_checkpoint(model_dir)
    self.assertEqual(reader.get_tensor('global_step'), 1)
    # Restored and frozen: exactly the checkpoint's values after the step.
    for name in ('RGB/inception_i3d/Conv3d_1a_7x7/conv_3d/w',
                 'RGB/inception_i3d/Mixed_4f/Branch_1/Conv3d_0b_3x3/conv_3d/w',
                 'RGB/inception_i3d/Mixed_4f/Branch_1/Conv3d_0b_3x3/batch_norm/beta'):
      self.assertAllEqual(reader.get_tensor(name), saved[name], msg=name)
    # Restored and trained: moved away from the checkpoint by one step.
    name = 'RGB/inception_i3d/Mixed_5c/Branch_0/Conv3d_0a_1x1/conv_3d/w'
    trained = reader.get_tensor(name)
    self.assertFalse(np.array_equal(trained, saved[name]))
    self.assertLess(np.max(np.abs(trained - saved[name])), 0.1)
    # The new 5-way head.
    w = reader.get_tensor('RGB/inception_i3d/Logits/Conv3d_0c_1x1/conv_3d/w')
    self.assertEqual(w.shape, (1, 1, 1, 1024, CLASSES))
    # One variable per name: the towers share them.
    names = [n for n, _ in tf.train.list_variables(model_dir)]
    self.assertFalse(any('tower' in n.lower() for n in names), names)

    # Resume: model_dir has a checkpoint, so no warm start (the checkpoint could be gone).
    os.remove(prefix + '.data-00000-of-00001')
    estimator.train(input_fn, max_steps=2)
    self.assertEqual(tf.train.load_checkpoint(model_dir).get_tensor('global_step'), 2)

    metrics = estimator.evaluate(input_fn, steps=1)
    self.assertIn('loss', metrics)
    self.assertTrue(np.isfinite(metrics['loss']))


if __name__ == '__main__':
  tf1.disable_eager_execution()
  tf.test.main()

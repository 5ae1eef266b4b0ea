"""Specification: `--strategy=mirrored` runs tf.distribute.MirroredStrategy with the same
network, flags and devices (virtual CPUs here) without hanging, for comparison."""

import os

import numpy as np
import tensorflow as tf

from towers import build_estimator

SMALL = dict(model='c3d_small', num_classes=3, clip_frames=4, crop_size=16, batch_size=8,
             log_every_steps=1, save_checkpoints_steps=100)
CLIPS = np.random.default_rng(0).uniform(-1, 1, (8, 4, 16, 16, 3)).astype(np.float32)
LABELS = (np.arange(8) % 3).astype(np.int64)


def train_input_fn():
  return tf.data.Dataset.from_tensors((CLIPS, LABELS)).repeat()


class MirroredTest(tf.test.TestCase):

  def test_mirrored_strategy_trains_on_the_same_network_and_devices(self):
    estimator = build_estimator(dict(SMALL, num_towers=2, strategy='mirrored',
                                     model_dir=os.path.join(self.get_temp_dir(), 'mirrored')))
    estimator.train(train_input_fn, max_steps=3)
    self.assertEqual(estimator.get_variable_value('global_step'), 3)
    metrics = estimator.evaluate(lambda: tf.data.Dataset.from_tensors((CLIPS, LABELS)), steps=1)
    self.assertIn('accuracy/top_1', metrics)



if __name__ == '__main__':
  tf.test.main()

"""Specification: `--strategy=mirrored` runs tf.distribute.MirroredStrategy with the same
network, flags and devices (virtual CPUs here) and the same reduction rule: one step over
2 replicas gives the variables of one plain single-device step on the whole batch. Options
it would not apply are refused."""

import os

import numpy as np
import tensorflow as tf

from input_fn import factory
from model_fn.networks import c3d_small
from tests import tiny_records, tower_testing
from towers import ParamsError, build_estimator, make_params

tf1 = tf.compat.v1

LR = 0.5
WEIGHT_DECAY = 0.01
SMALL = dict(model='c3d_small', num_classes=3, clip_frames=4, crop_size=16, batch_size=8,
             batch_norm=False, optimizer='sgd', lr_schedule='constant', lr_values=[LR],
             weight_decay=WEIGHT_DECAY, log_every_steps=1, save_checkpoints_steps=100)
CLIPS = np.random.default_rng(0).uniform(-1, 1, (8, 4, 16, 16, 3)).astype(np.float32)
LABELS = (np.arange(8) % 3).astype(np.int64)


def train_input_fn():
  return tf.data.Dataset.from_tensors((CLIPS, LABELS)).repeat()


def checkpoint_values(model_dir: str, step: int) -> dict[str, np.ndarray]:
  reader = tf.train.load_checkpoint(os.path.join(model_dir, f'model.ckpt-{step}'))
  return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


class MirroredTest(tf.test.TestCase):

  def test_one_step_over_two_replicas_equals_one_device_step(self):
    model_dir = os.path.join(self.get_temp_dir(), 'mirrored')
    estimator = build_estimator(dict(SMALL, num_towers=2, strategy='mirrored',
                                     model_dir=model_dir))
    estimator.train(train_input_fn, max_steps=1)  # checkpoints at steps 0 and 1
    before, after = checkpoint_values(model_dir, 0), checkpoint_values(model_dir, 1)
    expected = tower_testing.reference_sgd_step(
        c3d_small.build(3, use_batch_norm=False), CLIPS, LABELS, before, LR, WEIGHT_DECAY)
    for name, value in expected.items():
      self.assertGreater(np.abs(value - before[name]).max(), 0.0, f'{name} did not move')
      self.assertAllClose(value, after[name], rtol=1e-5, atol=1e-6, msg=name)
    metrics = estimator.evaluate(lambda: tf.data.Dataset.from_tensors((CLIPS, LABELS)), steps=1)
    self.assertIn('accuracy/top_1', metrics)

  def test_prepared_ucf101_records_train_mirrored(self):
    # The settings decision (names of UCF101 clips and their groups) runs in the model_fn
    # that the strategy calls: it is plain Python, never converted by autograph.
    root = self.create_tempdir().full_path
    ucf = tiny_records.make(root, (), classes=3, groups=9, min_frames=4, max_frames=5).data
    out = os.path.join(root, 'tfr')
    tiny_records.prepared(ucf, out, split=1)
    params = dict(SMALL, num_towers=2, strategy='mirrored', data_source='tfrecord',
                  data_dir=out, split=1, model_dir=os.path.join(root, 'run'))
    estimator = build_estimator(params)
    estimator.train(factory.make_input_fn(make_params(params), tf.estimator.ModeKeys.TRAIN),
                    max_steps=1)
    self.assertEqual(tf.train.load_variable(estimator.latest_checkpoint(), 'global_step'), 1)

  def test_options_mirrored_does_not_apply_are_refused(self):
    for unapplied in (dict(ema_decay=0.99), dict(clip_gradient_norm=1.0),
                      dict(sync_replicas=True), dict(bn_update='mean'),
                      dict(accumulate_steps=2), dict(variable_device='balanced'),
                      dict(transfer_dtype='bfloat16'),
                      dict(ema_decay=0.99, clip_gradient_norm=1.0, sync_replicas=True)):
      with self.subTest(unapplied):
        with self.assertRaises(ParamsError) as caught:
          make_params(strategy='mirrored', **unapplied)
        self.assertEqual(caught.exception.option, 'strategy')
        self.assertEqual(make_params(strategy='towers', **unapplied).strategy, 'towers')
    self.assertEqual(make_params(strategy='mirrored').strategy, 'mirrored')
    # tf.distribute splits batches evenly: 8 clips over 3 replicas is refused up front.
    for uneven, option in ((dict(batch_size=8), 'batch_size'),
                           (dict(batch_size=9, eval_batch_size=8), 'eval_batch_size')):
      with self.assertRaises(ParamsError) as caught:
        make_params(strategy='mirrored', num_towers=3, **uneven)
      self.assertEqual(caught.exception.option, option)
      self.assertEqual(make_params(strategy='towers', num_towers=3, **uneven).num_towers, 3)


if __name__ == '__main__':
  tf.test.main()

"""Two-stream evaluation: an RGB and a Flow model, each restored from its own model_dir,
fused by averaging logits; compared against each stream evaluated on its own."""

from __future__ import annotations

import os
import shutil
import tempfile
import unittest

import numpy as np
import tensorflow as tf

import i3d_test_lib as lib
from model_fn import layers
from towers import two_stream
from model_fn.networks import build_network
from towers import params as params_lib

tf1 = tf.compat.v1

CLIPS, FRAMES, SIZE, CLASSES = 6, 8, 32, 4


def make(stream: str, model_dir: str, **overrides) -> params_lib.TrainParams:
  return params_lib.make_params(dict(
      model='i3d', stream=stream, num_classes=CLASSES, clip_frames=FRAMES, crop_size=SIZE,
      batch_size=4, model_dir=model_dir, **overrides))


def fabricate_model_dir(params, seed: int) -> None:
  """A model_dir whose checkpoint holds random values for every network variable."""
  with tf.Graph().as_default():
    channels = 3 if params.stream == 'rgb' else 2
    build_network(params)(tf1.placeholder(tf.float32, [1, FRAMES, SIZE, SIZE, channels]),
                          layers.TowerContext())
    layout = [(v.op.name, v.shape.as_list()) for v in tf1.global_variables()]
  prefix = os.path.join(params.model_dir, 'model.ckpt-7')
  lib.write_checkpoint(prefix, layout, seed=seed)
  tf1.train.update_checkpoint_state(params.model_dir, prefix)


def stream_logits(params, clips: np.ndarray) -> np.ndarray:
  """One stream alone, restored with a plain Saver: the reference."""
  with tf.Graph().as_default():
    x = tf1.placeholder(tf.float32, clips.shape)
    logits = build_network(params)(x, layers.TowerContext(is_training=False))
    with tf1.Session() as sess:
      tf1.train.Saver().restore(sess, tf.train.latest_checkpoint(params.model_dir))
      return sess.run(logits, {x: clips})


class TwoStreamTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.dir = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, self.dir, True)
    rng = np.random.default_rng(0)
    self.rgb_clips = rng.uniform(-1, 1, (CLIPS, FRAMES, SIZE, SIZE, 3)).astype(np.float32)
    self.flow_clips = rng.uniform(-1, 1, (CLIPS, FRAMES, SIZE, SIZE, 2)).astype(np.float32)

  def input_fn_for(self, labels: np.ndarray):
    def input_fn():
      return tf.data.Dataset.from_tensor_slices(
          ({'rgb': self.rgb_clips, 'flow': self.flow_clips}, labels)).batch(4)
    return input_fn

  def test_fused_accuracy(self):
    rgb = make('rgb', os.path.join(self.dir, 'rgb'))
    flow = make('flow', os.path.join(self.dir, 'flow'), head='stack', pretrained_classes=400)
    fabricate_model_dir(rgb, seed=1)
    fabricate_model_dir(flow, seed=2)
    rgb_logits = stream_logits(rgb, self.rgb_clips)
    flow_logits = stream_logits(flow, self.flow_clips)
    fused = (rgb_logits + flow_logits) / 2
    # Labels: what the fused model predicts for the first 4 clips, something else after.
    labels = np.argmax(fused, axis=1)
    labels[4:] = (labels[4:] + 1) % CLASSES
    result = two_stream.evaluate_two_stream(rgb, flow, self.input_fn_for(labels))
    self.assertEqual(result.examples, CLIPS)
    self.assertAllClose(result.fused_logits, fused, rtol=1e-4, atol=1e-5)
    self.assertAlmostEqual(result.fused_accuracy, 4 / CLIPS)
    self.assertAlmostEqual(result.rgb_accuracy, float(np.mean(np.argmax(rgb_logits, 1) == labels)))
    self.assertAlmostEqual(result.flow_accuracy,
                           float(np.mean(np.argmax(flow_logits, 1) == labels)))
    # steps bounds the batches read.
    self.assertEqual(two_stream.evaluate_two_stream(
        rgb, flow, self.input_fn_for(labels), steps=1).examples, 4)

  def test_errors(self):
    rgb = make('rgb', os.path.join(self.dir, 'rgb'))
    flow = make('flow', os.path.join(self.dir, 'flow'))
    with self.assertRaisesRegex(ValueError, 'stream=flow'):
      two_stream.evaluate_two_stream(rgb, rgb, self.input_fn_for(np.zeros(CLIPS, np.int64)))
    with self.assertRaisesRegex(FileNotFoundError, 'train it first'):
      two_stream.evaluate_two_stream(rgb, flow, self.input_fn_for(np.zeros(CLIPS, np.int64)))


if __name__ == '__main__':
  tf1.disable_eager_execution()
  unittest.main()

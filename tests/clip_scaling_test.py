"""Specification: uint8 clips (what the TFRecord route gives the Estimator) are scaled to
[-1, 1] on each tower's device, to exactly the values the input pipeline's own float
scaling gives, so a model sees the same numbers either way."""

import numpy as np
import tensorflow as tf

from input_fn import pipeline
from model_fn import tower_graph, tower_model_fn
from towers.params import make_params

tf1 = tf.compat.v1
RNG = np.random.default_rng(0)
BYTES = RNG.integers(0, 256, (4, 4, 16, 16, 3), dtype=np.uint8)
LABELS = np.array([0, 1, 2, 0], np.int64)
PARAMS = make_params(model='c3d_small', num_classes=3, clip_frames=4, crop_size=16,
                     batch_size=4, num_towers=2)


def eval_loss(clips: np.ndarray) -> tuple[float, tf.Graph]:
  """The EVAL loss of a freshly initialised (seeded) 2-tower model_fn on `clips`, and its
  graph."""
  graph = tf.Graph()
  with graph.as_default():
    tf1.set_random_seed(1)
    spec = tower_model_fn.make_model_fn()(tf.constant(clips), tf.constant(LABELS),
                                          tf.estimator.ModeKeys.EVAL, PARAMS)
    with tf1.Session(graph=graph, config=tf1.ConfigProto(device_count={'CPU': 2})) as sess:
      sess.run(tf1.global_variables_initializer())
      return float(sess.run(spec.loss)), graph


class ClipScalingTest(tf.test.TestCase):

  def test_every_byte_scales_like_the_pipeline(self):
    every_byte = tf.constant(np.arange(256, dtype=np.uint8))
    self.assertAllEqual(tower_graph.float_clips(every_byte),
                        pipeline.to_unit_range(every_byte))
    self.assertEqual(tower_graph.float_clips(every_byte).dtype, tf.float32)

  def test_float_clips_pass_unchanged(self):
    clips = tf.constant(np.linspace(-1, 1, 7, dtype=np.float32))
    self.assertIs(tower_graph.float_clips(clips), clips)

  def test_model_fn_gives_the_same_loss_for_bytes_and_scaled_floats(self):
    scaled = pipeline.to_unit_range(tf.constant(BYTES)).numpy()
    loss_bytes, graph = eval_loss(BYTES)
    loss_floats, _ = eval_loss(scaled)
    self.assertEqual(loss_bytes, loss_floats)
    # The scaling runs in each tower, on that tower's device, after the split.
    casts = {op.name.split('/')[0]: op.device for op in graph.get_operations()
             if op.type == 'Cast' and op.inputs[0].dtype == tf.uint8}
    self.assertEqual(sorted(casts), ['tower_0', 'tower_1'])
    self.assertTrue(casts['tower_0'].endswith('CPU:0'), casts)
    self.assertTrue(casts['tower_1'].endswith('CPU:1'), casts)


if __name__ == '__main__':
  tf.test.main()

"""model_fn/train_view: the training top-1 over every tower and micro-batch, and the frames
of the step's first clip as images (RGB pixels; flow through the Middlebury wheel)."""

import numpy as np
import tensorflow as tf

from input_fn import flow_colors
from model_fn import train_view
from model_fn.tower_graph import TowerOutputs

tf1 = tf.compat.v1


def _summaries(logits, label_parts, clips, stream):
  """{tag: float, or the frames [W, H, 3] of its one image} of what `train_view` writes."""
  with tf.Graph().as_default():
    outputs = TowerOutputs([tf.constant(l, tf.float32) for l in logits], None, [], [], ())
    train_view.train_view_summaries(outputs, [tf.constant(l, tf.int64) for l in label_parts],
                                    tf.constant(clips), stream)
    with tf1.Session() as sess:
      summary = tf1.Summary.FromString(sess.run(tf1.summary.merge_all()))
  found = {}
  for value in summary.value:
    if value.HasField('image'):
      strip = tf.io.decode_png(value.image.encoded_image_string).numpy()
      width = clips.shape[3]
      found[value.tag] = [strip[:, i:i + width] for i in range(0, strip.shape[1], width)]
    else:
      found[value.tag] = value.simple_value
  return found


class TrainViewTest(tf.test.TestCase):

  def test_top_1_counts_every_tower_of_every_micro_batch(self):
    # Two micro-batches over two towers: rows (tower order within micro-batch order) line
    # up with the micro-batches' labels; 3 of the 5 clips are right.
    logits = [[[2, 0, 0], [0, 3, 0]], [[0, 0, 1]], [[1, 0, 0]], [[0, 5, 0]]]
    labels = [[0, 1, 0], [2, 1]]
    clips = np.zeros((5, 8, 4, 4, 3), np.float32)
    found = _summaries(logits, labels, clips, 'rgb')
    self.assertAlmostEqual(found['accuracy/top_1'], 3 / 5)

  def test_rgb_frames_are_the_clip_back_in_pixels(self):
    clips = np.zeros((2, 8, 4, 5, 3), np.float32)
    clips[0] = np.linspace(-1.0, 1.0, 8)[:, None, None, None]  # frame t: one gray level
    clips[1] = 0.5  # another clip: never shown
    images = _summaries([[[1.0, 0.0]]], [[0]], clips, 'rgb')['train/clip/image']
    self.assertLen(images, train_view.FRAMES)
    self.assertEqual(images[0].shape, (4, 5, 3))
    # Frames 0, 2, 5, 7 of 8 (evenly spaced), pixel = (x + 1) * 127.5.
    expected = np.round((np.linspace(-1.0, 1.0, 8)[[0, 2, 5, 7]] + 1) * 127.5)
    self.assertEqual([int(i[0, 0, 0]) for i in images], expected.astype(int).tolist())

  def test_uint8_clips_are_shown_as_read(self):
    clips = np.full((1, 3, 2, 2, 3), 200, np.uint8)
    images = _summaries([[[1.0, 0.0]]], [[0]], clips, 'rgb')['train/clip/image']
    self.assertLen(images, 3)  # a clip shorter than FRAMES: each frame once
    self.assertTrue(all((i == 200).all() for i in images))

  def test_flow_frames_are_color_coded_with_one_scale_per_clip(self):
    rng = np.random.default_rng(0)
    clips = rng.uniform(-0.3, 0.3, (1, 4, 6, 6, 2)).astype(np.float32)
    images = _summaries([[[1.0, 0.0]]], [[0]], clips, 'flow')['train/clip/image']
    expected = flow_colors.flow_to_rgb(clips[0, ..., 0], clips[0, ..., 1])
    self.assertLen(images, 4)
    for shown, want in zip(images, expected):
      self.assertAllEqual(shown, want)


if __name__ == '__main__':
  tf.test.main()

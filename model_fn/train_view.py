"""What a training run shows in TensorBoard besides its losses: accuracy and its input.

    train_view_summaries(outputs, label_parts, clips, stream) -> None

`accuracy/top_1`: the fraction of the step's clips (every tower and micro-batch) whose
largest logit is their label, from the logits the step computed (training mode: after
augmentation, with dropout); the same tag as the evaluation's, so TensorBoard draws both
runs on one chart. `train/clip`: one image, FRAMES frames side by side, evenly spaced in the
step's first clip as the network sees it (cropped, flipped, scaled), back to uint8 pixels:
RGB as they are, flow
(u, v) color-coded with the Middlebury wheel (`input_fn/flow_colors.py`, scaled by the
clip's largest displacement). Summary ops run only when the Estimator writes summaries
(every `log_every_steps`), never in the other steps.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import tensorflow as tf

from input_fn import flow_colors
from model_fn.devices import HOST_DEVICE
from model_fn.tower_graph import TowerOutputs, float_clips

tf1 = tf.compat.v1

FRAMES = 4  # frames of the clip shown


def train_view_summaries(outputs: TowerOutputs, label_parts: Sequence[tf.Tensor],
                         clips: tf.Tensor, stream: str) -> None:
  """Writes `accuracy/top_1` of `outputs.logits` (every tower of every micro-batch, in
  order) against `label_parts` (the micro-batches' labels) and `train/clip` of `clips[0]`
  (uint8 or float32 [B, T, H, W, C], C = 3 rgb, 2 flow)."""
  predictions = []
  for logits in outputs.logits:
    with tf.device(logits.device):
      predictions.append(tf.argmax(logits, axis=1, output_type=tf.int64))
  with tf.device(HOST_DEVICE):
    labels = tf.cast(tf.concat(list(label_parts), axis=0), tf.int64)
    correct = tf.equal(tf.concat(predictions, axis=0), labels)
    tf1.summary.scalar('accuracy/top_1', tf.reduce_mean(tf.cast(correct, tf.float32)))
    frames = _shown_frames(clips[0])
    if stream == 'flow':
      images = tf.numpy_function(_flow_images, [frames], tf.uint8, stateful=False)
      images.set_shape(frames.shape[:-1].concatenate([3]))
    else:
      images = tf.cast(tf.round((frames + 1.0) * 127.5), tf.uint8)
    shape = tf.shape(images)  # [frames, H, W, 3] -> one strip [1, H, frames * W, 3]
    strip = tf.reshape(tf.transpose(images, [1, 0, 2, 3]), [1, shape[1], -1, 3])
    tf1.summary.image('train/clip', strip, max_outputs=1)


def _shown_frames(clip: tf.Tensor) -> tf.Tensor:
  """float32 [min(FRAMES, T), H, W, C] in [-1, 1]: evenly spaced frames of `clip` [T, ...]."""
  last = tf.cast(tf.shape(clip)[0] - 1, tf.float32)
  picked = tf.unique(tf.cast(tf.round(tf.linspace(0.0, last, FRAMES)), tf.int32)).y
  return tf.gather(float_clips(clip), picked)


def _flow_images(frames: np.ndarray) -> np.ndarray:
  """float32 [N, H, W, 2] (u, v in [-1, 1]) -> uint8 [N, H, W, 3], one scale for all."""
  return flow_colors.flow_to_rgb(frames[..., 0], frames[..., 1])

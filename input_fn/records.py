"""The TFRecord schema written by `//input_fn:prepare`: one `tf.train.Example` per video.

Features:
  `frames`      bytes list, one JPEG (RGB, 3 channels) per frame, in time order.
  `num_frames`  int64, len(frames).
  `label`       int64, 0-based class (classInd.txt label - 1).
  `video`       bytes, file stem, e.g. b'v_ApplyEyeMakeup_g08_c01'.
  `class_name`  bytes, classInd.txt spelling.
  `index`       int64, position of the video in its split list (0..n-1): the eval `video_index`.
  `height`, `width`  int64, frame size in pixels.

Shard files are `<subset>-SSSSS-of-NNNNN.tfrecord` (subset: train or test) beside a
`<subset>.manifest.json`.
"""

from __future__ import annotations

from typing import Sequence

import tensorflow as tf

SHARD_PATTERN = '{subset}-{shard:05d}-of-{num_shards:05d}.tfrecord'
SHARD_GLOB = '{subset}-*-of-*.tfrecord'
MANIFEST = '{subset}.manifest.json'

FEATURES = {
    'frames': tf.io.VarLenFeature(tf.string),
    'num_frames': tf.io.FixedLenFeature([], tf.int64),
    'label': tf.io.FixedLenFeature([], tf.int64),
    'video': tf.io.FixedLenFeature([], tf.string),
    'class_name': tf.io.FixedLenFeature([], tf.string, default_value=b''),
    'index': tf.io.FixedLenFeature([], tf.int64, default_value=-1),
    'height': tf.io.FixedLenFeature([], tf.int64, default_value=0),
    'width': tf.io.FixedLenFeature([], tf.int64, default_value=0),
}


def make_example(video: str, label: int, jpegs: Sequence[bytes], index: int,
                 class_name: str, height: int, width: int) -> bytes:
  """Serialized `tf.train.Example` of one video (see the module docstring)."""
  def int64(v: int) -> tf.train.Feature:
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v)]))

  def byte(values: Sequence[bytes]) -> tf.train.Feature:
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=list(values)))

  example = tf.train.Example(features=tf.train.Features(feature={
      'frames': byte(jpegs),
      'num_frames': int64(len(jpegs)),
      'label': int64(label),
      'video': byte([video.encode()]),
      'class_name': byte([class_name.encode()]),
      'index': int64(index),
      'height': int64(height),
      'width': int64(width),
  }))
  return example.SerializeToString()


def parse(serialized: tf.Tensor) -> dict[str, tf.Tensor]:
  """Parses one serialized record; `frames` becomes a dense string vector [num_frames]."""
  parsed = tf.io.parse_single_example(serialized, FEATURES)
  parsed['frames'] = parsed['frames'].values
  return parsed

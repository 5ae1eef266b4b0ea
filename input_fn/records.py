"""The TFRecord schema written by `//data_tools:prepare`: one `tf.train.Example` per video.

Features:
  `frames`      bytes list, one JPEG (RGB, 3 channels) per frame, in time order; empty in
                flow records.
  `flow_u`, `flow_v`  flow records (`prepare --source=flow`): bytes lists, one 8-bit
                grayscale JPEG per flow frame for the horizontal (u) and vertical (v)
                displacement (coding: `input_fn/flow.py`); empty in RGB records.
  `num_frames`  int64, frames (or flow frames) per channel.
  `label`       int64, 0-based class (classInd.txt label - 1).
  `video`       bytes, file stem, e.g. b'v_ApplyEyeMakeup_g08_c01'.
  `class_name`  bytes, classInd.txt spelling.
  `index`       int64, position of the video in its split list (0..n-1): the eval `video_index`.
  `height`, `width`  int64, frame size in pixels.

Shard files are `<subset>-SSSSS-of-NNNNN.tfrecord` (subset: train or test) listed with
their record counts in `<subset>.manifest.json` (`input_fn/manifest.py`; its `kind` is
`flow` for flow records). Compatible changes only: new features get a default, so older
records still parse. `first_video` reads a shard's first video name without its frames,
`first_video_checked` the same from the whole first record, its checksums verified;
`record_count` counts a shard's records from their lengths alone.
"""

from __future__ import annotations

import itertools
from typing import BinaryIO, Iterator, Sequence

import tensorflow as tf
from google.protobuf import message as protobuf_message

SHARD_PATTERN = '{subset}-{shard:05d}-of-{num_shards:05d}.tfrecord'

FEATURES = {
    'frames': tf.io.VarLenFeature(tf.string),
    'flow_u': tf.io.VarLenFeature(tf.string),
    'flow_v': tf.io.VarLenFeature(tf.string),
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
  """Serialized `tf.train.Example` of one video's RGB frames (see the module docstring)."""
  return _example(video, label, {'frames': jpegs}, len(jpegs), index, class_name, height,
                  width)


def make_flow_example(video: str, label: int, u_jpegs: Sequence[bytes],
                      v_jpegs: Sequence[bytes], index: int, class_name: str, height: int,
                      width: int) -> bytes:
  """Serialized `tf.train.Example` of one video's flow; u and v hold the same count."""
  if len(u_jpegs) != len(v_jpegs):
    raise ValueError(f'{video}: {len(u_jpegs)} u frames but {len(v_jpegs)} v frames')
  return _example(video, label, {'flow_u': u_jpegs, 'flow_v': v_jpegs}, len(u_jpegs), index,
                  class_name, height, width)


def _example(video: str, label: int, images: dict[str, Sequence[bytes]], num_frames: int,
             index: int, class_name: str, height: int, width: int) -> bytes:
  def int64(v: int) -> tf.train.Feature:
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v)]))

  def byte(values: Sequence[bytes]) -> tf.train.Feature:
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=list(values)))

  example = tf.train.Example(features=tf.train.Features(feature={
      **{key: byte(jpegs) for key, jpegs in images.items()},
      'num_frames': int64(num_frames),
      'label': int64(label),
      'video': byte([video.encode()]),
      'class_name': byte([class_name.encode()]),
      'index': int64(index),
      'height': int64(height),
      'width': int64(width),
  }))
  return example.SerializeToString()


def parse(serialized: tf.Tensor) -> dict[str, tf.Tensor]:
  """Parses one serialized record; `frames`, `flow_u` and `flow_v` become dense string
  vectors (empty when the record has none)."""
  parsed = tf.io.parse_single_example(serialized, FEATURES)
  for key in ('frames', 'flow_u', 'flow_v'):
    parsed[key] = parsed[key].values
  return parsed


def frame_shape(serialized: bytes) -> tuple[str, int, int, int]:
  """(video, frames, height, width) of one serialized record, without decoding its frames
  (height and width 0 in records written before they were stored). ValueError for a record
  that is not a tf.train.Example."""
  try:
    features = tf.train.Example.FromString(serialized).features.feature
  except protobuf_message.DecodeError as e:
    raise ValueError(f'not a tf.train.Example ({e})') from e
  def number(key: str) -> int:
    return int(features[key].int64_list.value[0]) if key in features else 0
  video = features['video'].bytes_list.value[0].decode('utf-8', 'replace')
  return video, number('num_frames'), number('height'), number('width')


def first_records(path: str, count: int) -> list[bytes]:
  """The first `count` serialized records of a TFRecord file (fewer if it holds fewer),
  read by its framing (`_record_spans`) without reading the rest. Raises ValueError for a
  file cut inside a record."""
  found = []
  with tf.io.gfile.GFile(path, 'rb') as f:
    spans = _record_spans(f, tf.io.gfile.stat(path).length, path)
    for _, length in itertools.islice(spans, count):  # never framing past the count-th
      found.append(f.read(length))
  return found


def _record_spans(f: BinaryIO, size: int, path: str) -> Iterator[tuple[int, int]]:
  """(start, length) of each record's data in the TFRecord file `f` of `size` bytes, read
  from its framing alone (length uint64, its CRC, data, data CRC; CRCs not checked), f at
  the record's start when yielded and moved past it after. ValueError naming `path` when
  the file ends inside a record."""
  while f.tell() < size:
    header = f.read(12)
    start = f.tell()
    length = int.from_bytes(header[:8], 'little')
    if len(header) < 12 or start + length + 4 > size:
      raise ValueError(f'{path}: cut inside a record')
    yield start, length
    f.seek(start + length + 4)


def first_video(path: str) -> str | None:
  """The `video` of the first record of the TFRecord file at `path`, found by seeking over
  the record's other features (its frames are never read: a few hundred bytes read per
  shard, whatever its size). None when the file holds no record or its first record is not
  a tf.train.Example with a video (damaged; CRCs are not checked)."""
  try:
    with tf.io.gfile.GFile(path, 'rb') as f:
      start, length = next(_record_spans(f, tf.io.gfile.stat(path).length, path), (0, 0))
      for field, _, features_end in _length_fields(f, start + length):  # Example.features
        for entry, _, entry_end in _length_fields(f, features_end) if field == 1 else ():
          video = _video_of_entry(f, entry_end) if entry == 1 else None  # Features.feature
          if video is not None:
            return video
  except (tf.errors.OpError, OSError, ValueError, IndexError, protobuf_message.DecodeError):
    return None
  return None


def first_video_checked(path: str) -> str | None:
  """`first_video` read as training reads it: the whole first record through TensorFlow's
  reader, its checksums verified. None when the file holds no record or its first record
  is damaged (a corrupt or cut record, not an Example with a video)."""
  try:
    for serialized in tf.compat.v1.io.tf_record_iterator(path):
      return frame_shape(serialized)[0]
  except (tf.errors.OpError, ValueError, IndexError):
    return None
  return None


def record_count(path: str) -> int | None:
  """How many records the TFRecord file at `path` holds, from its framing alone
  (`_record_spans`: 12 bytes read per record). None when the file ends inside a record
  (cut short)."""
  with tf.io.gfile.GFile(path, 'rb') as f:
    try:
      return sum(1 for _ in _record_spans(f, tf.io.gfile.stat(path).length, path))
    except ValueError:
      return None


def _video_of_entry(f: BinaryIO, end: int) -> str | None:
  """The video name held by the map entry of `Features.feature` at f's position (ending at
  `end`) when its key is `video`, else None (its value is then never read)."""
  key, value = None, None
  for field, start, stop in _length_fields(f, end):
    if field == 1:
      key = f.read(stop - start)
    elif field == 2:
      value = (start, stop)
  if key != b'video' or value is None:
    return None
  f.seek(value[0])
  feature = tf.train.Feature.FromString(f.read(value[1] - value[0]))
  return feature.bytes_list.value[0].decode('utf-8', 'replace')


def _length_fields(f: BinaryIO, end: int) -> Iterator[tuple[int, int, int]]:
  """(field number, start, end) of each field of the protobuf message from f's position to
  `end`, seeking past each one once the caller is done with it. Every field of an Example
  down to its feature values is length-delimited: ValueError for another wire type, a field
  past `end` or a file cut short."""
  while f.tell() < end:
    tag = _varint(f)
    if tag & 7 != 2:
      raise ValueError(f'wire type {tag & 7} where an Example has length-delimited fields')
    length = _varint(f)
    start = f.tell()
    if start + length > end:
      raise ValueError('a field runs past its message')
    yield tag >> 3, start, start + length
    f.seek(start + length)


def _varint(f: BinaryIO) -> int:
  """The protobuf varint at f's position; ValueError when the file ends inside it."""
  value, shift = 0, 0
  while shift < 64:
    byte = f.read(1)
    if not byte:
      raise ValueError('cut inside a varint')
    value |= (byte[0] & 0x7f) << shift
    if byte[0] < 0x80:
      return value
    shift += 7
  raise ValueError('a varint longer than 10 bytes')

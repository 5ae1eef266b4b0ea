"""The global step of a model_dir's latest checkpoint: the one place that reads it; and the
line a restore that cannot read that checkpoint ends with.

    checkpoint_step(model_dir) -> int | None
    damaged_checkpoint_line(error, model_dir) -> str | None
    mark_graph(); trained_recording(checkpoint) -> bool   # a run that records its settings
"""

from __future__ import annotations

import os

import tensorflow as tf
from google.protobuf import message as protobuf_message
from tensorflow.core.protobuf import meta_graph_pb2

# A constant in every training graph of a run that records its settings
# (`towers/train_settings.py`): each checkpoint's .meta carries it.
RECORDING_MARKER = 'video_towers_records_its_settings'


def checkpoint_step(model_dir: str) -> int | None:
  """The `global_step` saved in model_dir's latest checkpoint (the one its `checkpoint`
  file names); None when model_dir is empty, absent or holds no checkpoint."""
  checkpoint = tf.train.latest_checkpoint(model_dir) if model_dir else None
  if checkpoint is None:
    return None
  return int(tf.train.load_variable(checkpoint, 'global_step'))


def damaged_checkpoint_line(error: tf.errors.OpError, model_dir: str) -> str | None:
  """One line naming model_dir's latest checkpoint and the fix when `error` is its restore
  failing on its files (truncated or corrupt: a copy cut short, a disk error); None for any
  other error."""
  if 'Restore' not in (getattr(error.op, 'name', '') or '') + error.message:
    return None
  latest = tf.train.latest_checkpoint(model_dir) if model_dir else None
  if latest is None:
    return None
  state = tf.train.get_checkpoint_state(model_dir)
  earlier = [p for p in (state.all_model_checkpoint_paths if state else ()) if p != latest]
  back = (f'delete its files ({latest}.*) and write model_checkpoint_path: '
          f'"{os.path.basename(earlier[-1])}" into {os.path.join(model_dir, "checkpoint")} so '
          f'that the next run starts from the one before ({earlier[-1]}), ' if earlier else '')
  reason = error.message.strip().splitlines()[0] if error.message.strip() else type(error).__name__
  return (f'the checkpoint {latest} cannot be read ({reason}): its files are damaged (a copy '
          f'cut short, a disk error); {back}or train in a new --model_dir')


def mark_graph() -> None:
  """Adds RECORDING_MARKER to the training graph being built (a run that records its
  settings), so that every checkpoint it saves says so in its .meta."""
  with tf.compat.v1.name_scope(None):
    tf.constant(True, name=RECORDING_MARKER)


def trained_recording(checkpoint: str) -> bool:
  """Whether the checkpoint prefix `checkpoint` was saved past step 0 by a run that records
  its settings (`mark_graph`, in `<checkpoint>.meta`): its model_dir had a
  train_settings.json listing the videos it learnt. False without a readable .meta (a
  checkpoint copied without it, another tool's, DeepMind's) or at step 0 (nothing learnt
  yet: a run stopped at its first save may not have written its record)."""
  path = checkpoint + '.meta'
  try:
    if not tf.io.gfile.exists(path) or not tf.train.load_variable(checkpoint, 'global_step'):
      return False
    meta = meta_graph_pb2.MetaGraphDef.FromString(tf.io.gfile.GFile(path, 'rb').read())
  except (tf.errors.OpError, ValueError, protobuf_message.DecodeError):
    return False
  return any(node.name == RECORDING_MARKER for node in meta.graph_def.node)

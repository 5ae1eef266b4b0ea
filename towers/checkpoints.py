"""The global step of a model_dir's latest checkpoint: the one place that reads it.

    checkpoint_step(model_dir) -> int | None
"""

from __future__ import annotations

import tensorflow as tf


def checkpoint_step(model_dir: str) -> int | None:
  """The `global_step` saved in model_dir's latest checkpoint (the one its `checkpoint`
  file names); None when model_dir is empty, absent or holds no checkpoint."""
  checkpoint = tf.train.latest_checkpoint(model_dir) if model_dir else None
  if checkpoint is None:
    return None
  return int(tf.train.load_variable(checkpoint, 'global_step'))

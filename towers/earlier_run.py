"""What an earlier training run left in a model_dir without a checkpoint, set aside.

    set_aside(model_dir) -> str | None   the directory it moved them to

Deleting a model_dir's checkpoints (`model.ckpt-*` and `checkpoint`) is how one starts it
over. A run that then starts from step 0 moves what the earlier run left there (LEFT_BEHIND:
its best export, evaluations, final evaluation, training events and learning-settings
record) into `<model_dir>/earlier_run_<UTC time>/`, says so on one line and records the
`earlier_run_set_aside` status event: nothing of it is taken for this run's (its exports
and final evaluation would not count anyway, being of another lineage:
`towers/cluster/lineage.py`), nothing is deleted, and TensorBoard shows it as a run of its
own. `run.flags` stays: it may be the flagfile of this very run.
"""

from __future__ import annotations

import os
import time

import tensorflow as tf
from absl import logging

from command_line import status_file
from towers.cluster import final_evaluation, lineage

tf1 = tf.compat.v1

# What a run leaves in model_dir besides checkpoints, run.flags and files it rewrites.
LEFT_BEHIND = ('export', 'eval', final_evaluation.FILE_NAME, lineage.RECORD_FILE)
EVENTS_PATTERN = 'events.out.tfevents.*'
PREFIX = 'earlier_run_'


class EarlierRunError(ValueError):
  """What an earlier run left cannot be moved aside (e.g. a mount point); names it and the
  fix. `option`: 'model_dir'."""

  def __init__(self, message: str, option: str = 'model_dir') -> None:
    super().__init__(message)
    self.option = option


def _holds_something(path: str) -> bool:
  """A file, or a directory that is not empty: an empty folder (say a disk mounted at
  model_dir/export for the exports) holds nothing an earlier run left."""
  if not tf.io.gfile.exists(path):
    return False
  return not tf.io.gfile.isdir(path) or bool(tf.io.gfile.listdir(path))


def set_aside(model_dir: str) -> str | None:
  """When model_dir holds no checkpoint but what an earlier run left (LEFT_BEHIND, training
  event files), moves them into a new `earlier_run_<UTC time>/` in it and returns that
  directory; None when there was nothing to move (or a checkpoint: a resume keeps all)."""
  if not tf.io.gfile.isdir(model_dir) or tf.train.latest_checkpoint(model_dir) is not None:
    return None
  names = [name for name in LEFT_BEHIND if _holds_something(os.path.join(model_dir, name))]
  names += sorted(os.path.basename(path) for path in
                  tf.io.gfile.glob(os.path.join(model_dir, EVENTS_PATTERN)))
  if not names:
    return None
  aside = os.path.join(model_dir, PREFIX + time.strftime('%Y%m%d-%H%M%S', time.gmtime()))
  while tf.io.gfile.exists(aside):
    aside += '_'
  tf.io.gfile.makedirs(aside)
  _close_event_writers(model_dir)
  for name in names:
    try:
      tf.io.gfile.rename(os.path.join(model_dir, name), os.path.join(aside, name))
    except (OSError, tf.errors.OpError) as e:
      if not tf.io.gfile.listdir(aside):
        tf.io.gfile.rmtree(aside)
      raise EarlierRunError(
          f'{model_dir} holds no checkpoint but what an earlier run left, and '
          f'{os.path.join(model_dir, name)} cannot be moved aside to {aside} '
          f'({getattr(e, "message", None) or e}): move or delete it yourself, or use a new '
          '--model_dir', option='model_dir') from None
  logging.warning('%s holds no checkpoint but what an earlier run left (%s): this run starts '
                  'from step 0 and moved them to %s', model_dir, ', '.join(names), aside)
  status_file.record('earlier_run_set_aside', model_dir=model_dir, moved_to=aside,
                     names=names)
  return aside


def _close_event_writers(model_dir: str) -> None:
  """Closes this process's cached event writers of model_dir and its subdirectories (an
  earlier run in the same process left them open): moved with their files, they would go on
  writing this run's summaries there."""
  cache = tf1.summary.FileWriterCache
  with cache._lock:  # pylint: disable=protected-access
    under = os.path.join(os.path.abspath(model_dir), '')
    for logdir in [d for d in cache._cache  # pylint: disable=protected-access
                   if os.path.join(os.path.abspath(str(d)), '').startswith(under)]:
      cache._cache.pop(logdir).close()  # pylint: disable=protected-access

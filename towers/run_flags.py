"""model_dir/run.flags: the effective settings of the run that trains a model_dir, as a
flagfile that runs it again.

    write(params) -> str      # the file's path; on the chief, once the session exists

Every `TrainParams` field, one '--name=value' line each (`command_line/flagfile.py`: paths
absolute), under comment lines saying what the file is and the command that reruns it:
`bazel run //towers:train -- --flagfile=<model_dir>/run.flags` continues the model_dir
to the same max_steps (or finds it trained). It is written with train_settings.json
(`towers/estimator.py`, `RecordSettingsHook`): a run refused before its session leaves
the previous run's file.
"""

from __future__ import annotations

import os

import tensorflow as tf

from command_line.flagfile import flag_lines
from towers.params import TrainParams

FILE = 'run.flags'


def path(model_dir: str) -> str:
  return os.path.join(model_dir, FILE)


def write(params: TrainParams) -> str:
  """Writes params.model_dir/run.flags through a temporary file; returns its path."""
  target = path(params.model_dir)
  text = '\n'.join([
      '# The settings of the run that trains this model_dir (every flag of //towers:train).',
      f'# Continue it: bazel run //towers:train -- --flagfile={os.path.abspath(target)}',
      *flag_lines(params), ''])
  temporary = target + '.tmp'
  with tf.io.gfile.GFile(temporary, 'w') as f:
    f.write(text)
  tf.io.gfile.rename(temporary, target, overwrite=True)
  return target

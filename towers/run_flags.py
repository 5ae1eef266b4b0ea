"""model_dir/run.flags: the effective settings of the run that trains a model_dir, as a
flagfile that runs it again.

    write(params) -> str      # the file's path; on the chief, once the session exists

Every `TrainParams` field, one '--name=value' line each (`command_line/flagfile.py`: paths
absolute; --resume_changes and a cluster task's addresses and role left at their defaults:
they hold for one run), under comment lines saying what the file is and the command that
reruns it:
`bazel run //towers:train -- --flagfile=<model_dir>/run.flags` continues the model_dir
to the same max_steps (or finds it trained). It is written with train_settings.json
(`towers/estimator.py`, `RecordSettingsHook`): a run refused before its session leaves
the previous run's file.
"""

from __future__ import annotations

import dataclasses
import os

import tensorflow as tf

from command_line.flagfile import flag_lines
from towers.params import TrainParams

FILE = 'run.flags'


def path(model_dir: str) -> str:
  return os.path.join(model_dir, FILE)


# What the file leaves at its default, being no setting of the model_dir: the permission to
# resume with changed settings (granted once, for one run), and the addresses and role of a
# cluster task (ports of that run).
_NOT_KEPT = {'resume_changes': (), 'ps_hosts': (), 'worker_hosts': (), 'task_type': '',
             'task_index': 0}


def write(params: TrainParams, cluster: str = '') -> str:
  """Writes params.model_dir/run.flags through a temporary file; returns its path.
  `cluster`: how the cluster that trains it was started ('' on one machine), for the
  comment that says how to continue it."""
  target = path(params.model_dir)
  flagfile = f'--flagfile={os.path.abspath(target)}'
  how = (f'# Trained by a cluster ({cluster}): continue it by starting the cluster as before '
         f'(local_cluster, the Slurm script, the TFJob) with {flagfile}'
         if cluster else f'# Continue it: bazel run //towers:train -- {flagfile}')
  text = '\n'.join([
      '# The settings of the run that trains this model_dir (every flag of //towers:train).',
      how, *flag_lines(dataclasses.replace(params, **_NOT_KEPT)), ''])
  temporary = target + '.tmp'
  with tf.io.gfile.GFile(temporary, 'w') as f:
    f.write(text)
  tf.io.gfile.rename(temporary, target, overwrite=True)
  return target


def copied_problem(origin: str, model_dir: str) -> str | None:
  """The problem when `model_dir` came from a run.flags (`origin`: the flagfile that set
  --model_dir, `flagfile.flag_origins`; '' for the command line) that lies in another
  directory than that model_dir (the directory was copied or moved: the run would train the
  original); None otherwise."""
  if os.path.basename(origin) != FILE:
    return None
  here = os.path.dirname(os.path.realpath(origin))
  if here == os.path.realpath(model_dir):
    return None
  return (f'{origin} was written for model_dir={model_dir}, not the directory it is in '
          f'(copied or moved?): add --model_dir={here} after --flagfile to continue this '
          f'copy, or --model_dir={model_dir} to continue that one')


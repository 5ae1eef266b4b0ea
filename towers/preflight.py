"""Checks to run before training starts, with messages that say what to fix.

    preflight.check(params)   # raises PreflightError listing every problem

The checks here read files or devices; the checks of the parameters alone run whenever a
`TrainParams` is made (`towers/params.py`). The `--warm_start_from` checkpoint must be
there (index and weights; the message says what to download from DeepMind's kinetics-i3d
repository and where to put it); a file data
source needs a `--data_dir` holding that source, and prepared data must fit the model
(labels < --num_classes, train and test disjoint by video); `--model_dir` must not lie
under a file; a model_dir with a checkpoint must have room for more of its size
(`command_line/disk_space.py`) and fit the graph (`towers/resume_check.py`:
the one check that builds the graph, without weights) and, when all else is right, must
have been trained with the same learning settings (`towers/train_settings.py`). Whether a
warm-start checkpoint's names and shapes fit the graph is checked when the graph exists
(`warm_start.make_warm_start_init_fn`).
"""

from __future__ import annotations

import os
import tempfile

import tensorflow as tf

from command_line import disk_space
from input_fn import datasets, direct, factory, manifest, pipeline
from model_fn import warm_start
from towers import resume_check, train_settings


_DATA_DIR_CONTENTS = {
    'tfrecord': 'the TFRecord shards made once with `bazel run //data_tools:prepare '
                '-- --source=videos --data_dir=<dataset root> --out=<this data_dir>`',
    'videos': 'the dataset root: the .avi class folders (UCF-101/, hmdb51_org/) and the split '
              'files (ucfTrainTestlist/, testTrainMulti_7030_splits/)',
    'frames': 'the frame folders (jpegs_256/, rawframes/) and the split files',
}


class PreflightError(ValueError):
  """One or more things needed by the run are missing or inconsistent."""


def problems(params, num_workers: int = 1, trains: bool = True) -> list[str]:
  """Every problem found, as messages; empty when the run can start. `num_workers`: the
  cluster's training workers, chief included (sync_replicas aggregates them). `trains`:
  False for a cluster's evaluator, which never warm-starts, so `--warm_start_from` (e.g.
  inherited from a shared flagfile) is not checked."""
  found = []
  if trains and params.warm_start_from and not _has_checkpoint(params.model_dir):
    try:
      warm_start.resolve_checkpoint(params.warm_start_from, params.stream)
    except warm_start.WarmStartError as e:
      found.append(str(e))
  found += _data_problems(params)
  problem = factory.stream_data_problem(params)
  if problem:
    found.append(problem)
  if not found:
    found += _eval_crops_problems(params)
  found += _model_dir_problems(params.model_dir)
  found += _device_problems(params)
  found += _cluster_problems(params, num_workers)
  if not found and _has_checkpoint(params.model_dir):
    found += resume_check.problems(params)
    space = disk_space.free_space_problem(params.model_dir,
                                          tf.train.latest_checkpoint(params.model_dir))
    found += [space] if space else []
  if not found:
    found += train_settings.problems(params, num_workers)
  return found


def _data_problems(params) -> list[str]:
  """--data_dir must exist and hold what data_source reads; prepared data must fit the
  model (labels < num_classes, train and test disjoint: `manifest.training_data_problems`)."""
  data_source, data_dir = params.data_source, params.data_dir
  if data_source == 'synthetic':
    return []
  what = _DATA_DIR_CONTENTS.get(data_source, 'the files of that source (see --helpfull)')
  if not (data_dir and os.path.isdir(data_dir)):
    return [f'data_source={data_source} reads from --data_dir, but '
            f'data_dir={data_dir or "(empty)"} is not a directory: it must hold {what}']
  if data_source == 'tfrecord':
    return (manifest.training_data_problems(data_dir, params.num_classes,
                                            dataset=params.dataset) or
            _empty_subset_problems(data_dir))
  class_index, where = datasets.read_classes(params.dataset, data_dir)
  if class_index is None:
    return [f'data_dir={data_dir} holds no {os.path.basename(where)} of dataset='
            f'{params.dataset} ({where} not found): it must hold {what}']
  classes = len(class_index)
  if classes > params.num_classes:
    return [f'--num_classes={params.num_classes} but {where} lists {classes} classes: '
            f'set --num_classes={classes}']
  try:
    return _unreadable_subset_problems(params)
  except (datasets.DatasetError, FileNotFoundError) as e:  # the split's own files
    return [f'data_dir={data_dir}, split {params.split}: {e}']


def _empty_subset_problems(data_dir: str) -> list[str]:
  """A prepared subset without a single record: training would wait for data forever, an
  evaluation would report metrics of nothing."""
  found = []
  for subset, use in (('train', 'train on'), ('test', 'evaluate')):
    prepared = manifest.read(data_dir, subset)
    if prepared.get('num_records', 1) == 0:
      kinds = ', '.join(f'{n} {k}' for k, n in prepared.get('skipped_by_kind', {}).items())
      example = next(iter(prepared.get('skipped', ())), None)
      found.append(
          f'{manifest.manifest_path(data_dir, subset)}: 0 {subset} records of '
          f'{prepared.get("num_listed", 0)} listed videos'
          f'{" (skipped: " + kinds + ")" if kinds else ""}'
          f'{"; e.g. " + _describe(example) if example else ""}: nothing to {use}; fix the '
          'source (see the prepare summary) and prepare again')
  return found


def _describe(skipped: dict) -> str:
  return ': '.join(str(skipped[k]) for k in ('input', 'reason') if skipped.get(k)) or \
      str(skipped)


def _unreadable_subset_problems(params) -> list[str]:
  """The direct route (videos, frames) with no readable video in the split's train or test
  list, from the files on disk."""
  found = []
  for subset, use in (('train', 'train on'), ('test', 'evaluate')):
    readable, listed, unreadable = direct.readable_videos(params, subset)
    if readable == 0:
      example = f'; e.g. {unreadable[0]}' if unreadable else ''
      found.append(f'data_source={params.data_source}: 0 of the {listed} {subset} videos of '
                   f'split {params.split} in {params.data_dir} can be read{example}: nothing to '
                   f'{use}; it must hold {_DATA_DIR_CONTENTS[params.data_source]}')
  return found


def _eval_crops_problems(params) -> list[str]:
  """--eval_crops=3 on frames too small for 3 distinct crops (`pipeline.eval_crops_problem`,
  on a sample of the test videos as the input gives them): the views would be stretched
  copies of each other, and the table would still say 3 crops."""
  if params.eval_crops == 1:
    return []
  for video, _, height, width in factory.frame_sample(params, 'test'):
    problem = height and width and pipeline.eval_crops_problem(
        height, width, params.crop_size, params.eval_crops)
    if problem:
      bigger = ('prepare the records again with --short_side' if params.data_source == 'tfrecord'
                else 'set --frame_short_side')
      return [f'--eval_crops={params.eval_crops} with --crop_size={params.crop_size}: in the '
              f'{params.data_source} data of {params.data_dir} (test video {video}), '
              f'{problem}; use --eval_crops=1, or {bigger} to at least {params.crop_size + 2}']
  return []


def _model_dir_problems(model_dir: str) -> list[str]:
  """model_dir must be (or be creatable as) a writable directory: no file on its path, and
  a file can be created in it (or in its nearest existing parent)."""
  path = os.path.abspath(model_dir)
  while path and not os.path.exists(path):
    path = os.path.dirname(path)
  if path and not os.path.isdir(path):
    return [f'model_dir={model_dir} cannot be created: {path} is a file; choose another '
            '--model_dir']
  try:
    with tempfile.TemporaryFile(dir=path, prefix='.write_probe_'):
      pass
  except OSError as e:
    what = 'is not writable' if path == os.path.abspath(model_dir) else (
        f'cannot be created: {path} is not writable')
    return [f'model_dir={model_dir} {what} ({e.strerror}): checkpoints are written there; '
            'choose another --model_dir']
  return []


def _device_problems(params) -> list[str]:
  """--tower_devices naming GPUs this machine does not have (soft placement would run
  those towers on the CPU without a word)."""
  gpus = [d for d in params.tower_devices if 'GPU' in d.upper()]
  if not gpus:
    return []
  visible = len(tf.config.list_physical_devices('GPU'))
  absent = [d for d in gpus if (tf.DeviceSpec.from_string(d).device_index or 0) >= visible]
  if absent:
    return [f'tower_devices={",".join(params.tower_devices)} names {", ".join(absent)}, but '
            f'this machine has {visible} GPU(s) visible to TensorFlow: list devices it has '
            '(e.g. /cpu:0,/cpu:1 for virtual CPU towers) or leave --tower_devices empty']
  return []


def _cluster_problems(params, num_workers: int) -> list[str]:
  """sync_replicas must aggregate at least one worker's gradients per step."""
  if params.sync_replicas and num_workers - params.backup_workers < 1:
    return [f'backup_workers={params.backup_workers} with {num_workers} training worker(s) '
            'would aggregate no gradient per step (sync_replicas waits for workers - '
            f'backup_workers): set --backup_workers below {num_workers}']
  return []


def check(params, num_workers: int = 1, trains: bool = True) -> None:
  """Raises `PreflightError` listing every problem, one per paragraph (`problems`)."""
  found = problems(params, num_workers, trains)
  if found:
    raise PreflightError('cannot start:\n- ' + '\n- '.join(found))


def _has_checkpoint(model_dir: str) -> bool:
  """A resumed run restores model_dir and never warm-starts (Estimator's rule)."""
  return bool(model_dir) and tf.io.gfile.isdir(model_dir) and \
      tf.train.latest_checkpoint(model_dir) is not None

"""The learning settings a model_dir is trained with, recorded there and compared on a resume.

    settings(params, num_workers=1) -> dict          # this run's learning settings
    problems(params, num_workers=1) -> list[str]     # [] unless a resume would mix settings
    record(params, num_workers=1) -> None            # when training starts (the chief only)

A learning setting changes which updates a checkpoint is the result of: FIELD_SETTINGS
(flags) and DERIVED_SETTINGS (synchronous workers per step, the training videos; data_dir
itself may move). `record` writes `model_dir/train_settings.json`; when model_dir holds a
checkpoint it first compares, and raises `ResumeSettingsError` (one line per flag: old
value, new value, the fix) before anything is restored, unless `--resume_changes` names
the flag, which is then kept with its step in the record's `history`. STRUCTURE_SETTINGS
decide the variables and can never change. A checkpoint without a record resumes with
one warning and gets one. In a cluster only the chief checks and writes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from typing import Any

import tensorflow as tf
from absl import logging

from input_fn import manifest, ucf101
from towers.checkpoints import checkpoint_step

RECORD_FILE = 'train_settings.json'
FORMAT_VERSION = 1
# Learning settings that are TrainParams fields (flags); `_relevant` drops those the run's
# other choices make inert, so changing them stops nothing.
FIELD_SETTINGS = (
    'model', 'num_classes', 'clip_frames', 'crop_size', 'batch_norm', 'bn_update',
    'dropout_keep', 'stream', 'head', 'pretrained_classes', 'trainable_from',
    'batch_size', 'accumulate_steps',
    'optimizer', 'momentum', 'lr_schedule', 'lr_boundaries', 'lr_values', 'lr_decay_steps',
    'lr_decay_rate', 'warmup_steps', 'lr_reference_batch', 'weight_decay', 'ema_decay',
    'clip_gradient_norm',
    'strategy', 'sync_replicas', 'transfer_dtype',
    'data_source', 'split', 'frame_short_side', 'synthetic_train_examples')
# Learning settings derived from the cluster and the data, with the flags that decide them.
DERIVED_SETTINGS = {
    'workers_per_step': 'with --sync_replicas: chief + workers - --backup_workers',
    'train_videos': 'the training videos in --data_dir',
}
SETTING_NAMES = FIELD_SETTINGS + tuple(DERIVED_SETTINGS)
# Settings that decide the network's variables: a checkpoint of one cannot be continued
# with another (resource variables would even restore into other shapes without a word), so
# --resume_changes cannot allow them.
STRUCTURE_SETTINGS = ('model', 'num_classes', 'batch_norm', 'stream', 'head',
                      'pretrained_classes')


class ResumeSettingsError(ValueError):
  """model_dir was trained with other learning settings; the message names them and the fix."""


def settings(params, num_workers: int = 1) -> dict[str, Any]:
  """This run's learning settings, as JSON values (tuples as lists), by name."""
  found = {name: getattr(params, name) for name in FIELD_SETTINGS if _relevant(params, name)}
  if params.sync_replicas and num_workers > 1:
    found['workers_per_step'] = num_workers - params.backup_workers
  if params.data_source != 'synthetic':
    found['train_videos'] = train_videos(params)
  return json.loads(json.dumps(found))


def _relevant(params, name: str) -> bool:
  """Whether the field `name` acts in this run (e.g. lr_boundaries only with piecewise)."""
  when = {
      'momentum': params.optimizer in ('momentum', 'rmsprop'),
      'lr_boundaries': params.lr_schedule == 'piecewise',
      'lr_decay_steps': params.lr_schedule == 'exponential',
      'lr_decay_rate': params.lr_schedule == 'exponential',
      'pretrained_classes': params.head == 'stack',
      'split': params.data_source in ('videos', 'frames'),
      'frame_short_side': params.data_source == 'videos',
      'synthetic_train_examples': params.data_source == 'synthetic',
  }
  return when.get(name, True)


def train_videos(params) -> str | None:
  """'<count> videos, sha256 <12 hex digits>' of the names of the videos data_dir trains
  on (tfrecord: with the preparation's source, split, short side and JPEG quality), so a
  data_dir that moved still matches; None when data_dir cannot be read (the preflight
  reports that)."""
  try:
    if params.data_source == 'tfrecord':
      names = manifest.video_names(manifest.read(params.data_dir, 'train'))
      made = manifest.read_identity(params.data_dir) or {}
      how = [made.get(k) for k in ('kind', 'source', 'split', 'short_side', 'jpeg_quality')]
    else:
      split_dir = ucf101.find_dir(params.data_dir, ucf101.SPLIT_DIR_NAMES,
                                  ucf101.CLASS_INDEX_FILE)
      names = [entry.name for entry in ucf101.read_split(split_dir, params.split).train]
      how = []
  except (OSError, ValueError):
    return None
  digest = hashlib.sha256(json.dumps([sorted(names), how]).encode()).hexdigest()
  return f'{len(names)} videos, sha256 {digest[:12]}'


def record_path(model_dir: str) -> str:
  return os.path.join(model_dir, RECORD_FILE)


def read_record(model_dir: str) -> dict[str, Any] | None:
  """The record in model_dir ({'format_version', 'settings', 'history'}), None if absent."""
  path = record_path(model_dir)
  if not tf.io.gfile.exists(path):
    return None
  with tf.io.gfile.GFile(path) as f:
    return json.load(f)


def differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
  """Names of the settings whose values differ (present in one only counts), in
  SETTING_NAMES order."""
  return [name for name in SETTING_NAMES if old.get(name) != new.get(name)]


@dataclasses.dataclass(frozen=True)
class _Resume:
  """What model_dir holds against this run: its latest checkpoint (None: a fresh start), its
  record (None: none), this run's settings, and why they cannot continue it ([] if they can)."""
  checkpoint: str | None
  stored: dict[str, Any] | None
  new: dict[str, Any]
  problems: list[str]


def problems(params, num_workers: int = 1) -> list[str]:
  """Why resuming model_dir with `params` would mix learning settings (one message); [] when
  model_dir has no checkpoint or no record, or the settings match (or differ only in
  --resume_changes)."""
  return _compare(params, num_workers).problems


def _compare(params, num_workers: int) -> _Resume:
  """Reads model_dir's checkpoint and record and this run's settings once, for `problems`
  and `record` alike."""
  new = settings(params, num_workers)
  unknown = [name for name in params.resume_changes if name not in SETTING_NAMES]
  if unknown:
    return _Resume(None, None, new, [
        f'--resume_changes names {", ".join(unknown)}, which '
        f'{"is not a learning setting" if len(unknown) == 1 else "are not learning settings"}'
        f' (those are: {", ".join(SETTING_NAMES)})'])
  structural = [name for name in params.resume_changes if name in STRUCTURE_SETTINGS]
  if structural:
    return _Resume(None, None, new, [
        f'--resume_changes cannot allow {", ".join(structural)}: '
        f'{"it decides" if len(structural) == 1 else "they decide"} the network\'s '
        'variables, which a checkpoint cannot change; train with a new --model_dir'])
  checkpoint = tf.train.latest_checkpoint(params.model_dir)
  stored = read_record(params.model_dir) if checkpoint else None
  if stored is None:
    return _Resume(checkpoint, None, new, [])
  old = stored['settings']
  changed = [name for name in differences(old, new) if name not in params.resume_changes]
  if not changed:
    return _Resume(checkpoint, stored, new, [])
  was = ' '.join(_as_flag(name, old.get(name)) for name in changed)
  now = ' '.join(_as_flag(name, new.get(name)) for name in changed)
  derived = [f'{name}: {DERIVED_SETTINGS[name]}' for name in changed if name in DERIVED_SETTINGS]
  fixes = [f'Rerun with {was}{" (" + "; ".join(derived) + ")" if derived else ""}',
           'use a new --model_dir']
  if not any(name in STRUCTURE_SETTINGS for name in changed):
    fixes.append(f'add --resume_changes={",".join(changed)} to continue with the change on '
                 'purpose (it is kept in the record\'s history)')
  return _Resume(checkpoint, stored, new, [
      f'{params.model_dir} was trained with {was}, now {now}: resuming would mix two '
      f'learning settings in one model_dir ({record_path(params.model_dir)}). '
      f'{", or ".join(fixes)}'])


def _as_flag(name: str, value: Any) -> str:
  """--name=value as a flag would take it (lists comma-separated, (unset) for none)."""
  if value is None:
    text = '(unset)'
  elif isinstance(value, list):
    text = ','.join(str(v) for v in value)
  elif isinstance(value, bool):
    text = str(value).lower()
  else:
    text = str(value)
  return f'--{name}={text}' if name in FIELD_SETTINGS else f'{name}={text}'


def record(params, num_workers: int = 1) -> None:
  """At the start of training (the chief): raises `ResumeSettingsError` if resuming
  model_dir would mix learning settings; else writes this run's settings to
  model_dir/train_settings.json (with a history entry for each change --resume_changes
  allowed, and a warning when a checkpoint had no record)."""
  resume = _compare(params, num_workers)
  if resume.problems:
    raise ResumeSettingsError(resume.problems[0])
  new, stored = resume.new, resume.stored
  history = stored.get('history', []) if stored else []
  if resume.checkpoint and stored is None:
    logging.warning('%s holds a checkpoint but no %s (it was trained before learning '
                    'settings were recorded): they cannot be compared, so these flags are '
                    'recorded as its settings', params.model_dir, RECORD_FILE)
  if stored:
    changed = differences(stored['settings'], new)
    if changed:
      step = checkpoint_step(params.model_dir)
      history.append({'step': step, 'changed': {
          name: [stored['settings'].get(name), new.get(name)] for name in changed}})
      logging.warning('%s: continuing from step %d with changed learning settings (%s), as '
                      '--resume_changes allows; recorded in %s', params.model_dir, step,
                      ', '.join(changed), RECORD_FILE)
  _write_json(record_path(params.model_dir),
              {'format_version': FORMAT_VERSION, 'settings': new, 'history': history})


def _write_json(path: str, value: dict[str, Any]) -> None:
  """Writes through a temporary file, so a reader never sees half a record."""
  tf.io.gfile.makedirs(os.path.dirname(path))
  temporary = path + '.tmp'
  with tf.io.gfile.GFile(temporary, 'w') as f:
    json.dump(value, f, indent=1, sort_keys=True)
  tf.io.gfile.rename(temporary, path, overwrite=True)

"""The learning settings a model_dir is trained with, recorded there and compared on a resume.

    settings(params, num_workers=1) -> dict          # this run's learning settings
    checked_record(params, num_workers=1) -> dict    # the one decision, before the session
    write_record(model_dir, record) -> None          # once the session has started (chief)

`model_dir/train_settings.json` holds the learning settings a model_dir was trained with:
FIELD_SETTINGS (flags) and DERIVED_SETTINGS (synchronous workers per step, the training
videos by name, what they hold: frame sizes and counts of a sample, and for records the
sizes of the sources they were made from, and the class names in label order; data_dir
itself may move). On a resume,
`checked_record` compares it with this run's and raises `ResumeSettingsError` (one line per
flag: old value, new value, the fix; `option` and `settings` name them) before anything is
restored, unless `--resume_changes` names the flag, which is then kept with its step in the
record's `history`. It is called in one place, the training model_fn
(`towers/estimator.py`, `recording_settings`), for the binary and library users alike.
STRUCTURE_SETTINGS decide the variables and can never change, nor can a change that adds
variables the checkpoint lacks (an optimizer with other slots than sgd's none, ema_decay
from 0 to on). `write_record` writes the record once the session has started, so a run that
fails before leaves the old one. A damaged record is an error naming the file; a checkpoint
without a record resumes with one warning (and an `unrecorded_settings` status event). The
record also lists the training videos' names (TRAIN_VIDEO_NAMES), as each export does, and
the class names in label order (TRAIN_CLASS_NAMES), so a refusal names what moved.
In a cluster every trainer checks; only the chief writes.
A caller's own network (`build_estimator(network=fn)`) is recorded by module and name
(`network`, null for the registered --model), one of the STRUCTURE_SETTINGS.
The record also holds the model's lineage (`towers/cluster/lineage.py`): drawn when training
starts from step 0, kept by every resume (a checkpoint whose record has none gets one), so
exports and final evaluations of another run never count for this one.
A run of `build_estimator` on the caller's own input_fn records `data_source` as
CALLER_INPUT ('input_fn') without the settings of a data route: the flags cannot say what
it read, so `//towers:train` (any data_source) and such a run never continue each other's
model_dir (`_input_refusal`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from typing import Any, Sequence

import tensorflow as tf
from absl import logging

from command_line import status_file
from command_line.options import Problem

from input_fn import datasets, direct, frame_sample, json_files, manifest, ucf101, video_lists
from model_fn import warm_start
from serving.export_info import ASSETS_DIR, INFO_FILE
from towers import params as params_lib
from towers.cluster import lineage
from towers import checkpoints
from towers.checkpoints import checkpoint_step

RECORD_FILE = lineage.RECORD_FILE
# The recorded data_source of a run on the caller's own input_fn (`build_estimator`).
CALLER_INPUT = 'input_fn'
# Key of the record's list of the training videos' canonical names (not a setting: the
# settings hold their count and digest); exports list them too (towers/export_info.py).
TRAIN_VIDEO_NAMES = 'train_video_names'
# Key of the record's class names in label order (train_labels holds their digest), so a
# refusal can name the first label that moved.
TRAIN_CLASS_NAMES = 'train_class_names'
FORMAT_VERSION = 1
# Learning settings that are TrainParams fields (flags): those declared STRUCTURE or
# MUST_MATCH (`towers/params.py`); `_relevant` drops those the run's other choices make
# inert, so changing them stops nothing.
FIELD_SETTINGS = params_lib.fields_by_resume(params_lib.STRUCTURE, params_lib.MUST_MATCH)
# Learning settings derived from the cluster and the data, with the flags that decide them.
DERIVED_SETTINGS = {
    'workers_per_step': 'with --sync_replicas: chief + workers - --backup_workers',
    'train_videos': 'the training videos in --data_dir',
    'train_data': 'what the training videos in --data_dir hold: their frames',
    'train_labels': 'the class names in label order',
    'lr_cosine_steps': 'with --lr_schedule=cosine, the steps the rate decays over: --max_steps',
    'network': 'the network function passed as build_estimator(network=...) or '
               'train_and_evaluate(network=...), by module and name (null: the registered '
               '--model)',
}
# Derived settings that records written before they existed lack: absent from the stored
# record, they are not a difference (the new record gets them).
RECORDED_SINCE_LATER = ('train_data', 'train_labels', 'lr_cosine_steps', 'network')
SETTING_NAMES = FIELD_SETTINGS + tuple(DERIVED_SETTINGS)
# Settings that decide the network's variables: a checkpoint of one cannot be continued
# with another (resource variables would even restore into other shapes without a word), so
# --resume_changes cannot allow them.
STRUCTURE_SETTINGS = params_lib.fields_by_resume(params_lib.STRUCTURE) + ('network',)


# The option that decides each derived setting, for a refusal's `option`.
DERIVED_OPTIONS = {'workers_per_step': 'backup_workers', 'train_videos': 'data_dir',
                   'train_data': 'data_dir', 'train_labels': 'data_dir',
                   'lr_cosine_steps': 'max_steps', 'network': 'model'}


class ResumeSettingsError(ValueError):
  """model_dir was trained with other learning settings (or its record cannot be read); the
  message names them and the fix. `option`: the option to change (the first changed
  setting's, resume_changes, or model_dir for its record); `settings`: the setting names
  the refusal concerns (changed ones in SETTING_NAMES order, or those --resume_changes
  cannot allow); `allowable`: whether --resume_changes could continue with the change."""

  def __init__(self, problem: Problem, settings: tuple[str, ...] = (),
               allowable: bool = False) -> None:
    super().__init__(problem)
    self.option: str | None = getattr(problem, 'option', None)
    self.settings = tuple(settings)
    self.allowable = allowable


def settings(params, num_workers: int = 1, caller_input: bool = False,
             network: str | None = None) -> dict[str, Any]:
  """This run's learning settings, as JSON values (tuples as lists), by name.
  `caller_input`: the run reads the caller's own input_fn, not the data `params` name
  (data_source CALLER_INPUT, no data route's settings). `network`: the caller's own
  network (`networks.caller_network_name`); None: the registered `params.model`."""
  found = {name: getattr(params, name) for name in FIELD_SETTINGS if _relevant(params, name)
           and not (caller_input and name in _ROUTE_SETTINGS)}
  # Always recorded, null for a registered network: only records written before it was
  # lack the key (RECORDED_SINCE_LATER), and those cannot tell.
  found['network'] = network
  if params.sync_replicas and num_workers > 1:
    found['workers_per_step'] = num_workers - params.backup_workers
  if params.lr_schedule == 'cosine':  # max_steps is where its rate reaches 0
    found['lr_cosine_steps'] = params.max_steps
  if caller_input:
    found['data_source'] = CALLER_INPUT
  elif params.data_source != 'synthetic':
    found['train_videos'] = train_videos(params)
    found['train_data'] = train_data(params)
    found['train_labels'] = train_labels(params)
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
      # Recorded for the direct route off UCF101 (records name their videos); absent in
      # records written before datasets were named, which were all UCF101.
      'dataset': params.data_source in ('videos', 'frames') and params.dataset != 'ucf101',
      'frame_short_side': params.data_source == 'videos',
      'synthetic_train_examples': params.data_source == 'synthetic',
  }
  return when.get(name, True)


def train_videos(params) -> str | None:
  """'<count> videos, sha256 <12 hex digits>' of the names of the videos data_dir trains
  on (tfrecord: with the preparation's source, split, short side and JPEG quality), so a
  data_dir that moved still matches; None when data_dir cannot be read (the preflight
  reports that)."""
  names = train_video_names(params)
  if names is None:
    return None
  how = []
  if params.data_source == 'tfrecord':
    made = manifest.read_identity(params.data_dir) or {}
    how = [made.get(k) for k in ('kind', 'source', 'split', 'short_side', 'jpeg_quality')]
  digest = hashlib.sha256(json.dumps([sorted(names), how]).encode()).hexdigest()
  return f'{len(names)} videos, sha256 {digest[:12]}'


def train_labels(params) -> str | None:
  """'<n> classes, sha256 <12 hex digits>' of the class names in label order, so data
  prepared again with a reordered or renamed class list (the same videos under other
  labels) differs; None when data_dir cannot be read."""
  classes = train_class_names(params)
  if classes is None:
    return None
  digest = hashlib.sha256(json.dumps(classes).encode()).hexdigest()
  return f'{len(classes)} classes, sha256 {digest[:12]}'


def train_class_names(params) -> list[str] | None:
  """The class names of data_dir in label order (records: their manifest's); None for
  synthetic data or when data_dir cannot be read."""
  if params.data_source == 'synthetic':
    return None
  try:
    if params.data_source == 'tfrecord':
      return [str(c) for c in manifest.read(params.data_dir, 'train').get('classes', ())]
    return list(datasets.params_split(params).classes.names)
  except (OSError, ValueError):
    return None


def train_data(params) -> str | None:
  """What the training videos hold, beyond their names (`subset_data` of 'train')."""
  return subset_data(params, 'train')


def subset_data(params, subset: str) -> str | None:
  """What the videos of `subset` ('train' or 'test') hold, beyond their names: the frame
  sizes (height x width, as the files hold them: records as prepared, videos and frame
  folders as decoded) and frame counts of `frame_sample.frame_sample` videos of it, and for
  records the sha256 of the byte sizes of the sources they were prepared from, for videos
  and frames read directly that of the bytes each video is read from (so data made from other videos of
  the same names differs, a copy or a move does not): '8 videos
  sampled: frames 240x320, 1234 frames; sources sha256 <12 hex digits>'. None when nothing
  can be read."""
  sample = frame_sample.frame_sample(params, subset, decoded=True)
  if not sample:
    return None
  sizes = ','.join(sorted({f'{h}x{w}' for _, _, h, w in sample}))
  text = (f'{len(sample)} videos sampled: frames {sizes}, '
          f'{sum(n for _, n, _, _ in sample)} frames')
  if params.data_source == 'tfrecord':
    try:
      prepared = manifest.read(params.data_dir, subset)
    except manifest.ManifestError:
      return text
    sources = sorted([v['name'], v.get('size')] for shard in prepared['shards']
                     for v in shard.get('videos', ()) if isinstance(v, dict))
  elif params.data_source in ('videos', 'frames'):
    sources = _source_sizes(params, subset)
  else:
    return text
  text += f'{_SOURCES}{hashlib.sha256(json.dumps(sources).encode()).hexdigest()[:12]}'
  return text


def _source_sizes(params, subset: str) -> list[list[Any]]:
  """[[name, bytes it is read from (None: missing)], ...] of every video of `subset` the
  direct route reads (`direct.VideoSource.source_size`: its file, or its frame folders'
  files), sorted: a video replaced under its name differs whether or not the frame sample
  reads it."""
  source = direct.VideoSource(params)
  return sorted([e.name, source.source_size(e)] for e in source.entries(subset))


def train_video_names(params) -> list[str] | None:
  """Sorted canonical names of the videos data_dir trains on (tfrecord: its train
  manifest; videos and frames: the split's training list); None for synthetic data or
  when data_dir cannot be read."""
  return _video_names(params, 'train')


def test_video_names(params) -> list[str] | None:
  """Sorted canonical names of the videos data_dir evaluates on (as `train_video_names`)."""
  return _video_names(params, 'test')


def _video_names(params, subset: str) -> list[str] | None:
  if params.data_source == 'synthetic':
    return None
  try:
    if params.data_source == 'tfrecord':
      names = manifest.video_names(manifest.read(params.data_dir, subset))
    else:
      names = [entry.name for entry in datasets.params_split(params).subset(subset)]
  except (OSError, ValueError):
    return None
  return sorted(names)


def record_path(model_dir: str) -> str:
  return os.path.join(model_dir, RECORD_FILE)


def read_record(model_dir: str) -> dict[str, Any] | None:
  """The record in model_dir ({'format_version', 'settings', 'history'}), None if absent.
  Raises `ResumeSettingsError` naming the file when it is not such a record (damaged or
  edited by hand)."""
  path = record_path(model_dir)
  if not tf.io.gfile.exists(path):
    return None
  try:
    with tf.io.gfile.GFile(path) as f:
      stored = json.load(f)
    problem = None
  except (ValueError, UnicodeDecodeError) as e:
    stored, problem = None, f'it is not valid JSON ({e})'
  if problem is None and not (isinstance(stored, dict) and isinstance(stored.get('settings'), dict)
                              and isinstance(stored.get('history', []), list)):
    problem = ('it is not the record this library writes (a JSON object with "settings" and '
               '"history")')
  if problem:
    raise ResumeSettingsError(Problem(
        'model_dir', f'{path} cannot be read: {problem}. Restore it, or train in a new '
        '--model_dir'))
  return stored


def differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
  """Names of the settings whose values differ (present in one only counts), in
  SETTING_NAMES order. A train_data recorded before the direct route's sources were part
  of it is compared without them."""
  return [name for name in SETTING_NAMES if old.get(name) != _as_recorded(
      name, old.get(name), new.get(name)) and
          not (name in RECORDED_SINCE_LATER and name not in old)]


_SOURCES = '; sources sha256 '


def _as_recorded(name: str, old: Any, new: Any) -> Any:
  """`new` as a record of `old`'s time held it: train_data without its sources digest when
  `old` has none (the direct route's, recorded before it had one)."""
  if name == 'train_data' and isinstance(old, str) and isinstance(new, str) and \
      _SOURCES not in old and _SOURCES in new:
    return new.split(_SOURCES)[0]
  return new


@dataclasses.dataclass(frozen=True)
class _Resume:
  """What model_dir holds against this run: its latest checkpoint (None: a fresh start), its
  record (None: none), this run's settings, and the refusal when they cannot continue it
  (None if they can)."""
  checkpoint: str | None
  stored: dict[str, Any] | None
  new: dict[str, Any]
  refusal: ResumeSettingsError | None = None


def _compare(params, num_workers: int, caller_input: bool = False,
             network: str | None = None) -> _Resume:
  """Reads model_dir's checkpoint and record and this run's settings once."""
  new = settings(params, num_workers, caller_input, network)
  unknown = [name for name in params.resume_changes if name not in SETTING_NAMES]
  if unknown:
    return _Resume(None, None, new, ResumeSettingsError(Problem(
        'resume_changes', f'--resume_changes names {", ".join(unknown)}, which '
        f'{"is not a learning setting" if len(unknown) == 1 else "are not learning settings"}'
        f' (those are: {", ".join(SETTING_NAMES)})'), tuple(unknown)))
  structural = [name for name in params.resume_changes if name in STRUCTURE_SETTINGS]
  if structural:
    return _Resume(None, None, new, ResumeSettingsError(Problem(
        'resume_changes', f'--resume_changes cannot allow {", ".join(structural)}: '
        f'{"it decides" if len(structural) == 1 else "they decide"} the network\'s '
        'variables, which a checkpoint cannot change; train with a new --model_dir'),
        tuple(structural)))
  checkpoint = tf.train.latest_checkpoint(params.model_dir)
  try:
    stored = read_record(params.model_dir) if checkpoint else None
  except ResumeSettingsError as e:
    return _Resume(checkpoint, None, new, e)
  if stored is None:
    return _Resume(checkpoint, None, new)
  old = stored['settings']
  refusal = _input_refusal(params.model_dir, old, new)
  if refusal is not None:
    return _Resume(checkpoint, stored, new, refusal)
  adding = _adding_variables(old, new)
  allowed_adding = [name for name in adding if name in params.resume_changes]
  if allowed_adding:
    return _Resume(checkpoint, stored, new, ResumeSettingsError(Problem(
        'resume_changes', f'--resume_changes cannot allow '
        f'{_changes(allowed_adding, old, new)}: the new setting keeps variables '
        f'({_new_variables(allowed_adding, new)}) that the checkpoint in {params.model_dir} '
        f'does not hold, so it cannot be restored. Rerun with '
        f'{" ".join(_as_flag(n, old.get(n)) for n in allowed_adding)}, or train with a new '
        '--model_dir'), tuple(allowed_adding)))
  allowed = set(params.resume_changes)
  allowed |= {name for name, by in _GOVERNED_BY.items() if by in allowed}
  changed = [name for name in differences(old, new) if name not in allowed and not (
      name in _ROUTE_SETTINGS and 'data_source' in allowed and (name in old) != (name in new))]
  if not changed:
    return _Resume(checkpoint, stored, new)
  flags = [name for name in changed if name in FIELD_SETTINGS]
  derived = [name for name in changed if name in DERIVED_SETTINGS]
  was = ' '.join(_as_flag(name, old.get(name)) for name in flags)
  now = ' '.join(_as_flag(name, new.get(name)) for name in flags)
  told = ([f'{was}, now {now}'] if flags else []) + [
      f'{name} ({DERIVED_SETTINGS[name]}) {_described(name, stored, new, params)}'
      for name in derived]
  fixes = ([_rerun(flags, old)] if flags else []) + list(
      dict.fromkeys(_DERIVED_FIXES[name] for name in derived)) + ['use a new --model_dir']
  allowable = not any(name in STRUCTURE_SETTINGS or name in adding for name in changed)
  if allowable:
    fixes.append(f'add --resume_changes={",".join(changed)} to continue with the change on '
                 'purpose (it is kept in the record\'s history)')
  fix = ', or '.join(fixes)
  return _Resume(checkpoint, stored, new, ResumeSettingsError(Problem(
      DERIVED_OPTIONS.get(changed[0], changed[0]),
      f'{params.model_dir} was trained with other learning settings: {"; ".join(told)}. '
      f'Resuming would mix two in one model_dir ({record_path(params.model_dir)}). '
      f'{fix[0].upper()}{fix[1:]}'), tuple(changed), allowable))


def _input_refusal(model_dir: str, old: dict[str, Any], new: dict[str, Any]
                   ) -> ResumeSettingsError | None:
  """The refusal when one of the record `old` and this run's settings `new` read the
  caller's own input_fn (CALLER_INPUT) and the other the data the flags name: no flag can
  make one the other. None otherwise."""
  if (old.get('data_source') == CALLER_INPUT) == (new.get('data_source') == CALLER_INPUT):
    return None
  if old.get('data_source') == CALLER_INPUT:
    text = (f'{model_dir} was trained by build_estimator on your own input_fn, which no '
            '--data_source reads: continue it there, or use a new --model_dir')
  else:
    text = (f'{model_dir} was trained on --data_source={old.get("data_source")} (by '
            '//towers:train or train_and_evaluate), not on your own input_fn: continue it '
            'there, or train build_estimator in a new model_dir')
  return ResumeSettingsError(Problem('model_dir', text), ('data_source',))


# The fix that restores each derived setting.
_ON_THE_SAME_DATA = 'train on the data it was trained on (--data_dir)'
_DERIVED_FIXES = {'workers_per_step': 'train with as many workers and --backup_workers as it was',
                  'train_videos': _ON_THE_SAME_DATA, 'train_data': _ON_THE_SAME_DATA,
                  'train_labels': _ON_THE_SAME_DATA,
                  'lr_cosine_steps': 'keep the --max_steps it was trained to (where its cosine '
                                     'schedule ends)',
                  'network': 'train with the network it was trained with'}


def _described(name: str, stored: dict[str, Any], new: dict[str, Any], params) -> str:
  """How the derived setting `name` differs between the record `stored` and this run's
  settings `new`, in words a person can check against their data (not digests)."""
  old_value = stored['settings'].get(name)
  if name == 'train_videos':
    before, now = stored.get(TRAIN_VIDEO_NAMES), train_video_names(params)
    if isinstance(before, list) and now is not None:
      held = {video_lists.same_video(n) for n in before}
      listed = {video_lists.same_video(n) for n in now}
      added = sorted(n for n in now if video_lists.same_video(n) not in held)
      gone = sorted(n for n in before if video_lists.same_video(n) not in listed)
      if not added and not gone:
        return (f'differs: the same {len(now)} videos, read another way (records prepared '
                'otherwise, or records against videos or frames)')
      return (f'differs: {len(now)} videos now, {len(added)} of them never trained on '
              f'(e.g. {(added or ["-"])[0]}); {len(gone)} trained on before are not '
              f'listed{f" (e.g. {gone[0]})" if gone else ""}')
  if name == 'train_labels':
    before, now = stored.get(TRAIN_CLASS_NAMES), train_class_names(params)
    if isinstance(before, list) and now is not None:
      moved = next((i for i, (a, b) in enumerate(zip(before, now)) if a != b), None)
      if moved is not None:
        return f'differs: label {moved} was {before[moved]}, now {now[moved]}'
      return f'differs: {len(before)} classes before, {len(now)} now'
  if name == 'network':
    def named(value):
      return value or f'the registered --model={stored["settings"].get("model")}'
    return f'was {named(old_value)}, now {named(new.get(name))}'
  return f'was {old_value}, now {new.get(name)}'


# Settings that act only for some values of another (`_relevant`): allowing that one to
# change allows them to appear, disappear or change with it.
_GOVERNED_BY = {'momentum': 'optimizer', 'lr_boundaries': 'lr_schedule',
                'lr_decay_steps': 'lr_schedule', 'lr_decay_rate': 'lr_schedule',
                'lr_cosine_steps': 'lr_schedule'}
# Settings recorded on one data route only (`_relevant`): allowing --data_source to change
# lets them appear or disappear with it (a value that changes is still a change).
_ROUTE_SETTINGS = ('dataset', 'split', 'frame_short_side', 'synthetic_train_examples')
# Variables each optimizer keeps besides the weights (slots and accumulators).
_OPTIMIZER_VARIABLES = {'momentum': 'Momentum slots', 'rmsprop': 'RMSProp slots',
                        'adam': 'Adam slots, beta1_power, beta2_power', 'sgd': ''}


def _adding_variables(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
  """The changed settings whose new value needs variables a checkpoint of the old one
  lacks: another optimizer with its own slots, or an EMA where there was none."""
  adding = []
  if old.get('optimizer') != new.get('optimizer') and _OPTIMIZER_VARIABLES.get(
      new.get('optimizer'), ''):
    adding.append('optimizer')
  if not old.get('ema_decay') and new.get('ema_decay'):
    adding.append('ema_decay')
  return adding


def _new_variables(names: list[str], new: dict[str, Any]) -> str:
  return '; '.join(_OPTIMIZER_VARIABLES[new['optimizer']] if name == 'optimizer'
                   else 'the moving averages of every weight' for name in names)


def _changes(names: list[str], old: dict[str, Any], new: dict[str, Any]) -> str:
  return ', '.join(f'{name} {old.get(name)} -> {new.get(name)}' for name in names)


def _rerun(names: list[str], old: dict[str, Any]) -> str:
  """'Rerun with --a=1 and without --b': the flags `names` as the model_dir was trained
  (a setting it did not have is a flag to leave out, not a value to type)."""
  given = ' '.join(_as_flag(n, old[n]) for n in names if old.get(n) is not None)
  dropped = ', '.join(f'--{n}' for n in names if old.get(n) is None)
  return ('Rerun' + (f' with {given}' if given else '') + (' and' if given and dropped else '') +
          (f' without {dropped}' if dropped else ''))


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


@tf.autograph.experimental.do_not_convert  # plain Python, called from a model_fn
def checked_record(params, num_workers: int = 1, caller_input: bool = False,
                   network: str | None = None) -> dict[str, Any]:
  """When training is about to start, before anything is restored: raises
  `ResumeSettingsError` if resuming model_dir would mix learning settings; else returns the
  record of this run's settings (with a history entry for each change --resume_changes
  allowed, and a warning when a checkpoint had no record) and the model's lineage (the
  record's on a resume, a new one from step 0), for `write_record` once the session has
  started: a run that fails before (e.g. restoring) leaves the old record in place.
  `caller_input`, `network`: see `settings`."""
  resume = _compare(params, num_workers, caller_input, network)
  if resume.refusal is not None:
    raise resume.refusal
  new, stored = resume.new, resume.stored
  if resume.checkpoint and stored is None:
    _check_record_not_lost(params.model_dir)
  names = None if caller_input else train_video_names(params)
  if names is not None:
    earlier, source = _earlier_video_names(params, stored, resume.checkpoint)
    _check_no_earlier_training_video(params, earlier, source, resume.checkpoint)
    names = sorted(set(names) | set(earlier))
  history = stored.get('history', []) if stored else []
  if resume.checkpoint and stored is None:
    status_file.record('unrecorded_settings', model_dir=params.model_dir)
    logging.warning('%s holds a checkpoint but no %s (trained before learning settings '
                    'were recorded, or its files copied without it and without their .meta): '
                    'neither its settings nor the videos it learnt can be compared, so these '
                    'flags are recorded as its settings; if it learnt this run\'s test videos, '
                    'its evaluations count them', params.model_dir, RECORD_FILE)
  if stored and network and 'network' not in stored['settings']:
    logging.warning('%s was recorded before networks passed to training were named: whether '
                    'it was trained with %s cannot be told; '
                    'recorded as trained with it from now on', params.model_dir, network)
  if stored:
    changed = differences(stored['settings'], new)
    if changed:
      step = checkpoint_step(params.model_dir)
      history.append({'step': step, 'changed': {
          name: [stored['settings'].get(name), new.get(name)] for name in changed}})
      logging.warning('%s: continuing from step %d with changed learning settings (%s), as '
                      '--resume_changes allows; recorded in %s', params.model_dir, step,
                      ', '.join(changed), RECORD_FILE)
  kept = (stored or {}).get(lineage.KEY) if resume.checkpoint else None
  value = {'format_version': FORMAT_VERSION, 'settings': new, 'history': history,
           lineage.KEY: kept if isinstance(kept, str) and kept else lineage.new()}
  if names is not None:
    value[TRAIN_VIDEO_NAMES] = names
  classes = None if caller_input else train_class_names(params)
  if classes is not None:
    value[TRAIN_CLASS_NAMES] = classes
  return value


def _check_no_earlier_training_video(params, earlier: Sequence[str], source: str,
                                    checkpoint: str | None) -> None:
  """Raises `ResumeSettingsError` when a test video of data_dir is among the videos
  `earlier` (listed in `source`) the model trained on before this run (model_dir's record on
  a resume, the warm-start source's on a fresh start: `_earlier_video_names`), by
  `video_lists.trained_on`, or is a UCF101 clip of a group it learnt a clip of
  (`ucf101.groups_learnt`): its evaluations would count footage it learnt."""
  tests = test_video_names(params) or ()
  seen = video_lists.trained_on(earlier, tests)
  grouped = [] if seen else ucf101.groups_learnt(earlier, tests)
  if not seen and not grouped:
    return
  what = (f'{len(seen)} test videos of data_dir={params.data_dir} (e.g. {seen[0]}) were '
          'trained on' if seen else
          f'{len(grouped)} test videos of data_dir={params.data_dir} are UCF101 clips of '
          f'groups whose other clips were trained on (e.g. {grouped[0][0]}: {grouped[0][1]}, '
          'cut from the same video)')
  if checkpoint:
    raise ResumeSettingsError(Problem('data_dir', (
        f'{what} in {params.model_dir} by an earlier run ({RECORD_FILE} lists them): its '
        'evaluations would count footage it learnt; evaluate on test videos it never trained '
        'on, or train in a new --model_dir')), ('train_videos',))
  raise ResumeSettingsError(Problem('warm_start_from', (
      f'{what} by the model --warm_start_from={params.warm_start_from} starts from ({source} '
      'lists them): its evaluations would count footage it learnt; warm-start from a model '
      'that never trained on them (the Kinetics checkpoint, or a run of this split)')))


def _earlier_video_names(params, stored: dict[str, Any] | None,
                         checkpoint: str | None) -> tuple[list[str], str]:
  """(the videos the model trained on before this run, the file that lists them):
  model_dir's `stored` record when continuing `checkpoint`; on a fresh start, what the
  source of `--warm_start_from` lists (`_warm_start_videos`)."""
  if not checkpoint:
    return _warm_start_videos(params)
  earlier = (stored or {}).get(TRAIN_VIDEO_NAMES)
  return (list(earlier) if isinstance(earlier, list) else []), record_path(params.model_dir)


def _warm_start_videos(params) -> tuple[list[str], str]:
  """(the videos the weights `--warm_start_from` names trained on, the file listing them):
  an export's video_model.json (a checkpoint under `<export>/variables/`), or the record
  of a model_dir of this library; ([], '') for a checkpoint without either (DeepMind's).
  Raises `ResumeSettingsError` (option warm_start_from) for a model_dir whose record is
  lost or damaged while its files show one existed (`_recording_evidence`)."""
  checkpoint = _warm_start_checkpoint(params)
  if not checkpoint:
    return [], ''
  source = os.path.dirname(checkpoint)
  export = os.path.dirname(source)
  if os.path.basename(source) == 'variables' and (
      tf.io.gfile.exists(os.path.join(export, 'saved_model.pb'))):
    info_path = os.path.join(export, ASSETS_DIR, INFO_FILE)
    info = json_files.load_object(info_path) if tf.io.gfile.exists(info_path) else None
    names = info.get(TRAIN_VIDEO_NAMES) if info is not None else None
    if not isinstance(names, list):
      raise ResumeSettingsError(Problem('warm_start_from', (
          f'--warm_start_from={params.warm_start_from} is the checkpoint of the export '
          f'{export}, whose {info_path} is missing, damaged or lists no training videos: the '
          'videos those weights learnt cannot be compared with this run\'s test videos; '
          'restore it (a copy of the export), or warm-start from its model_dir')))
    return list(names), info_path
  try:
    record = read_record(source)
    problem = None
  except ResumeSettingsError:
    record, problem = None, 'cannot be read'
  if record is not None:
    earlier = record.get(TRAIN_VIDEO_NAMES)
    return (list(earlier) if isinstance(earlier, list) else []), record_path(source)
  evidence = _recording_evidence(source, checkpoint)
  if evidence:
    raise ResumeSettingsError(Problem('warm_start_from', (
        f'--warm_start_from={params.warm_start_from}: {record_path(source)} '
        f'{problem or "is missing"}, though {evidence} shows the run that trained it recorded '
        'one: the videos those weights learnt cannot be compared with this run\'s test videos; '
        'restore it (from the model_dir the checkpoint was copied from), or warm-start from '
        'that run\'s export (export/best/<time>, whose video_model.json lists them)')))
  return [], ''


def _warm_start_checkpoint(params) -> str:
  """The checkpoint prefix `--warm_start_from` names ('' without one, or when it cannot be
  resolved: the preflight names that)."""
  if not params.warm_start_from:
    return ''
  try:
    return warm_start.resolve_checkpoint(params.warm_start_from, params.stream)
  except warm_start.WarmStartError:
    return ''


def _recording_evidence(model_dir: str, checkpoint: str | None = None) -> str | None:
  """A file of model_dir only a run that records its settings writes: run.flags (written
  with the record, after it), a final_evaluation.json or export video_model.json that
  carries a lineage, or the .meta of `checkpoint` (default: model_dir's latest) saved past
  step 0 by such a run (`checkpoints.trained_recording`: a bare copy of its checkpoint
  files); None when there is none (a model_dir trained before records, or not one of this
  library). Not export_assets/: it is written with the graph, before the record, so a run
  stopped in between (a full disk at its first checkpoint) has it."""
  flags = os.path.join(model_dir, 'run.flags')
  if tf.io.gfile.exists(flags):
    return flags
  found = [os.path.join(model_dir, 'final_evaluation.json')] + sorted(
      tf.io.gfile.glob(os.path.join(model_dir, 'export', '*', '*', ASSETS_DIR, INFO_FILE)))
  for path in found:
    record = json_files.load_object(path) if tf.io.gfile.exists(path) else None
    if record and record.get(lineage.KEY):
      return path
  checkpoint = checkpoint or tf.train.latest_checkpoint(model_dir)
  if checkpoint and checkpoints.trained_recording(checkpoint):
    return checkpoint + '.meta'
  return None


def _check_record_not_lost(model_dir: str) -> None:
  """Raises `ResumeSettingsError` (option model_dir) when model_dir holds a checkpoint but
  no record while a file only a recording run writes shows one existed
  (`_recording_evidence`): it was lost, and continuing would compare neither the settings
  nor the videos it trained on."""
  evidence = _recording_evidence(model_dir)
  if evidence:
    raise ResumeSettingsError(Problem('model_dir', (
        f'{model_dir} holds a checkpoint but no {RECORD_FILE}, though {evidence} shows the run '
        'that trained it recorded one: it was lost, so neither its learning settings nor '
        f'the videos it trained on can be compared; restore {RECORD_FILE} (from the '
        'model_dir its checkpoint was copied from), or train in a new --model_dir')))


def model_dir_video_names(params) -> list[str] | None:
  """The videos the model in model_dir has trained on, counting this run's data_dir: the
  list this run's record holds (`checked_record`): the earlier runs' (its record's list)
  only while model_dir holds their checkpoint. What exports list, written before this run's
  record is."""
  try:
    stored = read_record(params.model_dir)
  except ResumeSettingsError:
    stored = None
  names = train_video_names(params)
  if names is None:
    return None
  earlier, _ = _earlier_video_names(params, stored, tf.train.latest_checkpoint(params.model_dir))
  return sorted(set(names) | set(earlier))


def write_record(model_dir: str, value: dict[str, Any]) -> None:
  """Writes `value` (from `checked_record`) as model_dir/train_settings.json."""
  _write_json(record_path(model_dir), value)


def _write_json(path: str, value: dict[str, Any]) -> None:
  """Writes through a temporary file, so a reader never sees half a record."""
  tf.io.gfile.makedirs(os.path.dirname(path))
  temporary = path + '.tmp'
  with tf.io.gfile.GFile(temporary, 'w') as f:
    json.dump(value, f, indent=1, sort_keys=True)
  tf.io.gfile.rename(temporary, path, overwrite=True)

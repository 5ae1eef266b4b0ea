"""What an exported model needs for inference, shipped inside the SavedModel: reading it.

Training exports (`towers/training.py`) a SavedModel whose `serving_default` signature takes
`clips` float32 [None, clip_frames, crop_size, crop_size, C] (C = 3 rgb, 2 flow: u, v) in
[-1, 1] (uint8 pixels or flow codes x as x / 127.5 - 1; a batch with a value outside is
refused, naming the range) and returns `probabilities` float32 [None, num_classes]
(softmax), `classes` int64 [None] (argmax), `logits`, `class_name` string [None] (the name
of `classes`) and `class_names` string [None, num_classes]. Its graph is one tower with no
device pinned (`model_fn/predict_spec.py`), whatever training ran on. Beside it, in
`<export>/assets.extra/`, training puts (`towers/export_info.py` writes them):

  class_names.txt     one class name per line, in label order (line i = label i)
  video_model.json    {format_version, signature, input {name, dtype, shape, range},
                       outputs, stream, model, dataset, num_classes, clip_frames, crop_size,
                       eval_clips, eval_crops, frame_short_side, frame_short_side_range,
                       records_jpeg_quality, flow_extraction, data, train_video_names,
                       evaluation, step, top_1, lineage}

`frame_short_side` is the short side (pixels) frames were resized to before cropping in
training (0: as decoded); `frame_short_side_range` the [smallest, largest] short side
(pixels) of the frames training read, or None when unknown (frames as decoded on the
direct route, records prepared before sizes were kept); `records_jpeg_quality` (RGB models trained on records) the JPEG
quality //data_tools:prepare stored their frames at, else None; `flow_extraction` (flow
models) the TV-L1 settings the training flow was extracted with ({short_side, bound, tvl1
{scales, warps, epsilon}}), or None when unknown; `train_video_names` the sorted canonical
names of the training videos (None: synthetic data), so the export alone says which videos
it must not be evaluated on; `step` and `top_1` the checkpoint exported and its
evaluation's top-1, measured on `evaluation` ({test_videos: '<n> videos, sha256 <12 hex>',
test_data: what those videos hold ('8 videos sampled: frames 20x24, 37 frames; sources
sha256 <12 hex>', None when unreadable; an export recorded without it counts as measured
otherwise), data_source, eval_clips, eval_crops, max_eval_videos, eval_steps}: the best export is
replaced by a later one measured otherwise, whose top-1 it cannot be compared with);
`lineage` the training run whose model it is (`towers/cluster/lineage.py`: an export of
another run, or without one, is replaced by the next evaluation of this run's model).
Class names come from the training data (the records'
manifest, or the split's classInd.txt); the synthetic source has none and gets `class_<i>`.
Exports made before a field existed lack it (`dataset`, `records_jpeg_quality`,
`train_video_names`, `frame_short_side_range`): `read` checks those fields only when present.
"""

from __future__ import annotations

import json
import os
from typing import Any, Sequence

import tensorflow as tf

from input_fn import datasets
from input_fn import manifest as manifest_lib

ASSETS_DIR = 'assets.extra'
CLASS_NAMES_FILE = 'class_names.txt'
INFO_FILE = 'video_model.json'
FORMAT_VERSION = 1
TRAIN_VIDEO_NAMES = 'train_video_names'  # video_model.json: the training videos, or null
SHORT_SIDE_RANGE = 'frame_short_side_range'  # video_model.json: [min, max] pixels, or null


class ExportInfoError(ValueError):
  """An export's assets.extra file is damaged or contradicts itself; the message names the
  file, what is wrong and the fix.

  `path`: the file; `reason`: what is wrong, one short key ('missing', 'mixed', 'unreadable',
  'not_json', 'not_an_object', 'missing_field', 'bad_value', 'not_text', 'empty_line', 'repeated_name',
  'name_count', 'names_disagree'); `field`: the JSON field at fault (e.g. 'eval_clips',
  'flow_extraction.tvl1.scales') or the class name that repeats, else None; `value`: what
  is there instead (the field's value, the number of names, the empty line's number, the
  JSON type), else None; `copy`: the copy of the assets training keeps, when it exists.
  """

  def __init__(self, message: str, path: str, reason: str, field: str | None = None,
               value: Any = None, copy: str | None = None) -> None:
    super().__init__(message)
    self.path = path
    self.reason = reason
    self.field = field
    self.value = value
    self.copy = copy


def _is_int(value: Any) -> bool:
  return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
  return isinstance(value, (int, float)) and not isinstance(value, bool)


def _positive(value: Any) -> bool:
  return _is_int(value) and value > 0


# The fields of video_model.json a reader uses: (check, what the check wants).
_INFO_FIELDS: dict[str, tuple[Any, str]] = {
    'format_version': (_positive, 'a positive integer'),
    'stream': (lambda v: v in ('rgb', 'flow'), '"rgb" or "flow"'),
    'num_classes': (_positive, 'a positive integer'),
    'clip_frames': (_positive, 'a positive integer'),
    'crop_size': (_positive, 'a positive integer'),
    'eval_clips': (_positive, 'a positive integer'),
    'eval_crops': (lambda v: _is_int(v) and v in datasets.EVAL_CROPS,
                   ' or '.join(map(str, datasets.EVAL_CROPS))),
    'frame_short_side': (lambda v: _is_int(v) and v >= 0, 'an integer >= 0'),
    'flow_extraction': (lambda v: v is None or isinstance(v, dict), 'an object or null'),
}
# Fields that exports made before they existed lack: checked when present.
_LATER_FIELDS: dict[str, tuple[Any, str]] = {
    'dataset': (lambda v: v in datasets.NAMES, f'one of {", ".join(datasets.NAMES)}'),
    'records_jpeg_quality': (lambda v: v is None or (_is_int(v) and 1 <= v <= 100),
                             'an integer from 1 to 100 or null'),
    TRAIN_VIDEO_NAMES: (lambda v: v is None or (isinstance(v, list) and
                                                all(isinstance(n, str) for n in v)),
                        'a list of video names or null'),
    SHORT_SIDE_RANGE: (lambda v: v is None or (isinstance(v, list) and len(v) == 2 and
                                               all(_is_int(n) and n > 0 for n in v) and
                                               v[0] <= v[1]),
                       'null or [smallest, largest], positive integers'),
}
_TVL1_FIELDS: dict[str, tuple[Any, str]] = {
    'scales': (_positive, 'a positive integer'),
    'warps': (_positive, 'a positive integer'),
    'epsilon': (lambda v: _is_number(v) and v > 0, 'a positive number'),
}


def _damaged(path: str, problem: str, reason: str, field: str | None = None,
             value: Any = None) -> ExportInfoError:
  model_dir = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
      os.path.dirname(os.path.abspath(path))))))
  keep = os.path.join(model_dir, 'export_assets')
  restore = f'restore it (training keeps a copy in {keep}/)' if os.path.isdir(keep) else \
      'restore it'
  return ExportInfoError(f'{path} is damaged: {problem}; {restore} or train and export the '
                         'model again', path, reason, field, value,
                         keep if os.path.isdir(keep) else None)


def _check_info(path: str, info: Any) -> dict[str, Any]:
  """`info` when it is a video_model.json this module writes; `ExportInfoError` else."""
  if not isinstance(info, dict):
    raise _damaged(path, f'not a JSON object but {type(info).__name__}', 'not_an_object',
                   value=type(info).__name__)
  for name, (valid, wanted) in _INFO_FIELDS.items():
    if name not in info:
      raise _damaged(path, f'it has no "{name}"', 'missing_field', name)
    if not valid(info[name]):
      raise _damaged(path, f'"{name}" is {json.dumps(info[name])}, not {wanted}', 'bad_value',
                     name, info[name])
  for name, (valid, wanted) in _LATER_FIELDS.items():
    if name in info and not valid(info[name]):
      raise _damaged(path, f'"{name}" is {json.dumps(info[name])}, not {wanted}', 'bad_value',
                     name, info[name])
  settings = info['flow_extraction']
  if info['stream'] == 'flow' and settings is not None:
    tvl1 = settings.get('tvl1')
    if not _is_int(settings.get('short_side')) or settings['short_side'] < 0:
      raise _damaged(path, '"flow_extraction.short_side" is '
                     f'{json.dumps(settings.get("short_side"))}, not an integer >= 0',
                     'bad_value', 'flow_extraction.short_side', settings.get('short_side'))
    if not isinstance(tvl1, dict) or set(tvl1) != set(_TVL1_FIELDS):
      raise _damaged(path, f'"flow_extraction.tvl1" is {json.dumps(tvl1)}, not an object '
                     f'of {", ".join(_TVL1_FIELDS)}', 'bad_value', 'flow_extraction.tvl1',
                     tvl1)
    for name, (valid, wanted) in _TVL1_FIELDS.items():
      if not valid(tvl1[name]):
        raise _damaged(path, f'"flow_extraction.tvl1.{name}" is {json.dumps(tvl1[name])}, '
                       f'not {wanted}', 'bad_value', f'flow_extraction.tvl1.{name}', tvl1[name])
  return info


def _check_names(path: str, lines: list[str], num_classes: int) -> list[str]:
  """The class names of `lines` (trailing empty lines dropped) when they are one non-empty,
  distinct name per class; `ExportInfoError` else."""
  while lines and not lines[-1].strip():
    lines.pop()
  names = [line.rstrip('\r') for line in lines]
  empty = [i + 1 for i, name in enumerate(names) if not name.strip()]
  if empty:
    raise _damaged(path, f'line {empty[0]} is empty (one class name per line, line i = '
                   'label i)', 'empty_line', value=empty[0])
  seen: dict[str, int] = {}
  for i, name in enumerate(names):
    if name in seen:
      raise _damaged(path, f'"{name}" is the name of classes {seen[name]} and {i}: two classes '
                     'would print the same name', 'repeated_name', name)
    seen[name] = i
  if len(names) != num_classes:
    raise _damaged(path, f'it lists {len(names)} names, but video_model.json says '
                   f'num_classes {num_classes}', 'name_count', value=len(names))
  return names


def _read_bytes(path: str) -> bytes:
  try:
    with tf.io.gfile.GFile(path, 'rb') as f:
      return f.read()
  except (OSError, tf.errors.OpError) as e:
    raise ExportInfoError(f'{path} cannot be read ({getattr(e, "message", None) or e})', path,
                          'unreadable') from e


def read(export_dir: str) -> tuple[dict[str, Any] | None, list[str] | None]:
  """(video_model.json, class names) of an export; (None, None) for an export made without
  them. Raises `ExportInfoError` naming the file when either is damaged: one missing beside
  the other (an incomplete copy), not UTF-8 text or
  not JSON, a field of `_INFO_FIELDS` missing or of the wrong type, class names that repeat,
  are empty or are not num_classes many."""
  assets = os.path.join(export_dir, ASSETS_DIR)
  info_path, names_path = (os.path.join(assets, n) for n in (INFO_FILE, CLASS_NAMES_FILE))
  present = [tf.io.gfile.exists(p) for p in (info_path, names_path)]
  if not any(present):
    return None, None
  if not all(present):  # this project writes both: one alone is an incomplete copy
    missing, held = (info_path, names_path) if present[1] else (names_path, info_path)
    raise _damaged(missing, f'it is missing, though {os.path.basename(held)} is beside it '
                   '(an incomplete copy?)', 'missing')
  info_data, names_data = (_read_bytes(p) for p in (info_path, names_path))
  try:
    info = json.loads(info_data.decode('utf-8-sig'))  # a byte-order mark read as none
  except (ValueError, UnicodeDecodeError) as e:
    raise _damaged(info_path, f'not JSON ({e})', 'not_json') from e
  info = _check_info(info_path, info)
  _check_step(export_dir, info_path, info)
  try:
    text = names_data.decode('utf-8-sig')
  except UnicodeDecodeError as e:
    raise _damaged(names_path, f'not UTF-8 text ({e})', 'not_text') from e
  if '\x00' in text:
    raise _damaged(names_path, 'not text (it holds NUL bytes)', 'not_text')
  return info, _check_names(names_path, text.split('\n'), info['num_classes'])


def _check_step(export_dir: str, info_path: str, info: dict[str, Any]) -> None:
  """Raises `ExportInfoError` ('mixed') when video_model.json records the step it was
  exported at and the export's own variables hold another global_step: its weights and
  its description come from two exports (files copied by hand), so the training videos
  it lists are not those its weights learnt. Nothing when either is not recorded."""
  step = info.get('step')
  if not isinstance(step, int) or isinstance(step, bool):
    return
  try:
    held = int(tf.train.load_variable(os.path.join(export_dir, 'variables', 'variables'),
                                      'global_step'))
  except (tf.errors.OpError, ValueError, TypeError):
    return  # no such variable, or variables that cannot be read: loading names that
  if held != step:
    raise _damaged(info_path, f'it describes the model exported at step {step}, but the '
                   f'weights in {export_dir}/variables are at step {held}: the export\'s '
                   'files come from two exports; copy one export folder whole', 'mixed')


def check_graph_names(export_dir: str, names: Sequence[str] | None,
                      graph_names: Sequence[str] | None) -> None:
  """Raises `ExportInfoError` ('names_disagree', naming class_names.txt and the export) when
  the export's class_names.txt `names` are not, in label order, the names compiled into its
  graph, `graph_names` (`saved_model.signature_class_names`): the file of another model, or
  reordered by hand, would name every prediction wrongly. Nothing when either is None."""
  differs = manifest_lib.class_difference(names, graph_names, 'in the file',
                                          'in the model\'s graph') \
      if names is not None and graph_names is not None else ''
  if differs:
    raise _damaged(os.path.join(export_dir, ASSETS_DIR, CLASS_NAMES_FILE),
                   f'it does not list the class names compiled into the model {export_dir} '
                   f'({differs}): it is another model\'s, or was reordered', 'names_disagree')

"""The export metadata training writes: what `serving/export_info.py` reads back.

    info, class_names = describe(params)                 # video_model.json, class_names.txt
    assets = write_assets(info, class_names, directory)  # BestExporter's assets_extra

The files, their fields and the checks a reader makes are described in
`serving/export_info.py`. `train_video_names` (video_model.json) lists, sorted, the
canonical names of the videos the model trained on, this run's data_dir and, on a resume,
every earlier run's (`train_settings.model_dir_video_names`; None for synthetic data or a
data_dir that cannot be read), so an export alone tells
two-stream evaluation which test videos it must not be scored on.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, NamedTuple

import tensorflow as tf

from input_fn import datasets, flow, manifest, ucf101
from serving import saved_model
from serving.export_info import (ASSETS_DIR, CLASS_NAMES_FILE, FORMAT_VERSION, INFO_FILE,
                                 SHORT_SIDE_RANGE, TRAIN_VIDEO_NAMES)
from towers import train_settings
from towers.params import TrainParams



def _channels(stream: str) -> int:
  return 2 if stream == 'flow' else 3


class TrainingData(NamedTuple):
  """What an export says about its training data: class names (padded with `class_<i>` up
  to num_classes), the short side frames were resized to (0: as decoded), the (smallest,
  largest) short side in pixels of the frames the model saw (None: not known, e.g. frames
  as decoded on the direct route) and the flow's extraction settings (None: not known)."""
  names: list[str]
  short_side: int
  short_side_range: tuple[int, int] | None
  flow_settings: dict[str, Any] | None


def data_description(params: TrainParams) -> TrainingData:
  """The `TrainingData` of `params`' data source."""
  names: list[str] = []
  short_side, sides, flow_settings = 0, None, None
  if params.data_source == 'tfrecord':
    found = manifest.read(params.data_dir, 'test')
    names = list(found.get('classes', ()))
    short_side = int(found.get('short_side', 0))
    flow_settings = flow.records_extraction_settings(found)
    sides = manifest.short_side_range(manifest.read(params.data_dir, 'train'))
  elif params.data_source in ('videos', 'frames'):
    names = list(datasets.params_split(params).classes.names)
    short_side = params.frame_short_side
    sides = (short_side, short_side) if short_side else None
    if params.stream == 'flow':
      flow_settings = flow.extraction_settings(os.path.join(params.data_dir, ucf101.FLOW_DIR_NAME))
  names = names[:params.num_classes]
  names += [f'class_{i}' for i in range(len(names), params.num_classes)]
  return TrainingData(names, short_side, sides, flow_settings)


def _records_jpeg_quality(params: TrainParams) -> int | None:
  """The JPEG quality of the RGB frames in `params`' records (prepare re-encodes decoded or
  resized frames at it); None when the model did not read JPEG records (other sources,
  flow)."""
  if params.data_source != 'tfrecord' or params.stream != 'rgb':
    return None
  quality = (manifest.read_identity(params.data_dir) or {}).get('jpeg_quality')
  return int(quality) if quality else None


def describe(params: TrainParams, network: str | None = None
             ) -> tuple[dict[str, Any], list[str]]:
  """(video_model.json contents, class names) for a model trained with `params`; its
  `model` is `network`, the caller's own network's name, when given
  (`networks.caller_network_name`), else the registered `params.model`."""
  names, short_side, sides, flow_settings = data_description(params)
  shape = [None, params.clip_frames, params.crop_size, params.crop_size,
           _channels(params.stream)]
  info = {
      'format_version': FORMAT_VERSION,
      'signature': 'serving_default',
      'input': {'name': 'clips', 'dtype': 'float32', 'shape': shape, 'range': [-1.0, 1.0],
                'from_uint8': 'x / 127.5 - 1'},
      'outputs': {'probabilities': 'float32 [batch, num_classes], softmax',
                  'classes': 'int64 [batch], argmax', 'logits': 'float32 [batch, num_classes]',
                  'class_name': 'string [batch], the name of classes',
                  'class_names': 'string [batch, num_classes], the names in label order'},
      'stream': params.stream, 'model': network or params.model, 'dataset': params.dataset,
      'num_classes': params.num_classes,
      'clip_frames': params.clip_frames, 'crop_size': params.crop_size,
      'eval_clips': params.eval_clips, 'eval_crops': params.eval_crops,
      'frame_short_side': short_side,
      SHORT_SIDE_RANGE: list(sides) if sides else None,
      'records_jpeg_quality': _records_jpeg_quality(params),
      'flow_extraction': flow_settings if params.stream == 'flow' else None,
      'class_names_file': CLASS_NAMES_FILE,
      'data': {'source': params.data_source, 'dir': params.data_dir},
      TRAIN_VIDEO_NAMES: train_settings.model_dir_video_names(params),
      'evaluation': evaluation_settings(params),
  }
  return info, names


def evaluation_settings(params: TrainParams) -> dict[str, Any]:
  """What an evaluation's top-1 measures: the test videos (count and digest of their names),
  what they hold (`train_settings.subset_data` of 'test': sampled frame sizes and counts,
  the digest of the records' source sizes), so other videos under the same names measure
  otherwise, and the flags that decide what is read of them. Two evaluations compare only
  when these are equal; one recorded before `test_data` was recorded compares with none."""
  names = train_settings.test_video_names(params)
  digest = hashlib.sha256(json.dumps(names).encode()).hexdigest()[:12] if names else None
  return {'test_videos': f'{len(names)} videos, sha256 {digest}' if names else None,
          'test_data': train_settings.subset_data(params, 'test'),
          'data_source': params.data_source, 'eval_clips': params.eval_clips,
          'eval_crops': params.eval_crops, 'max_eval_videos': params.max_eval_videos,
          'eval_steps': params.eval_steps}


def newest_export_record(export_path: str) -> dict[str, Any] | None:
  """The video_model.json of the newest export under `export_path`
  (`saved_model.saved_model_dir`) when it records the step, top-1 and evaluation it was
  exported at; None otherwise (none, or an older export)."""
  try:
    path = os.path.join(saved_model.saved_model_dir(export_path), ASSETS_DIR, INFO_FILE)
    with tf.io.gfile.GFile(path) as f:
      held = json.load(f)
  except (saved_model.ModelError, ValueError, UnicodeDecodeError, tf.errors.OpError):
    return None
  if not isinstance(held, dict) or not isinstance(held.get('top_1'), (int, float)) or \
      'evaluation' not in held:
    return None
  return held


def write_assets(info: dict[str, Any], names: list[str], directory: str) -> dict[str, str]:
  """Writes video_model.json (`info`) and class_names.txt (`names`), as `describe` makes
  them, into `directory`; returns the `assets_extra` mapping of `tf.estimator.BestExporter`
  (name in assets.extra -> file)."""
  tf.io.gfile.makedirs(directory)
  files = {INFO_FILE: json.dumps(info, indent=1), CLASS_NAMES_FILE: '\n'.join(names) + '\n'}
  for name, text in files.items():
    with tf.io.gfile.GFile(os.path.join(directory, name), 'w') as f:
      f.write(text)
  return assets_extra(directory)


def assets_extra(directory: str) -> dict[str, str]:
  """The `assets_extra` mapping `write_assets` returns, without writing anything."""
  return {name: os.path.join(directory, name) for name in (INFO_FILE, CLASS_NAMES_FILE)}

"""What an exported model needs for inference, shipped inside the SavedModel.

Training exports (`towers/training.py`) a SavedModel whose `serving_default` signature takes
`clips` float32 [None, clip_frames, crop_size, crop_size, C] (C = 3 rgb, 2 flow: u, v) in
[-1, 1] (uint8 pixels or flow codes x as x / 127.5 - 1; a batch with a value outside is
refused, naming the range) and returns `probabilities` float32 [None, num_classes]
(softmax), `classes` int64 [None] (argmax), `logits`, `class_name` string [None] (the name
of `classes`) and `class_names` string [None, num_classes]. Its graph is one tower with no
device pinned (`model_fn/tower_model_fn.py`), whatever training ran on. Beside it, in
`<export>/assets.extra/`, this module puts:

  class_names.txt     one class name per line, in label order (line i = label i)
  video_model.json    {format_version, signature, input {name, dtype, shape, range},
                       outputs, stream, model, num_classes, clip_frames, crop_size,
                       eval_clips, eval_crops, frame_short_side, flow_extraction, data}

`frame_short_side` is the short side (pixels) frames were resized to before cropping in
training (0: as decoded); `flow_extraction` (flow models) the TV-L1 settings the training
flow was extracted with ({short_side, bound, tvl1 {scales, warps, epsilon}}), or None when
unknown. Class names come from the training data (the records' manifest, or the split's
classInd.txt); the synthetic source has none and gets `class_<i>`.
"""

from __future__ import annotations

import json
import os
from typing import Any

import tensorflow as tf

from input_fn import manifest, ucf101
from towers.params import TrainParams

ASSETS_DIR = 'assets.extra'
CLASS_NAMES_FILE = 'class_names.txt'
INFO_FILE = 'video_model.json'
FORMAT_VERSION = 1
FLOW_MANIFEST = 'flow.manifest.json'  # written by //data_tools:extract_flow in its flow root


def _channels(stream: str) -> int:
  return 2 if stream == 'flow' else 3


def _flow_settings(flow_root: str) -> dict[str, Any] | None:
  path = os.path.join(flow_root, FLOW_MANIFEST)
  if not flow_root or not tf.io.gfile.exists(path):
    return None
  with tf.io.gfile.GFile(path) as f:
    return json.load(f).get('settings')


def data_description(params: TrainParams) -> tuple[list[str], int, dict[str, Any] | None]:
  """(class names of the training data, frame short side, flow extraction settings or
  None) of `params`' data source. Names are padded with `class_<i>` up to num_classes."""
  names: list[str] = []
  short_side, flow_settings = 0, None
  if params.data_source == 'tfrecord':
    found = manifest.read(params.data_dir, 'test')
    names = list(found.get('classes', ()))
    short_side = int(found.get('short_side', 0))
    flow_settings = _flow_settings(found.get('source_paths', {}).get('flow_dir', ''))
  elif params.data_source in ('videos', 'frames'):
    split_dir = ucf101.find_dir(params.data_dir, ucf101.SPLIT_DIR_NAMES,
                                ucf101.CLASS_INDEX_FILE)
    names = list(ucf101.read_split(split_dir, params.split).classes.names)
    short_side = params.frame_short_side
    if params.stream == 'flow':
      flow_settings = _flow_settings(os.path.join(params.data_dir, ucf101.FLOW_DIR_NAME))
  names = names[:params.num_classes]
  names += [f'class_{i}' for i in range(len(names), params.num_classes)]
  return names, short_side, flow_settings


def describe(params: TrainParams) -> tuple[dict[str, Any], list[str]]:
  """(video_model.json contents, class names) for a model trained with `params`."""
  names, short_side, flow_settings = data_description(params)
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
      'stream': params.stream, 'model': params.model, 'num_classes': params.num_classes,
      'clip_frames': params.clip_frames, 'crop_size': params.crop_size,
      'eval_clips': params.eval_clips, 'eval_crops': params.eval_crops,
      'frame_short_side': short_side,
      'flow_extraction': flow_settings if params.stream == 'flow' else None,
      'class_names_file': CLASS_NAMES_FILE,
      'data': {'source': params.data_source, 'dir': params.data_dir},
  }
  return info, names


def write_assets(info: dict[str, Any], names: list[str], directory: str) -> dict[str, str]:
  """Writes video_model.json (`info`) and class_names.txt (`names`), as `describe` makes
  them, into `directory`; returns the `assets_extra` mapping of `tf.estimator.BestExporter`
  (name in assets.extra -> file)."""
  tf.io.gfile.makedirs(directory)
  files = {INFO_FILE: json.dumps(info, indent=1), CLASS_NAMES_FILE: '\n'.join(names) + '\n'}
  for name, text in files.items():
    with tf.io.gfile.GFile(os.path.join(directory, name), 'w') as f:
      f.write(text)
  return {name: os.path.join(directory, name) for name in files}


def read(export_dir: str) -> tuple[dict[str, Any] | None, list[str] | None]:
  """(video_model.json, class names) of an export; (None, None) for an export made without
  them."""
  assets = os.path.join(export_dir, ASSETS_DIR)
  info_path, names_path = (os.path.join(assets, n) for n in (INFO_FILE, CLASS_NAMES_FILE))
  if not tf.io.gfile.exists(info_path) or not tf.io.gfile.exists(names_path):
    return None, None
  with tf.io.gfile.GFile(info_path) as f:
    info = json.load(f)
  with tf.io.gfile.GFile(names_path) as f:
    names = [line.rstrip('\r\n') for line in f if line.strip()]
  return info, names

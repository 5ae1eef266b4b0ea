"""Loading an exported video model: which SavedModel a path means, and the clips it takes.

    export = saved_model_dir('runs/rgb')         # runs/rgb/export/best/<newest>
    model = load_model('runs/rgb', expect='rgb')  # StreamModel: serving function, clip shape

An export's `serving_default` signature takes `clips` float32 [None, frames, size, size, C]
(C = 3 rgb, C = 2 flow) and returns `probabilities` float32 [None, num_classes], the
softmax (what else it carries: `serving/export_info.py`). A path that is no such export
raises `ModelError` naming it and what to do.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import tensorflow as tf

STREAM_OF_CHANNELS = {3: 'rgb', 2: 'flow'}


class ModelError(ValueError):
  """A path is not the exported video model it should be; the message says what to do.

  `reason`: 'no_export' (no SavedModel there), 'damaged' (it cannot be loaded: variables
  missing or cut short), 'not_a_video_model' (its input is not clips of this project) or
  'wrong_stream' (rgb where flow was expected, or the reverse);
  `path`: the directory at fault.
  """

  def __init__(self, message: str, reason: str, path: str) -> None:
    super().__init__(message)
    self.reason = reason
    self.path = path


def saved_model_dir(path: str) -> str:
  """`path` if it holds a saved_model.pb, else the newest export under `path/export/best`
  (a model_dir trained by //towers:train) or under `path` itself (that export/best/); a
  `temp-<timestamp>/` export a killed run left unfinished is never taken.
  Raises `ModelError` naming what to do."""
  if tf.io.gfile.exists(os.path.join(path, 'saved_model.pb')):
    return path
  for best in (os.path.join(path, 'export', 'best'), path):
    exports = sorted(d for d in (tf.io.gfile.listdir(best) if tf.io.gfile.isdir(best) else [])
                     if not d.startswith('temp-')  # an export a killed run left unfinished
                     and tf.io.gfile.exists(os.path.join(best, d.rstrip('/'), 'saved_model.pb')))
    if exports:
      break
  if not exports:
    raise ModelError(f'{path} is neither a SavedModel nor a model_dir with an export under '
                     'export/best/: train it with //towers:train (export_savedmodel=true, '
                     'the default) or pass the export directory', 'no_export', path)
  return os.path.join(best, exports[-1].rstrip('/'))


@dataclasses.dataclass(frozen=True)
class StreamModel:
  """A loaded SavedModel and the clips it takes: [None, frames, size, size, channels]."""
  export: str
  serving: Any
  frames: int
  size: int
  channels: int

  @property
  def stream(self) -> str:
    return STREAM_OF_CHANNELS[self.channels]


def load_model(model: str, expect: str | None = None) -> StreamModel:
  """The SavedModel of `model` (see `saved_model_dir`); `expect` ('rgb' or 'flow') checks
  its stream from its input channels. Raises `ModelError`."""
  export = saved_model_dir(model)
  try:
    serving = tf.saved_model.load(export).signatures['serving_default']
  except (tf.errors.OpError, ValueError, OSError) as e:
    first = (getattr(e, 'message', None) or str(e)).strip().splitlines()[0][:200]
    raise ModelError(f'{export} cannot be loaded ({type(e).__name__}: {first}): its '
                     'variables/ are missing or damaged (an incomplete copy?); copy the whole '
                     'export folder again, or export it again from its model_dir',
                     'damaged', export) from None
  spec = serving.structured_input_signature[1]['clips']
  _, frames, height, width, channels = spec.shape.as_list()
  if channels not in STREAM_OF_CHANNELS or height != width:
    raise ModelError(f'{export} takes clips of shape {spec.shape}: not a video model of '
                     'this project', 'not_a_video_model', export)
  loaded = StreamModel(export, serving, frames, height, channels)
  if expect and loaded.stream != expect:
    raise ModelError(f'the {expect} model {export} takes {channels}-channel clips, i.e. '
                     f'it is a {loaded.stream} model: swap the arguments', 'wrong_stream',
                     export)
  return loaded


def model_classes(model: StreamModel) -> int | None:
  """The classes of the model's `probabilities` output [None, classes] (None if unknown)."""
  spec = model.serving.structured_outputs.get('probabilities')
  return None if spec is None or spec.shape.rank != 2 else spec.shape[1]

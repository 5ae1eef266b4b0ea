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
  `path`: the directory at fault; `stream`: the stream expected there ('rgb' or 'flow'), when
  known (`load_pair`).
  """

  def __init__(self, message: str, reason: str, path: str, stream: str | None = None) -> None:
    super().__init__(message)
    self.reason = reason
    self.path = path
    self.stream = stream


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
    raise _wrong_stream(loaded, expect, f': give a {expect} model there')
  return loaded


def load_pair(rgb: str, flow: str) -> dict[str, StreamModel]:
  """The RGB model `rgb` and the Flow model `flow` (see `load_model`), by stream. Raises
  `ModelError` (`stream`: the one at fault); 'wrong_stream': both of the other stream say
  to swap the arguments; one says which stream is needed there (swapping cannot help)."""
  models = {}
  for stream, path in (('rgb', rgb), ('flow', flow)):
    try:
      models[stream] = load_model(path)
    except ModelError as e:
      e.stream = stream
      raise
  wrong = [stream for stream, model in models.items() if model.stream != stream]
  if len(wrong) == 2:
    raise _wrong_stream(models['rgb'], 'rgb', f', and the flow model {models["flow"].export} '
                        'is a rgb model: swap the arguments')
  if wrong:
    other = 'flow' if wrong[0] == 'rgb' else 'rgb'
    raise _wrong_stream(models[wrong[0]], wrong[0], f', like the {other} model '
                        f'{models[other].export}: give a {wrong[0]} model there')
  return models


def _wrong_stream(model: StreamModel, expect: str, fix: str) -> ModelError:
  """The `ModelError` of `model` given where a model of stream `expect` belongs; `fix`
  ends the message."""
  return ModelError(f'the {expect} model {model.export} takes {model.channels}-channel clips, '
                    f'i.e. it is a {model.stream} model{fix}', 'wrong_stream', model.export,
                    expect)


def model_classes(model: StreamModel) -> int | None:
  """The classes of the model's `probabilities` output [None, classes] (None if unknown)."""
  spec = model.serving.structured_outputs.get('probabilities')
  return None if spec is None or spec.shape.rank != 2 else spec.shape[1]


def signature_class_names(model: StreamModel) -> list[str] | None:
  """The class names, in label order, compiled into the model's graph at export (its
  signature's `class_names` output, read from one all-zero clip); None when the signature
  has no such output (exports made before it had)."""
  if 'class_names' not in model.serving.structured_outputs:
    return None
  clip = tf.zeros([1, model.frames, model.size, model.size, model.channels], tf.float32)
  return [name.decode() for name in model.serving(clips=clip)['class_names'].numpy()[0]]

"""Two-stream I3D evaluation: fuses a trained RGB model and a trained Flow model.

The streams train separately (`--stream=rgb` and `--stream=flow`, each with its own
model_dir). Their variables live under different scopes (`RGB/...`, `Flow/...`), so both
networks are built in one graph, each restored from its own model_dir, and the fused
prediction is the average of their logits (DeepMind's sample adds them; the argmax is the
same). This needs no towers and no Estimator:

    result = evaluate_two_stream(rgb_params, flow_params, input_fn)
    result.fused_accuracy, result.rgb_accuracy, result.flow_accuracy

`input_fn()` returns a `tf.data.Dataset` of `(features, labels)`: features a dict with
'rgb' float32 [B, T, H, W, 3] and 'flow' float32 [B, T, H, W, 2] (both in [-1, 1], the
same clips), labels int [B]. Accuracy is per clip. A model trained with `ema_decay > 0`
is evaluated with its averaged weights, as the Estimator's EVAL does.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import tensorflow as tf

from model_fn import layers
from model_fn.networks import build_network, i3d
from model_fn.warm_start import variable_name

tf1 = tf.compat.v1

EMA_SUFFIX = '/ExponentialMovingAverage'


@dataclasses.dataclass(frozen=True)
class TwoStreamEvaluation:
  examples: int
  rgb_accuracy: float
  flow_accuracy: float
  fused_accuracy: float
  fused_logits: np.ndarray   # [examples, num_classes], in input order


def fuse(rgb_logits: tf.Tensor, flow_logits: tf.Tensor) -> tf.Tensor:
  """The two-stream logits: the mean of the two streams' logits."""
  return (rgb_logits + flow_logits) / 2.0


def _check(rgb_params, flow_params) -> None:
  for params, stream in ((rgb_params, 'rgb'), (flow_params, 'flow')):
    if params.model != 'i3d' or params.stream != stream:
      raise ValueError(f'two-stream evaluation needs model=i3d with stream={stream}, got '
                       f'model={params.model} stream={params.stream}')
  if rgb_params.num_classes != flow_params.num_classes:
    raise ValueError(f'the streams disagree on num_classes: {rgb_params.num_classes} '
                     f'(rgb) vs {flow_params.num_classes} (flow)')


def stream_saver(params) -> tf1.train.Saver:
  """A saver restoring the stream's variables (its EMA shadows if `ema_decay`) from its
  model_dir's names; variables of the other stream are not touched."""
  top = i3d.STREAMS[params.stream][0] + '/'
  var_list = {}
  for v in tf1.global_variables():
    name = variable_name(v)
    if name.startswith(top):
      use_ema = getattr(params, 'ema_decay', 0.0) and v.trainable
      var_list[name + EMA_SUFFIX if use_ema else name] = v
  return tf1.train.Saver(var_list)


def latest_checkpoint(params) -> str:
  path = tf.train.latest_checkpoint(params.model_dir)
  if path is None:
    raise FileNotFoundError(f'no checkpoint in model_dir={params.model_dir} of the '
                            f'{params.stream} stream: train it first (--stream={params.stream} '
                            f'--model_dir={params.model_dir})')
  return path


def evaluate_two_stream(rgb_params, flow_params, input_fn, steps: int | None = None,
                        config: tf1.ConfigProto | None = None) -> TwoStreamEvaluation:
  """Per-clip accuracy of each stream and of the fused prediction.

  Reads `input_fn()` to its end, or for `steps` batches. Raises ValueError when the params
  are not an i3d rgb / flow pair, FileNotFoundError when a model_dir has no checkpoint.
  """
  _check(rgb_params, flow_params)
  rgb_checkpoint, flow_checkpoint = latest_checkpoint(rgb_params), latest_checkpoint(flow_params)
  with tf.Graph().as_default():
    features, labels = tf1.data.make_one_shot_iterator(input_fn()).get_next()
    ctx = layers.TowerContext(is_training=False)
    rgb_logits = build_network(rgb_params)(features['rgb'], ctx)
    flow_logits = build_network(flow_params)(features['flow'], ctx)
    fused = fuse(rgb_logits, flow_logits)
    rgb_saver, flow_saver = stream_saver(rgb_params), stream_saver(flow_params)
    fetches = (rgb_logits, flow_logits, fused, labels)
    outputs: list[tuple[np.ndarray, ...]] = []
    with tf1.Session(config=config) as sess:
      rgb_saver.restore(sess, rgb_checkpoint)
      flow_saver.restore(sess, flow_checkpoint)
      while steps is None or len(outputs) < steps:
        try:
          outputs.append(sess.run(fetches))
        except tf.errors.OutOfRangeError:
          break
  if not outputs:
    raise ValueError('input_fn yielded no batch')
  rgb, flow, both, y = (np.concatenate(parts) for parts in zip(*outputs))
  accuracy = lambda logits: float(np.mean(np.argmax(logits, axis=1) == y))
  tf1.logging.info('two-stream evaluation on %d clips: rgb %.4f, flow %.4f, fused %.4f',
                   len(y), accuracy(rgb), accuracy(flow), accuracy(both))
  return TwoStreamEvaluation(len(y), accuracy(rgb), accuracy(flow), accuracy(both), both)

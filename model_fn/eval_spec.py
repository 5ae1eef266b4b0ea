"""The EVAL spec: metrics over the evaluated clips (and videos), the loss, EMA weights.

    eval_metrics(logits, labels, video_index, params) -> {name: (value, update_op)}
    eval_spec(loss, logits, labels, features, params) -> EstimatorSpec(EVAL)
    towers_eval_spec(forward, labels, features, params) -> EstimatorSpec(EVAL)

`logits` float32 [B, num_classes], `labels` int64 [B], `video_index` int64 [B] or None.
Accuracies are streaming means over every evaluated clip (video accuracy: over videos, from
their clips' averaged predictions); TOP_1 picks the best model. Per clip, the evaluation also
counts the confusion matrix: PER_CLASS is each class's top-1 (float32 [num_classes], NaN for a
class with no evaluated clip), and two image summaries in the eval dir draw it
(`model_fn/confusion.py`): CONFUSION_IMAGE (rows normalised) and PER_CLASS_IMAGE (sorted bars),
labelled with the records' class names (`class_names`) where known. The loss is the towers' rule
(`tower_forward.mean_loss`); CLIP_LOSS is its mean over every evaluated clip (each batch's
weighted by its clips), what the evaluation line reports, whatever the eval batch size: the
Estimator's own `loss` averages the batches' means unweighted. With `ema_decay` the weights'
averages are evaluated.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import tensorflow as tf

from input_fn import datasets
from input_fn import manifest as manifest_lib
from model_fn import confusion, eval_coverage, video_metrics
from model_fn.ema_weights import ema_scaffold
from model_fn.tower_forward import Forward, mean_loss, split_features

tf1 = tf.compat.v1
ModeKeys = tf.estimator.ModeKeys

TOP_1 = 'accuracy/top_1'  # the evaluation metric that picks the best model
CLIP_LOSS = 'loss/per_clip'  # the loss's mean over evaluated clips (the Estimator's `loss`:
                             # the mean of its per-batch means, a short last batch weighs more)
PER_CLASS = 'accuracy/per_class'  # float32 [num_classes], NaN: no clip of the class
CONFUSION_IMAGE = 'eval/confusion_matrix'  # the eval dir's image summaries (tag '<name>/0')
PER_CLASS_IMAGE = 'eval/per_class_accuracy'


def class_names(params) -> list[str] | None:
  """The class names of `params.data_dir`, in label order: the test manifest's `classes`
  of prepared records, the dataset's class files (classInd.txt, HMDB51's split files) on
  the direct routes (videos, frames); None for other sources, or when they name none or
  another number than num_classes."""
  source = getattr(params, 'data_source', None)
  if source == 'tfrecord':
    try:
      names = manifest_lib.read(params.data_dir, 'test').get('classes')
    except manifest_lib.ManifestError:  # the preflight names it
      return None
  elif source in ('videos', 'frames'):
    try:
      index, _ = datasets.read_classes(params.dataset, params.data_dir)
    except (OSError, ValueError):  # the preflight names it
      return None
    names = list(index.names) if index is not None else None
  else:
    return None
  return list(names) if names and len(names) == params.num_classes else None


def _image_summary(name: str, draw, matrix: tf.Tensor) -> tf.Tensor:
  """A serialized Summary holding the picture `draw(matrix)` (uint8 [H, W, 3])."""
  image = tf.numpy_function(draw, [matrix], tf.uint8, stateful=False)
  image = tf.ensure_shape(image, [None, None, 3])
  return tf1.summary.image(name, image[None], max_outputs=1, collections=[])


def confusion_metrics(labels: tf.Tensor, predictions: tf.Tensor, num_classes: int,
                      names: Sequence[str] | None) -> dict:
  """PER_CLASS, CONFUSION_IMAGE and PER_CLASS_IMAGE from one streaming int64
  [num_classes, num_classes] count of (label, prediction) over the evaluated clips."""
  with tf1.variable_scope(None, default_name='confusion_matrix'):
    matrix = tf1.get_variable(
        'counts', [num_classes, num_classes], tf.int64, initializer=tf1.zeros_initializer(),
        trainable=False,
        collections=[tf1.GraphKeys.LOCAL_VARIABLES, tf1.GraphKeys.METRIC_VARIABLES])
    update = tf1.assign_add(matrix, tf.math.confusion_matrix(
        tf.reshape(labels, [-1]), tf.reshape(predictions, [-1]), num_classes, dtype=tf.int64))

  def per_class(m: np.ndarray) -> np.ndarray:
    return confusion.per_class_accuracy(m).astype(np.float32)

  def per_class_image(m: np.ndarray) -> np.ndarray:
    return confusion.render_per_class(confusion.per_class_accuracy(m), names, m.sum(axis=1))

  value = matrix.read_value()
  accuracy = tf.ensure_shape(tf.numpy_function(per_class, [value], tf.float32, stateful=False),
                             [num_classes])
  return {
      PER_CLASS: (accuracy, update),
      CONFUSION_IMAGE: (_image_summary(
          'confusion_matrix', lambda m: confusion.render_matrix(m, names), value), update),
      PER_CLASS_IMAGE: (_image_summary('per_class_accuracy', per_class_image, value), update),
  }


NONFINITE_OUTPUTS = 'evaluation: the model\'s outputs are not finite'


def nonfinite_outputs_line(message: str) -> str | None:
  """The one line for an evaluation failed by NaN or infinite logits (an InvalidArgumentError
  `message` holding NONFINITE_OUTPUTS), None for any other message."""
  if NONFINITE_OUTPUTS not in message:
    return None
  return (f'{NONFINITE_OUTPUTS} (NaN or infinite logits on a test clip): its weights or '
          'batch-norm statistics diverged, or its warm-start checkpoint holds such values, so '
          'nothing was scored or exported; train again in a new --model_dir with a lower '
          'learning rate (--lr_values, --warmup_steps), or from another checkpoint')


def views_per_video(params) -> int:
  """The views the evaluation input gives each video: eval_clips x eval_crops."""
  return params.eval_clips * params.eval_crops


def eval_metrics(logits: tf.Tensor, labels: tf.Tensor, video_index: tf.Tensor | None,
                 params) -> dict:
  """Top-1, top-5 (top-k for fewer classes), mean per-class accuracy (over the classes
  present in the evaluated labels), the confusion matrix's metrics (`confusion_metrics`),
  and, given `video_index`, video-level accuracy from the clips' averaged predictions."""
  labels = tf.cast(labels, tf.int64)
  predictions = tf.argmax(logits, axis=-1)
  k = min(5, params.num_classes)
  in_top_k = tf.cast(tf.nn.in_top_k(targets=labels, predictions=tf.cast(logits, tf.float32), k=k),
                     tf.float32)
  metrics = {
      TOP_1: tf1.metrics.accuracy(labels, predictions),
      'accuracy/top_5': tf1.metrics.mean(in_top_k),
      'accuracy/mean_per_class': video_metrics.mean_per_class_accuracy(
          labels, predictions, params.num_classes),
      **confusion_metrics(labels, predictions, params.num_classes, class_names(params)),
  }
  if video_index is not None:
    metrics['accuracy/video'] = video_metrics.video_accuracy(
        video_index, logits, labels, params.max_eval_videos, views_per_video(params))
  return metrics


def eval_spec(loss, logits, labels, features, params) -> tf.estimator.EstimatorSpec:
  """Metrics (`eval_metrics`) and CLIP_LOSS; given the input's `videos_listed`, also
  `eval/videos_evaluated` and `eval/videos_listed`, checked by an `EvalCoverageHook`.
  Logits that are not finite fail the evaluation (InvalidArgumentError holding
  NONFINITE_OUTPUTS: `nonfinite_outputs_line`): their argmax would score every clip as
  class 0."""
  _, video_index = split_features(features)
  logits = tf.debugging.assert_all_finite(logits, NONFINITE_OUTPUTS)
  metrics = eval_metrics(logits, labels, video_index, params)
  metrics[CLIP_LOSS] = tf1.metrics.mean(loss, weights=tf.cast(tf.size(labels), loss.dtype))
  hooks = []
  if isinstance(features, dict) and 'videos_listed' in features and video_index is not None:
    metrics['eval/videos_evaluated'] = video_metrics.videos_evaluated(
        video_index, params.max_eval_videos, views_per_video(params))
    metrics['eval/videos_listed'] = tf1.metrics.mean(
        tf.cast(features['videos_listed'], tf.float32))
    hooks.append(eval_coverage.EvalCoverageHook(
        metrics['eval/videos_evaluated'][0], metrics['eval/videos_listed'][0],
        params.strict_eval, params.eval_steps))
  return tf.estimator.EstimatorSpec(
      ModeKeys.EVAL, loss=loss, eval_metric_ops=metrics, evaluation_hooks=hooks,
      scaffold=ema_scaffold(params))


def towers_eval_spec(forward: Forward, labels, features, params) -> tf.estimator.EstimatorSpec:
  """The towers' EVAL spec on `forward` (one micro-batch): the loss named 'total_loss'."""
  loss = tf.identity(mean_loss(forward.outputs.loss_sums, forward.global_batch,
                               forward.weight_loss), name='total_loss')
  return eval_spec(loss, forward.logits, labels, features, params)

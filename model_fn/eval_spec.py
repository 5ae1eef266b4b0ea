"""The EVAL spec: metrics over the evaluated clips (and videos), the loss, EMA weights.

    eval_metrics(logits, labels, video_index, params) -> {name: (value, update_op)}
    eval_spec(loss, logits, labels, features, params) -> EstimatorSpec(EVAL)
    towers_eval_spec(forward, labels, features, params) -> EstimatorSpec(EVAL)

`logits` float32 [B, num_classes], `labels` int64 [B], `video_index` int64 [B] or None.
Accuracies are streaming means over every evaluated clip (video accuracy: over videos, from
their clips' averaged predictions); TOP_1 picks the best model. The loss is the towers' rule
(`tower_forward.mean_loss`); with `ema_decay` the weights' averages are evaluated.
"""

from __future__ import annotations

import tensorflow as tf

from model_fn import eval_coverage, video_metrics
from model_fn.ema_weights import ema_scaffold
from model_fn.tower_forward import Forward, mean_loss, split_features

tf1 = tf.compat.v1
ModeKeys = tf.estimator.ModeKeys

TOP_1 = 'accuracy/top_1'  # the evaluation metric that picks the best model


def eval_metrics(logits: tf.Tensor, labels: tf.Tensor, video_index: tf.Tensor | None,
                 params) -> dict:
  """Top-1, top-5 (top-k for fewer classes), mean per-class accuracy (over the classes
  present in the evaluated labels), and, given `video_index`, video-level accuracy from
  the clips' averaged predictions."""
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
  }
  if video_index is not None:
    metrics['accuracy/video'] = video_metrics.video_accuracy(
        video_index, logits, labels, params.max_eval_videos)
  return metrics


def eval_spec(loss, logits, labels, features, params) -> tf.estimator.EstimatorSpec:
  """Metrics (`eval_metrics`); given the input's `videos_listed`, also
  `eval/videos_evaluated` and `eval/videos_listed`, checked by an `EvalCoverageHook`."""
  _, video_index = split_features(features)
  metrics = eval_metrics(logits, labels, video_index, params)
  hooks = []
  if isinstance(features, dict) and 'videos_listed' in features and video_index is not None:
    metrics['eval/videos_evaluated'] = video_metrics.videos_evaluated(
        video_index, params.max_eval_videos)
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

"""Video-level accuracy: average the predictions of all clips of a video, then compare.

The evaluation input (`input_fn/pipeline.py`) yields several clips per video, each with
`features['video_index']` (the video's position in the eval split). `video_accuracy`
accumulates softmax probabilities per video across evaluation batches and reports the
accuracy over the videos seen so far; clip-level accuracy is the ordinary
`tf.compat.v1.metrics.accuracy` on the same logits. `mean_per_class_accuracy` averages over
the classes present in the evaluated labels; `videos_evaluated` counts distinct videos. A
video counts once all its views (eval clips x crops) were evaluated.
"""

from __future__ import annotations

import tensorflow as tf

tf1 = tf.compat.v1


def _local_variable(name: str, shape: list[int], dtype: tf.DType) -> tf.Variable:
  return tf1.get_variable(
      name, shape, dtype, initializer=tf1.zeros_initializer(), trainable=False,
      collections=[tf1.GraphKeys.LOCAL_VARIABLES, tf1.GraphKeys.METRIC_VARIABLES])


def video_accuracy(video_index: tf.Tensor, logits: tf.Tensor, labels: tf.Tensor,
                   max_videos: int, views_per_video: int = 1, name: str = 'video_accuracy'
                   ) -> tuple[tf.Tensor, tf.Tensor]:
  """Streaming video-level accuracy, a `tf.compat.v1.metrics`-style (value_op, update_op).

  Args:
    video_index: int [batch], the clip's video, in [0, max_videos).
    logits: float [batch, num_classes] (num_classes must be static).
    labels: int [batch], the clip's (= its video's) 0-based label.
    max_videos: size of the accumulators, at least the number of eval videos.
    views_per_video: the views (clips x crops) the input gives each video; a video counts
      once all of them were evaluated (an evaluation cut short by eval_steps leaves the
      last video part-read: it is not scored on a part of its views).

  Local variables (reset by the local-variables initializer, like every v1 metric):
  `probability_sums` float32 [max_videos, num_classes] (softmax summed with scatter_add),
  `video_labels` int64 [max_videos], `clip_counts` float32 [max_videos]. `value_op` is the
  fraction of videos with all their views whose argmax of summed (= of averaged)
  probabilities equals their label; 0 before any update. Indices outside
  [0, max_videos) fail the update with an error naming max_videos.
  """
  num_classes = logits.shape[-1]
  if num_classes is None:
    raise ValueError('video_accuracy needs logits with a static number of classes')
  with tf1.variable_scope(None, default_name=name):
    sums = _local_variable('probability_sums', [max_videos, int(num_classes)], tf.float32)
    video_labels = _local_variable('video_labels', [max_videos], tf.int64)
    counts = _local_variable('clip_counts', [max_videos], tf.float32)

    index = tf.cast(tf.reshape(video_index, [-1]), tf.int64)
    in_range = tf.debugging.assert_less(
        index, tf.constant(max_videos, tf.int64),
        message=f'video_index must be < max_videos={max_videos} (raise max_eval_videos)')
    with tf.control_dependencies([in_range]):
      index = tf.identity(index)  # the scatters read the index only once it was checked
      probabilities = tf.nn.softmax(tf.cast(logits, tf.float32))
      update = tf.group(
          tf1.scatter_add(sums, index, probabilities),
          tf1.scatter_update(video_labels, index, tf.cast(tf.reshape(labels, [-1]), tf.int64)),
          tf1.scatter_add(counts, index, tf.ones_like(index, tf.float32)))

    def value() -> tf.Tensor:
      seen = counts >= views_per_video
      correct = tf.logical_and(seen, tf.equal(tf.argmax(sums, axis=1), video_labels))
      return tf.math.divide_no_nan(tf.reduce_sum(tf.cast(correct, tf.float32)),
                                   tf.reduce_sum(tf.cast(seen, tf.float32)))

    value_op = value()
    with tf.control_dependencies([update]):
      update_op = value()
  return value_op, update_op


def mean_per_class_accuracy(labels: tf.Tensor, predictions: tf.Tensor, num_classes: int,
                            name: str = 'mean_per_class_accuracy'
                            ) -> tuple[tf.Tensor, tf.Tensor]:
  """Streaming mean over the classes PRESENT in the evaluated labels of each class's
  accuracy (correct / examples of that class), a (value_op, update_op) pair.

  Unlike `tf.compat.v1.metrics.mean_per_class_accuracy`, a class with no evaluated example
  does not count as accuracy 0: with 4 clips of 2 classes all right it is 1.0, not 0.5 of a
  4-class model. labels, predictions: int [batch] in [0, num_classes). Local variables
  `examples` and `correct`, float32 [num_classes]; 0 before any update.
  """
  with tf1.variable_scope(None, default_name=name):
    examples = _local_variable('examples', [num_classes], tf.float32)
    correct = _local_variable('correct', [num_classes], tf.float32)
    labels = tf.cast(tf.reshape(labels, [-1]), tf.int64)
    hits = tf.cast(tf.equal(labels, tf.cast(tf.reshape(predictions, [-1]), tf.int64)),
                   tf.float32)
    update = tf.group(tf1.scatter_add(examples, labels, tf.ones_like(hits)),
                      tf1.scatter_add(correct, labels, hits))

    def value() -> tf.Tensor:
      present = examples > 0
      per_class = tf.math.divide_no_nan(correct, examples)
      return tf.math.divide_no_nan(
          tf.reduce_sum(tf.where(present, per_class, tf.zeros_like(per_class))),
          tf.reduce_sum(tf.cast(present, tf.float32)))

    value_op = value()
    with tf.control_dependencies([update]):
      update_op = value()
  return value_op, update_op


def videos_evaluated(video_index: tf.Tensor, max_videos: int, views_per_video: int = 1,
                     name: str = 'videos_evaluated') -> tuple[tf.Tensor, tf.Tensor]:
  """Streaming count (float32) of distinct videos with all their `views_per_video` views
  seen, a (value_op, update_op) pair. video_index: int [batch] in [0, max_videos) (indices
  beyond are ignored here; `video_accuracy` reports them). Local variable `views` float32
  [max_videos]."""
  with tf1.variable_scope(None, default_name=name):
    views = _local_variable('views', [max_videos], tf.float32)
    index = tf.cast(tf.reshape(video_index, [-1]), tf.int64)
    index = tf.boolean_mask(index, index < max_videos)
    update = tf1.scatter_add(views, index, tf.ones_like(index, tf.float32))

    def value() -> tf.Tensor:
      return tf.reduce_sum(tf.cast(views >= views_per_video, tf.float32))
    value_op = value()
    with tf.control_dependencies([update]):
      update_op = value()
  return value_op, update_op

"""model_fn/video_metrics.video_accuracy: clip predictions averaged per video, streamed."""

import tensorflow as tf

from model_fn import video_metrics

tf1 = tf.compat.v1


class VideoAccuracyTest(tf.test.TestCase):

  def test_averages_clip_probabilities_per_video_across_batches(self):
    with tf.Graph().as_default():
      index = tf1.placeholder(tf.int64, [None])
      logits = tf1.placeholder(tf.float32, [None, 3])
      labels = tf1.placeholder(tf.int64, [None])
      value, update = video_metrics.video_accuracy(index, logits, labels, max_videos=10)
      self.assertEqual(
          len(tf1.get_collection(tf1.GraphKeys.LOCAL_VARIABLES)), 3)
      with self.session() as sess:
        sess.run(tf1.local_variables_initializer())
        self.assertEqual(sess.run(value), 0.0)  # nothing seen yet
        # Video 4 (label 0): one clip confidently wrong (class 1), then two clips
        # moderately right: the average is right although the first clip alone is wrong.
        # Video 7 (label 2): one clip, wrong. Video 1 (label 1): duplicated index in a batch.
        # Video 9 (label 1): averaged PROBABILITIES say 1 (0.9997 + 2 x 0.09 against
        # 2 x 0.91); averaged logits ([8, 6, 0]) or the most confident clip would say 0.
        batch1 = {index: [4, 7, 1, 1], labels: [0, 2, 1, 1],
                  logits: [[0, 2.0, 0], [3, 0, 0], [0, 1, 0], [0, 1, 0]]}
        batch2 = {index: [4, 4, 9, 9, 9], labels: [0, 0, 1, 1, 1],
                  logits: [[2.5, 0, 0], [2.5, 0, 0], [8, 0, 0], [0, 3, 0], [0, 3, 0]]}
        self.assertAllClose(sess.run(update, batch1), 1 / 3)  # only video 1 right so far
        self.assertAllClose(sess.run(update, batch2), 3 / 4)  # videos 1, 4 and 9
        self.assertAllClose(sess.run(value), 3 / 4)
        sess.run(tf1.local_variables_initializer())
        self.assertEqual(sess.run(value), 0.0)

  def test_index_beyond_max_videos_fails_naming_the_bound(self):
    for index, fails in ((4, False), (5, True)):  # the indices of 5 videos are 0..4
      with tf.Graph().as_default():
        _, update = video_metrics.video_accuracy(
            tf.constant([index], tf.int64), tf.zeros([1, 2]), tf.constant([0], tf.int64),
            max_videos=5)
        with self.session() as sess:
          sess.run(tf1.local_variables_initializer())
          if fails:
            with self.assertRaises(tf.errors.InvalidArgumentError):
              sess.run(update)
          else:
            sess.run(update)


class MeanPerClassAccuracyTest(tf.test.TestCase):

  def test_averages_only_the_classes_present_in_the_evaluated_labels(self):
    with tf.Graph().as_default():
      labels = tf1.placeholder(tf.int64, [None])
      predictions = tf1.placeholder(tf.int64, [None])
      value, update = video_metrics.mean_per_class_accuracy(labels, predictions, 4)
      with self.session() as sess:
        sess.run(tf1.local_variables_initializer())
        self.assertEqual(sess.run(value), 0.0)
        # 4 clips of classes 0 and 1 of a 4-class model, all right: 1.0 (tf.metrics: 0.5).
        self.assertAllClose(sess.run(update, {labels: [0, 0, 1, 1], predictions: [0, 0, 1, 1]}),
                            1.0)
        # Class 2 appears, 1 of 2 right; class 1 gets a wrong clip: (1 + 2/3 + 1/2) / 3.
        sess.run(update, {labels: [2, 2, 1], predictions: [2, 0, 0]})
        self.assertAllClose(sess.run(value), (1 + 2 / 3 + 1 / 2) / 3)


class VideosEvaluatedTest(tf.test.TestCase):

  def test_counts_distinct_videos_across_batches(self):
    with tf.Graph().as_default():
      index = tf1.placeholder(tf.int64, [None])
      value, update = video_metrics.videos_evaluated(index, max_videos=10)
      with self.session() as sess:
        sess.run(tf1.local_variables_initializer())
        sess.run(update, {index: [3, 3, 5]})
        self.assertEqual(sess.run(update, {index: [5, 0]}), 3.0)
        self.assertEqual(sess.run(value), 3.0)

  def test_a_video_counts_once_all_its_views_were_evaluated(self):
    # 3 views a video: an evaluation cut after 2 of video 1's views (--eval_steps) counts
    # and scores video 0 alone, not video 1 on a part of its views.
    with tf.Graph().as_default():
      index = tf1.placeholder(tf.int64, [None])
      logits = tf1.placeholder(tf.float32, [None, 2])
      labels = tf1.placeholder(tf.int64, [None])
      _, evaluated = video_metrics.videos_evaluated(index, max_videos=4, views_per_video=3)
      _, accuracy = video_metrics.video_accuracy(index, logits, labels, max_videos=4,
                                                 views_per_video=3)
      with self.session() as sess:
        sess.run(tf1.local_variables_initializer())
        batch = {index: [0, 0, 0, 1, 1], labels: [0, 0, 0, 1, 1],
                 logits: [[0, 1.0]] * 3 + [[0, 1.0]] * 2}  # video 0 wrong, video 1 right
        self.assertEqual(sess.run([evaluated, accuracy], batch), [1.0, 0.0])
        batch = {index: [1], labels: [1], logits: [[0, 1.0]]}  # video 1's last view
        self.assertEqual(sess.run([evaluated, accuracy], batch), [2.0, 0.5])


if __name__ == '__main__':
  tf.test.main()

"""Specification: an evaluation says how many of the listed videos it evaluated.

Records lost to a damaged shard leave the evaluation short: the metrics carry
`eval/videos_evaluated` and `eval/videos_listed`, the log says "N of M listed videos
evaluated", a warning below 100%, and --strict_eval turns it into an error
(`model_fn/eval_coverage.py`).
"""

import os
import tempfile

import tensorflow as tf

from input_fn import factory
from model_fn.eval_coverage import EvalCoverageError
from tests import tiny_records
from towers import build_estimator
from towers.params import make_params

TINY = dict(model='c3d_small', num_classes=4, clip_frames=4, crop_size=16, batch_size=4,
            eval_batch_size=4, eval_clips=1, max_steps=1, save_checkpoints_steps=1,
            lr_schedule='constant', lr_values=[0.01], lr_boundaries=[],
            export_savedmodel=False, data_source='tfrecord')


class EvalCoverageTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    root = tempfile.mkdtemp()
    cls.data = tiny_records.make(root, classes=4, groups=9, min_frames=4, max_frames=5,
                                 prepare_options={'videos_per_shard': 4}).records['videos']
    cls.model_dir = os.path.join(root, 'model')
    params = make_params(data_dir=cls.data, model_dir=cls.model_dir, **TINY)
    build_estimator(params).train(factory.make_input_fn(params, tf.estimator.ModeKeys.TRAIN),
                                  max_steps=1)

  def evaluate(self, **overrides):
    params = make_params(data_dir=self.data, model_dir=self.model_dir, **dict(TINY, **overrides))
    return build_estimator(params).evaluate(
        factory.make_input_fn(params, tf.estimator.ModeKeys.EVAL),
        steps=params.eval_steps or None)  # as the train-and-evaluate loop passes them

  def test_complete_evaluation_reports_all_listed_videos(self):
    metrics = self.evaluate(strict_eval=True)  # every listed video: strict has no objection
    self.assertEqual((metrics['eval/videos_evaluated'], metrics['eval/videos_listed']),
                     (28, 28))

  def test_eval_steps_too_few_for_one_video_name_the_flags_not_the_data(self):
    # 1 batch of 4 clips, while each video gives 5 views: no video is complete.
    with self.assertRaises(EvalCoverageError) as caught:
      self.evaluate(eval_steps=1, eval_clips=5)
    self.assertEqual(caught.exception.evaluated, 0)
    self.assertIn('--eval_steps=1', str(caught.exception))
    self.assertNotIn('prepare the data again', str(caught.exception))

  def test_damaged_records_warn_and_strict_eval_refuses(self):
    shard = os.path.join(self.data, 'test-00000-of-00007.tfrecord')
    with open(shard, 'rb') as f:
      original = f.read()
    damaged = bytearray(original)
    damaged[len(damaged) // 10] ^= 0xFF  # in the first of its 4 records
    with open(shard, 'wb') as f:
      f.write(bytes(damaged))
    try:
      metrics = self.evaluate()
      self.assertEqual((metrics['eval/videos_evaluated'], metrics['eval/videos_listed']),
                       (24, 28))
      with self.assertRaises(EvalCoverageError) as caught:
        self.evaluate(strict_eval=True)
      self.assertEqual((caught.exception.evaluated, caught.exception.listed), (24, 28))
    finally:
      with open(shard, 'wb') as f:
        f.write(original)


if __name__ == '__main__':
  tf.test.main()

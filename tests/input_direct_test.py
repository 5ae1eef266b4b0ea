"""The direct route (raw videos or frame folders through OpenCV, no preparation) gives the
same outputs as the TFRecord pipeline and skips bad videos."""

import os
import shutil
import tempfile

import numpy as np
import tensorflow as tf

from tests import tiny_records

from input_fn import data_checks, factory
from towers import params as params_lib

TRAIN, EVAL = tf.estimator.ModeKeys.TRAIN, tf.estimator.ModeKeys.EVAL
T, S = 16, 32


class DirectRouteTest(tf.test.TestCase):
  """The OpenCV route gives the same contract as the TFRecord pipeline."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.data = tiny_records.make(tempfile.mkdtemp(), (), classes=3, groups=9, min_frames=10,
                                 max_frames=20, write_frames=True).data

  def _params(self, source: str) -> params_lib.TrainParams:
    return params_lib.make_params(data_source=source, data_dir=self.data, num_classes=3,
                                  clip_frames=T, crop_size=S, batch_size=4, eval_clips=2,
                                  frame_short_side=0, shuffle_buffer=4)

  def test_videos_and_frames_give_the_pipeline_outputs(self):
    for source in ('videos', 'frames'):
      with self.subTest(source):
        params = self._params(source)
        train = factory.make_input_fn(params, TRAIN)(None)
        features, labels = next(iter(train))
        self.assertEqual(features['clips'].shape, (4, T, S, S, 3))
        self.assertEqual(features['clips'].dtype, tf.float32)
        self.assertEqual(labels.dtype, tf.int64)
        self.assertBetween(float(tf.reduce_min(features['clips'])), -1.0, 1.0)
        self.assertBetween(float(tf.reduce_max(features['clips'])), -1.0, 1.0)
        index = [int(v) for f, _ in factory.make_input_fn(params, EVAL)(None)
                 for v in f['video_index'].numpy()]
        np.testing.assert_array_equal(np.bincount(index), np.full(21, 2))

  def test_a_bad_video_is_skipped_not_fatal(self):
    data = os.path.join(self.create_tempdir().full_path, 'ucf')
    shutil.copytree(self.data, data)
    params = params_lib.make_params(self._params('videos').__dict__, data_dir=data)
    path = os.path.join(data, 'UCF-101', 'MoveRightSpeed1', 'v_MoveRightSpeed1_g01_c01.avi')
    with open(path, 'wb'):
      pass  # zero bytes
    index = [int(v) for f, _ in factory.make_input_fn(params, EVAL)(None)
             for v in f['video_index'].numpy()]
    self.assertLen(set(index), 20)
    self.assertNotIn(0, index)

  def test_an_eval_split_larger_than_max_eval_videos_is_refused_before_work(self):
    # Else training runs and evaluation stops on an assertion (21 test videos, room for 5).
    for source in ('videos', 'frames'):
      with self.subTest(source):
        params = params_lib.make_params(self._params(source).__dict__, max_eval_videos=5)
        found = data_checks.problems(params, ('test',))
        self.assertEqual([p.option for p in found], ['max_eval_videos'])
        self.assertIn('--max_eval_videos=21', found[0])
        self.assertEqual(data_checks.problems(
            params_lib.make_params(params.__dict__, max_eval_videos=21), ('test',)), [])


if __name__ == '__main__':
  tf.test.main()


"""The TFRecord tf.data pipeline: sampling, cropping, sharding, outputs, bad records.

Data: a small synthetic UCF101 (3 classes x 9 groups, 10-20 frames of 64x48, so some videos
are shorter than a 16-frame clip) written as .avi and prepared into TFRecords once.
"""

import json
import os
import tempfile

import numpy as np
import tensorflow as tf


from command_line.options import options_named
from input_fn import data_checks, direct, factory, manifest, pipeline
from input_fn import records
from input_fn import video_io
from tests import tiny_records
from towers import params as params_lib

TRAIN, EVAL = tf.estimator.ModeKeys.TRAIN, tf.estimator.ModeKeys.EVAL
T, S = 16, 32


def make_data(root: str) -> tuple[str, str]:
  made = tiny_records.make(root, classes=3, groups=9, min_frames=10, max_frames=20,
                           prepare_options={'videos_per_shard': 4})
  return made.data, made.records['videos']


class PipelineTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.root = tempfile.mkdtemp()
    cls.data, cls.tfr = make_data(cls.root)
    cls.params = params_lib.make_params(
        data_source='tfrecord', data_dir=cls.tfr, num_classes=3, clip_frames=T, crop_size=S,
        batch_size=4, eval_batch_size=5, eval_clips=3, shuffle_buffer=8)
    with open(os.path.join(cls.tfr, 'test.manifest.json')) as f:
      cls.num_test = json.load(f)['num_records']

  # --- Sampling -----------------------------------------------------------------------------

  def test_train_clip_is_consecutive_from_a_random_start_and_wraps_when_short(self):
    tf.random.set_seed(0)  # the draws below are then the same on every run
    for n in (5, 16, 40):
      starts = set()
      for _ in range(200):
        idx = pipeline.train_clip_indices(tf.constant(n), T).numpy()
        self.assertEqual(idx.shape, (T,))
        self.assertTrue(np.all((idx >= 0) & (idx < n)), idx)
        np.testing.assert_array_equal((np.diff(idx) % n), np.ones(T - 1) % max(n, 2))
        if n >= T:
          self.assertLessEqual(idx[0], n - T)  # fits: no wrap-around
        starts.add(int(idx[0]))
      # Every allowed start is drawn: 0..n-T when the clip fits, 0..n-1 when it wraps.
      self.assertEqual(starts, set(range(n - T + 1 if n >= T else n)), n)
    wrapped = pipeline.train_clip_indices(tf.constant(5), T).numpy()
    self.assertEqual(sorted(set(wrapped.tolist())), [0, 1, 2, 3, 4])

  def test_eval_clips_are_spread_over_the_video(self):
    idx = pipeline.eval_clip_indices(tf.constant(100), T, 5).numpy()
    np.testing.assert_array_equal(idx[:, 0], [0, 21, 42, 63, 84])
    np.testing.assert_array_equal(idx[-1], np.arange(84, 100))
    np.testing.assert_array_equal(pipeline.eval_clip_indices(tf.constant(100), T, 1)[:, 0],
                                  [42])
    short = pipeline.eval_clip_indices(tf.constant(10), T, 3).numpy()
    self.assertTrue(np.all(short < 10))
    np.testing.assert_array_equal(short[:, 0], [0, 4, 9])  # 4.5 rounds to even

  def test_direct_route_samples_by_the_same_rules(self):
    for n in (1, 7, 16, 17, 60, 101):
      for k in (1, 3, 10):
        np.testing.assert_array_equal(direct.eval_clip_indices(n, T, k),
                                      pipeline.eval_clip_indices(tf.constant(n), T, k).numpy())
      rng = np.random.default_rng(n)
      idx = direct.train_clip_indices(n, T, rng)
      self.assertTrue(np.all((idx >= 0) & (idx < n)))
      self.assertLessEqual(idx[0], max(n - T, n - 1 if n < T else 0))

  def test_crop_windows_are_inside_the_frame(self):
    for height, width in ((48, 64), (256, 340), (20, 100), (32, 32)):
      for training in (True, False):
        for _ in range(10):
          y, x, h, w = pipeline.crop_window(height, width, S, training).numpy()
          self.assertEqual((h, w), (min(S, height), min(S, width)))
          self.assertBetween(y, 0, height - h)
          self.assertBetween(x, 0, width - w)
          if not training:
            self.assertEqual((y, x), ((height - h) // 2, (width - w) // 2))

  def test_decode_crops_is_the_crop_of_the_decoded_frame(self):
    frame = np.random.default_rng(0).integers(0, 255, (48, 64, 3), dtype=np.uint8)
    jpeg = tf.constant([video_io.encode_jpeg(frame)] * 2)
    window = tf.constant([5, 20, S, S])
    crops = pipeline.decode_crops(jpeg, window, S, 2).numpy()
    full = tf.io.decode_jpeg(jpeg[0]).numpy()[5:5 + S, 20:20 + S]
    self.assertEqual(crops.shape, (2, S, S, 3))
    self.assertLess(np.abs(crops[0].astype(int) - full).mean(), 2.0)
    small = pipeline.decode_crops(jpeg, tf.constant([0, 0, 48, 64]), 100, 1)
    self.assertEqual(small.shape, (1, 100, 100, 3))  # smaller than the crop: resized up

  def test_flip_mirrors_the_whole_clip_or_nothing(self):
    clip = tf.reshape(tf.range(2 * 3 * 4, dtype=tf.int32), [2, 3, 4, 1])
    seen = set()
    for _ in range(30):
      out = pipeline.random_flip(clip).numpy()
      flipped = np.array_equal(out, clip.numpy()[:, :, ::-1])
      self.assertTrue(flipped or np.array_equal(out, clip.numpy()))
      seen.add(flipped)
    self.assertEqual(seen, {True, False})

  def test_mirror_reverses_the_width_of_clips_and_batches(self):
    rng = np.random.default_rng(0)
    for shape, dtype in [((2, 3, 4, 3), np.uint8), ((2, 2, 3, 5, 3), np.uint8),
                         ((2, 3, 4, 3), np.float32)]:
      clip = rng.integers(0, 255, shape).astype(dtype)
      mirrored = pipeline.mirror(tf.constant(clip))
      self.assertEqual(mirrored.shape, shape)
      np.testing.assert_array_equal(mirrored.numpy(), clip[..., ::-1, :])

  # --- Sharding -----------------------------------------------------------------------------

  def test_the_input_context_names_the_pipeline_and_none_reads_everything(self):
    # Which trainer reads which pipeline is the cluster's (tests/cluster_config_test.py).
    self.assertEqual(pipeline.worker_shard(), (1, 0))
    context = tf.distribute.InputContext(num_input_pipelines=4, input_pipeline_id=2)
    self.assertEqual(pipeline.worker_shard(context), (4, 2))

  def _videos_of_pipeline(self, num: int, index: int) -> list[int]:
    context = tf.distribute.InputContext(num_input_pipelines=num, input_pipeline_id=index)
    cheap = params_lib.make_params(self.params.__dict__, clip_frames=2, eval_clips=1,
                                   eval_batch_size=32)
    dataset = pipeline.input_fn(EVAL, cheap, context)
    return [int(v) for features, _ in dataset for v in features['video_index'].numpy()]

  def test_workers_get_disjoint_videos_covering_all(self):
    # 6 test shards: 3 pipelines shard files, 8 pipelines shard records.
    for num in (3, 8):
      per_worker = [set(self._videos_of_pipeline(num, i)) for i in range(num)]
      union = set().union(*per_worker)
      self.assertEqual(union, set(range(self.num_test)), num)
      self.assertEqual(sum(map(len, per_worker)), self.num_test, num)

  # --- Outputs ------------------------------------------------------------------------------

  def test_training_batches_follow_the_contract(self):
    dataset = pipeline.input_fn(TRAIN, self.params)
    features, labels = dataset.element_spec
    self.assertEqual(features['clips'].shape.as_list(), [4, T, S, S, 3])
    self.assertEqual(features['clips'].dtype, tf.float32)
    self.assertEqual(labels.dtype, tf.int64)
    for features, labels in dataset.take(12):  # more batches than videos: repeats
      clips = features['clips'].numpy()
      self.assertGreaterEqual(clips.min(), -1.0)
      self.assertLessEqual(clips.max(), 1.0)
      self.assertGreater(clips.max() - clips.min(), 1.0)
      self.assertTrue(np.all((labels.numpy() >= 0) & (labels.numpy() < 3)))

  def test_eval_gives_every_video_its_clips_with_its_index(self):
    dataset = pipeline.input_fn(EVAL, self.params)
    self.assertEqual(dataset.element_spec[0]['clips'].shape.as_list(), [None, T, S, S, 3])
    clips, index, labels = [], [], []
    for features, label in dataset:
      clips.append(features['clips'].numpy())
      index += features['video_index'].numpy().tolist()
      labels += label.numpy().tolist()
    clips = np.concatenate(clips)
    self.assertLen(clips, 3 * self.num_test)
    counts = np.bincount(index)
    np.testing.assert_array_equal(counts, np.full(self.num_test, 3))
    by_video = {}
    for v, l in zip(index, labels):
      self.assertEqual(by_video.setdefault(v, l), l)
    # The first clip of the first video: frames 0..T-1 (mod n), centre crop, scaled.
    raw = next(iter(tf.data.TFRecordDataset(sorted(
        tf.io.gfile.glob(os.path.join(self.tfr, 'test-00000-*'))))))
    parsed = records.parse(raw)
    n = int(parsed['num_frames'])
    frames = [tf.io.decode_jpeg(parsed['frames'][i % n]).numpy() for i in range(T)]
    expected = np.stack(frames)[:, 8:8 + S, 16:16 + S] * (2 / 255) - 1
    first = clips[index.index(int(parsed['index']))]
    self.assertLess(np.abs(first - expected).mean(), 0.02)

  def test_predict_yields_features_only(self):
    spec = pipeline.input_fn(tf.estimator.ModeKeys.PREDICT, self.params).element_spec
    self.assertEqual(set(spec), {'clips', 'video_index'})

  def test_bad_records_are_skipped_and_counted(self):
    bad_dir = self.create_tempdir().full_path
    good = list(tf.data.TFRecordDataset(
        sorted(tf.io.gfile.glob(os.path.join(self.tfr, 'test-*')))).take(2))
    jpeg = video_io.encode_jpeg(np.zeros((48, 64, 3), np.uint8))
    bad = [b'this is not a tf.train.Example',
           records.make_example('v_bad_g01_c01', 0, [b'\xff\xd8 broken jpeg'] * 3, 90, 'X', 48, 64),
           records.make_example('v_none_g01_c01', 0, [], 91, 'X', 48, 64),
           records.make_example('v_label_g01_c01', 7, [jpeg] * 3, 92, 'X', 48, 64)]
    for subset in ('train', 'test'):
      file = f'{subset}-00000-of-00001.tfrecord'
      with tf.io.TFRecordWriter(os.path.join(bad_dir, file)) as w:
        for record in [good[0].numpy()] + bad + [good[1].numpy()]:
          w.write(record)
      manifest.write(bad_dir, {'subset': subset, 'shards': [{'file': file, 'records': 6}]})
    params = params_lib.make_params(self.params.__dict__, data_dir=bad_dir, clip_frames=4,
                                    eval_clips=2, shuffle_buffer=2)
    outputs = list(pipeline.input_fn(EVAL, params, with_skipped_count=True).unbatch())
    self.assertLen(outputs, 2 * 2)  # two good videos, two clips each
    self.assertEqual([int(f['skipped_records']) for f, _ in outputs], [0, 0, 4, 4])
    train = pipeline.input_fn(TRAIN, params_lib.make_params(
        params.__dict__, batch_size=1), with_skipped_count=True)
    seen = [int(f['skipped_records'][0]) for f, labels in train.take(6)]
    self.assertGreaterEqual(max(seen), 4)  # training repeats the file and keeps counting

  def test_factory_dispatches_and_checks_data_params(self):
    fn = factory.make_input_fn(self.params, TRAIN)
    self.assertEqual(fn(None).element_spec[0]['clips'].shape.as_list(), [4, T, S, S, 3])
    # Values out of range are refused when the params are made; data that cannot serve
    # them when the input_fn is.
    for bad, error in (({'eval_clips': 0}, params_lib.ParamsError),
                       ({'max_eval_videos': 3}, data_checks.DataError),
                       ({'data_dir': '/nonexistent'}, data_checks.DataError),
                       ({'split': 4}, params_lib.ParamsError)):
      with self.subTest(bad), self.assertRaises(error) as caught:
        factory.make_input_fn(params_lib.make_params(self.params.__dict__, **bad), EVAL)
      if error is data_checks.DataError:
        self.assertEqual(options_named(caught.exception), list(bad))
    synthetic = factory.make_input_fn(params_lib.make_params(
        self.params.__dict__, data_source='synthetic', data_dir='', synthetic_train_examples=8),
        TRAIN)
    self.assertEqual(synthetic(None).element_spec[0].shape.as_list(), [4, T, S, S, 3])


if __name__ == '__main__':
  tf.test.main()

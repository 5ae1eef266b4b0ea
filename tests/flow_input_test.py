"""The flow stream's input: prepare --source=flow, the 2-channel TFRecord and direct frames
routes (shapes, value range, the flip negating u) and the preflight for --stream=flow.

Data: the split files and videos of a tiny synthetic UCF101, with hand-made flow folders
(no TV-L1 here): every flow frame has u = 200 on its left half and 160 on its right half,
and v = 90. A correct left-right flip turns (left, right) = (200, 160) into
(255 - 160, 255 - 200) = (95, 55); mirroring the image alone would give (160, 200).
"""

import json
import os
import shutil
import tempfile

import numpy as np
import tensorflow as tf

from data_tools import flow_records, layouts
from input_fn import data_checks, direct, factory, flow, pipeline, ucf101, video_lists
from tests import tiny_records
from towers import params as params_lib
from towers import preflight

TRAIN, EVAL = tf.estimator.ModeKeys.TRAIN, tf.estimator.ModeKeys.EVAL
T, S, SIDE, FLOW_FRAMES = 4, 32, 32, 6
U_LEFT, U_RIGHT, V = 200, 160, 90
UNFLIPPED, FLIPPED = (U_LEFT, U_RIGHT), (255 - U_RIGHT, 255 - U_LEFT)


def write_hand_made_flow(data: str, split: video_lists.Split, skip: str) -> None:
  """tvl1_flow/{u,v}/<video>/ for every listed video except `skip`; a block of u between
  the quarters `halves` measures is the video's own (no two videos' flow are copies)."""
  u = np.full((SIDE, SIDE), U_LEFT, np.uint8)
  u[:, SIDE // 2:] = U_RIGHT
  v = np.full((SIDE, SIDE), V, np.uint8)
  root = os.path.join(data, ucf101.FLOW_DIR_NAME)
  for i, entry in enumerate(split.train + split.test):
    u[:8, 12:20] = 12 * i
    if entry.name != skip:
      flow.write_flow(np.stack([np.stack([u, v], -1)] * FLOW_FRAMES), root, entry.name)


def halves(clip_u: np.ndarray) -> tuple[float, float]:
  """Mean u code of the left and right quarter columns of a clip's u plane [T, S, S]."""
  codes = (clip_u + 1.0) * 127.5
  return float(codes[:, :, :S // 4].mean()), float(codes[:, :, -S // 4:].mean())


class FlowInputTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.root = tempfile.mkdtemp()
    cls.data = tiny_records.make(cls.root, (), classes=2, groups=9, width=24, height=16,
                                 min_frames=3, max_frames=3, object_size=6).data
    split = ucf101.read_split(os.path.join(cls.data, 'ucfTrainTestlist'), 1)
    cls.missing = split.train[0].name
    write_hand_made_flow(cls.data, split, skip=cls.missing)
    cls.tfr = os.path.join(cls.root, 'flow_tfr')
    cls.manifests = tiny_records.prepared(cls.data, cls.tfr, source='flow', videos_per_shard=8)

  @classmethod
  def tearDownClass(cls):
    shutil.rmtree(cls.root)
    super().tearDownClass()

  def params(self, **overrides):
    values = dict(data_source='tfrecord', data_dir=self.tfr, stream='flow', num_classes=2,
                  clip_frames=T, crop_size=S, batch_size=4, eval_batch_size=4, eval_clips=2,
                  shuffle_buffer=4, model_dir=os.path.join(self.root, 'model_dir'))
    values.update(overrides)
    return params_lib.make_params(values)

  def direct_params(self):
    return self.params(data_source='frames', data_dir=self.data, frame_short_side=0)

  def clips(self, params, mode, batches):
    """Clips as the network sees them: float32 in [-1, 1] (the TFRecord route hands uint8
    clips to the model_fn, which scales them x / 127.5 - 1 on its devices)."""
    dataset = factory.make_input_fn(params, mode)()
    out = []
    for features, labels in dataset.take(batches):
      clips = features['clips'].numpy()
      self.assertIn(clips.dtype, (np.uint8, np.float32))
      if clips.dtype == np.uint8:
        clips = clips.astype(np.float32) / 127.5 - 1.0
      out.append((clips, labels.numpy()))
    return out

  # --- prepare --source=flow -------------------------------------------------------------

  def test_prepare_writes_flow_records_with_their_own_manifest_and_counts_the_gap(self):
    train, test = self.manifests['train'], self.manifests['test']
    self.assertEqual((train['source'], test['source']), ('flow', 'flow'))
    self.assertEqual(train['num_records'], train['num_listed'] - 1)
    self.assertEqual(train['skipped_by_kind'], {'missing flow folder': 1})
    self.assertEqual(os.path.basename(train['skipped'][0]['input']), self.missing)
    self.assertEqual(test['num_records'], test['num_listed'])

  def test_prepare_uses_the_rows_of_flow_txt_when_given(self):
    listed = os.path.join(self.root, 'elsewhere')
    shutil.copytree(os.path.join(self.data, ucf101.FLOW_DIR_NAME), listed)
    split = ucf101.read_split(os.path.join(self.data, 'ucfTrainTestlist'), 1)
    entry = split.test[0]
    flow_list = os.path.join(self.root, 'flow.txt')
    with open(flow_list, 'w') as f:
      f.write(f'{entry.name} {listed}/{{:s}}/{entry.name} {FLOW_FRAMES} {entry.label}\n')
    out = os.path.join(self.root, 'listed_tfr')
    manifests = tiny_records.prepared(self.data, out, source='flow', subsets=('test',),
                                      flow_dir=self.create_tempdir().full_path,
                                      flow_list=flow_list)
    self.assertEqual(manifests['test']['num_records'], 1)  # only the listed folder exists
    self.assertEqual(manifests['test']['skipped_by_kind'],
                     {'missing flow folder': manifests['test']['num_listed'] - 1})

  # --- The 2-channel pipelines -------------------------------------------------------------

  def check_train_clips(self, batches):
    seen = set()
    for clips, _ in batches:
      self.assertEqual(clips.shape, (4, T, S, S, 2))
      self.assertBetween(clips.min(), -1.0, 1.0)
      self.assertBetween(clips.max(), -1.0, 1.0)
      for clip in clips:
        left, right = halves(clip[..., 0])
        pair = min((UNFLIPPED, FLIPPED), key=lambda p: abs(p[0] - left) + abs(p[1] - right))
        self.assertAllClose((left, right), pair, atol=3)  # never (160, 200): u is negated
        self.assertAllClose(clip[..., 1], np.full_like(clip[..., 1], V / 127.5 - 1), atol=0.03)
        seen.add(pair)
    self.assertEqual(seen, {UNFLIPPED, FLIPPED})  # both happen in 40 clips

  def test_tfrecord_train_clips_are_2_channel_in_range_and_flips_negate_u(self):
    self.check_train_clips(self.clips(self.params(), TRAIN, 10))

  def test_direct_frames_route_gives_the_same_clips(self):
    self.check_train_clips(self.clips(self.direct_params(), TRAIN, 10))

  def test_direct_route_never_cuts_u_and_v_of_different_lengths(self):
    data = os.path.join(self.create_tempdir().full_path, 'ucf')
    shutil.copytree(self.data, data)
    split = ucf101.read_split(os.path.join(data, 'ucfTrainTestlist'), 1)
    uneven = split.train[1]
    v_folder = os.path.join(data, ucf101.FLOW_DIR_NAME, 'v', uneven.name)
    os.remove(os.path.join(v_folder, sorted(os.listdir(v_folder))[-1]))
    source = direct.VideoSource(self.params(data_source='frames', data_dir=data,
                                            frame_short_side=0))
    self.assertIn(f'u/v length mismatch: u has {FLOW_FRAMES} frames, v {FLOW_FRAMES - 1}',
                  source.problem(uneven))
    self.assertIsNone(source.problem(split.train[2]))

  def test_eval_clips_are_centre_crops_never_flipped(self):
    for params in (self.params(), self.direct_params()):
      for clips, _ in self.clips(params, EVAL, 3):
        self.assertEqual(clips.shape[1:], (T, S, S, 2))
        for clip in clips:
          self.assertAllClose(halves(clip[..., 0]), UNFLIPPED, atol=3)

  def test_mirror_negates_only_u(self):
    clip = np.zeros((1, 1, 2, 2), np.uint8)
    clip[0, 0, :, 0] = (10, 250)  # u: left 10, right 250
    clip[0, 0, :, 1] = (30, 40)   # v
    mirrored = pipeline.mirror(tf.constant(clip), 'flow').numpy()
    self.assertEqual(mirrored[0, 0, :, 0].tolist(), [5, 245])
    self.assertEqual(mirrored[0, 0, :, 1].tolist(), [40, 30])
    self.assertEqual(pipeline.mirror(tf.constant(clip), 'rgb').numpy()[0, 0, :, 0].tolist(),
                     [250, 10])

  # --- What stops before training ----------------------------------------------------------

  def test_stream_flow_without_flow_data_stops_before_training_saying_what_to_run(self):
    rgb_tfr = os.path.join(self.root, 'rgb_tfr')
    os.makedirs(rgb_tfr, exist_ok=True)
    with open(os.path.join(rgb_tfr, 'train.manifest.json'), 'w') as f:
      json.dump({'source': 'videos'}, f)
    no_flow = os.path.join(self.root, 'no_flow')
    os.makedirs(no_flow, exist_ok=True)
    # Sources that give RGB clips: refused when the params are made, before any file is read.
    # The same sources with the RGB stream are accepted: the stream is what is refused.
    for values in (dict(data_source='videos', data_dir=self.data),
                   dict(data_source='synthetic', data_dir='')):
      with self.assertRaises(params_lib.ParamsError) as raised:
        self.params(**values)
      self.assertEqual(raised.exception.option, 'stream')
      self.assertEqual(self.params(stream='rgb', **values).stream, 'rgb')
    # Data that cannot give the stream's clips: the stream's data problem among the found.
    cases = [self.params(data_source='frames', data_dir=no_flow),
             self.params(data_dir=rgb_tfr),
             self.params(stream='rgb')]
    for params in cases:
      with self.assertRaises(preflight.PreflightError) as caught:
        preflight.check(params)
      self.assertIn('stream', [p.option for p in caught.exception.problems], params)
      self.assertIn('stream', [p.option for p in data_checks.problems(params)], params)
    self.assertEqual(preflight.problems(self.params()), [])
    self.assertEqual(data_checks.problems(self.params()), [])


class FlowFixTest(tf.test.TestCase):

  def test_a_list_counting_the_videos_frames_is_told_apart_from_missing_flow(self):
    folder = self.create_tempdir().full_path
    for n in range(1, 4):  # flow of 4 frames: 3 flow frames
      with open(os.path.join(folder, f'flow_x_{n:05d}.jpg'), 'wb') as f:
        f.write(b'\xff\xd8\xff')
    channel = layouts.FrameFiles(folder, 'flow_x_%05d.jpg')
    self.assertIn('flow annotation', flow_records._flow_fix(channel, {'num_frames': 4}))
    self.assertIn('extract_flow', flow_records._flow_fix(channel, {'num_frames': 9}))
    self.assertIn('extract_flow', flow_records._flow_fix(channel, None))


if __name__ == '__main__':
  tf.test.main()

"""UCF101 on-disk formats, read from files generated in exactly those formats.

Covers: classInd/trainlist/testlist with CRLF, the HandStandPushups spelling trap and the
split rule, every bad list line, rgb.txt, frame folders with missing frames, TV-L1 flow
folders, MJPG videos written and decoded with OpenCV (and broken ones), and the synthetic
UCF101 writer's layout.
"""

import dataclasses
import os
import shutil
import tempfile

import cv2
import numpy as np
from absl.testing import absltest

from data_tools import make_synthetic_ucf101

from input_fn import data_checks, frame_folders, ucf101, video_io, video_lists
from towers import make_params, training


def write(path: str, lines: list[str], newline: str = '\r\n') -> str:
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, 'wb') as f:
    f.write(''.join(line + newline for line in lines).encode())
  return path


def write_frames(folder: str, count: int, height: int = 20, width: int = 30,
                 grayscale: bool = False, value: int | None = None) -> None:
  os.makedirs(folder, exist_ok=True)
  for i in range(count):
    shape = (height, width) if grayscale else (height, width, 3)
    image = np.full(shape, (i * 10) % 250 if value is None else value, np.uint8)
    cv2.imwrite(frame_folders.frame_path(folder, i), image)


def read_flow(flow_root: str, video: str, indices: list[int]) -> np.ndarray:
  """The video's flow frames at `indices` as uint8 [T, H, W, 2] (u, v) from their JPEGs."""
  u_folder, v_folder = frame_folders.flow_folders(flow_root, video)
  return np.stack([frame_folders.read_frames(u_folder, indices, grayscale=True),
                   frame_folders.read_frames(v_folder, indices, grayscale=True)], axis=-1)


class SplitFilesTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.dir = self.create_tempdir().full_path
    write(os.path.join(self.dir, 'classInd.txt'),
          ['1 ApplyEyeMakeup', '2 HandstandPushups', '3 YoYo'])

  def test_official_lines_with_crlf_are_parsed(self):
    classes, problems = ucf101.read_class_index(os.path.join(self.dir, 'classInd.txt'))
    self.assertEqual(classes.names, ('ApplyEyeMakeup', 'HandstandPushups', 'YoYo'))
    self.assertEmpty(problems)
    path = write(os.path.join(self.dir, 'trainlist01.txt'),
                 ['ApplyEyeMakeup/v_ApplyEyeMakeup_g08_c01.avi 1',
                  'YoYo/v_YoYo_g25_c04.avi 3'])
    entries, problems = ucf101.read_split_list(path, classes)
    self.assertEmpty(problems)
    self.assertEqual([(e.name, e.label, e.group, e.clip, e.index) for e in entries],
                     [('v_ApplyEyeMakeup_g08_c01', 0, 8, 1, 0), ('v_YoYo_g25_c04', 2, 25, 4, 1)])
    self.assertNotIn('\r', entries[1].rel_path)

  def test_class_numbers_with_a_gap_stop_naming_the_file(self):
    path = write(os.path.join(self.dir, 'classInd.txt'),
                 ['1 ApplyEyeMakeup', '2 HandstandPushups', '4 YoYo'])
    with self.assertRaises(video_lists.DatasetError) as caught:
      ucf101.read_class_index(path)
    self.assertEqual(caught.exception.path, path)
    self.assertIn('3 is missing', str(caught.exception))
    # Training on that root stops in its preflight (one problem naming the file).
    root = self.create_tempdir().full_path
    shutil.copytree(self.dir, os.path.join(root, 'ucfTrainTestlist'))
    params = make_params(model='c3d_small', data_source='videos', data_dir=root)
    self.assertEqual(training.with_data_settings(params, ['num_classes']), params)
    found = data_checks.problems(dataclasses.replace(params, num_classes=3))
    self.assertEqual([(p.option, 'classInd.txt' in p) for p in found], [('data_dir', True)])

  def test_test_list_has_no_labels_and_class_case_is_ignored(self):
    classes, _ = ucf101.read_class_index(os.path.join(self.dir, 'classInd.txt'))
    path = write(os.path.join(self.dir, 'testlist01.txt'),
                 ['HandStandPushups/v_HandStandPushups_g01_c01.avi'])
    entries, problems = ucf101.read_split_list(path, classes)
    self.assertEmpty(problems)
    self.assertEqual(entries[0].label, 1)
    self.assertEqual(entries[0].class_name, 'HandstandPushups')  # classInd.txt spelling
    self.assertEqual(entries[0].key, 'v_handstandpushups_g01_c01')
    # One canonical name (the class index's spelling) in records and flow folders; the
    # file is still found by the list's spelling.
    self.assertEqual(entries[0].name, 'v_HandstandPushups_g01_c01')
    self.assertEqual(entries[0].rel_path, 'HandStandPushups/v_HandStandPushups_g01_c01.avi')

  def test_a_test_video_never_falls_into_training_whatever_its_spelling(self):
    write(os.path.join(self.dir, 'trainlist01.txt'),
          ['HandstandPushups/v_HandstandPushups_g01_c01.avi 2',
           'HandstandPushups/v_HandstandPushups_g08_c01.avi 2'])
    write(os.path.join(self.dir, 'testlist01.txt'),
          ['HandStandPushups/v_HandStandPushups_g01_c01.avi'])
    split = ucf101.read_split(self.dir, 1)
    self.assertEqual([e.name for e in split.train], ['v_HandstandPushups_g08_c01'])
    self.assertEqual(split.train[0].index, 0)
    self.assertEqual([e.name for e in split.test], ['v_HandstandPushups_g01_c01'])
    self.assertEqual([p.kind for p in split.problems], ['test video in training list'])
    self.assertEqual(split.problems[0].line, 1)

  def test_a_group_with_clips_in_the_test_list_is_kept_out_of_training(self):
    # Clips of one group are cut from one long video: a user's own split that trains on
    # g08_c01 and tests on g08_c02 would score the test clip on its own footage.
    write(os.path.join(self.dir, 'trainlist01.txt'),
          ['YoYo/v_YoYo_g08_c01.avi 3', 'YoYo/v_YoYo_g09_c01.avi 3',
           'HandStandPushups/v_HandStandPushups_g08_c03.avi 2',
           'ApplyEyeMakeup/v_ApplyEyeMakeup_g08_c01.avi 1'])
    write(os.path.join(self.dir, 'testlist01.txt'),
          ['YoYo/v_YoYo_g08_c02.avi', 'HandstandPushups/v_HandstandPushups_g08_c01.avi'])
    split = ucf101.read_split(self.dir, 1)
    self.assertEqual([e.name for e in split.train],
                     ['v_YoYo_g09_c01', 'v_ApplyEyeMakeup_g08_c01'])  # another class's g08 stays
    self.assertEqual([e.index for e in split.train], [0, 1])
    self.assertEqual([e.name for e in split.test],
                     ['v_YoYo_g08_c02', 'v_HandstandPushups_g08_c01'])
    self.assertEqual([(p.line, p.kind, p.subset) for p in split.problems],
                     [(1, 'test group in training list', 'train'),
                      (3, 'test group in training list', 'train')])
    self.assertIn('v_YoYo_g08_c02', split.problems[0].reason)

  def test_every_bad_line_is_reported_with_file_line_and_kind(self):
    classes, _ = ucf101.read_class_index(os.path.join(self.dir, 'classInd.txt'))
    path = write(os.path.join(self.dir, 'trainlist02.txt'), [
        'YoYo/v_YoYo_g08_c01.avi 3',             # 1 fine
        'NoSuchClass/v_NoSuchClass_g08_c01.avi 1',  # 2 unknown class
        'this line is malformed',                 # 3 malformed
        'YoYo/v_YoYo_g09_c01.avi 7',             # 4 label out of range
        'YoYo/v_YoYo_g10_c01.avi x',             # 5 malformed label
        'YoYo/v_YoYo_g11_c01.avi 1',             # 6 label of another class
        'YoYo/not_a_ucf_name.avi 3',             # 7 malformed path
        '',
        'YoYo/v_YoYo_g08_c01.avi 3',             # 9 duplicate
    ])
    entries, problems = ucf101.read_split_list(path, classes)
    self.assertLen(entries, 1)
    self.assertEqual([(p.line, p.kind) for p in problems], [
        (2, 'unknown class'), (3, 'malformed line'), (4, 'label out of range'),
        (5, 'malformed line'), (6, 'label mismatch'), (7, 'malformed line'), (9, 'duplicate')])
    self.assertEqual((os.path.basename(problems[2].source), problems[2].line),
                     ('trainlist02.txt', 4))
    self.assertIn('out of range 1..3', problems[2].reason)

  def test_a_list_whose_labels_disagree_with_classind_for_a_whole_class_stops(self):
    classes, _ = ucf101.read_class_index(os.path.join(self.dir, 'classInd.txt'))
    path = write(os.path.join(self.dir, 'trainlist02.txt'), [
        'YoYo/v_YoYo_g08_c01.avi 3',
        'HandstandPushups/v_HandstandPushups_g08_c01.avi 1',  # classInd.txt: 2
        'HandstandPushups/v_HandstandPushups_g09_c01.avi 1',
    ])
    with self.assertRaises(video_lists.DatasetError) as caught:
      ucf101.read_split_list(path, classes)
    self.assertEqual((caught.exception.path, caught.exception.line, caught.exception.option),
                     (path, 2, 'split_dir'))

  def test_missing_list_is_an_error_naming_it(self):
    with self.assertRaises(FileNotFoundError) as caught:
      ucf101.read_split(self.dir, 3)
    self.assertEqual((caught.exception.path, caught.exception.option),
                     (os.path.join(self.dir, 'trainlist03.txt'), 'split_dir'))

  def test_split_rule_groups(self):
    self.assertEqual(list(ucf101.test_groups(1)), [1, 2, 3, 4, 5, 6, 7])
    self.assertEqual(list(ucf101.test_groups(3)), list(range(15, 22)))


class FramesAndFlowTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.dir = self.create_tempdir().full_path

  def test_rgb_list_rows_and_label_range(self):
    path = write(os.path.join(self.dir, 'rgb.txt'), [
        'v_YoYo_g08_c01 jpegs_256/v_YoYo_g08_c01 120 2',
        'v_YoYo_g09_c01 jpegs_256/v_YoYo_g09_c01 120 5',
        'v_YoYo_g10_c01 120 2'])
    infos, problems = video_lists.read_frame_list(path, num_classes=3)
    info = infos['v_yoyo_g08_c01']
    self.assertEqual((info.num_frames, info.label, info.line), (120, 2, 1))
    self.assertEqual(info.path, os.path.join(self.dir, 'jpegs_256', 'v_YoYo_g08_c01'))
    self.assertEqual([(p.line, p.kind) for p in problems],
                     [(2, 'label out of range'), (3, 'malformed line')])

  def test_folder_with_up_to_three_frames_fewer_than_listed_is_used_as_is(self):
    folder = os.path.join(self.dir, 'v_a')
    write_frames(folder, 17)
    self.assertEqual(frame_folders.count_frames(folder, claimed=20), (17, None))
    self.assertEqual(frame_folders.count_frames(folder, claimed=17), (17, None))
    count, reason = frame_folders.count_frames(folder, claimed=21)
    self.assertEqual(count, 0)
    self.assertIn('holds 17 frames but the list says 21', reason)

  def test_gap_inside_folder_missing_folder_and_empty_folder_are_reasons(self):
    folder = os.path.join(self.dir, 'v_b')
    write_frames(folder, 10)
    os.remove(frame_folders.frame_path(folder, 4))  # frame000005.jpg
    count, reason = frame_folders.count_frames(folder, claimed=10)
    self.assertEqual(count, 0)
    self.assertIn('frame000005.jpg', reason)
    self.assertTrue(frame_folders.count_frames(os.path.join(self.dir, 'nope'))[1].startswith(
        'missing frame folder'))
    os.makedirs(os.path.join(self.dir, 'empty'))
    self.assertIn('no frame', frame_folders.count_frames(os.path.join(self.dir, 'empty'))[1])

  def test_frames_are_rgb_and_one_based_on_disk(self):
    folder = os.path.join(self.dir, 'v_c')
    os.makedirs(folder)
    image = np.zeros((8, 8, 3), np.uint8)
    image[..., 2] = 255  # BGR: red
    cv2.imwrite(os.path.join(folder, 'frame000001.jpg'), image)
    frames = frame_folders.read_frames(folder, [0])
    self.assertEqual(frames.shape, (1, 8, 8, 3))
    self.assertGreater(frames[0, 4, 4, 0], 200)  # red channel first
    self.assertLess(frames[0, 4, 4, 2], 50)

  def test_flow_is_two_grayscale_channels_u_then_v(self):
    root = os.path.join(self.dir, 'tvl1_flow')
    u, v = frame_folders.flow_folders(root, 'v_YoYo_g08_c01')
    write_frames(u, 6, grayscale=True, value=40)
    write_frames(v, 5, grayscale=True, value=200)
    self.assertEqual(frame_folders.count_flow_frames(root, 'v_YoYo_g08_c01'), (5, None))
    flow = read_flow(root, 'v_YoYo_g08_c01', [0, 4])
    self.assertEqual(flow.shape, (2, 20, 30, 2))
    self.assertEqual(flow.dtype, np.uint8)
    np.testing.assert_allclose(flow[..., 0], 40, atol=3)
    np.testing.assert_allclose(flow[..., 1], 200, atol=3)
    self.assertIn('missing frame folder',
                  frame_folders.count_flow_frames(root, 'v_other')[1])


class VideoTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.dir = self.create_tempdir().full_path
    rng = np.random.default_rng(0)
    self.frames = rng.integers(0, 255, (30, 48, 64, 3), dtype=np.uint8)
    self.frames[:] = cv2.GaussianBlur(self.frames.reshape(-1, 64, 3), (9, 9), 3).reshape(
        self.frames.shape)
    self.path = os.path.join(self.dir, 'v_YoYo_g08_c01.avi')
    video_io.write_video(self.path, self.frames)

  def test_mjpg_round_trip_and_short_side_resize(self):
    decoded = video_io.decode_video(self.path)
    self.assertEqual(decoded.shape, (30, 48, 64, 3))
    self.assertLess(np.abs(decoded.astype(int) - self.frames).mean(), 12)
    resized = video_io.decode_video(self.path, short_side=256)
    self.assertEqual(resized.shape, (30, 256, 341, 3))
    chosen = video_io.decode_video(self.path, keep=[5, 2, 2])
    np.testing.assert_array_equal(chosen[1], decoded[2])
    np.testing.assert_array_equal(chosen[0], decoded[5])

  def _broken(self, name: str, data: bytes) -> str:
    path = os.path.join(self.dir, name)
    with open(path, 'wb') as f:
      f.write(data)
    return path

  def test_broken_videos_raise_with_a_reason(self):
    data = open(self.path, 'rb').read()
    cases = {
        'empty.avi': (b'', 'empty file'),
        'garbage.avi': (os.urandom(4000), 'undecodable video'),
        'truncated.avi': (data[:len(data) // 2], 'truncated video'),
    }
    corrupt = bytearray(data)
    at = corrupt.find(b'\xff\xd8\xff')
    while at >= 0:
      corrupt[at:at + 300] = bytes(300)
      at = corrupt.find(b'\xff\xd8\xff', at + 300)
    cases['nothing.avi'] = (bytes(corrupt), 'no readable frame')
    for name, (content, kind) in cases.items():
      with self.subTest(name):
        with self.assertRaises(video_io.VideoError) as caught:
          video_io.decode_video(self._broken(name, content))
        self.assertEqual(caught.exception.kind, kind)


class SyntheticTest(absltest.TestCase):

  def test_layout_split_rule_and_motion_only_classes(self):
    out = self.create_tempdir().full_path
    summary = make_synthetic_ucf101.make_dataset(out, classes=3, groups=9, min_frames=12,
                                                 max_frames=12, write_frames=True)
    self.assertEqual(summary['videos'], 27)
    lists = os.path.join(out, 'ucfTrainTestlist')
    raw = open(os.path.join(lists, 'trainlist01.txt'), 'rb').read()
    self.assertIn(b'.avi 1\r\n', raw)
    split = ucf101.read_split(lists, 1)
    self.assertEmpty(split.problems)
    self.assertEqual({e.group for e in split.test}, set(range(1, 8)))
    self.assertEqual({e.group for e in split.train}, {8, 9})
    self.assertEqual(len(split.train) + len(split.test), 27)
    for entry in split.train + split.test:
      path = video_lists.resolve_video(os.path.join(out, 'UCF-101'), entry)
      self.assertIsNotNone(path, entry.rel_path)
    video = video_io.decode_video(video_lists.resolve_video(os.path.join(out, 'UCF-101'),
                                                       split.train[0]))
    self.assertEqual(video.shape, (12, 48, 64, 3))
    infos, problems = video_lists.read_frame_list(os.path.join(out, 'rgb.txt'), 3)
    self.assertEmpty(problems)
    self.assertLen(infos, 27)
    # Same appearance statistics in every class; only the velocity differs.
    velocities = {make_synthetic_ucf101.class_motion(c)[1] for c in range(16)}
    self.assertLen(velocities, 16)
    means = [video_io.decode_video(video_lists.resolve_video(os.path.join(out, 'UCF-101'), e))
             .mean() for e in split.test[:21:7]]
    self.assertLess(np.ptp(means), 25)

  def test_object_moves_by_the_class_velocity(self):
    rng = np.random.default_rng(1)
    _, velocity = make_synthetic_ucf101.class_motion(0)  # right
    video = make_synthetic_ucf101.render_video(rng, velocity, 3, 64, 48, 16)
    border = (video == 255).all(axis=-1)  # the square's white border; background is < 255
    overlap = lambda s: (np.roll(border[0], s, axis=1) & border[2]).sum()
    self.assertEqual(max(range(-6, 7), key=overlap), 3)  # 1.5 px/frame over 2 frames
    self.assertEqual(max(range(-6, 7), key=lambda s: (np.roll(border[0], s, axis=0)
                                                       & border[2]).sum()), 0)


if __name__ == '__main__':
  absltest.main()

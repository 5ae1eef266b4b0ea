"""data_tools/flow_preview: extracted flow (extract_flow's layout) written as Middlebury-colored
PNG frames, evenly spaced, one scale per video; a video without flow refused before any work."""

import os
import tempfile

import cv2
import numpy as np
from absl.testing import absltest

from command_line import entry
from command_line.options import OptionsError
from data_tools import flow_preview
from input_fn import flow, flow_colors, frame_folders


def _write_video_flow(root: str, video: str, u_pixels: list[float], v_pixels: float) -> None:
  """Flow frames of one uniform displacement each: frame t moves u_pixels[t] right."""
  codes = np.zeros((len(u_pixels), 6, 8, 2), np.uint8)
  for t, u in enumerate(u_pixels):
    codes[t, ..., 0] = flow.to_uint8(np.float32(u))
    codes[t, ..., 1] = flow.to_uint8(np.float32(v_pixels))
  flow.write_flow(codes, root, video)


def _png(path: str) -> np.ndarray:
  return cv2.cvtColor(cv2.imread(path), cv2.COLOR_BGR2RGB)


class FlowPreviewTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.root = tempfile.mkdtemp()
    self.flow_dir, self.out = os.path.join(self.root, 'tvl1_flow'), os.path.join(self.root, 'p')
    _write_video_flow(self.flow_dir, 'v_A_g01_c01', [1, 2, 3, 4, 5, 6, 7], 0.0)
    _write_video_flow(self.flow_dir, 'v_B_g01_c01', [0, 0], 4.0)

  def options(self, **changes):
    values = dict(flow_dir=self.flow_dir, videos=('v_A_g01_c01', 'v_B_g01_c01'), out=self.out,
                  frames=3)
    return flow_preview.FlowPreviewOptions(**{**values, **changes})

  def test_evenly_spaced_frames_in_the_wheels_colors_one_scale_per_video(self):
    options = self.options()
    flow_preview.check_options(options)
    written = flow_preview.preview(options)
    names = sorted(os.path.relpath(p, self.out) for p in written)
    self.assertEqual(names, ['v_A_g01_c01/flow_000001.png', 'v_A_g01_c01/flow_000004.png',
                             'v_A_g01_c01/flow_000007.png', 'v_B_g01_c01/flow_000001.png',
                             'v_B_g01_c01/flow_000002.png'])
    # Video A: 1, 4 and 7 px right as stored (8-bit codes), scaled by its largest: 7 px.
    stored = flow.from_uint8(flow.to_uint8(np.float32([1, 4, 7])))
    zero = flow.from_uint8(flow.to_uint8(np.float32(0)))
    expected = flow_colors.flow_to_rgb(stored, np.full(3, zero))
    for t, want in zip((1, 4, 7), expected):
      image = _png(os.path.join(self.out, 'v_A_g01_c01', f'flow_{t:06d}.png'))
      self.assertEqual(image.shape, (6, 8, 3))
      self.assertTrue((image == want).all(), (t, image[0, 0], want))
    # Rightward is red: pale at 1 px, full at the video's largest.
    self.assertEqual(expected[-1].tolist()[0], 255)
    self.assertGreater(int(expected[0][1]), int(expected[-1][1]))
    # Video B: downward (yellow), at full color since it is B's own largest.
    down = _png(os.path.join(self.out, 'v_B_g01_c01', 'flow_000002.png'))[0, 0]
    self.assertEqual(down[2], 0)

  def test_a_fixed_scale_in_pixels(self):
    options = self.options(videos=('v_A_g01_c01',), frames=1, max_pixels=20.0)
    written = flow_preview.preview(options)
    stored = flow.from_uint8(flow.to_uint8(np.float32([1])))
    zero = flow.from_uint8(flow.to_uint8(np.float32(0)))
    want = flow_colors.flow_to_rgb(stored, np.array([zero]), 20.0)[0]
    self.assertTrue((_png(written[0]) == want).all())

  def test_a_video_without_flow_is_refused_before_any_work(self):
    options = self.options(videos=('v_A_g01_c01', 'v_Missing_g01_c01'))
    with self.assertRaises(OptionsError) as raised:
      flow_preview.check_options(options)
    self.assertEqual(raised.exception.option, 'videos')
    self.assertIn('1 of 2 videos', str(raised.exception))
    self.assertFalse(os.path.exists(self.out))


  def test_a_rerun_into_the_same_out_replaces_the_earlier_previews(self):
    flow_preview.preview(self.options(videos=('v_A_g01_c01',), frames=7))
    written = flow_preview.preview(self.options(videos=('v_A_g01_c01',), frames=2))
    folder = os.path.join(self.out, 'v_A_g01_c01')
    self.assertEqual(sorted(os.listdir(folder)), sorted(os.path.basename(p) for p in written))
    self.assertLen(written, 2)

  def test_a_video_named_twice_is_previewed_once(self):
    written = flow_preview.preview(self.options(videos=('v_A_g01_c01', 'v_A_g01_c01'), frames=2))
    self.assertLen(written, 2)

  def test_a_video_named_with_its_extension_is_refused_naming_it_without(self):
    with self.assertRaises(OptionsError) as raised:
      flow_preview.check_options(self.options(videos=('v_A_g01_c01.avi',)))
    self.assertEqual(raised.exception.option, 'videos')
    self.assertIn('--videos=v_A_g01_c01', str(raised.exception))
    self.assertFalse(os.path.exists(self.out))

  def test_a_missing_flow_frame_ends_in_one_line(self):
    os.remove(frame_folders.frame_path(os.path.join(self.flow_dir, 'u', 'v_A_g01_c01'), 3))
    with self.assertRaises(entry.Failed) as raised:
      flow_preview.preview(self.options(frames=7))
    self.assertIn('frame000004.jpg is missing', str(raised.exception))

  def test_the_dataset_root_as_flow_dir_names_the_flow_folder_in_it(self):
    with self.assertRaises(OptionsError) as raised:
      flow_preview.check_options(self.options(flow_dir=self.root))
    self.assertEqual(raised.exception.option, 'flow_dir')
    self.assertIn(f'--flow_dir={self.flow_dir}', str(raised.exception))

if __name__ == '__main__':
  absltest.main()

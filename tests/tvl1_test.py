"""TV-L1 in TensorFlow (data_tools/tvl1.py) against OpenCV's DualTVL1 itself:

- each step it ports (pyramid resize down and up, cubic remap on the 1/32 grid with a zero
  border, the 5x5 median) gives OpenCV's numbers on a random image;
- on real UCF101 frames (../shared/i3d/v_CricketShot_g04_c01_rgb.gif at 341x256, gray as
  extract_flow makes them), one pair with OpenCV's default settings: mean end-point
  difference <= 0.05 px and >= 99% of the 8-bit codes within one gray level;
- a batch gives each pair what it gives alone (each pair stops on its own);
- //data_tools:extract_flow --backend=tensorflow writes what --backend=opencv writes: the
  same files, manifest, flow.txt and source records, codes within one gray level.
"""

import json
import os
import shutil
import tempfile
import unittest

import cv2
import numpy as np
import tensorflow as tf

from data_tools import extract_flow, tvl1
from input_fn import flow, video_io
from tests.flow_testing import dataset_with_a_broken_video
from tests.i3d_test_lib import shared_i3d_dir


def real_gray_frames(indices, width=341, height=256):
  """uint8 [len(indices), height, width]: the clip's frames, resized and gray (skips the
  calling spec where ../shared is absent)."""
  shared = shared_i3d_dir()
  if shared is None:
    raise unittest.SkipTest('../shared/i3d (the real UCF101 clip) is absent; set '
                            'I3D_SHARED_DIR to its folder')
  frames = video_io.decode_video(os.path.join(shared, 'v_CricketShot_g04_c01_rgb.gif'), 256)
  return np.stack([cv2.resize(flow.grayscale(frames[i:i + 1])[0], (width, height),
                              interpolation=cv2.INTER_AREA) for i in indices])


def agreement(reference: np.ndarray, flow_xy: np.ndarray) -> tuple[float, float]:
  """(mean end-point difference in px, share of 8-bit codes within one gray level)."""
  epe = float(np.sqrt(((reference - flow_xy) ** 2).sum(-1)).mean())
  codes = np.abs(flow.to_uint8(reference).astype(int) - flow.to_uint8(flow_xy).astype(int))
  return epe, float((codes <= 1).mean())


class StepsTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.image = (np.random.default_rng(0).random((61, 83)) * 255).astype(np.float32)

  def test_pyramid_resize_down_and_up_is_opencvs_inter_linear(self):
    (h0, w0), (h1, w1) = tvl1.pyramid_sizes(61, 83, tvl1.Tvl1Parameters())[:2]
    down = cv2.resize(self.image, None, fx=0.8, fy=0.8, interpolation=cv2.INTER_LINEAR)
    self.assertEqual(down.shape, (h1, w1))
    ours = tvl1.resize(self.image[None], tvl1.linear_resize_matrix(h0, h1, 1 / 0.8),
                       tvl1.linear_resize_matrix(w0, w1, 1 / 0.8))[0]
    self.assertAllClose(ours, down, atol=1e-3, rtol=0)
    up = cv2.resize(down, (w0, h0), interpolation=cv2.INTER_LINEAR)
    ours = tvl1.resize(down[None], tvl1.linear_resize_matrix(h1, h0, h1 / h0),
                       tvl1.linear_resize_matrix(w1, w0, w1 / w0))[0]
    self.assertAllClose(ours, up, atol=5e-3, rtol=0)

  def test_warp_is_opencvs_cubic_remap_with_a_zero_border(self):
    rng = np.random.default_rng(1)
    map_x = (np.arange(83)[None, :] + rng.normal(0, 4, (61, 83))).astype(np.float32)
    map_y = (np.arange(61)[:, None] + rng.normal(0, 4, (61, 83))).astype(np.float32)
    expected = cv2.remap(self.image, map_x, map_y, cv2.INTER_CUBIC)
    ours = tvl1.remap_cubic(self.image[None, ..., None], map_x[None], map_y[None])[0, ..., 0]
    self.assertAllClose(ours, expected, atol=1e-3, rtol=0)

  def test_median_is_opencvs_5x5_median_blur(self):
    self.assertAllEqual(tvl1.median5(self.image[None])[0], cv2.medianBlur(self.image, 5))


class AgreementTest(tf.test.TestCase):

  def test_agrees_with_opencv_on_real_ucf101_frames(self):
    gray = real_gray_frames([30, 31])
    solver = flow.tvl1()
    cv2.setNumThreads(1)
    reference = solver.calc(gray[0], gray[1], None)
    ours = tvl1.Tvl1(256, 341).flow(gray[:1].astype(np.float32),
                                     gray[1:].astype(np.float32)).numpy()[0]
    epe, within_one = agreement(reference, ours)
    self.assertLessEqual(epe, 0.05)
    self.assertGreaterEqual(within_one, 0.99)
    self.assertGreater(np.abs(reference).mean(), 0.05)  # the pair does move

  def test_a_batch_gives_each_pair_what_it_gives_alone(self):
    gray = real_gray_frames([10, 11, 40, 41], width=64, height=48).astype(np.float32)
    graph = tvl1.Tvl1(48, 64, tvl1.Tvl1Parameters(scales=3, warps=2))
    together = graph.flow(gray[[0, 2]], gray[[1, 3]]).numpy()
    for i, first in enumerate((0, 2)):
      alone = graph.flow(gray[first:first + 1], gray[first + 1:first + 2]).numpy()[0]
      self.assertAllClose(together[i], alone, atol=1e-4, rtol=0)
    solver = cv2.optflow.DualTVL1OpticalFlow_create(nscales=3, warps=2)
    epe, _ = agreement(solver.calc(gray[0].astype(np.uint8), gray[1].astype(np.uint8), None),
                       together[0])
    self.assertLessEqual(epe, 0.05)


class BackendTest(tf.test.TestCase):

  def test_tensorflow_backend_writes_what_the_opencv_backend_writes(self):
    root = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, root)
    data = os.path.join(root, 'ucf')
    dataset_with_a_broken_video(data, width=40, height=32, min_frames=3, max_frames=5,
                                object_size=10)
    outs = {}
    for backend in ('opencv', 'tensorflow'):
      outs[backend] = os.path.join(root, backend)
      extract_flow.extract(extract_flow.ExtractFlowOptions(
          data_dir=data, out=outs[backend], short_side=0, workers=1, tvl1_scales=3,
          tvl1_warps=2, backend=backend, tvl1_batch=2), log=lambda line: None)
    listing = {b: sorted(os.path.relpath(os.path.join(d, f), o) for o in [outs[b]]
                         for d, _, files in os.walk(o) for f in files) for b in outs}
    self.assertEqual(listing['opencv'], listing['tensorflow'])
    for name in (extract_flow.MANIFEST, 'flow.txt', extract_flow.SOURCES):
      with open(os.path.join(outs['opencv'], name)) as a, \
           open(os.path.join(outs['tensorflow'], name)) as b:
        self.assertEqual(a.read(), b.read(), name)
    with open(os.path.join(outs['tensorflow'], extract_flow.MANIFEST)) as f:
      self.assertEqual(json.load(f)['skipped_by_kind'], {'undecodable video': 1})
    codes = {b: np.stack([cv2.imread(os.path.join(outs[b], path), cv2.IMREAD_GRAYSCALE)
                          for path in listing[b] if path.endswith('.jpg')]).astype(int)
             for b in outs}
    self.assertGreaterEqual(np.mean(np.abs(codes['opencv'] - codes['tensorflow']) <= 1), 0.99)


if __name__ == '__main__':
  tf.test.main()

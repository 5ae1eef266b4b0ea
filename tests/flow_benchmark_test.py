"""Specification: what //benchmarks:flow_benchmark's agreement figures measure.

- Before encoding: the mean end-point difference of the two float flows.
- As stored: the 8-bit codes of the JPEGs extract_flow writes (`flow.write_flow`), read back
  as prepare reads them; their share within one gray level and their largest difference,
  which JPEG coding moves away from those of the codes before it.
- The frames are compared at the size asked: a clip decoded at that size is not resampled.
"""

import os
import tempfile

import numpy as np
import tensorflow as tf

from benchmarks import flow_benchmark
from data_tools import make_synthetic_ucf101
from input_fn import flow, frame_folders, video_io


def stored_by_extract_flow(displacement: np.ndarray, root: str) -> np.ndarray:
  """uint8 [N, H, W, 2]: `displacement` written by extract_flow's writer and read back."""
  flow.write_flow(flow.to_uint8(displacement), root, 'v_X_g01_c01')
  folders = frame_folders.flow_folders(root, 'v_X_g01_c01')
  indices = list(range(len(displacement)))
  return np.stack([frame_folders.read_frames(f, indices, grayscale=True) for f in folders], -1)


class FlowBenchmarkTest(tf.test.TestCase):

  def test_agreement_as_stored_is_that_of_the_jpegs_extract_flow_writes(self):
    rng = np.random.default_rng(5)
    smooth = np.cumsum(rng.normal(0, 0.3, (3, 48, 64, 2)), axis=2).astype(np.float32)
    reference = np.clip(smooth, -19, 19)
    other = reference + rng.normal(0, 0.03, reference.shape).astype(np.float32)
    other[:, 20:23, 30:33] += 4.0  # a few pixels far off, as at motion boundaries
    agreed = flow_benchmark.agreement(reference, other)
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
      stored = np.abs(stored_by_extract_flow(reference, a).astype(int) -
                      stored_by_extract_flow(other, b).astype(int))
    self.assertEqual(agreed.stored_within_one, float((stored <= 1).mean()))
    self.assertEqual(agreed.stored_largest, int(stored.max()))
    self.assertAllClose(agreed.endpoint_px,
                        np.sqrt(((reference - other) ** 2).sum(-1)).mean(), rtol=1e-6)
    before = np.abs(flow.to_uint8(reference).astype(int) - flow.to_uint8(other).astype(int))
    self.assertNotEqual(float((before <= 1).mean()), agreed.stored_within_one)

  def test_a_clip_decoded_at_the_size_asked_is_compared_as_decoded(self):
    with tempfile.TemporaryDirectory() as folder:
      clip = os.path.join(folder, 'clip.avi')
      video_io.write_video(clip, make_synthetic_ucf101.render_video(
          np.random.default_rng(2), (1.5, 0.5), 6, width=40, height=32, object_size=10))
      gray = flow.grayscale(video_io.decode_video(clip))
      first, second = flow_benchmark.real_pairs(clip, 2, width=40, height=32)
      self.assertAllEqual(first, gray[[0, 4]])
      self.assertAllEqual(second, gray[[1, 5]])
      first, _ = flow_benchmark.real_pairs(clip, 2, width=48, height=40)
      self.assertEqual(first.shape, (2, 40, 48))


if __name__ == '__main__':
  tf.test.main()

"""Specification of benchmarks/i3d_memory.py against Grappler as it runs here: on the
virtual GTX1060 the default optimizers add layout transposes and raise the step's peak;
a clip more adds at least its activations; freezing early endpoints lowers it; a need is
the optimized peak plus the CUDA context and cuDNN workspace, and `most_clips` is the
largest clip count whose need fits (the next does not)."""

from __future__ import annotations

import tensorflow as tf

from benchmarks import i3d_memory

SMALL = i3d_memory.Config(frames=8, crop=32, num_classes=5)


class I3dMemoryTest(tf.test.TestCase):

  def test_the_default_optimizers_add_transposes_and_raise_the_peak(self):
    peak = i3d_memory.step_peak(1, SMALL)
    self.assertGreater(peak.transposes, 100)  # NDHWC -> NCDHW around every conv
    self.assertGreater(peak.optimized, peak.as_built)

  def test_a_clip_more_adds_at_least_its_first_activation(self):
    one, two = (i3d_memory.step_peak(n, SMALL).optimized for n in (1, 2))
    # The first conv's output alone is 4 x 16 x 16 x 64 float32 per clip.
    self.assertGreater(two - one, 4 * 16 * 16 * 64 * 4)

  def test_frozen_endpoints_lower_the_peak(self):
    frozen = i3d_memory.Config(frames=8, crop=32, num_classes=5, trainable_from='Mixed_4b')
    self.assertLess(i3d_memory.step_peak(2, frozen).optimized,
                    i3d_memory.step_peak(2, SMALL).optimized)

  def test_most_clips_is_the_last_count_whose_need_fits(self):
    need = {n: i3d_memory.need_bytes(n, SMALL) for n in (1, 2)}
    self.assertEqual(need[1] - i3d_memory.step_peak(1, SMALL).optimized,
                     i3d_memory.OVERHEADS.cuda_context + i3d_memory.OVERHEADS.cudnn_workspace)
    fit = i3d_memory.fit(SMALL, 2, (need[1] + need[2]) / 2 / i3d_memory.GIB)
    self.assertEqual(fit.most_clips, 1)
    self.assertFalse(fit.fits)
    self.assertEqual(i3d_memory.most_clips(SMALL, need[1] - 1), 0)

if __name__ == '__main__':
  tf.test.main()

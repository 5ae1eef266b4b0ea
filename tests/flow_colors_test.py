"""input_fn/flow_colors: the Middlebury color wheel, pixel for pixel against a port of the
Middlebury flow code run on a sample (testdata/middlebury_flow_colors.json names it)."""

import json
import os

import numpy as np
from absl.testing import absltest

from input_fn import flow_colors

SAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'testdata',
                      'middlebury_flow_colors.json')


class FlowColorsTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    with open(SAMPLE, encoding='utf-8') as f:
      cls.sample = json.load(f)
    cls.u, cls.v = np.array(cls.sample['u']), np.array(cls.sample['v'])

  def test_the_wheel_has_the_middlebury_55_colors(self):
    np.testing.assert_array_equal(flow_colors.color_wheel(), self.sample['make_colorwheel'])

  def test_scaled_by_the_largest_displacement_as_the_reference(self):
    np.testing.assert_array_equal(flow_colors.flow_to_rgb(self.u, self.v),
                                  self.sample['flow_to_color'])

  def test_a_fixed_scale_darkens_longer_displacements_as_the_reference(self):
    np.testing.assert_array_equal(flow_colors.flow_to_rgb(self.u, self.v, max_magnitude=4.0),
                                  self.sample['flow_uv_to_colors_of_u_v_over_4'])

  def test_no_motion_is_white_and_directions_are_hues(self):
    still = flow_colors.flow_to_rgb(np.zeros((2, 3)), np.zeros((2, 3)))
    self.assertEqual(still.shape, (2, 3, 3))
    self.assertTrue((still == 255).all())
    right, down, left = flow_colors.flow_to_rgb(np.array([1.0, 0.0, -1.0]),
                                                np.array([0.0, 1.0, 0.0]), 1.0)
    self.assertEqual(right.tolist(), [255, 0, 0])   # red
    self.assertEqual(left.tolist(), [0, 209, 255])  # cyan-blue, its opposite
    self.assertGreater(min(down[0], down[1]), 200)  # yellow
    self.assertEqual(down[2], 0)

if __name__ == '__main__':
  absltest.main()

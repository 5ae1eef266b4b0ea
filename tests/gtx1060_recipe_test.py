"""Specification: gtx1060.flags and gtx1060_flow.flags are ucf101.flags and flow.flags with
the same clips per update split into micro-batches that fit a 6 GB card (i3d_memory, from
TensorFlow's peak on a virtual GTX1060 plus the CUDA context and cuDNN workspace, says so:
3 clips per tower and no more, and says the plain recipe's 6 do not), plus the cluster
settings docs/scaling.md measured."""

from __future__ import annotations

import dataclasses
import os

import tensorflow as tf
from absl import flags

from benchmarks import i3d_memory
from towers import flags as towers_flags

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECIPE_CHANGES = {'batch_size': 3, 'accumulate_steps': 2, 'transfer_dtype': 'bfloat16'}


def read_flagfile(name: str):
  """The params `//towers:train --flagfile=name` builds from the repository root (nested
  flagfiles resolve there, as for the user)."""
  values = flags.FlagValues()
  towers_flags.define_flags(values)
  cwd = os.getcwd()
  os.chdir(ROOT)
  try:
    values(['train', f'--flagfile={name}'])
  finally:
    os.chdir(cwd)
  return towers_flags.params_from_flags(values, working_dir=ROOT)


class Gtx1060RecipeTest(tf.test.TestCase):

  def test_each_recipe_is_its_stream_with_micro_batches_and_cluster_settings(self):
    for base, recipe, model_dir in (('ucf101.flags', 'gtx1060.flags', 'ucf101_i3d_rgb_gtx1060'),
                                    ('flow.flags', 'gtx1060_flow.flags',
                                     'ucf101_i3d_flow_gtx1060')):
      plain = dataclasses.asdict(read_flagfile(base))
      small = read_flagfile(recipe)
      changed = {k: v for k, v in dataclasses.asdict(small).items() if plain[k] != v}
      self.assertEqual(changed, {**RECIPE_CHANGES,
                                 'model_dir': os.path.join(ROOT, 'runs', model_dir)}, recipe)
      self.assertEqual(small.examples_per_step, plain['batch_size'] * plain['accumulate_steps'])

  def test_i3d_memory_says_the_recipe_fits_and_the_plain_one_does_not(self):
    small = i3d_memory.recipe_fit(read_flagfile('gtx1060.flags'), usable_gib=5.0)
    self.assertTrue(small.fit.fits, small)
    self.assertEqual((small.clips_per_tower, small.clips_per_update), (3, 6))
    # The recipe's 3 clips are the most: the comments of the recipes and docs say so.
    self.assertEqual(small.fit.most_clips, 3)
    plain = read_flagfile('ucf101.flags')
    self.assertEqual(plain.batch_size, 6)
    self.assertGreater(i3d_memory.need_bytes(6, i3d_memory.recipe_config(plain)),
                       5 * i3d_memory.GIB)
    flow = read_flagfile('gtx1060_flow.flags')
    self.assertLessEqual(i3d_memory.need_bytes(flow.batch_size, i3d_memory.recipe_config(flow)),
                         5 * i3d_memory.GIB)


if __name__ == '__main__':
  tf.test.main()

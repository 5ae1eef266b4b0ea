"""hmdb51.flags and its flow and 6 GB versions: the UCF101 recipe on HMDB51 (51 classes, the
schedule scaled to HMDB51's epochs), nesting the UCF101 flagfiles, and a preflight that says
what is missing."""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile

import tensorflow as tf
from absl import flags

from model_fn import warm_start
from towers import flags as towers_flags
from towers import params as params_lib
from towers import preflight

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read_flagfile(name: str, base_dir: str) -> dict:
  """The params `//towers:train --flagfile=<name>` builds from the repository root, as a
  dict (relative paths resolved against `base_dir`)."""
  values = flags.FlagValues()
  towers_flags.define_flags(values)
  cwd = os.getcwd()
  os.chdir(ROOT)
  try:
    values(['train', f'--flagfile={os.path.join(ROOT, name)}'])
  finally:
    os.chdir(cwd)
  return dataclasses.asdict(towers_flags.params_from_flags(values, working_dir=base_dir))


class Hmdb51FlagsTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.base = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, self.base, True)

  def differences(self, name: str, reference: str) -> dict:
    one, other = read_flagfile(name, self.base), read_flagfile(reference, self.base)
    return {key: one[key] for key in one if one[key] != other[key]}

  def test_the_ucf101_recipe_on_hmdb51_with_its_schedule_scaled_to_the_epochs(self):
    self.assertEqual(self.differences('hmdb51.flags', 'ucf101.flags'), {
        'dataset': 'hmdb51', 'num_classes': 51,
        'lr_boundaries': (3750, 7500, 11250, 15000, 18750), 'max_steps': 22500,
        'data_dir': os.path.join(self.base, 'data/hmdb51/tfrecord_split1'),
        'model_dir': os.path.join(self.base, 'runs/hmdb51_i3d_rgb_split1')})
    ucf = read_flagfile('ucf101.flags', self.base)
    # The same epochs at each rate: 3570 training videos of a split against 9537.
    self.assertAlmostEqual(22500 / 3570, ucf['max_steps'] / 9537, delta=0.05)

  def test_flow_and_6gb_versions_change_only_their_own_settings(self):
    self.assertEqual(self.differences('hmdb51_flow.flags', 'hmdb51.flags'), {
        'stream': 'flow',
        'warm_start_from': os.path.join(self.base, 'data/checkpoints/flow_imagenet/model.ckpt'),
        'data_dir': os.path.join(self.base, 'data/hmdb51/flow_tfrecord_split1'),
        'model_dir': os.path.join(self.base, 'runs/hmdb51_i3d_flow_split1')})
    for name, base, model_dir in (
        ('gtx1060_hmdb51.flags', 'hmdb51.flags', 'runs/hmdb51_i3d_rgb_split1_gtx1060'),
        ('gtx1060_hmdb51_flow.flags', 'hmdb51_flow.flags', 'runs/hmdb51_i3d_flow_split1_gtx1060')):
      with self.subTest(name):
        self.assertEqual(self.differences(name, base), {
            'batch_size': 3, 'accumulate_steps': 2, 'transfer_dtype': 'bfloat16',
            'model_dir': os.path.join(self.base, model_dir)})

  def test_preflight_names_the_checkpoint_and_the_preparation(self):
    params = params_lib.make_params(read_flagfile('hmdb51.flags', self.base))
    self.assertEqual([problem.option for problem in preflight.problems(params)],
                     ['warm_start_from', 'data_dir'])
    with self.assertRaises(warm_start.WarmStartError) as missing:
      warm_start.resolve_checkpoint(params.warm_start_from, params.stream)
    self.assertEqual(missing.exception.path,
                     os.path.join(self.base, 'data/checkpoints/rgb_imagenet/model.ckpt.index'))


if __name__ == '__main__':
  tf.test.main()

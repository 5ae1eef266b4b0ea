"""ucf101.flags: the user's I3D recipe parses into valid params, and the preflight says
exactly what is missing (checkpoint to download, data to prepare) or nothing when both are
there."""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile

import tensorflow as tf
from absl import flags

from tests import i3d_test_lib as lib
from input_fn import manifest
from model_fn import warm_start
from towers import flags as towers_flags
from towers import preflight
from towers import params as params_lib

tf1 = tf.compat.v1

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLAGFILE = os.path.join(ROOT, 'ucf101.flags')
FLOW_FLAGFILE = os.path.join(ROOT, 'flow.flags')


def read_flagfile(path: str, base_dir: str) -> params_lib.TrainParams:
  """The params `//towers:train --flagfile=path` builds from the repository root: the train
  binary's own flags parse the file (a nested --flagfile resolves against the root, as for
  the user who runs there), and relative paths resolve against `base_dir`."""
  values = flags.FlagValues()
  towers_flags.define_flags(values)
  cwd = os.getcwd()
  os.chdir(ROOT)
  try:
    values(['train', f'--flagfile={path}'])
  finally:
    os.chdir(cwd)
  return towers_flags.params_from_flags(values, working_dir=base_dir)


class Ucf101FlagsTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.base = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, self.base, True)

  def test_flow_recipe_is_the_rgb_recipe_on_flow(self):
    rgb = dataclasses.asdict(read_flagfile(FLAGFILE, self.base))
    flow = dataclasses.asdict(read_flagfile(FLOW_FLAGFILE, self.base))
    differences = {name: flow[name] for name in rgb if rgb[name] != flow[name]}
    self.assertEqual(differences, {
        'stream': 'flow',
        'warm_start_from': os.path.join(self.base, 'data/checkpoints/flow_imagenet/model.ckpt'),
        'data_dir': os.path.join(self.base, 'data/ucf101/flow_tfrecord'),
        'model_dir': os.path.join(self.base, 'runs/ucf101_i3d_flow')})

  def test_recipe_fine_tunes_the_rgb_i3d_on_the_prepared_ucf101(self):
    p = read_flagfile(FLAGFILE, self.base)
    self.assertEqual((p.model, p.stream, p.num_classes), ('i3d', 'rgb', 101))
    self.assertEqual(p.data_source, 'tfrecord')
    # What it reads and writes is under the directory the user starts from.
    for path in (p.warm_start_from, p.data_dir, p.model_dir):
      self.assertTrue(path.startswith(self.base + os.sep), path)
    # The whole schedule is used: the last rate starts before the run ends.
    self.assertLess(max(p.lr_boundaries), p.max_steps)

  def test_preflight_names_what_is_missing(self):
    p = read_flagfile(FLAGFILE, self.base)
    with self.assertRaises(preflight.PreflightError) as e:
      preflight.check(p)
    self.assertEqual([problem.option for problem in e.exception.problems],
                     ['warm_start_from', 'data_dir'])
    with self.assertRaises(warm_start.WarmStartError) as missing:
      warm_start.resolve_checkpoint(p.warm_start_from, p.stream)
    self.assertEqual((missing.exception.path, missing.exception.download),
                     (os.path.join(self.base, 'data/checkpoints/rgb_imagenet/model.ckpt.index'),
                      'data/checkpoints/rgb_imagenet/model.ckpt'))

  def test_preflight_passes_when_everything_is_there(self):
    p = read_flagfile(FLAGFILE, self.base)
    os.makedirs(p.data_dir)
    classes = [f'Class{i}' for i in range(p.num_classes)]
    for subset in manifest.SUBSETS:  # a prepared directory's table of contents
      manifest.write(p.data_dir, {'subset': subset, 'classes': classes, 'shards': [],
                                  'num_classes': len(classes),
                                  'counts_per_class': {c: 1 for c in classes}})
    lib.write_checkpoint(p.warm_start_from, [('RGB/inception_i3d/Logits/Conv3d_0c_1x1/conv_3d/b',
                                              [400])])
    self.assertEqual(preflight.problems(p), [])
    # A resumed run does not need the pretrained checkpoint any more; the model_dir's own
    # checkpoint is checked against the graph instead (this one holds only global_step).
    os.remove(p.warm_start_from + '.index')
    self.assertLen(preflight.problems(p), 1)
    os.makedirs(p.model_dir)
    lib.write_checkpoint(os.path.join(p.model_dir, 'model.ckpt-5'),
                         [('global_step', [])])
    tf1.train.update_checkpoint_state(p.model_dir, os.path.join(p.model_dir, 'model.ckpt-5'))
    found = preflight.problems(p)
    self.assertLen(found, 1)
    self.assertEqual((found[0].variable.split('/')[:2], found[0].stored),
                     (['RGB', 'inception_i3d'], None))  # a graph variable it lacks

  def test_other_models_reject_i3d_flags(self):
    for flag in ({'warm_start_from': 'x'}, {'trainable_from': 'Mixed_4b'}):
      with self.subTest(flag):
        with self.assertRaises(params_lib.ParamsError) as caught:
          params_lib.make_params(model='c3d_small', **flag)
        self.assertEqual(caught.exception.option, *flag)
        self.assertEqual(params_lib.make_params(model='i3d', **flag).model, 'i3d')


if __name__ == '__main__':
  tf1.disable_eager_execution()
  tf.test.main()

"""Helpers of the I3D tests: the checkpoint-layout fixtures and fabricated checkpoints.

`fixture(name)` reads `testdata/i3d_<name>_variables.json` (generated from DeepMind's
index files by `testdata/make_i3d_fixtures.py`). `write_checkpoint(prefix, layout)`
writes a checkpoint with exactly those names and shapes and random values, the way
DeepMind's would look, and returns the values. `shared_i3d_dir()` finds `../shared/i3d`
beside the checkout, or returns None (tests then skip).
"""

from __future__ import annotations

import json
import os

import numpy as np
import tensorflow as tf

tf1 = tf.compat.v1

TESTDATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'testdata')


def fixture(name: str) -> list[tuple[str, list[int]]]:
  """[(tensor name, shape)] of DeepMind's `name` checkpoint (rgb_imagenet, flow_imagenet,
  rgb_scratch_kin600), in index order."""
  path = os.path.join(TESTDATA, f'i3d_{name}_variables.json')
  with open(path) as f:
    return [(n, list(s)) for n, s in json.load(f)['variables']]


def shared_i3d_dir() -> str | None:
  """`../shared/i3d` beside the repository (also through Bazel's runfiles symlinks)."""
  candidates = [os.environ.get('I3D_SHARED_DIR', '')]
  for start in (os.path.abspath(__file__), os.path.realpath(__file__)):
    repo = os.path.dirname(os.path.dirname(start))
    candidates.append(os.path.join(os.path.dirname(repo), 'shared', 'i3d'))
  for c in candidates:
    if c and os.path.exists(os.path.join(c, 'rgb_imagenet.model.ckpt.index')):
      return c
  return None


def write_checkpoint(prefix: str, layout: list[tuple[str, list[int]]], seed: int = 0
                     ) -> dict[str, np.ndarray]:
  """Writes a checkpoint holding `layout`'s tensors with random float32 values.

  Moving variances are positive. Returns {name: value}. Uses its own graph.
  """
  rng = np.random.default_rng(seed)
  values = {}
  for name, shape in layout:
    value = rng.standard_normal(shape).astype(np.float32) * 0.05
    if name.endswith('moving_variance'):
      value = np.abs(value) + 0.5
    values[name] = value
  os.makedirs(os.path.dirname(os.path.abspath(prefix)), exist_ok=True)
  with tf.Graph().as_default():
    placeholders, variables = [], []
    for name, value in values.items():
      ph = tf1.placeholder(tf.float32, value.shape)
      variables.append(tf1.Variable(ph, name=name, use_resource=True))
      placeholders.append(ph)
    saver = tf1.train.Saver(variables, write_version=tf1.train.SaverDef.V2)
    with tf1.Session() as sess:
      sess.run([v.initializer for v in variables],
               feed_dict=dict(zip(placeholders, values.values())))
      saver.save(sess, prefix, write_meta_graph=False, write_state=False)
  return values

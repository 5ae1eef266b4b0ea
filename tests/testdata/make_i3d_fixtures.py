"""Writes the I3D checkpoint-layout fixtures of this folder from DeepMind's index files.

The fixtures (`i3d_<checkpoint>_variables.json`) hold every tensor name and shape of
DeepMind's kinetics-i3d checkpoints, read from their `.index` files alone (no weights), so
the name-compatibility and warm-start tests run without `../shared`.

Regenerate (from the repository root; needs `../shared/i3d/`):

  PYTHONPATH=. .venv/bin/python3 tests/testdata/make_i3d_fixtures.py [../shared/i3d]
"""

from __future__ import annotations

import json
import os
import sys

import tensorflow as tf

CHECKPOINTS = ('rgb_imagenet', 'flow_imagenet', 'rgb_scratch_kin600')
HERE = os.path.dirname(os.path.abspath(__file__))


def fixture_path(checkpoint: str) -> str:
  return os.path.join(HERE, f'i3d_{checkpoint}_variables.json')


def main(shared_i3d: str) -> None:
  for name in CHECKPOINTS:
    prefix = os.path.join(shared_i3d, f'{name}.model.ckpt')
    variables = [[n, list(s)] for n, s in tf.train.list_variables(prefix)]
    with open(fixture_path(name), 'w') as f:
      # One tensor a line, so diffs of the fixture read like the index they come from.
      f.write('{"source": %s,\n "variables": [\n' % json.dumps(
          f'kinetics-i3d data/checkpoints/{name}/model.ckpt.index'))
      f.write(',\n'.join('  ' + json.dumps(v) for v in variables))
      f.write('\n]}\n')
    print(f'{fixture_path(name)}: {len(variables)} tensors')


if __name__ == '__main__':
  main(sys.argv[1] if len(sys.argv) > 1 else
       os.path.join(HERE, '..', '..', '..', 'shared', 'i3d'))

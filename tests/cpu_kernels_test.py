"""TensorFlow's oneDNN CPU kernels are on by default for every program of the project, and
a TF_ENABLE_ONEDNN_OPTS that the user set wins."""

import os
import subprocess
import sys

import tensorflow as tf
from tensorflow.python.util import _pywrap_util_port

PROBE = ('import towers, tensorflow; '
         'from tensorflow.python.util import _pywrap_util_port as p; '
         'print(p.IsMklEnabled())')


def probe(**env_overrides: str) -> str:
  """Whether oneDNN is on in a fresh Python that imports `towers` before TensorFlow."""
  env = {k: v for k, v in os.environ.items() if k != 'TF_ENABLE_ONEDNN_OPTS'}
  env.update(env_overrides)
  done = subprocess.run([sys.executable, '-c', PROBE], env=env, capture_output=True,
                        text=True, check=True)
  return done.stdout.strip()


class CpuKernelsTest(tf.test.TestCase):

  def test_bazel_runs_every_test_with_onednn_on(self):
    # tools/python/python3, the toolchain's interpreter, sets it when the caller did not.
    self.assertEqual(os.environ.get('TF_ENABLE_ONEDNN_OPTS'), '1')
    self.assertTrue(_pywrap_util_port.IsMklEnabled())

  def test_importing_towers_first_turns_it_on(self):
    self.assertEqual(probe(), 'True')

  def test_the_users_choice_wins(self):
    self.assertEqual(probe(TF_ENABLE_ONEDNN_OPTS='0'), 'False')


if __name__ == '__main__':
  tf.test.main()

"""Specification of the GPU tools on a machine without a GPU: tools/gpu_check.sh reports
every spec of the GPU tier as skipped with the reason (its GPU_CHECK_RESULTS JSON) and exits
1; `tools/setup.sh --gpu` says what it would install and why it found no GPU, changes nothing
and exits 1; tools/gpu_report_main.py finds a driver too old for this TensorFlow's CUDA and exits
1. The NVIDIA driver is stood for by a fake nvidia-smi first on PATH.

setup.sh is a shell script whose only product is what it says: its lines are its console
spec, here. The other tools are read through their JSON and return values."""

import json
import os
import stat
import subprocess
import sys
from unittest import mock

import tensorflow as tf

from tools import gpu_report_main as gpu_report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HAS_GPU = bool(tf.config.list_physical_devices('GPU'))
TIER_SPECS = 10


def fake_nvidia_smi(directory: str, script: str) -> dict[str, str]:
  """An environment whose PATH finds `script` as nvidia-smi first."""
  path = os.path.join(directory, 'nvidia-smi')
  with open(path, 'w') as f:
    f.write('#!/bin/sh\n' + script)
  os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)
  return dict(os.environ, PATH=f'{directory}:{os.environ["PATH"]}',
              PYTHON=sys.executable, PYTHONPATH=os.pathsep.join(sys.path))


class GpuToolsWithoutGpuTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    if HAS_GPU:
      self.skipTest('this machine has a GPU: the no-GPU path cannot be shown here '
                    '(bash tools/gpu_check.sh runs the tier itself)')

  def test_gpu_check_skips_every_spec_with_the_reason(self):
    summary = os.path.join(self.get_temp_dir(), 'gpu_check.json')
    env = dict(os.environ, PYTHON=sys.executable, PYTHONPATH=os.pathsep.join(sys.path),
               GPU_CHECK_LOG=os.path.join(self.get_temp_dir(), 'gpu_check.log'),
               GPU_CHECK_RESULTS=summary)
    result = subprocess.run(['bash', os.path.join(ROOT, 'tools', 'gpu_check.sh')], env=env,
                            capture_output=True, text=True, timeout=600, check=False)
    self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
    with open(summary) as f:
      found = json.load(f)
    self.assertTrue(found['skipped'], found)  # the tier said why it could not run
    self.assertLen(found['rows'], TIER_SPECS, found)  # one row per spec
    self.assertEqual({r['result'] for r in found['rows']}, {'SKIP'})
    self.assertEqual(found['tier_exit_code'], 0)  # skipping is the tier's success

  def test_setup_gpu_without_a_gpu_says_what_and_why_and_changes_nothing(self):
    for script, why in (
        ('echo "NVIDIA-SMI has failed because it couldn\'t communicate with the NVIDIA '
         'driver."; exit 9\n', 'nvidia-smi failed: NVIDIA-SMI has failed'),
        ('exit 0\n', 'nvidia-smi lists no GPU')):
      env = fake_nvidia_smi(self.create_tempdir().full_path, script)
      before = sorted(os.listdir(ROOT))
      result = subprocess.run(['bash', os.path.join(ROOT, 'tools', 'setup.sh'), '--gpu'],
                              env=env, capture_output=True, text=True, timeout=120,
                              check=False)
      self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
      self.assertIn('[setup] --gpu: would install tensorflow[and-cuda]==2.15.1 instead of '
                    'tensorflow-cpu==2.15.1', result.stdout)
      self.assertIn(f'[setup] but found no GPU: {why}', result.stdout)
      self.assertIn('[setup] nothing changed', result.stdout)
      self.assertEqual(sorted(os.listdir(ROOT)), before)

  def test_gpu_report_names_a_driver_too_old(self):
    env = fake_nvidia_smi(self.create_tempdir().full_path,
                          'echo "NVIDIA GeForce GTX 1060 6GB, 470.57.02, 6144 MiB"\n')
    result = subprocess.run([sys.executable, os.path.join(ROOT, 'tools', 'gpu_report_main.py')],
                            env=env, capture_output=True, text=True, timeout=300, check=False)
    self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
    with mock.patch.dict(os.environ, {'PATH': env['PATH']}):
      found = gpu_report.diagnose()
    self.assertEqual((found.tf_version, found.gpus), (tf.__version__, []))
    self.assertEqual((found.driver_version, found.driver_too_old), ('470.57.02', True))
    self.assertLess(tuple(int(p) for p in found.driver_version.split('.')[:2]),
                    gpu_report.MIN_DRIVER)


if __name__ == '__main__':
  tf.test.main()

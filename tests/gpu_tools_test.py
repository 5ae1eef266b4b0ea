"""Specification of the GPU tools on a machine without a GPU: tools/gpu_check.sh reports
every spec of the GPU tier as skipped with the reason and exits 1; `tools/setup.sh --gpu`
says what it would install and why it found no GPU, changes nothing and exits 1;
tools/gpu_report_main.py names a driver too old for this TensorFlow's CUDA. The NVIDIA driver is
stood for by a fake nvidia-smi first on PATH."""

import os
import stat
import subprocess
import sys

import tensorflow as tf

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HAS_GPU = bool(tf.config.list_physical_devices('GPU'))
TIER_SPECS = 8


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
    env = dict(os.environ, PYTHON=sys.executable, PYTHONPATH=os.pathsep.join(sys.path),
               GPU_CHECK_LOG=os.path.join(self.get_temp_dir(), 'gpu_check.log'))
    result = subprocess.run(['bash', os.path.join(ROOT, 'tools', 'gpu_check.sh')], env=env,
                            capture_output=True, text=True, timeout=600, check=False)
    self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
    self.assertIn('[gpu_check] GPU tier skipped: TensorFlow', result.stdout)
    self.assertIn('sees no GPU', result.stdout)
    rows = [line for line in result.stdout.splitlines() if line.startswith('| ')]
    self.assertLen(rows, TIER_SPECS + 1, result.stdout)  # header + one row per spec
    self.assertTrue(all(row.rstrip(' |').endswith('SKIP') for row in rows[1:]), rows)
    self.assertIn('[gpu_check] every spec skipped: no GPU here', result.stdout)

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
    self.assertIn('[gpu] TensorFlow 2.15.1 sees no GPU. Why:', result.stdout)
    self.assertIn('nvidia-smi lists 1 GPU(s): NVIDIA GeForce GTX 1060 6GB, 470.57.02', result.stdout)
    self.assertIn('driver 470.57.02 is older than 525.60', result.stdout)


if __name__ == '__main__':
  tf.test.main()

"""Specification: a full disk ends a run with one line naming the path and its free space.

Real full disks: small tmpfs mounts in a private mount namespace (`unshare -m`, root).
- training on a disk that fills up: exit 1, one `train: error: no space left on device
  writing <path> (<free> free there): ...` line, no traceback;
- an export to a disk that fills up: the same line, and no partial `export/best/temp-<ts>`
  left behind;
- resuming on a disk without room for another checkpoint of the latest one's size: refused
  before training (exit 2), the line naming model_dir and its free space;
- preparing records on a disk that fills up: one `prepare: error:` line, exit 1.
Skips, saying why, where this is not root or mounts are not allowed.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import tensorflow as tf

from data_tools import make_synthetic_ucf101
from tests.cluster_testing import TRAIN_ARGS

LIMIT = 300
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, PYTHONPATH=ROOT)
for name in ('TF_CONFIG', 'SLURM_JOB_ID'):
  ENV.pop(name, None)
# $1 the mount point, $2 where the results go; the train command follows.
SCRIPT = r'''
set -u
M=$1; OUT=$2; shift 2
run() { case=$1; shift; "$@" > "$OUT/$case.out" 2> "$OUT/$case.err"; echo $? > "$OUT/$case.code"; }
mount -t tmpfs -o size=1500k none "$M" || exit 90
run training "$@" --model_dir="$M/run"
umount "$M"
mount -t tmpfs -o size=16m none "$M"
mkdir -p "$M/run/export"
mount -t tmpfs -o size=64k none "$M/run/export"
run export "$@" --model_dir="$M/run"
ls -a "$M/run/export/best" > "$OUT/export.ls" 2>&1
umount "$M/run/export"
free_kb=$(df -k --output=avail "$M" | tail -1)
dd if=/dev/zero of="$M/filler" bs=1k count=$((free_kb - 600)) 2>/dev/null
run resume "$@" --model_dir="$M/run" --max_steps=40
umount "$M"
mount -t tmpfs -o size=8k none "$M"
run prepare "$PYTHON" -m data_tools.prepare_main --data_dir="$DATA" --out="$M/records" \
  --short_side=0 --workers=1
'''


class FullDiskTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    if os.geteuid() != 0 or not shutil.which('unshare'):
      raise unittest.SkipTest('needs root and unshare to mount a small tmpfs')
    cls.out = tempfile.mkdtemp(prefix='full_disk_')
    mount_point = os.path.join(cls.out, 'disk')
    os.makedirs(mount_point)
    data = os.path.join(cls.out, 'ucf')
    make_synthetic_ucf101.make_dataset(data, classes=2, groups=8, width=24, height=16,
                                       min_frames=4, max_frames=5, object_size=6)
    command = [sys.executable, '-m', 'towers.train_main', *TRAIN_ARGS, '--num_towers=1',
               '--max_steps=20']
    done = subprocess.run(['unshare', '-m', 'sh', '-c', SCRIPT, 'full_disk', mount_point,
                           cls.out, *command], env=dict(ENV, DATA=data, PYTHON=sys.executable),
                          capture_output=True, text=True, timeout=LIMIT, check=False)
    if done.returncode == 90:
      raise unittest.SkipTest(f'cannot mount a tmpfs here: {done.stderr[-300:]}')
    cls.mount_point = mount_point

  @classmethod
  def tearDownClass(cls):
    shutil.rmtree(cls.out, ignore_errors=True)
    super().tearDownClass()

  def result(self, case: str) -> tuple[int, str]:
    """The exit code and stderr of one case of SCRIPT."""
    with open(os.path.join(self.out, f'{case}.code')) as f:
      code = int(f.read())
    with open(os.path.join(self.out, f'{case}.err')) as f:
      return code, f.read()

  def assert_one_line(self, case: str, code: int, *parts: str, program: str = 'train') -> str:
    got, stderr = self.result(case)
    self.assertEqual(got, code, stderr[-3000:])
    self.assertNotIn('Traceback', stderr)
    errors = [l for l in stderr.splitlines() if l.startswith(f'{program}: error: ')]
    self.assertLen(errors, 1, stderr[-3000:])
    message = stderr[stderr.index(errors[0]):]  # the preflight's lists its problems below
    for part in parts:
      self.assertRegex(message, part)
    return message

  def test_a_disk_that_fills_during_training(self):
    self.assert_one_line('training', 1, r'no space left on device writing ' +
                         os.path.join(self.mount_point, 'run') + r'/\S+ \(\d+(\.\d)? (bytes|KiB) '
                         r'free there\)')

  def test_a_disk_that_fills_during_the_export_keeps_no_partial_export(self):
    self.assert_one_line('export', 1, r'no space left on device writing ' +
                         os.path.join(self.mount_point, 'run', 'export', 'best') +
                         r'/temp-\d+/\S+ \(')
    with open(os.path.join(self.out, 'export.ls')) as f:
      left = f.read().split()
    self.assertEqual([n for n in left if n.startswith('temp-')], [])

  def test_resuming_without_room_for_another_checkpoint_is_refused_up_front(self):
    self.assert_one_line('resume', 2, r'model_dir=' + os.path.join(self.mount_point, 'run') +
                         r' has \d+\.\d KiB free, but training writes checkpoints of ')

  def test_a_disk_that_fills_while_preparing_records(self):
    self.assert_one_line('prepare', 1, r'no space left on device writing ' +
                         os.path.join(self.mount_point, 'records') + r'\S* \(\d',
                         program='prepare')


if __name__ == '__main__':
  tf.test.main()

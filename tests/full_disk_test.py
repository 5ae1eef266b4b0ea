"""Specification: a full disk ends a run with one error naming the path and its free space.

Real full disks: small tmpfs mounts in a private mount namespace (`unshare -m`, root).
Each case's status events (`command_line/status_file.py`) say how it ended:
- training on a disk that fills up: exit 1 through the entry (its `error` event), a
  `full_disk` event naming the path written and its free space;
- an export to a disk that fills up: the same, and no partial `export/best/temp-<ts>`
  left behind;
- resuming on a disk without room for another checkpoint of the latest one's size: refused
  before training (exit 2), the error naming model_dir;
- preparing records on a disk that fills up: exit 1, a `full_disk` event;
- extracting flow (two worker processes) on a disk that fills up: the same, naming --out,
  and a rerun resumes (`resumes`);
- classify --output on a full disk: the same, naming the file, and no resume promised
  (`resumes` false: classify keeps nothing to go on from), no partial file left.
Skips, saying why, where this is not root or mounts are not allowed.

A disk quota or a file-size limit refuses a write as a full disk does, and ends the same
way (no root needed: `prlimit --fsize` sets the limit): prepare and extract_flow exit 1 with
a `full_disk` event, evaluate_two_stream's PNGs and CSV are whole or absent and the line
names the file, and extract_flow's rerun ends with flow for every video (the source
record the refused write left unfinished does not swallow the next one).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import tensorflow as tf

from command_line import status_file
from data_tools import make_synthetic_ucf101
from tests import program_runs
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
run() { case=$1; shift; TOWERS_STATUS_FILE="$OUT/$case.events" "$@" > "$OUT/$case.out" \
  2> "$OUT/$case.err"; echo $? > "$OUT/$case.code"; }
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
umount "$M"
mount -t tmpfs -o size=16k none "$M"
run extract_flow "$PYTHON" -m data_tools.extract_flow_main --data_dir="$DATA" --out="$M/flow" \
  --short_side=0 --workers=2 --tvl1_scales=2 --tvl1_warps=2 --tvl1_epsilon=0.1
run trained "$@" --model_dir="$OUT/trained"
mkdir -p "$M/results"
dd if=/dev/zero of="$M/filler" bs=4k 2>/dev/null
run classify "$PYTHON" -m serving.classify_main --model="$OUT/trained" \
  --output="$M/results/top.csv" "$DATA/UCF-101"
ls -a "$M/results" > "$OUT/classify.ls" 2>&1
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

  def ending(self, case: str, code: int, program: str = 'train') -> list[dict]:
    """The status events of one case of SCRIPT, once its exit code is `code` and it ended
    through its entry (an `error` event of `program`, no traceback)."""
    with open(os.path.join(self.out, f'{case}.code')) as f:
      got = int(f.read())
    with open(os.path.join(self.out, f'{case}.err')) as f:
      stderr = f.read()
    self.assertEqual(got, code, stderr[-3000:])
    events = status_file.read(os.path.join(self.out, f'{case}.events'))
    errors = [e for e in events if e['event'] == 'error']
    self.assertLen(errors, 1, stderr[-3000:])
    self.assertEqual((errors[0]['program'], errors[0]['exit_code']), (program, code))
    return events

  def assert_full_disk(self, events: list[dict], under: str, resumes: bool = True) -> None:
    """One `full_disk` event naming a path under `under`, with less free than the mount,
    saying whether a rerun resumes."""
    full = [e for e in events if e['event'] == 'full_disk']
    self.assertLen(full, 1, events)
    self.assertTrue(full[0]['path'].startswith(under), full[0])
    self.assertLess(full[0]['free_bytes'], 16 << 20)
    self.assertEqual(full[0]['resumes'], resumes)

  def test_a_disk_that_fills_during_training(self):
    self.assert_full_disk(self.ending('training', 1), os.path.join(self.mount_point, 'run'))

  def test_a_disk_that_fills_during_the_export_keeps_no_partial_export(self):
    self.assert_full_disk(self.ending('export', 1),
                          os.path.join(self.mount_point, 'run', 'export', 'best'))
    with open(os.path.join(self.out, 'export.ls')) as f:
      left = f.read().split()
    self.assertEqual([n for n in left if n.startswith('temp-')], [])

  def test_resuming_without_room_for_another_checkpoint_is_refused_up_front(self):
    error = [e for e in self.ending('resume', 2) if e['event'] == 'error'][0]
    self.assertEqual((error['error'], error['options']), ('PreflightError', ['model_dir']))

  def test_a_disk_that_fills_while_preparing_records(self):
    self.assert_full_disk(self.ending('prepare', 1, program='prepare'),
                          os.path.join(self.mount_point, 'records'))

  def test_a_disk_that_fills_while_extracting_flow_names_its_out(self):
    self.assert_full_disk(self.ending('extract_flow', 1, program='extract_flow'),
                          os.path.join(self.mount_point, 'flow'))

  def test_classify_output_on_a_full_disk_names_the_file_and_promises_no_resume(self):
    path = os.path.join(self.mount_point, 'results', 'top.csv')
    events = self.ending('classify', 1, program='classify')
    self.assert_full_disk(events, path, resumes=False)
    with open(os.path.join(self.out, 'classify.ls')) as f:
      self.assertEqual(sorted(f.read().split()), ['.', '..'])  # no partial file


class FileSizeLimitTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.out = tempfile.mkdtemp(prefix='file_size_')
    cls.data = os.path.join(cls.out, 'ucf')
    make_synthetic_ucf101.make_dataset(cls.data, classes=2, groups=8, width=64, height=48,
                                       min_frames=4, max_frames=5, object_size=6)

  @classmethod
  def tearDownClass(cls):
    shutil.rmtree(cls.out, ignore_errors=True)
    super().tearDownClass()

  def limited(self, module: str, size_bytes: int, *args: str) -> program_runs.ProgramRun:
    """`module` run with every file it writes limited to `size_bytes` (RLIMIT_FSIZE), and no
    bytecode written (Python's own .pyc writes ignore a short write: a truncated .pyc would
    break every later import of that module)."""
    return program_runs.run(module, *args, prefix=('prlimit', f'--fsize={size_bytes}'),
                            timeout=LIMIT, env={'PYTHONDONTWRITEBYTECODE': '1'})

  def assert_refused_write(self, done: program_runs.ProgramRun, program: str,
                           under: str) -> None:
    self.assertEqual(done.code, 1, done.output())
    self.assertEqual((done.error['program'], done.error['exit_code']), (program, 1))
    full = [e for e in done.events if e['event'] == 'full_disk']
    self.assertLen(full, 1, done.output())
    self.assertTrue(full[0]['path'].startswith(under), full[0])
    self.assertTrue(full[0]['resumes'])

  def test_a_png_over_the_file_size_limit_is_an_error_not_a_truncated_file(self):
    path = os.path.join(self.out, 'confusion.png')
    code = ('import numpy as np; from model_fn import confusion; '
            f'confusion.write_png({path!r}, np.random.default_rng(0).integers(0, 255, '
            '(256, 256, 3), dtype=np.uint8))')
    done = subprocess.run(['prlimit', f'--fsize={16 << 10}', sys.executable, '-c', code],
                          env=dict(ENV, PYTHONDONTWRITEBYTECODE='1'), capture_output=True,
                          text=True, timeout=LIMIT, check=False)
    self.assertNotEqual(done.returncode, 0, 'the write said it succeeded')
    self.assertIn('File too large', done.stderr)
    self.assertFalse([n for n in os.listdir(self.out) if n.startswith('confusion.png')],
                     'a truncated or temporary PNG was left')

  def test_two_stream_files_over_the_limit_name_the_file_and_leave_no_part_of_it(self):
    """evaluate_two_stream's confusion PNGs and CSV: the error line names the file refused
    (`disk_space.full_disk_line`) and promises no resume; no truncated file is left."""
    folder = os.path.join(self.out, 'two_stream')
    os.makedirs(folder)
    prefix = os.path.join(folder, 'e')
    code = ('import numpy as np; from command_line import disk_space; '
            'from serving import two_stream_outputs\n'
            'try:\n'
            '  two_stream_outputs.write({"per_class": []}, {"rgb": np.random.default_rng(0)'
            f'.random((60, 60))}}, None, {prefix!r})\n'
            'except OSError as e:\n'
            '  print(disk_space.full_disk_line(e), disk_space.resumes(e)); raise SystemExit(3)')
    done = subprocess.run(['prlimit', f'--fsize={4 << 10}', sys.executable, '-c', code],
                          env=dict(ENV, PYTHONDONTWRITEBYTECODE='1'), capture_output=True,
                          text=True, timeout=LIMIT, check=False)
    self.assertEqual(done.returncode, 3, done.stdout + done.stderr)
    self.assertIn(f'file too large writing {prefix}_rgb_confusion.png (', done.stdout)
    self.assertTrue(done.stdout.strip().endswith('False'), done.stdout)
    self.assertEqual(os.listdir(folder), [])

  def test_a_file_size_limit_is_told_before_training(self):
    """TensorFlow's event writer drops a refused write without an error: train says
    beforehand that a limit is set."""
    code = 'from command_line import disk_space; print(disk_space.file_size_limit_warning())'
    for prefix, told in ((['prlimit', f'--fsize={1 << 20}'], True), ([], False)):
      done = subprocess.run([*prefix, sys.executable, '-c', code], env=ENV, capture_output=True,
                            text=True, timeout=LIMIT, check=True)
      self.assertEqual(done.stdout.strip() != 'None', told, done.stdout)
      if told:
        self.assertIn('1.0 MiB', done.stdout)

  def test_prepare_over_the_file_size_limit(self):
    out = os.path.join(self.out, 'records')
    done = self.limited('data_tools.prepare_main', 16 << 10, f'--data_dir={self.data}',
                        f'--out={out}', '--short_side=0', '--workers=1')
    self.assert_refused_write(done, 'prepare', out)

  def test_extract_flow_over_the_file_size_limit_and_its_rerun(self):
    out = os.path.join(self.out, 'flow')
    flags = (f'--data_dir={self.data}', f'--out={out}', '--short_side=0', '--workers=1',
             '--tvl1_scales=1', '--tvl1_warps=1')
    self.assert_refused_write(self.limited('data_tools.extract_flow_main', 1 << 10, *flags),
                              'extract_flow', out)
    done = program_runs.run('data_tools.extract_flow_main', *flags, timeout=LIMIT)
    self.assertEqual(done.code, 0, done.output())
    with open(os.path.join(out, 'flow.manifest.json')) as f:
      made = json.load(f)
    self.assertEqual((made['num_with_flow'], made['num_found']), (16, 16))
    with open(os.path.join(out, 'flow.txt')) as f:
      self.assertLen(f.read().splitlines(), 16)


if __name__ == '__main__':
  tf.test.main()

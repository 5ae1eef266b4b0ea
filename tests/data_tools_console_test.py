"""Specification of the data tools' console: the lines a user reads from
//data_tools:make_synthetic_ucf101, //data_tools:prepare and //data_tools:extract_flow.

* A refusal is one line on stderr, `<tool>: error: <the option, its value and the fix>`,
  nothing on stdout, exit 2.
* A run says what it found and plans (`prepare: train: 1 shards, 0 already done`,
  `extract_flow: 16 videos in ..., 0 already done; 16 to compute ...`), shows its progress
  (`extract_flow: 16/16 videos (100%)  ...  ETA 0s`) and ends with one summary line whose
  counts add up (records + skipped = listed videos).
* extract_flow into a folder other than data_dir's tvl1_flow says how to prepare that flow.
* SIGINT and SIGUSR1, even before the first instruction, end a tool with one line.

The other specs of the tools read their exit codes, status events and manifests; this one
reads their words, a few representative lines each. Data: a synthetic UCF101 of 2 classes
x 8 groups (16 videos of 4-5 frames of 24x16).
"""

import os
import re
import shutil
import signal
import tempfile

from absl.testing import absltest

from command_line import signals
from data_tools import make_synthetic_ucf101
from tests import program_runs

SYNTHETIC = ('--classes=2', '--groups=8', '--width=24', '--height=16', '--min_frames=4',
             '--max_frames=5', '--object_size=6')
SYNTHETIC_FLOW = [f'--{k}={v}' for k, v in make_synthetic_ucf101.SYNTHETIC_FLOW.items()]


class DataToolsConsoleTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.root = tempfile.mkdtemp()
    cls.data = os.path.join(cls.root, 'ucf')
    cls.made = program_runs.run('data_tools.make_synthetic_ucf101_main', f'--out={cls.data}',
                                *SYNTHETIC)
    assert cls.made.code == 0, cls.made.output()
    cls.flow = os.path.join(cls.root, 'flow')
    cls.extracted = program_runs.run('data_tools.extract_flow_main', f'--data_dir={cls.data}',
                                     f'--out={cls.flow}', '--workers=1', *SYNTHETIC_FLOW)
    cls.out = os.path.join(cls.root, 'records')
    cls.prepared = program_runs.run('data_tools.prepare_main', f'--data_dir={cls.data}',
                                    f'--out={cls.out}', '--short_side=0', '--workers=1')

  @classmethod
  def tearDownClass(cls):
    shutil.rmtree(cls.root)
    super().tearDownClass()

  def refusal(self, done: program_runs.ProgramRun) -> str:
    """The one line of a refused run: exit 2, one stderr line, nothing on stdout."""
    lines = done.stderr.strip().splitlines()
    self.assertEqual((done.code, len(lines), done.stdout.strip()), (2, 1, ''), done.output())
    return lines[0]

  def test_a_signal_at_the_first_instant_is_one_line(self):
    # Started with the signals blocked: they come before the first instruction. Their exit
    # codes and events: signals_test.
    out = os.path.join(self.create_tempdir().full_path, 'records')
    for module, name in (('data_tools.prepare_main', 'prepare'),
                         ('data_tools.extract_flow_main', 'extract_flow')):
      for sig, line in ((signal.SIGINT, f'{name}: error: interrupted (SIGINT)'),
                        (signal.SIGUSR1, f'{name}: stopped for the job\'s time limit '
                         '(SIGUSR1): the work finished is kept; the same command continues it')):
        started = program_runs.start(self, module, f'--data_dir={self.data}', f'--out={out}',
                                     '--workers=1', preexec_fn=signals.blocked_in_child)
        started.process.send_signal(sig)
        done = started.finish()
        self.assertEqual(done.stderr.splitlines(), [line], done.output())

  def test_each_tool_refuses_with_one_line_naming_the_option_and_the_fix(self):
    missing = os.path.join(self.root, 'missing')
    self.assertEqual(
        self.refusal(program_runs.run('data_tools.make_synthetic_ucf101_main', f'--out={missing}',
                                      '--clips_per_group=0')),
        'make_synthetic_ucf101: error: clips_per_group must be positive, got 0')
    self.assertEqual(
        self.refusal(program_runs.run('data_tools.extract_flow_main', f'--data_dir={self.data}',
                                      f'--out={missing}', '--tvl1_warps=0')),
        'extract_flow: error: tvl1_warps must be positive, got 0')
    self.assertEqual(
        self.refusal(program_runs.run('data_tools.prepare_main', f'--data_dir={self.data}',
                                      f'--out={missing}', '--source=frames',
                                      f'--frames_dir={missing}')),
        f'prepare: error: --frames_dir={missing} is not a folder (it does not exist)')
    self.assertFalse(os.path.exists(missing))

  def test_extract_flow_into_used_out_with_other_settings_names_the_difference_and_the_fix(
      self):
    line = self.refusal(program_runs.run(
        'data_tools.extract_flow_main', f'--data_dir={self.data}', f'--out={self.flow}',
        '--short_side=0', '--tvl1_scales=3', '--tvl1_warps=3', '--tvl1_epsilon=0.1'))
    self.assertEqual(line, f'extract_flow: error: --out={self.flow} holds flow extracted with '
                     'other settings (tvl1_epsilon: 0.05 here, 0.1 asked): use another --out (and '
                     'give it to prepare as --flow_dir), or delete it to extract again')

  def test_make_synthetic_ucf101_says_what_it_wrote(self):
    self.assertEqual(self.made.stdout.strip().splitlines()[-1],
                     f'make_synthetic_ucf101: wrote 16 videos of 2 classes to {self.data}')

  def test_extract_flow_says_its_plan_progress_summary_and_the_prepare_to_run(self):
    self.assertEqual(self.extracted.code, 0, self.extracted.output())
    lines = self.extracted.stdout.strip().splitlines()
    videos = os.path.join(self.data, 'UCF-101')
    self.assertEqual(lines[0], f'extract_flow: 16 videos in {videos}, 0 already done; 16 to '
                     f'compute with 1 process(es) into {self.flow}')
    self.assertRegex(lines[1], r'^extract_flow: 16 of 16 videos have flow in \S+; computed '
                     r'\d+ flow frames of 16 videos in [\d.]+ s = [\d.]+ flow frames/s per core '
                     r'\(1 process\(es\)\); skipped 0$')
    self.assertEqual(lines[2], 'extract_flow: to make flow records of it: bazel run '
                     f'//data_tools:prepare -- --source=flow --data_dir={self.data} '
                     f'--flow_dir={self.flow} --out=<a new directory>')
    progress = self.extracted.stderr.strip().splitlines()
    self.assertRegex(progress[-1], r'^extract_flow: 16/16 videos \(100%\)  [\d.]+ videos/s  '
                     r'[\d.]+ flow frames/s  ETA 0s$')

  def test_prepare_says_its_plan_progress_and_a_summary_per_subset(self):
    self.assertEqual(self.prepared.code, 0, self.prepared.output())
    self.assertEqual(self.prepared.stdout.strip().splitlines(), [
        'prepare: train: 1 shards, 0 already done',
        'prepare: test: 1 shards, 0 already done',
        'prepare: 16 videos in 2 shards to convert with 1 worker(s)',
        'prepare: train: 2 records of 2 listed videos in 1 shards (2 classes); skipped 0',
        'prepare: test: 14 records of 14 listed videos in 1 shards (2 classes); skipped 0'])
    self.assertTrue(re.fullmatch(r'prepare: train,test: 16/16 videos \(100%\)  [\d.]+ '
                                 r'videos/s  ETA 0s',
                                 self.prepared.stderr.strip().splitlines()[-1]),
                    self.prepared.stderr)


if __name__ == '__main__':
  absltest.main()

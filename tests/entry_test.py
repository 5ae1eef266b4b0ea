"""Specification of the one entry of every program (command_line/entry.py) and of the one
progress line of counted jobs (command_line/progress.Progress): what a user sees when a
program refuses, fails or succeeds, and its exit code."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import textwrap

from absl.testing import absltest

from command_line import disk_space, entry, progress, status_file  # entry: also what the program runs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A program on the entry: --size must be positive (check), --fail makes the run fail,
# --late refuses from inside run, --code sets the run's own exit code, --lost ends it with
# an exception mapped to its own exit code (5). --size and --mode are its key options;
# --note comes from its extra options, which mark none.
PROGRAM = textwrap.dedent('''
    from __future__ import annotations
    import dataclasses
    from command_line import cli, entry
    from command_line.options import Options, Problem, option

    class ToolError(ValueError):
      pass

    @dataclasses.dataclass(frozen=True)
    class ToolOptions(Options):
      size: int = option(1, 'Size.', key=True)
      mode: str = option('a', 'Mode.', choices=('a', 'b'), key=True)
      fail: bool = option(False, 'Fail.')
      late: bool = option(False, 'Refuse in run.')
      code: int = option(0, 'Exit code of the run.')
      lost: bool = option(False, 'Lose the peer.')
      thread: str = option('', 'A background thread raises: full (a refused write) or bug.')

    @dataclasses.dataclass(frozen=True)
    class Extra(Options):
      note: str = option('', 'Printed by the run.')

    def check(options):
      if options.size < 1:
        return Problem('size', f'--size must be >= 1, got {options.size}')

    def run(options):
      if options.thread == 'main':
        import errno
        raise OSError(errno.EFBIG, 'File too large', '/tmp/table.json')
      if options.thread:
        import errno, threading
        error = (OSError(errno.EFBIG, 'File too large', '/tmp/events.out') if
                 options.thread == 'full' else ValueError('a bug'))
        def fail():
          raise error
        worker = threading.Thread(target=fail)
        worker.start()
        worker.join()
        return 0
      if options.late:
        raise ToolError('--late: refused')
      if options.fail:
        raise entry.Failed('the run failed at step 3')
      if options.lost:
        raise entry.Ended('peer 1 stopped answering', 5)
      print('ran', cli.options_from_flags(Extra).note, flush=True)
      return options.code

    import os
    entry.Program('tool', run, ToolOptions, check=check, refused=(ToolError,),
                  extra_options=(Extra,), resumes=os.environ.get('TOOL_RESUMES') != '0').start()
''')


def run_tool(*args: str, events: str = '', resumes: bool = True, cwd: str | None = None,
             user_dir: str | None = None) -> subprocess.CompletedProcess:
  """Runs the program in `cwd`; with `events`, its status file is that path; `resumes`: the
  Program's; `user_dir`: the user's working directory `bazel run` names."""
  env = dict(os.environ, PYTHONPATH=ROOT, TOOL_RESUMES='1' if resumes else '0')
  env.pop(status_file.STATUS_FILE_ENV, None)
  env.pop('BUILD_WORKING_DIRECTORY', None)
  if events:
    env[status_file.STATUS_FILE_ENV] = events
  if user_dir:
    env['BUILD_WORKING_DIRECTORY'] = user_dir
  return subprocess.run([sys.executable, '-c', PROGRAM, *args], capture_output=True,
                        text=True, timeout=120, check=False, env=env, cwd=cwd)


class EntryTest(absltest.TestCase):

  def assert_one_line(self, done: subprocess.CompletedProcess, code: int, line: str) -> None:
    self.assertEqual(done.returncode, code, done.stdout + done.stderr)
    self.assertEqual(done.stderr.strip().splitlines(), [line], done.stderr)
    self.assertEqual(done.stdout, '')  # nothing ran

  def test_a_run_that_works_exits_with_its_own_code(self):
    done = run_tool()
    self.assertEqual((done.returncode, done.stdout, done.stderr), (0, 'ran \n', ''))
    self.assertEqual(run_tool('--code=3').returncode, 3)
    self.assertEqual(run_tool('--note=hello').stdout, 'ran hello\n')

  def test_help_lists_the_key_options_and_helpfull_all(self):
    listed = lambda done: set(re.findall(r'^  --(?:\[no\])?(\w+):', done.stdout, re.MULTILINE))
    self.assertEqual(listed(run_tool('--help')), {'size', 'mode', 'note'})
    self.assertLessEqual({'size', 'mode', 'note', 'fail', 'late', 'code', 'lost'},
                         listed(run_tool('--helpfull')))

  def test_what_is_refused_before_any_work_is_one_line_and_exit_2(self):
    self.assert_one_line(run_tool('--size=0'), entry.REFUSED,
                         'tool: error: --size must be >= 1, got 0')
    self.assert_one_line(run_tool('--late'), entry.REFUSED, 'tool: error: --late: refused')
    self.assert_one_line(run_tool('extra', 'words'), entry.REFUSED,
                         'tool: error: unexpected arguments: extra words')
    self.assert_one_line(run_tool('--mode=c'), entry.REFUSED,
                         'tool: error: flag --mode=c: value should be one of <a|b>')
    self.assert_one_line(run_tool('--sise=2'), entry.REFUSED,
                         "tool: error: Unknown command line flag 'sise'. Did you mean: size ?")

  def test_a_failed_run_is_one_line_and_exit_1(self):
    self.assert_one_line(run_tool('--fail'), entry.FAILED, 'tool: error: the run failed at step 3')

  def test_an_ending_with_its_own_exit_code_is_one_line_and_that_code(self):
    self.assert_one_line(run_tool('--lost'), 5, 'tool: error: peer 1 stopped answering')

  def test_a_write_refused_in_a_background_thread_is_one_warning_line(self):
    done = run_tool('--thread=full')
    self.assertEqual(done.returncode, 0, done.stderr)
    lines = done.stderr.strip().splitlines()
    self.assertLen(lines, 1, done.stderr)
    self.assertTrue(lines[0].startswith('tool: warning: file too large writing /tmp/events.out'),
                    lines[0])
    self.assertIn('Traceback', run_tool('--thread=bug').stderr)  # a bug keeps its report

  def test_a_refused_write_says_whether_a_rerun_goes_on_from_the_work_kept(self):
    for resumes, after in ((True, disk_space.RESUMES), (False, disk_space.STARTS_OVER)):
      done = run_tool('--thread=main', resumes=resumes)
      self.assertEqual(done.returncode, entry.FAILED, done.stderr)
      self.assertTrue(done.stderr.strip().endswith(after), done.stderr)


  def test_a_status_file_that_cannot_be_written_is_refused_before_any_work(self):
    root = self.create_tempdir().full_path
    for events in (os.path.join(root, 'missing', 'events.jsonl'), root):
      for args in ((), ('--size=0',), ('--sise=2',)):
        with self.subTest(events=events, args=args):
          done = run_tool(*args, events=events)
          self.assertEqual(done.returncode, entry.REFUSED, done.stderr)
          self.assertEqual(done.stdout, '')  # nothing ran
          lines = done.stderr.strip().splitlines()
          self.assertLen(lines, 1, done.stderr)
          self.assertTrue(lines[0].startswith(
              f'tool: error: {status_file.STATUS_FILE_ENV}={events}: '), lines[0])
    self.assertFalse(os.path.exists(os.path.join(root, 'missing')))

  def test_a_relative_status_file_is_the_users_under_bazel_run(self):
    runfiles, user = self.create_tempdir().full_path, self.create_tempdir().full_path
    done = run_tool('--fail', events='events.jsonl', cwd=runfiles, user_dir=user)
    self.assertEqual(done.returncode, entry.FAILED, done.stderr)
    self.assertEqual([e['event'] for e in status_file.read(os.path.join(user, 'events.jsonl'))],
                     ['error'])
    self.assertFalse(os.path.exists(os.path.join(runfiles, 'events.jsonl')))
    os.makedirs(os.path.join(runfiles, 'runs'))  # exists only where the binary runs
    done = run_tool(events='runs/events.jsonl', cwd=runfiles, user_dir=user)
    self.assertEqual(done.returncode, entry.REFUSED, done.stderr)
    self.assertIn(os.path.join(user, 'runs', 'events.jsonl'), done.stderr)

  def test_every_ending_is_recorded_with_its_code_type_and_options(self):
    expected = {
        ('--size=0',): (entry.REFUSED, 'Refused', ['size']),
        ('--late',): (entry.REFUSED, 'ToolError', []),
        ('extra',): (entry.REFUSED, 'Refused', []),
        ('--sise=2',): (entry.REFUSED, 'UnrecognizedFlagError', ['sise']),
        ('--fail',): (entry.FAILED, 'Failed', []),
        ('--lost',): (5, 'Ended', []),
    }
    for args, (code, error, options) in expected.items():
      with self.subTest(args):
        events = os.path.join(self.create_tempdir().full_path, 'events.jsonl')
        done = run_tool(*args, events=events)
        self.assertEqual(done.returncode, code)
        recorded = [e for e in status_file.read(events) if e['event'] == 'error']
        self.assertLen(recorded, 1)
        self.assertEqual((recorded[0]['program'], recorded[0]['exit_code'],
                          recorded[0]['error'], recorded[0]['options']),
                         ('tool', code, error, options))
    events = os.path.join(self.create_tempdir().full_path, 'events.jsonl')
    self.assertEqual(run_tool(events=events).returncode, 0)
    self.assertEqual(status_file.read(events), [])


class ProgressTest(absltest.TestCase):

  def test_progress_prints_the_one_line_format_at_the_end_and_counts_a_second_unit(self):
    stream = io.StringIO()
    line = progress.Progress('extract_flow:', 3, 'videos', amount_unit='flow frames',
                             stream=stream)
    for frames in (10, 20, 30):
      line.add(1, frames)
    last = stream.getvalue().splitlines()[-1]
    self.assertRegex(last, r'^extract_flow: 3/3 videos \(100%\)  [\d.]+ videos/s  '
                           r'[\d.]+ flow frames/s  ETA 0s$')
    self.assertEqual((line.done, line.amount), (3, 60))

  def test_eta_reads_like_every_other_line(self):
    self.assertEqual(progress.format_duration(70), '1m10s')
    self.assertIn('ETA 1m10s', progress.progress_line('x:', 30, 100, 1.0))


if __name__ == '__main__':
  absltest.main()

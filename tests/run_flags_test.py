"""model_dir/run.flags (`towers/run_flags.py`, `command_line/flagfile.py`): the run's
effective settings as a flagfile. Read back through the flags of //towers:train it gives the
same TrainParams; `train --flagfile=<it>` on the same model_dir finds it trained, and with a
later --max_steps continues it."""

import glob
import os
import shutil
import tempfile

from absl import flags
from absl.testing import absltest

from command_line.flagfile import FlagfileError, expand_flagfiles, flag_lines, flag_origins
from tests import program_runs
from towers import flags as towers_flags
from towers import run_flags
from towers.params import make_params

RUN = ('--model=c3d_small', '--data_source=synthetic', '--num_classes=3', '--clip_frames=4',
       '--crop_size=16', '--batch_size=4', '--num_towers=2', '--accumulate_steps=2',
       '--lr_schedule=piecewise', '--lr_boundaries=3', '--lr_values=0.02,0.005',
       '--weight_decay=1e-5', '--max_steps=4', '--save_checkpoints_steps=4',
       '--log_every_steps=2', '--synthetic_eval_examples=8', '--export_savedmodel=false')


def _params_from_flagfile(path: str, working_dir: str):
  values = flags.FlagValues()
  towers_flags.define_flags(values)
  values(['train', f'--flagfile={path}'])
  return towers_flags.params_from_flags(values, working_dir)


class FlagLinesTest(absltest.TestCase):

  def test_every_kind_of_field_reads_back_equal_from_any_directory(self):
    scratch = tempfile.mkdtemp()
    params = make_params(dict(
        num_towers=3, lr_boundaries=(), lr_values=(1e-05,), momentum=0.123456789,
        batch_norm=False, export_savedmodel=False, tower_devices=('/device:CPU:0', '/device:CPU:1', '/device:CPU:2'),
        model_dir='runs/relative', warm_start_from='', resume_changes=('lr_values', 'momentum'),
        stream='flow', data_source='frames', data_dir=os.path.join(scratch, 'ucf101')))
    path = os.path.join(scratch, 'run.flags')
    with open(path, 'w', encoding='utf-8') as f:
      f.write('\n'.join(flag_lines(params)) + '\n')
    elsewhere = tempfile.mkdtemp()
    again = _params_from_flagfile(path, elsewhere)
    self.assertEqual(again.model_dir, os.path.abspath('runs/relative'))
    self.assertEqual(again, make_params({**params.__dict__, 'model_dir': again.model_dir}))


class FlagfileReadingTest(absltest.TestCase):
  """A flagfile is read as every user text file is, and a recipe that includes another runs
  from any directory."""

  def test_a_bom_and_crlf_and_a_nested_recipe_beside_the_file(self):
    root = tempfile.mkdtemp()
    with open(os.path.join(root, 'base.flags'), 'wb') as f:
      f.write(b'\xef\xbb\xbf# a comment\r\n--model=c3d_small\r\n\r\n--num_classes=3 \r\n')
    with open(os.path.join(root, 'recipe.flags'), 'w', encoding='utf-8') as f:
      f.write('--flagfile=base.flags\n--max_steps=5\n')
    here = os.getcwd()
    try:
      os.chdir(tempfile.mkdtemp())  # not the recipes' directory
      args = expand_flagfiles(['train', '--flagfile', os.path.join(root, 'recipe.flags'),
                               '--batch_size=2'])
    finally:
      os.chdir(here)
    self.assertEqual(args, ['train', '--model=c3d_small', '--num_classes=3', '--max_steps=5',
                            '--batch_size=2'])
    # Where each flag's value came from: the last setting wins, as in absl.
    recipe, base = os.path.join(root, 'recipe.flags'), os.path.join(root, 'base.flags')
    self.assertEqual(flag_origins(['--model=i3d', '--flagfile', recipe, '--max_steps=9']),
                     {'model': base, 'num_classes': base, 'max_steps': ''})
    # A flag typed before a flagfile that sets it otherwise would be dropped: refused.
    with self.assertRaises(FlagfileError) as caught:
      expand_flagfiles(['--max_steps=9', '--flagfile', recipe])
    self.assertEqual(caught.exception.option, 'max_steps')
    self.assertLen(expand_flagfiles(['--max_steps=5', '--flagfile', recipe]), 4)  # the same value
    # Every spelling absl reads: a value in the next argument, a boolean's --no prefix.
    with self.assertRaises(FlagfileError) as caught:
      expand_flagfiles(['--max_steps', '9', '--flagfile', recipe])
    self.assertEqual(caught.exception.option, 'max_steps')
    self.assertLen(expand_flagfiles(['--max_steps', '5', '--flagfile', recipe]), 5)
    with open(os.path.join(root, 'bool.flags'), 'w', encoding='utf-8') as f:
      f.write('--export_savedmodel\n')
    for typed in (['--noexport_savedmodel'], ['--export_savedmodel=false']):
      with self.subTest(typed):
        with self.assertRaises(FlagfileError) as caught:
          expand_flagfiles(typed + ['--flagfile', os.path.join(root, 'bool.flags')])
        self.assertEqual(caught.exception.option, 'export_savedmodel')
    self.assertLen(expand_flagfiles(['--export_savedmodel=true', '--flagfile',
                                     os.path.join(root, 'bool.flags')]), 2)

  def test_a_command_lines_flagfiles_are_read_once(self):
    # The program parses the flags once; where --model_dir came from is asked later: both
    # answers come from one reading, even if the file changes in between.
    path = os.path.join(tempfile.mkdtemp(), 'once.flags')
    with open(path, 'w', encoding='utf-8') as f:
      f.write('--model_dir=/runs/a\n')
    argv = ['train', f'--flagfile={path}']
    self.assertEqual(expand_flagfiles(argv), ['train', '--model_dir=/runs/a'])
    with open(path, 'w', encoding='utf-8') as f:
      f.write('--max_steps=3\n')
    self.assertEqual(flag_origins(argv), {'model_dir': path})
    self.assertEqual(expand_flagfiles(argv), ['train', '--model_dir=/runs/a'])

  def test_a_home_path_in_a_flagfile_is_the_users_home(self):
    path = os.path.join(tempfile.mkdtemp(), 'home.flags')
    with open(path, 'w', encoding='utf-8') as f:
      f.write('--model_dir=~/runs/x\n')
    self.assertEqual(_params_from_flagfile(path, '/').model_dir,
                     os.path.join(os.path.expanduser('~'), 'runs', 'x'))

  def test_a_file_that_includes_itself_or_is_missing_is_named(self):
    root = tempfile.mkdtemp()
    loop = os.path.join(root, 'loop.flags')
    with open(loop, 'w', encoding='utf-8') as f:
      f.write('--flagfile=loop.flags\n')
    for args in (['--flagfile=' + loop], ['--flagfile=' + os.path.join(root, 'none.flags')]):
      with self.assertRaises(FlagfileError):
        expand_flagfiles(args)


class RerunTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    cls.model_dir = os.path.join(tempfile.mkdtemp(), 'model')
    cls.first = program_runs.run('towers.train_main', *RUN, f'--model_dir={cls.model_dir}')
    cls.flagfile = run_flags.path(cls.model_dir)
    cls.again = program_runs.run('towers.train_main', f'--flagfile={cls.flagfile}',
                                 cwd=tempfile.mkdtemp())
    cls.longer = program_runs.run('towers.train_main', f'--flagfile={cls.flagfile}',
                                  '--max_steps=6', cwd=tempfile.mkdtemp())

  def test_the_flagfile_holds_the_runs_settings(self):
    self.assertEqual(self.first.code, 0, self.first.output())
    params = _params_from_flagfile(self.flagfile, '/')
    self.assertEqual((params.model_dir, params.num_towers, params.accumulate_steps,
                      params.lr_boundaries, params.lr_values, params.weight_decay),
                     (self.model_dir, 2, 2, (3,), (0.02, 0.005), 1e-5))

  def test_a_permission_to_change_settings_is_not_kept_for_later_runs(self):
    params = make_params(dict(model_dir=tempfile.mkdtemp(), num_classes=3,
                              resume_changes=('lr_values',), ps_hosts=('h:1',),
                              worker_hosts=('h:2',), task_type='worker'))
    again = _params_from_flagfile(run_flags.write(params, '1 ps, 1 worker'), '/')
    self.assertEqual((again.resume_changes, again.ps_hosts, again.worker_hosts,
                      again.task_type), ((), (), (), ''))
    self.assertEqual(again.num_classes, 3)

  def test_the_same_flagfile_finds_the_run_trained(self):
    self.assertEqual(self.again.code, 0, self.again.output())
    done = [e for e in self.again.events if e['event'] == 'already_trained']
    self.assertEqual([(e['step'], e['max_steps']) for e in done], [(4, 4)])

  def test_the_flagfile_with_an_export_asked_exports_the_trained_model(self):
    done = program_runs.run('towers.train_main', f'--flagfile={self.flagfile}',
                            '--export_savedmodel=true', cwd=tempfile.mkdtemp())
    self.assertEqual(done.code, 0, done.output())
    best = os.path.join(self.model_dir, 'export', 'best')
    self.assertLen(glob.glob(os.path.join(best, '*', 'saved_model.pb')), 1)

  def test_the_flagfile_of_a_copied_model_dir_never_trains_the_original(self):
    copy = shutil.copytree(self.model_dir, os.path.join(tempfile.mkdtemp(), 'copy'))
    before = sorted(os.listdir(self.model_dir))
    done = program_runs.run('towers.train_main', '--flagfile', run_flags.path(copy),
                            '--max_steps=8')
    self.assertEqual((done.code, done.error_options), (2, ['model_dir']), done.output())
    # --model_dir typed before the flagfile, which would override it as absl reads them.
    done = program_runs.run('towers.train_main', f'--model_dir={copy}', '--flagfile',
                            run_flags.path(copy), '--max_steps=8')
    self.assertEqual((done.code, done.error['error'], done.error_options),
                     (2, 'FlagfileError', ['model_dir']), done.output())
    self.assertEqual(sorted(os.listdir(self.model_dir)), before)  # the original untouched

  def test_a_later_max_steps_continues_it(self):
    self.assertEqual(self.longer.code, 0, self.longer.output())
    ready = [e for e in self.longer.events if e['event'] == 'session_ready']
    self.assertEqual(ready[0]['step'], 4)
    evaluations = [e['step'] for e in self.longer.events if e['event'] == 'evaluation']
    self.assertEqual(evaluations[-1], 6)
    self.assertIn('--max_steps=6', open(self.flagfile, encoding='utf-8').read().split('\n'))


if __name__ == '__main__':
  absltest.main()

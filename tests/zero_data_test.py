"""Specification: no run trains, evaluates or exports on zero data.

A prepared directory whose test (or train) subset holds no record, and a direct-route
data_dir (--data_source=frames) with no readable training video, stop before training
with a problem naming data_dir, the subset and its count (`data_checks.EmptySubset`),
through `//towers:train` (exit code 2, its `error` event) and the library alike. An
evaluation counts the videos of the test list, also those prepare skipped, so --strict_eval
refuses metrics of part of it, on the prepared and the direct route.
"""

import glob
import os
import shutil
import tempfile

import tensorflow as tf

from data_tools import prepare
from input_fn import data_checks, factory, manifest, ucf101
from model_fn.eval_coverage import EvalCoverageError
from tests import program_runs, tiny_records
from towers import build_estimator, preflight
from towers.params import make_params

LIMIT = 240  # seconds for one process
TINY = dict(model='c3d_small', num_classes=3, clip_frames=4, crop_size=16, batch_size=2,
            eval_clips=1, max_steps=1, save_checkpoints_steps=1, lr_schedule='constant',
            lr_values=[0.01], lr_boundaries=[], num_towers=1)
TEST_GROUPS = {f'_g{g:02d}_' for g in ucf101.test_groups(1)}


def is_test(path: str) -> bool:
  return any(g in os.path.basename(path) for g in TEST_GROUPS)


def flags(**values) -> list[str]:
  return [f'--{k}={",".join(map(str, v)) if isinstance(v, list) else v}'
          for k, v in dict(TINY, **values).items()]


def train_binary(*args: str) -> program_runs.ProgramRun:
  return program_runs.run('towers.train_main', *args, timeout=LIMIT)


class ZeroDataTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.root = tempfile.mkdtemp()
    cls.ucf = tiny_records.make(cls.root, (), classes=3, groups=9, min_frames=4, max_frames=5,
                                write_frames=True).data

  def copy_without(self, name: str, drop) -> str:
    """A copy of the dataset without the .avi files and frame folders `drop(path)` names."""
    copy = shutil.copytree(self.ucf, os.path.join(self.root, name))
    for path in glob.glob(os.path.join(copy, 'UCF-101', '*', '*.avi')) + \
        glob.glob(os.path.join(copy, 'jpegs_256', '*')):
      if drop(path):
        shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
    return copy

  def prepare(self, source: str) -> str:
    """The prepared directory, also when prepare refused a subset without records (it has
    written that subset's manifest by then): training must refuse such a directory too."""
    out = source + '_tfr'
    try:
      tiny_records.prepared(source, out)
    except prepare.EmptySubset:
      pass
    return out

  def assert_refused_before_training(self, done: program_runs.ProgramRun,
                                     model_dir: str) -> None:
    """Exit code 2 through the entry's error event, naming data_dir; nothing trained."""
    self.assertEqual(done.code, 2, done.output())
    self.assertEqual(done.error['error'], 'PreflightError', done.output())
    self.assertEqual(done.error_options, ['data_dir'])
    self.assertFalse(os.path.isdir(model_dir) and tf.train.latest_checkpoint(model_dir))
    self.assertFalse(os.path.exists(os.path.join(model_dir, 'export')))

  def assert_empty(self, found: list, subset: str, listed: int) -> None:
    """`found` is one `EmptySubset` problem of `subset` with `listed` videos."""
    self.assertLen(found, 1)
    self.assertIsInstance(found[0], data_checks.EmptySubset)
    self.assertEqual((found[0].option, found[0].subset, found[0].listed),
                     ('data_dir', subset, listed))

  def test_a_test_set_lost_entirely_at_prepare_stops_before_training(self):
    data = self.prepare(self.copy_without('no_test', is_test))
    self.assertEqual(manifest.read(data, 'test')['num_records'], 0)
    listed = manifest.read(data, 'test')['num_listed']
    found = preflight.problems(make_params(TINY, data_source='tfrecord', data_dir=data,
                                           model_dir=self.create_tempdir().full_path))
    self.assert_empty(found, 'test', listed)
    with self.assertRaises(data_checks.DataError) as caught:
      factory.make_input_fn(make_params(TINY, data_source='tfrecord', data_dir=data),
                           tf.estimator.ModeKeys.EVAL)
    self.assert_empty(caught.exception.problems, 'test', listed)
    model_dir = os.path.join(self.create_tempdir().full_path, 'run')
    done = train_binary(*flags(data_source='tfrecord', data_dir=data, model_dir=model_dir,
                               strict_eval='true'))
    self.assert_refused_before_training(done, model_dir)

  def test_zero_training_records_stop_with_one_line_instead_of_waiting(self):
    data = self.prepare(self.copy_without('no_train', lambda p: not is_test(p)))
    self.assertEqual(manifest.read(data, 'train')['num_records'], 0)
    model_dir = os.path.join(self.create_tempdir().full_path, 'run')
    self.assert_empty(preflight.problems(make_params(TINY, data_source='tfrecord',
                                                     data_dir=data, model_dir=model_dir)),
                      'train', manifest.read(data, 'train')['num_listed'])
    done = train_binary(*flags(data_source='tfrecord', data_dir=data, model_dir=model_dir))
    self.assert_refused_before_training(done, model_dir)

  def test_videos_prepare_skipped_count_as_listed_and_strict_eval_refuses(self):
    first_test_group = f'_g{min(ucf101.test_groups(1)):02d}_'
    data = self.prepare(self.copy_without('some_test', lambda p: first_test_group in p))
    test = manifest.read(data, 'test')
    self.assertGreater(test['num_records'], 0)
    self.assertGreater(test['num_listed'], test['num_records'])
    model_dir = self.create_tempdir().full_path
    params = make_params(TINY, data_source='tfrecord', data_dir=data, model_dir=model_dir,
                         export_savedmodel=False)
    estimator = build_estimator(params)
    estimator.train(factory.make_input_fn(params, tf.estimator.ModeKeys.TRAIN), max_steps=1)
    metrics = estimator.evaluate(factory.make_input_fn(params, tf.estimator.ModeKeys.EVAL))
    self.assertEqual((metrics['eval/videos_evaluated'], metrics['eval/videos_listed']),
                     (test['num_records'], test['num_listed']))
    strict = make_params(TINY, data_source='tfrecord', data_dir=data, model_dir=model_dir,
                         strict_eval=True)
    with self.assertRaises(EvalCoverageError) as caught:
      build_estimator(strict).evaluate(factory.make_input_fn(strict, tf.estimator.ModeKeys.EVAL))
    self.assertEqual((caught.exception.evaluated, caught.exception.listed, caught.exception.option),
                     (test['num_records'], test['num_listed'], 'strict_eval'))

  def test_direct_route_without_a_readable_training_video_stops_naming_the_count(self):
    data = self.copy_without('frames_no_train', lambda p: p.endswith('.avi') or (
        os.path.isdir(p) and not is_test(p)))
    trains = len(ucf101.read_split(os.path.join(data, 'ucfTrainTestlist'), 1).train)
    found = preflight.problems(make_params(TINY, data_source='frames', data_dir=data,
                                           model_dir=self.create_tempdir().full_path))
    self.assert_empty(found, 'train', trains)
    model_dir = os.path.join(self.create_tempdir().full_path, 'run')
    done = train_binary(*flags(data_source='frames', data_dir=data, model_dir=model_dir))
    self.assert_refused_before_training(done, model_dir)

  def test_strict_eval_applies_on_the_direct_route(self):
    first_test_group = f'_g{min(ucf101.test_groups(1)):02d}_'
    data = self.copy_without('frames_some_test',
                             lambda p: p.endswith('.avi') or first_test_group in p)
    tests = len(ucf101.read_split(os.path.join(data, 'ucfTrainTestlist'), 1).test)
    lost = len([p for p in glob.glob(os.path.join(self.ucf, 'jpegs_256', '*'))
                if first_test_group in p])
    model_dir = self.create_tempdir().full_path
    params = make_params(TINY, data_source='frames', data_dir=data, model_dir=model_dir,
                         export_savedmodel=False)
    estimator = build_estimator(params)
    estimator.train(factory.make_input_fn(params, tf.estimator.ModeKeys.TRAIN), max_steps=1)
    metrics = estimator.evaluate(factory.make_input_fn(params, tf.estimator.ModeKeys.EVAL))
    self.assertEqual((metrics['eval/videos_evaluated'], metrics['eval/videos_listed']),
                     (tests - lost, tests))
    strict = make_params(TINY, data_source='frames', data_dir=data, model_dir=model_dir,
                         strict_eval=True)
    with self.assertRaises(EvalCoverageError) as caught:
      build_estimator(strict).evaluate(factory.make_input_fn(strict, tf.estimator.ModeKeys.EVAL))
    self.assertEqual((caught.exception.evaluated, caught.exception.listed), (tests - lost, tests))


  def test_the_direct_route_lists_the_test_videos_the_list_names_as_prepare_counts_them(self):
    # A test line kept out (unknown class) is a listed video that is not evaluated: the
    # direct route's "N of M listed" counts it as the records' manifest does.
    data = self.copy_without('one_more_listed', lambda p: False)
    with open(os.path.join(data, 'ucfTrainTestlist', 'testlist01.txt'), 'a') as f:
      f.write('NoSuchClass/v_NoSuchClass_g01_c01.avi\r\n')
    tests = len(ucf101.read_split(os.path.join(data, 'ucfTrainTestlist'), 1).test)
    params = make_params(TINY, data_source='frames', data_dir=data,
                         model_dir=self.create_tempdir().full_path)
    features, _ = next(iter(factory.make_input_fn(params, tf.estimator.ModeKeys.EVAL)()))
    self.assertEqual(int(features['videos_listed'][0]), tests + 1)

if __name__ == '__main__':
  tf.test.main()

"""Specification: a run does what the user meant, or stops before training naming the
option to fix (each problem a `Problem` with its option; the binary's `error` event).

Covers the checks of `towers/preflight.py` (what `//towers:train` runs first): labels of
the prepared data other than --num_classes (without it, theirs), train and test records of
other class lists (whatever --num_classes), a --split other than the records' (without --split,
theirs), train and test sharing videos (by prepare's rule: names compared case included, or one
source file under two names;
the two list files named), a resumed
model_dir whose checkpoint does not fit the graph (towers/checkpoint_shapes.py), a model_dir
under a file, an empty data_dir; and two launch details: `local_cluster --helpshort`
starts nothing, the cluster evaluator waits between checkpoint checks.
"""

import dataclasses
import glob
import json
import os
import re
import shutil
import tempfile

import tensorflow as tf


from input_fn import factory, manifest
from tests import program_runs, tiny_records
from towers import build_estimator, checkpoint_shapes, preflight, train_settings, training
from towers.cluster import final_evaluation
from towers.params import make_params

LIMIT = 240  # seconds for one process
TINY = dict(model='c3d_small', clip_frames=4, crop_size=16, batch_size=2, max_steps=1,
            save_checkpoints_steps=1, lr_schedule='constant', lr_values=[0.01],
            lr_boundaries=[], export_savedmodel=False)


def prepared(root: str, split: int = 1) -> str:
  """A 4-class synthetic UCF101 prepared into `root/tfr<split>`."""
  data = os.path.join(root, 'ucf')
  if not os.path.isdir(data):
    data = tiny_records.make(root, (), classes=4, groups=9, min_frames=4, max_frames=5).data
  out = os.path.join(root, f'tfr{split}')
  tiny_records.prepared(data, out, split=split)
  return out



def test_subset_of(records: str, into: str) -> None:
  """Replaces the test shards and manifest in `into` with those of `records` (a user's copy
  of another preparation's test subset beside this one's train subset)."""
  for name in os.listdir(into):
    if name.startswith('test'):
      os.remove(os.path.join(into, name))
  for name in os.listdir(records):
    if name.startswith('test'):
      shutil.copy(os.path.join(records, name), into)

class RunChecksTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.root = tempfile.mkdtemp()
    cls.data = prepared(cls.root)

  def test_a_model_dir_inside_another_runs_model_dir_is_refused(self):
    # <run>/eval holds that run's evaluation events: training there mixes two runs.
    run = self.create_tempdir().full_path
    with open(os.path.join(run, 'checkpoint'), 'w', encoding='utf-8') as f:
      f.write('model_checkpoint_path: "model.ckpt-5"\n')
    for inside in ('eval', 'export/best'):
      found = preflight.problems(make_params(model_dir=os.path.join(run, inside)))
      self.assertEqual([p.option for p in found], ['model_dir'], inside)
      self.assertIn(f'inside the model_dir {run}', str(found[0]))
    self.assertEqual(preflight.problems(make_params(
        model_dir=os.path.join(self.create_tempdir().full_path, 'runs', 'mine'))), [])
    # The parent of a run, or a folder above it: that run could no longer be continued.
    found = preflight.problems(make_params(model_dir=os.path.dirname(run)))
    self.assertEqual([p.option for p in found], ['model_dir'])
    self.assertIn(f'holds the model_dir {run}', str(found[0]))
    deep = os.path.join(self.create_tempdir().full_path, 'deep')
    os.makedirs(os.path.join(deep, 'a', 'b', 'inner'))
    with open(os.path.join(deep, 'a', 'b', 'inner', 'run.flags'), 'w', encoding='utf-8') as f:
      f.write('--model=c3d_small\n')
    found = preflight.problems(make_params(model_dir=deep))
    self.assertEqual([p.option for p in found], ['model_dir'])

  # --- Labels and leakage -------------------------------------------------------------------

  def test_labels_beyond_num_classes_stop_naming_both_counts(self):
    found = preflight.problems(make_params(data_source='tfrecord', data_dir=self.data,
                                           num_classes=2, model_dir=self.create_tempdir().full_path))
    self.assertEqual([p.option for p in found], ['num_classes'] * 2)  # train and test records
    self.assertEqual(manifest.classes_in_records(manifest.read(self.data, 'train')), 4)
    self.assertEqual(preflight.problems(make_params(
        data_source='tfrecord', data_dir=self.data, num_classes=4,
        model_dir=self.create_tempdir().full_path)), [])

  def test_the_number_of_classes_is_the_records_and_another_is_refused_naming_both(self):
    # Unnamed, it is the records' (the flag's default, 101, would train a 101-way head on
    # 4-class data and report top-5 accuracy over 4 classes).
    taken = training.with_data_settings(make_params(data_source='tfrecord', data_dir=self.data))
    self.assertEqual(taken.num_classes, 4)
    self.assertEqual(preflight.problems(dataclasses.replace(
        taken, model_dir=self.create_tempdir().full_path)), [])
    # Named, it must be the records': more classes than the data's is refused too.
    found = preflight.problems(make_params(data_source='tfrecord', data_dir=self.data,
                                           num_classes=101,
                                           model_dir=self.create_tempdir().full_path))
    self.assertEqual([p.option for p in found], ['num_classes'] * 2)
    self.assertIn('--num_classes=101', str(found[0]))
    self.assertIn('of 4 classes', str(found[0]))
    # The direct route takes the class list's.
    videos = training.with_data_settings(make_params(
        data_source='videos', data_dir=os.path.join(self.root, 'ucf')))
    self.assertEqual(videos.num_classes, 4)
    self.assertEqual(training.with_data_settings(make_params(
        data_source='videos', data_dir=os.path.join(self.root, 'ucf')), ('dataset',)
        ).num_classes, 101)

  def test_train_binary_stops_before_training_with_one_error_line(self):
    model_dir = self.create_tempdir().full_path
    done = program_runs.run('towers.train_main', '--data_source=tfrecord', f'--data_dir={self.data}',
                            '--num_classes=2', f'--model_dir={model_dir}', '--max_steps=1',
                            timeout=LIMIT)
    self.assertEqual(done.code, 2, done.output())
    self.assertEqual(done.error['error'], 'PreflightError', done.output())
    self.assertEqual(done.error_options, ['num_classes', 'num_classes'])
    self.assertIsNone(tf.train.latest_checkpoint(model_dir))

  def test_train_records_of_a_test_clips_group_stop_naming_one(self):
    # Records prepared elsewhere (another version, another tool) with one UCF101 group in
    # both subsets: the test clip's own footage was trained on.
    mixed = os.path.join(self.create_tempdir().full_path, 'mixed')
    shutil.copytree(self.data, mixed)
    train = manifest.read(mixed, 'train')
    clip = manifest.video_names(train)[0]
    test = manifest.read(mixed, 'test')
    test['shards'][0]['videos'][0]['name'] = re.sub(r'_c\d+$', '_c99', clip)
    with open(manifest.manifest_path(mixed, 'test'), 'w', encoding='utf-8') as f:
      json.dump(test, f)
    found = manifest.training_data_problems(mixed, 4)
    self.assertLen(found, 1)
    self.assertIsInstance(found[0], manifest.SharedVideos)
    self.assertEqual(found[0].videos, [clip])
    self.assertIn('group', str(found[0]))

  def test_two_preparations_of_one_tree_under_other_names_stop_naming_both(self):
    # One tree prepared from two --data_dir (names cls_a/a0 and vids/cls_a/a0), the test
    # records of one beside the train records of the other: one file under two names.
    root = self.create_tempdir().full_path
    folders = sorted(glob.glob(os.path.join(self.root, 'ucf', 'UCF-101', '*')))[:2]
    for cls, folder in zip(('cls_a', 'cls_b'), folders):
      os.makedirs(os.path.join(root, 'vids', cls))
      for i, video in enumerate(sorted(glob.glob(os.path.join(folder, '*.avi')))[:3]):
        shutil.copy(video, os.path.join(root, 'vids', cls, f'{cls[-1]}{i}.avi'))
    classes = os.path.join(root, 'classes.txt')
    with open(classes, 'w', encoding='utf-8') as f:
      f.write('cls_a\ncls_b\n')

    def prepare_list(name: str, data_dir: str, prefix: str, train: tuple[int, ...],
                     test: tuple[int, ...]) -> str:
      lists = {}
      for subset, numbers in (('train', train), ('test', test)):
        lists[subset] = os.path.join(root, f'{name}_{subset}.txt')
        with open(lists[subset], 'w', encoding='utf-8') as f:
          f.writelines(f'{prefix}cls_{c}/{c}{i}.avi {label}\n'
                       for label, c in enumerate('ab') for i in numbers)
      out = os.path.join(root, name)
      tiny_records.prepared(data_dir, out, dataset='list', train_list=lists['train'],
                            test_list=lists['test'], class_names=classes)
      return out

    mixed = prepare_list('p1', os.path.join(root, 'vids'), '', (0, 1), (2,))
    other = prepare_list('p2', root, 'vids/', (2,), (0,))
    test_subset_of(other, into=mixed)
    found = manifest.training_data_problems(mixed, 2)
    self.assertLen(found, 1)
    self.assertIsInstance(found[0], manifest.SharedVideos)
    self.assertEqual(found[0].videos, ['vids/cls_a/a0', 'vids/cls_b/b0'])
    for subset in ('train', 'test'):
      self.assertIn(manifest.manifest_path(mixed, subset), str(found[0]))
    # A copy of the tree that kept names, sizes and times (cp -a), prepared on its own.
    shutil.copytree(os.path.join(root, 'vids'), os.path.join(root, 'copy'))
    copied = prepare_list('p3', os.path.join(root, 'copy'), '', (2,), (0,))
    mixed = prepare_list('p4', os.path.join(root, 'vids'), '', (0, 1), (2,))
    test_subset_of(copied, into=mixed)
    found = manifest.training_data_problems(mixed, 2)
    self.assertEqual(found[0].videos, ['cls_a/a0', 'cls_b/b0'])
    # Test videos that are links, under other file names, to training videos (a folder of
    # symlinks, or hard links).
    for kind, link in (('links', os.symlink), ('hard', os.link)):
      lists = {}
      for subset, i in (('train', 2), ('test', 0)):
        for c in 'ab':
          os.makedirs(os.path.join(root, kind, f'cls_{c}'), exist_ok=True)
          link(os.path.join(root, 'vids', f'cls_{c}', f'{c}{i}.avi'),
               os.path.join(root, kind, f'cls_{c}', f't{i}.avi'))
        lists[subset] = os.path.join(root, f'{kind}_{subset}.txt')
        with open(lists[subset], 'w', encoding='utf-8') as f:
          f.writelines(f'cls_{c}/t{i}.avi {label}\n' for label, c in enumerate('ab'))
      linked = os.path.join(root, kind)
      tiny_records.prepared(linked, linked + '_records', dataset='list',
                            train_list=lists['train'], test_list=lists['test'],
                            class_names=classes)
      mixed = prepare_list(f'p_{kind}', os.path.join(root, 'vids'), '', (0, 1), (2,))
      test_subset_of(linked + '_records', into=mixed)
      found = manifest.training_data_problems(mixed, 2)
      self.assertEqual(found[0].videos, ['cls_a/t0', 'cls_b/t0'], kind)
    # Files of the same names written at other times are other videos to this rule.
    shutil.copytree(os.path.join(root, 'vids'), os.path.join(root, 'rewritten'),
                    copy_function=shutil.copy)
    rewritten = prepare_list('p5', os.path.join(root, 'rewritten'), '', (2,), (0,))
    stamps = [set(manifest.source_stamps(manifest.read(records, 'train')).values())
              for records in (copied, rewritten)]
    self.assertLen(stamps[0], 2)
    self.assertEmpty(stamps[0] & stamps[1])

  def test_train_and_test_sharing_videos_stop_with_count_and_example(self):
    mixed = os.path.join(self.create_tempdir().full_path, 'mixed')
    shutil.copytree(self.data, mixed)
    other = prepared(self.root, split=2)
    test_subset_of(other, into=mixed)  # split 2's test data beside split 1's train data
    found = manifest.training_data_problems(mixed, 4)
    self.assertLen(found, 1)
    self.assertIsInstance(found[0], manifest.SharedVideos)
    self.assertEqual(found[0].option, 'data_dir')
    train, test = (set(manifest.video_names(manifest.read(mixed, s))) for s in ('train', 'test'))
    self.assertEqual(found[0].videos, sorted(train & test))
    self.assertLen(found[0].videos, 8)
    ucf_lists = os.path.join(self.root, 'ucf', 'ucfTrainTestlist')
    self.assertEqual(found[0].lists, (os.path.join(ucf_lists, 'trainlist01.txt'),
                                      os.path.join(ucf_lists, 'testlist02.txt')))
    # Names that differ only in case are two videos, as in prepare's split rule; still
    # clips of the same UCF101 groups (classes compare in any case, as the official lists
    # spell them), so the group rule names the train clips.
    test_manifest = manifest.read(mixed, 'test')
    for shard in test_manifest['shards']:
      for video in shard['videos']:
        video['name'] = video['name'].upper()
    manifest.write(mixed, test_manifest)
    found = manifest.training_data_problems(mixed, 4)
    self.assertLen(found, 1)
    self.assertIn('group', str(found[0]))
    self.assertEqual(found[0].videos, sorted(train & test))

  def test_train_and_test_of_other_class_lists_stop_naming_the_label_whatever_num_classes(self):
    mixed = os.path.join(self.create_tempdir().full_path, 'mixed')
    shutil.copytree(self.data, mixed)
    test = manifest.read(mixed, 'test')  # as if a class folder sorting first had been added
    test['classes'] = ['aaa_new'] + test['classes']
    test['num_classes'] += 1
    test['counts_per_class']['aaa_new'] = 0
    manifest.write(mixed, test)
    train_first = manifest.read(mixed, 'train')['classes'][0]
    for num_classes in (4, 5):
      found = preflight.problems(make_params(data_source='tfrecord', data_dir=mixed,
                                             num_classes=num_classes,
                                             model_dir=self.create_tempdir().full_path))
      self.assertEqual([p.option for p in found], ['data_dir'])
      self.assertIn(f'label 0 is {train_first} in train, aaa_new in test (of 4 and 5 classes)',
                    found[0])
    model_dir = self.create_tempdir().full_path
    done = program_runs.run('towers.train_main', '--data_source=tfrecord',
                            f'--data_dir={mixed}', f'--model_dir={model_dir}', '--max_steps=1',
                            timeout=LIMIT)
    self.assertEqual(done.code, 2, done.output())
    self.assertEqual(done.error_options, ['data_dir'])
    self.assertIsNone(tf.train.latest_checkpoint(model_dir))

  def test_a_split_other_than_the_records_is_refused_naming_both_and_none_takes_theirs(self):
    split_2 = prepared(self.root, split=2)
    model_dir = self.create_tempdir().full_path
    found = preflight.problems(make_params(data_source='tfrecord', data_dir=self.data, split=2,
                                           num_classes=4, model_dir=model_dir))
    self.assertEqual([p.option for p in found], ['split'])
    self.assertEqual(training.with_data_settings(make_params(
        data_source='tfrecord', data_dir=split_2)).split, 2)
    done = program_runs.run('towers.train_main', '--data_source=tfrecord',
                            f'--data_dir={self.data}', '--split=3', '--num_classes=4',
                            f'--model_dir={model_dir}', '--max_steps=1', timeout=LIMIT)
    self.assertEqual(done.code, 2, done.output())
    self.assertEqual(done.error_options, ['split'])
    self.assertIsNone(tf.train.latest_checkpoint(model_dir))

  # --- Resume checked against the checkpoint ------------------------------------------------

  def test_resume_with_another_head_or_model_stops_naming_variable_shapes_and_flag(self):
    model_dir = self.create_tempdir().full_path
    trained = make_params(num_classes=4, model_dir=model_dir, **TINY)
    build_estimator(trained).train(factory.make_input_fn(trained, tf.estimator.ModeKeys.TRAIN),
                                   max_steps=1)
    self.assertEqual(checkpoint_shapes.problems(trained), [])
    three = checkpoint_shapes.problems(make_params(num_classes=3, model_dir=model_dir, **TINY))
    self.assertLen(three, 1)
    self.assertEqual(three[0].option, 'num_classes')
    self.assertRegex(three[0].variable, r'^c3d_small/logits/\w+$')
    self.assertEqual((three[0].stored[-1], three[0].wanted[-1]), (4, 3))
    i3d = checkpoint_shapes.problems(make_params(
        num_classes=4, model_dir=model_dir, **dict(TINY, model='i3d', clip_frames=8,
                                                    crop_size=32)))
    self.assertLen(i3d, 1)
    self.assertEqual(i3d[0].option, 'model')
    self.assertTrue(i3d[0].variable.startswith('RGB/inception_i3d/'), i3d[0].variable)
    self.assertIsNone(i3d[0].stored)
    self.assertEqual(preflight.problems(make_params(num_classes=3, model_dir=model_dir,
                                                    **TINY)), three)

  def test_a_finished_model_dir_is_not_evaluated_on_other_data(self):
    # Trained to max_steps on split 1, its final evaluation not yet made (a run interrupted
    # after its last checkpoint): a rerun on split 2, whose test videos it trained on, stops
    # before evaluating or exporting anything; the same data finishes it.
    split_2 = prepared(self.root, split=2)
    model_dir = self.create_tempdir().full_path
    params = dict(TINY, data_source='tfrecord', data_dir=self.data, model_dir=model_dir,
                  eval_clips=1)
    training.train_and_evaluate(params)
    os.remove(os.path.join(model_dir, final_evaluation.FILE_NAME))
    with self.assertRaises(train_settings.ResumeSettingsError) as caught:
      training.train_and_evaluate(dict(params, data_dir=split_2, split=2))
    self.assertEqual(caught.exception.option, 'data_dir')
    self.assertFalse(os.path.exists(os.path.join(model_dir, final_evaluation.FILE_NAME)))
    self.assertTrue(training.train_and_evaluate(params))  # its own data: evaluated
    self.assertIsNotNone(final_evaluation.evaluated_step(model_dir))

  def test_resume_adding_batch_norm_names_that_flag(self):
    model_dir = self.create_tempdir().full_path
    trained = make_params(num_classes=4, model_dir=model_dir, batch_norm=False, **TINY)
    build_estimator(trained).train(factory.make_input_fn(trained, tf.estimator.ModeKeys.TRAIN),
                                   max_steps=1)
    found = checkpoint_shapes.problems(make_params(num_classes=4, model_dir=model_dir,
                                              batch_norm=True, **TINY))
    self.assertLen(found, 1)
    self.assertEqual(found[0].option, 'batch_norm')
    self.assertTrue(found[0].variable.startswith('c3d_small/block1/batch_norm/'),
                    found[0].variable)

  # --- Paths --------------------------------------------------------------------------------

  def test_model_dir_under_a_file_and_an_empty_data_dir_are_named(self):
    a_file = os.path.join(self.create_tempdir().full_path, 'notes.txt')
    open(a_file, 'w').close()
    found = preflight.problems(make_params(model_dir=os.path.join(a_file, 'run')))
    self.assertEqual([p.option for p in found], ['model_dir'])
    empty = self.create_tempdir().full_path
    model_dir = self.create_tempdir().full_path
    tfrecord = preflight.problems(make_params(data_source='tfrecord', data_dir=empty,
                                              model_dir=model_dir))
    self.assertEqual([p.option for p in tfrecord], ['data_dir', 'data_dir'])  # both manifests
    videos = preflight.problems(make_params(data_source='videos', data_dir=empty,
                                            model_dir=model_dir))
    self.assertEqual([p.option for p in videos], ['data_dir'])

  # --- Launch details -----------------------------------------------------------------------

  def test_local_cluster_helpshort_shows_help_and_starts_nothing(self):
    log_dir = os.path.join(self.create_tempdir().full_path)
    done = program_runs.run('towers.cluster.local_cluster_main', '--helpshort', cwd=log_dir,
                            timeout=LIMIT)
    # absl's help flags print the usage and exit 1; what matters is that nothing started:
    # no network, no task, no log directory (its help text: tests/training_console_test.py).
    self.assertEqual(done.code, 1, done.output())
    self.assertEqual(done.events, [])
    self.assertFalse(os.path.exists(os.path.join(log_dir, 'runs')))


if __name__ == '__main__':
  tf.test.main()

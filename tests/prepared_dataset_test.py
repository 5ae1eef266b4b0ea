"""Specification: a prepared directory holds exactly one dataset, and its manifest is the
table of contents.

`//data_tools:prepare` into a directory that holds another dataset (other split, shard plan,
source) stops and names the difference unless --overwrite, which replaces it; the pipeline
reads exactly the files the manifest lists; a resume converts changed or repaired videos
again; the summary adds up; records lost to a damaged shard are counted as records;
make_synthetic_ucf101 refuses a directory it did not write.

Data: a synthetic UCF101 of 4 classes x 9 groups (split 1: 8 train, 28 test videos).
"""

import glob
import json
import os
import shutil
import tempfile

import tensorflow as tf

from data_tools import make_synthetic_ucf101, prepare

from input_fn import manifest, pipeline, records
from tests import program_runs, tiny_records
from towers import params as params_lib

LIMIT = 240  # seconds for one process


def prepare_with_plan(data: str, out: str, **kwargs) -> tuple[dict, dict]:
  """`prepare_quietly`'s manifests and the run's `prepare_plan` status event (what it
  found to convert)."""
  with program_runs.recorded_events() as events:
    manifests = prepare_quietly(data, out, **kwargs)
  return manifests, [e for e in events if e['event'] == 'prepare_plan'][-1]


def prepare_quietly(data: str, out: str, **kwargs) -> dict:
  return tiny_records.prepared(data, out, **{'videos_per_shard': 4, **kwargs})


def videos_in_files(out: str, subset: str) -> list[str]:
  """Video names of every record of every `subset` shard file in `out` (listed or not)."""
  names = []
  for path in sorted(glob.glob(os.path.join(out, f'{subset}-*.tfrecord'))):
    names += [records.parse(r)['video'].numpy().decode() for r in tf.data.TFRecordDataset(path)]
  return names


def flip_byte(path: str, fraction: float) -> None:
  with open(path, 'rb') as f:
    data = bytearray(f.read())
  data[int(len(data) * fraction)] ^= 0xFF
  with open(path, 'wb') as f:
    f.write(bytes(data))


class PreparedDatasetTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.clean = os.path.join(tempfile.mkdtemp(), 'ucf')
    make_synthetic_ucf101.make_dataset(cls.clean, classes=4, groups=9, min_frames=6,
                                       max_frames=8)

  def copy(self) -> str:
    data = os.path.join(self.create_tempdir().full_path, 'ucf')
    shutil.copytree(self.clean, data)
    return data

  # --- 1. One dataset per directory: no stale shards, no leakage ---------------------------

  def assert_out_refused(self, make, difference: str) -> None:
    """`make()` refuses --out (`PrepareError` naming option out) for a dataset whose
    identity differs in `difference` among others."""
    with self.assertRaises(prepare.PrepareError) as caught:
      make()
    self.assertEqual(caught.exception.option, 'out')
    self.assertIn(difference, caught.exception.differences)

  def test_another_split_into_a_used_out_stops_and_overwrite_leaves_one_disjoint_dataset(self):
    out = self.create_tempdir().full_path
    prepare_quietly(self.clean, out, split=1)
    self.assert_out_refused(lambda: prepare_quietly(self.clean, out, split=2), 'split')
    manifests = prepare_quietly(self.clean, out, split=2, overwrite=True)
    train, test = videos_in_files(out, 'train'), videos_in_files(out, 'test')
    self.assertEmpty(set(train) & set(test))
    self.assertLen(train, manifests['train']['num_records'])
    self.assertLen(test, manifests['test']['num_records'])
    self.assertEqual(len(train) + len(test), 36)

  def test_a_reshard_or_another_source_stops_naming_the_difference(self):
    out = self.create_tempdir().full_path
    prepare_quietly(self.clean, out)
    self.assert_out_refused(lambda: prepare_quietly(self.clean, out, videos_per_shard=3),
                            'videos_per_shard')
    self.assert_out_refused(lambda: prepare_quietly(self.copy(), out), 'data_dir')
    self.assert_out_refused(lambda: prepare_quietly(self.clean, out, source='frames'), 'source')
    self.assertLen(videos_in_files(out, 'train'), 8)

  def test_a_changed_class_index_between_subsets_stops_and_mixed_records_do_not_train(self):
    data = self.copy()
    out = self.create_tempdir().full_path
    prepare_quietly(data, out, subsets=('train',))
    lists = os.path.join(data, 'ucfTrainTestlist')
    names = manifest.read(out, 'train')['classes']
    swapped = [names[1], names[0]] + names[2:]  # labels 0 and 1 trade places
    with open(os.path.join(lists, 'classInd.txt'), 'w') as f:
      f.write(''.join(f'{i + 1} {name}\r\n' for i, name in enumerate(swapped)))
    with open(os.path.join(lists, 'trainlist01.txt')) as f:
      rows = [line.split() for line in f if line.strip()]
    with open(os.path.join(lists, 'trainlist01.txt'), 'w') as f:
      f.write(''.join(f'{path} {swapped.index(path.split("/")[0]) + 1}\r\n' for path, _ in rows))
    with self.assertRaises(prepare.PrepareError) as caught:
      prepare_quietly(data, out, subsets=('test',))
    self.assertEqual((caught.exception.option, caught.exception.differences), ('out', ('classes',)))
    self.assertIn(f'label 0 is {names[0]} here, {names[1]} asked', str(caught.exception))
    self.assertFalse(os.path.exists(manifest.manifest_path(out, 'test')))
    # Records mixed by hand (or by an older prepare) are refused before training.
    other = self.create_tempdir().full_path
    prepare_quietly(data, other, subsets=('test',))
    for name in os.listdir(other):
      if name.startswith('test'):
        shutil.copy(os.path.join(other, name), out)
    found = manifest.training_data_problems(out, 4)
    self.assertEqual([p.option for p in found], ['data_dir'])
    self.assertIn(f'label 0 is {names[0]} in train, {names[1]} in test', found[0])
    # An identity written before classes were part of it takes its manifests' class list.
    path = manifest.identity_path(other)
    with open(path) as f:
      held = json.load(f)
    del held['classes']
    with open(path, 'w') as f:
      json.dump(held, f)
    self.assertEqual(manifest.read_identity(other)['classes'], swapped)
    prepare_quietly(data, other, subsets=('test',))  # the same classes: resumed
    shutil.rmtree(lists)
    shutil.copytree(os.path.join(self.clean, 'ucfTrainTestlist'), lists)
    self.assert_out_refused(lambda: prepare_quietly(data, other, subsets=('test',)), 'classes')

  def test_train_and_test_records_of_two_preparations_with_other_settings_do_not_train(self):
    out, other = self.create_tempdir().full_path, self.create_tempdir().full_path
    prepare_quietly(self.clean, out, subsets=('train',), short_side=0)
    prepare_quietly(self.clean, other, subsets=('test',), short_side=24)
    for name in os.listdir(other):
      if name.startswith('test'):
        shutil.copy(os.path.join(other, name), out)
    found = manifest.training_data_problems(out, 4)
    self.assertEqual([p.option for p in found], ['data_dir'])
    self.assertIn('short_side: 0 in train, 24 in test', found[0])

  def test_the_pipeline_reads_exactly_the_listed_shards_and_all_of_them(self):
    out = self.create_tempdir().full_path
    prepare_quietly(self.clean, out)
    # A stray file that matches the shard pattern (e.g. left by another tool) is not read.
    shutil.copy(os.path.join(out, 'test-00000-of-00007.tfrecord'),
                os.path.join(out, 'train-00000-of-00009.tfrecord'))
    listed = [os.path.basename(p) for p in pipeline.record_files(out, 'train')]
    self.assertEqual(listed, ['train-00000-of-00002.tfrecord', 'train-00001-of-00002.tfrecord'])
    os.remove(os.path.join(out, 'train-00001-of-00002.tfrecord'))
    with self.assertRaises(manifest.ManifestError) as caught:
      pipeline.record_files(out, 'train')
    self.assertEqual((caught.exception.path, caught.exception.damaged),
                     (manifest.manifest_path(out, 'train'), False))
    empty = self.create_tempdir().full_path
    with self.assertRaises(manifest.ManifestError) as caught:
      pipeline.record_files(empty, 'test')
    self.assertEqual((caught.exception.path, caught.exception.damaged),
                     (manifest.manifest_path(empty, 'test'), False))

  # --- 2. Resume notices changed sources --------------------------------------------------

  def test_a_changed_or_repaired_video_is_converted_again(self):
    data = self.copy()
    out = self.create_tempdir().full_path
    video = os.path.join(data, 'UCF-101', 'MoveRightSpeed1', 'v_MoveRightSpeed1_g08_c01.avi')
    good = open(video, 'rb').read()
    open(video, 'wb').close()  # damaged (zero bytes): skipped
    first = prepare_quietly(data, out, subsets=('train',))['train']
    self.assertEqual(first['skipped_by_kind'], {'empty file': 1})
    with open(video, 'wb') as f:
      f.write(good)  # repaired
    again, plan = prepare_with_plan(data, out, subsets=('train',))
    self.assertEqual((plan['videos'], plan['shards']), (4, 1))
    again = again['train']
    self.assertEqual(again['num_skipped'], 0)
    self.assertIn('v_MoveRightSpeed1_g08_c01', videos_in_files(out, 'train'))
    # Replaced by another video of the same name: converted again, new frames.
    other = os.path.join(data, 'UCF-101', 'MoveLeftSpeed1', 'v_MoveLeftSpeed1_g08_c01.avi')
    shutil.copy(other, video)
    _, plan = prepare_with_plan(data, out, subsets=('train',))
    self.assertEqual((plan['videos'], plan['shards']), (4, 1))

  def test_a_damaged_shard_counts_every_lost_record_and_a_rerun_rewrites_it(self):
    out = self.create_tempdir().full_path
    prepare_quietly(self.clean, out, subsets=('test',))
    shard = os.path.join(out, 'test-00000-of-00007.tfrecord')  # 4 records
    flip_byte(shard, 0.1)  # inside the first record: the rest of the file is lost too
    params = params_lib.make_params(data_source='tfrecord', data_dir=out, num_classes=4,
                                    clip_frames=4, crop_size=16, eval_batch_size=1,
                                    eval_clips=1)
    dataset = pipeline.input_fn(tf.estimator.ModeKeys.EVAL, params, with_skipped_count=True)
    seen, skipped = set(), 0
    for features, _ in dataset:
      seen.add(int(features['video_index'][0]))
      skipped = max(skipped, int(features['skipped_records'][0]))
      self.assertEqual(int(features['videos_listed'][0]), 28)
    self.assertEqual((len(seen), skipped), (24, 4))
    _, plan = prepare_with_plan(self.clean, out, subsets=('test',))
    self.assertEqual((plan['videos'], plan['shards']), (4, 1))
    self.assertLen(videos_in_files(out, 'test'), 28)

  def test_a_test_list_line_given_twice_is_one_listed_video_at_evaluation(self):
    data = self.copy()
    testlist = os.path.join(data, 'ucfTrainTestlist', 'testlist01.txt')
    with open(testlist) as f:
      first = f.readline()
    with open(testlist, 'a') as f:
      f.write(first)
    out = self.create_tempdir().full_path
    test = prepare_quietly(data, out, subsets=('test',))['test']
    self.assertEqual((test['num_listed'], test['skipped_by_kind']), (29, {'duplicate': 1}))
    params = params_lib.make_params(data_source='tfrecord', data_dir=out, num_classes=4,
                                    clip_frames=4, crop_size=16, eval_batch_size=1,
                                    eval_clips=1)
    features, _ = next(iter(pipeline.input_fn(tf.estimator.ModeKeys.EVAL, params)))
    self.assertEqual(int(features['videos_listed'][0]), 28)  # none lost

  # --- Summary ------------------------------------------------------------------------------

  def test_the_summary_adds_up(self):
    data = self.copy()
    lists = os.path.join(data, 'ucfTrainTestlist')
    with open(os.path.join(lists, 'testlist01.txt'), 'ab') as f:
      f.write(b'NoSuchClass/v_NoSuchClass_g01_c01.avi\r\ntwo words here\r\n')
    with open(os.path.join(lists, 'classInd.txt'), 'ab') as f:
      f.write(b'not-a-number Foo\r\n')
    os.remove(os.path.join(data, 'UCF-101', 'MoveUpSpeed1', 'v_MoveUpSpeed1_g02_c01.avi'))
    manifests = prepare_quietly(data, self.create_tempdir().full_path)
    test = manifests['test']
    self.assertEqual((test['num_records'], test['num_skipped'], test['num_listed']),
                     (27, 3, 30))
    self.assertEqual(test['skipped_by_kind'],
                     {'malformed line': 1, 'missing file': 1, 'unknown class': 1})
    self.assertEqual([os.path.basename(p['input']) for p in test['unread_lines']],
                     ['classInd.txt'])
    train = manifests['train']
    self.assertEqual(train['num_records'] + train['num_skipped'], train['num_listed'])

  # --- The binaries, as a user runs them ---------------------------------------------------

  def test_prepare_binary_stops_with_one_line_and_exit_2(self):
    out = self.create_tempdir().full_path
    common = [f'--data_dir={self.clean}', f'--out={out}', '--short_side=0', '--workers=1',
              '--subsets=train']
    self.assertEqual(program_runs.run('data_tools.prepare_main', *common, timeout=LIMIT).code, 0)
    done = program_runs.run('data_tools.prepare_main', *common, '--split=2', timeout=LIMIT)
    self.assertEqual(done.code, 2, done.output())
    self.assertEqual(done.error['error'], 'PrepareError', done.output())
    self.assertEqual(manifest.read(out, 'train')['split'], 1)  # the dataset there is kept
    self.assertLen(videos_in_files(out, 'train'), 8)

  def test_make_synthetic_refuses_a_directory_it_did_not_write(self):
    root = self.create_tempdir().full_path
    class_index = os.path.join(root, 'ucfTrainTestlist', 'classInd.txt')
    os.makedirs(os.path.dirname(class_index))
    with open(class_index, 'w') as f:
      f.write('1 ApplyEyeMakeup\n')
    done = program_runs.run('data_tools.make_synthetic_ucf101_main', f'--out={root}', '--classes=2',
                            '--groups=8', '--min_frames=2', '--max_frames=2', timeout=LIMIT)
    self.assertEqual(done.code, 2, done.output())
    self.assertEqual(done.error['error'], 'SyntheticError', done.output())
    self.assertEqual(open(class_index).read(), '1 ApplyEyeMakeup\n')
    self.assertFalse(os.path.exists(os.path.join(root, 'UCF-101')))
    # A directory it wrote itself is simply written again.
    own = os.path.join(root, 'synthetic')
    for _ in range(2):
      make_synthetic_ucf101.make_dataset(own, classes=2, groups=8, min_frames=2, max_frames=2)
    with self.assertRaises(make_synthetic_ucf101.SyntheticError) as caught:
      make_synthetic_ucf101.make_dataset(root, classes=2, groups=8)
    self.assertEqual(caught.exception.option, 'out')


if __name__ == '__main__':
  tf.test.main()

"""HMDB51 in its official layout and a labelled list of videos, end to end: prepare writes
exactly each split's videos with alphabetical labels and every odd name intact (videos,
rawframes and flow), one dataset per prepared directory, the direct route reads it, and a
small network learns from HMDB51 records and from list records."""

import dataclasses
import glob
import os
import shutil
import tempfile

import tensorflow as tf

from data_tools import extract_flow, make_synthetic_ucf101, prepare
from command_line.options import options_named
from input_fn import data_checks, datasets, factory, manifest, records
from tests import tiny_records
from serving import classifier
from towers import params as params_lib
from serving import evaluate_two_stream, two_stream, two_stream_options
from towers import preflight
from towers.training import train_and_evaluate

CLASSES = 3  # move_down_speed1, move_up_speed1, move_right_speed1 (written in this order)
VIDEOS = 20  # per class


def read_records(out: str, subset: str) -> dict[str, tuple[int, str]]:
  """{video name: (label, class name)} of every record the manifest lists."""
  rows = {}
  for path, _ in manifest.shard_paths(out, subset):
    for raw in tf.data.TFRecordDataset(path):
      parsed = records.parse(raw)
      rows[parsed['video'].numpy().decode()] = int(parsed['label'])
  return rows


def split_videos(data: str, split: int) -> tuple[dict[str, dict[str, int]], int]:
  """({'train'|'test': {video: label}}, id-0 count) straight from the split files, labels
  by sorted class name."""
  files = sorted(glob.glob(os.path.join(data, 'testTrainMulti_7030_splits',
                                        f'*_test_split{split}.txt')))
  names = sorted(os.path.basename(f)[:-len(f'_test_split{split}.txt')] for f in files)
  found, unused = {'train': {}, 'test': {}}, 0
  for label, name in enumerate(names):
    with open(os.path.join(data, 'testTrainMulti_7030_splits',
                           f'{name}_test_split{split}.txt')) as f:
      for line in f:
        video, id_ = line.split()
        if id_ == '0':
          unused += 1
        else:
          found['train' if id_ == '1' else 'test'][video[:-4]] = label
  return found, unused


class Hmdb51Test(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.root = tempfile.mkdtemp()
    cls.data = os.path.join(cls.root, 'hmdb51')
    make_synthetic_ucf101.make_dataset(cls.data, layout='hmdb51', classes=CLASSES,
                                       groups=VIDEOS, width=24, height=20, min_frames=8,
                                       max_frames=10, object_size=10, write_frames=True)

  @classmethod
  def tearDownClass(cls):
    shutil.rmtree(cls.root, ignore_errors=True)
    super().tearDownClass()

  def prepare(self, out: str, data_dir: str = '', **kwargs) -> dict:
    return tiny_records.prepared(data_dir or self.data, out, **{'dataset': 'hmdb51', **kwargs})

  def test_the_tree_given_without_its_dataset_names_it(self):
    out = os.path.join(self.create_tempdir().full_path, 'flow')
    with self.assertRaises(datasets.DatasetError) as caught:
      extract_flow.extract(extract_flow.ExtractFlowOptions(data_dir=self.data, out=out,
                                                           workers=1), log=lambda s: None)
    self.assertEqual(caught.exception.option, 'dataset')
    self.assertIn('--dataset=hmdb51', str(caught.exception))
    self.assertFalse(os.path.exists(out))

  def test_each_split_prepares_exactly_its_videos_with_alphabetical_labels(self):
    self.assertEqual(sorted(os.listdir(os.path.join(self.data, 'hmdb51_org'))),
                     ['move_down_speed1', 'move_right_speed1', 'move_up_speed1'])
    names = set()
    for split in (1, 2, 3):
      with self.subTest(split=split):
        out = os.path.join(self.root, f'split{split}')
        manifests = self.prepare(out, split=split)
        expected, unused = split_videos(self.data, split)
        self.assertGreater(unused, 0)
        for subset in ('train', 'test'):
          self.assertEqual(read_records(out, subset), expected[subset])
          found = manifests[subset]
          self.assertEqual((found['dataset'], found['num_listed'], found['num_records'],
                            found['num_skipped'], found['num_unused']),
                           ('hmdb51', len(expected[subset]), len(expected[subset]), 0, unused))
          self.assertEqual(found['classes'], ['move_down_speed1', 'move_right_speed1',
                                              'move_up_speed1'])
          names |= set(expected[subset])
    for odd in '#&()!;\'':
      self.assertTrue(any(odd in name for name in names), odd)
    self.assertLen(names, CLASSES * VIDEOS)  # every video tests in some split

  def test_rawframes_and_flow_in_mmaction2s_and_extract_flows_layouts(self):
    out = os.path.join(self.root, 'frames')
    manifests = self.prepare(out, source='frames')
    self.assertEqual(manifests['train']['layout'], '{video}/img_%05d.jpg')
    self.assertEqual(read_records(out, 'train'), split_videos(self.data, 1)[0]['train'])
    data = os.path.join(self.root, 'flow_data')
    shutil.copytree(self.data, data)
    flow = extract_flow.extract(extract_flow.ExtractFlowOptions(
        data_dir=data, dataset='hmdb51', workers=1, **make_synthetic_ucf101.SYNTHETIC_FLOW),
        log=lambda s: None)
    self.assertEqual((flow['num_with_flow'], flow['num_skipped']), (CLASSES * VIDEOS, 0))
    out = os.path.join(self.root, 'flow')
    manifests = tiny_records.prepared(data, out, dataset='hmdb51', source='flow')
    self.assertEqual(manifests['test']['kind'], 'flow')
    self.assertEqual(read_records(out, 'test'), split_videos(self.data, 1)[0]['test'])

  def test_an_mmaction2_rawframe_list_prepares_its_listed_folders(self):
    lists, expected = {}, {'train': {}, 'test': {}}
    order = ['move_up_speed1', 'move_down_speed1', 'move_right_speed1']
    for i, folder in enumerate(sorted(glob.glob(os.path.join(self.data, 'rawframes', '*', '*')))):
      subset = 'test' if i % 3 == 0 else 'train'
      rel = os.path.relpath(folder, self.data)
      label = order.index(rel.split(os.sep)[1])
      expected[subset][rel] = label
      lists.setdefault(subset, []).append(f'{rel} {len(os.listdir(folder))} {label}\n')
    paths = {}
    for subset, lines in lists.items():
      paths[subset] = os.path.join(self.root, f'{subset}_rawframes.txt')
      with open(paths[subset], 'w') as f:
        f.writelines(lines)
    names = os.path.join(self.root, 'rawframe_classes.txt')
    with open(names, 'w') as f:
      f.write('\n'.join(order) + '\n')
    out = os.path.join(self.root, 'rawframe_list')
    manifests = self.prepare(out, dataset='list', source='frames', train_list=paths['train'],
                             test_list=paths['test'], class_names=names)
    self.assertEqual(manifests['test']['layout'], '{video}/img_%05d.jpg')
    for subset in ('train', 'test'):
      self.assertEqual(read_records(out, subset), expected[subset])

  def test_bad_videos_are_named_and_counted(self):
    data = os.path.join(self.root, 'damaged')
    shutil.copytree(self.data, data)
    train = split_videos(data, 1)[0]['train']
    broken = sorted(name for name in train if '&' in name)[0]
    path = glob.glob(os.path.join(data, 'hmdb51_org', '*', glob.escape(broken) + '.avi'))[0]
    open(path, 'w').close()  # an empty file
    manifests = self.prepare(os.path.join(self.root, 'damaged_out'), data_dir=data)
    found = manifests['train']
    self.assertEqual((found['num_records'], found['num_skipped'], found['skipped_by_kind']),
                     (len(train) - 1, 1, {'empty file': 1}))
    self.assertEqual(found['skipped'][0]['input'], path)

  def test_one_dataset_per_directory_and_records_of_another_dataset_refused(self):
    out = os.path.join(self.root, 'once')
    self.prepare(out, split=1)
    with self.assertRaises(prepare.PrepareError) as caught:
      self.prepare(out, split=2)
    self.assertEqual((caught.exception.option, caught.exception.differences), ('out', ('split',)))
    ucf = os.path.join(self.root, 'ucf')
    make_synthetic_ucf101.make_dataset(ucf, classes=2, groups=8, width=24, height=20,
                                       min_frames=8, max_frames=8, object_size=10)
    with self.assertRaises(prepare.PrepareError) as caught:
      prepare.prepare(prepare.PrepareOptions(data_dir=ucf, out=out, short_side=0, workers=1))
    self.assertEqual(caught.exception.differences[0], 'dataset')
    params = params_lib.make_params(data_source='tfrecord', data_dir=out, num_classes=3)
    with self.assertRaises(data_checks.DataError) as caught:
      factory.make_input_fn(params, tf.estimator.ModeKeys.TRAIN)
    self.assertEqual(options_named(caught.exception), ['dataset'])
    self.assertEqual(manifest.read(out, 'train')['dataset'], 'hmdb51')

  def test_a_class_folder_added_between_subsets_stops_before_the_test_labels_shift(self):
    data = os.path.join(self.create_tempdir().full_path, 'hmdb51')
    shutil.copytree(self.data, data)
    out = self.create_tempdir().full_path
    held = self.prepare(out, data_dir=data, subsets=('train',))['train']['classes']
    videos, splits = (os.path.join(data, d) for d in ('hmdb51_org', 'testTrainMulti_7030_splits'))
    shutil.copytree(os.path.join(videos, held[0]), os.path.join(videos, 'aaa_new'))
    for name in os.listdir(os.path.join(videos, 'aaa_new')):
      os.rename(os.path.join(videos, 'aaa_new', name), os.path.join(videos, 'aaa_new', 'a' + name))
    for split in (1, 2, 3):
      with open(os.path.join(splits, f'{held[0]}_test_split{split}.txt')) as f:
        rows = [line for line in f if line.strip()]
      with open(os.path.join(splits, f'aaa_new_test_split{split}.txt'), 'w') as f:
        f.write(''.join('a' + row for row in rows))
    with self.assertRaises(prepare.PrepareError) as caught:
      self.prepare(out, data_dir=data, subsets=('test',))
    self.assertEqual((caught.exception.option, caught.exception.differences), ('out', ('classes',)))
    self.assertIn(f'label 0 is {held[0]} here, aaa_new asked (of {CLASSES} and {CLASSES + 1} '
                  'classes)', str(caught.exception))
    self.assertFalse(os.path.exists(manifest.manifest_path(out, 'test')))

  def test_the_direct_route_reads_the_official_layout(self):
    params = params_lib.make_params(dataset='hmdb51', data_source='videos', data_dir=self.data,
                                    num_classes=3, clip_frames=4, crop_size=16, batch_size=4,
                                    eval_clips=2, frame_short_side=0, shuffle_buffer=4)
    features, labels = next(iter(factory.make_input_fn(params, tf.estimator.ModeKeys.TRAIN)(None)))
    self.assertEqual(features['clips'].shape, (4, 4, 16, 16, 3))
    dataset = factory.make_input_fn(params, tf.estimator.ModeKeys.EVAL)(None)
    indices = set()
    for features, labels in dataset:
      indices |= set(features['video_index'].numpy().tolist())
    self.assertLen(indices, len(split_videos(self.data, 1)[0]['test']))
    # A split whose files are not there is one problem naming them, before training.
    partial = os.path.join(self.root, 'partial')
    shutil.copytree(self.data, partial, ignore=shutil.ignore_patterns('*_test_split3.txt'))
    found = preflight.problems(dataclasses.replace(
        params, data_dir=partial, split=3, model_dir=os.path.join(self.root, 'unused')))
    self.assertLen(found, 1)
    self.assertEqual(preflight.problems(dataclasses.replace(
        params, data_dir=partial, split=2, model_dir=os.path.join(self.root, 'unused'))), [])
    splits = os.path.join(partial, 'testTrainMulti_7030_splits')
    with self.assertRaises(datasets.DatasetError) as caught:  # what preflight reports
      datasets.read_split('hmdb51', splits, 3)
    self.assertEqual(caught.exception.path, splits)

  def test_a_small_network_learns_from_hmdb51_records_and_from_a_list(self):
    hmdb = os.path.join(self.root, 'learn_hmdb51')
    self.prepare(hmdb)
    # The same videos as an MMAction2 VideoDataset list, class names in the order of the
    # list's labels (not alphabetical).
    expected, _ = split_videos(self.data, 1)
    order = ['move_up_speed1', 'move_right_speed1', 'move_down_speed1']
    by_name = {}
    for path in glob.glob(os.path.join(self.data, 'hmdb51_org', '*', '*.avi')):
      by_name[os.path.basename(path)[:-4]] = os.path.relpath(path, self.data)
    lists = {}
    for subset in ('train', 'test'):
      lists[subset] = os.path.join(self.root, f'{subset}_videos.txt')
      with open(lists[subset], 'w') as f:
        for name in sorted(expected[subset]):
          rel = by_name[name]
          f.write(f'{rel} {order.index(rel.split(os.sep)[1])}\n')
    names = os.path.join(self.root, 'classes.txt')
    with open(names, 'w') as f:
      f.write('\n'.join(order) + '\n')
    listed = os.path.join(self.root, 'learn_list')
    manifests = self.prepare(listed, dataset='list', train_list=lists['train'],
                             test_list=lists['test'], class_names=names)
    self.assertEqual(manifests['train']['classes'], order)
    self.assertEqual(manifests['test']['num_records'], len(expected['test']))
    for dataset, data_dir in (('hmdb51', hmdb), ('list', listed)):
      with self.subTest(dataset):
        metrics = train_and_evaluate(params_lib.make_params(
            model='c3d_small', dataset=dataset, data_source='tfrecord', data_dir=data_dir,
            num_classes=3, clip_frames=4, crop_size=16, batch_size=8, num_towers=1,
            eval_clips=2, max_steps=300, save_checkpoints_steps=300, log_every_steps=300,
            lr_schedule='constant', lr_values=(0.01,), warmup_steps=20,
            export_savedmodel=dataset == 'hmdb51',
            model_dir=os.path.join(self.root, f'model_{dataset}')))
        self.assertEqual(metrics['global_step'], 300)
        self.assertGreater(metrics['accuracy/video'], 0.8)  # chance is 1/3
    # evaluate_two_stream fuses it with a Flow model per HMDB51 video (split 1 and its mean).
    data = os.path.join(self.root, 'two_stream_data')
    shutil.copytree(self.data, data)
    extract_flow.extract(extract_flow.ExtractFlowOptions(
        data_dir=data, dataset='hmdb51', workers=1, **make_synthetic_ucf101.SYNTHETIC_FLOW),
        log=lambda s: None)
    flow_records = os.path.join(self.root, 'two_stream_flow')
    tiny_records.prepared(data, flow_records, dataset='hmdb51', source='flow')
    flow_model = os.path.join(self.root, 'model_flow')
    train_and_evaluate(params_lib.make_params(
        model='c3d_small', stream='flow', dataset='hmdb51', data_source='tfrecord',
        data_dir=flow_records, num_classes=3, clip_frames=4, crop_size=16, batch_size=8,
        num_towers=1, eval_clips=2, max_steps=2, save_checkpoints_steps=2, log_every_steps=2,
        model_dir=flow_model))
    options = two_stream_options.EvaluateTwoStreamOptions(eval_clips=2, splits=(1,))
    paths = {'rgb_model': os.path.join(self.root, 'model_hmdb51'), 'rgb_data': hmdb,
             'flow_model': flow_model, 'flow_data': flow_records}
    fused = evaluate_two_stream.evaluate(paths, options,
                                         os.path.join(self.root, 'two_stream_eval'),
                                         evaluate_two_stream.check(paths, options))
    self.assertEqual(fused['videos'], len(split_videos(self.data, 1)[0]['test']))
    self.assertGreater(fused['rows']['rgb']['top_1'], 0.8)
    mean = two_stream.mean_over_splits({1: fused})
    self.assertEqual(mean['rows']['fusion'], fused['rows']['fusion'])
    # classify names HMDB51 classes of test videos whose names carry odd characters.
    tests = sorted(by_name[name] for name in expected['test'] if name[0] in '#GO')
    results = classifier.classify([os.path.join(self.data, rel) for rel in tests],
                                  os.path.join(self.root, 'model_hmdb51'), clips=2)
    self.assertEqual([os.path.relpath(r.video, self.data) for r in results], tests)
    right = sum(r.top[0][0] == rel.split(os.sep)[1] for r, rel in zip(results, tests))
    self.assertGreaterEqual(right, len(tests) * 2 // 3, [r.top[0] for r in results])


if __name__ == '__main__':
  tf.test.main()

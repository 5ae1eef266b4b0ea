"""Specification: `evaluate_two_stream` refuses, before inference, what would give wrong numbers.

A model with another number of classes than its eval data, models and eval data whose class
names differ (in name or order: the first label that differs is named), eval data of another
split (each split of --splits checked before any is evaluated; without it, RGB and Flow
records of one split) or of another dataset than --dataset or than the export records,
eval data prepared at another --short_side than the model's training frames (RGB and flow)
or, frames kept as decoded on both sides, from videos of another size,
eval data whose test videos the model trained on (the split-2 test list holds split 1's
training videos; the export lists what it trained on, so an export copied away from its
model_dir still knows; names spelled as a list dataset spells them meet UCF101's), eval
data whose test shard holds other videos than its manifest lists (split 2's test shard, or
its own train shard, copied over it), RGB and Flow records of other videos under the same
names (two synthetic sets of other seeds: their recorded source sizes differ; flow whose
sources are not recorded is not compared), a
--flow_weight outside [0, 1] (or nan), a --json_out that cannot be written, that is a file
evaluate_two_stream did not write (prepare's manifest) or lies in a directory the run reads,
a damaged test manifest (a byte-order mark reads as none), an RGB model given as the Flow
model (a flow model is needed there; swapping only when both are swapped) and an export
whose class_names.txt is not the class list of its graph each stop with one
`evaluate_two_stream:` line, exit 2. An export that lists no training videos (made
before exports listed them) is evaluated with a warning saying so, and the JSON says the
check was not made; a flow model whose training flow's extraction settings are unknown is
evaluated with the extraction check skipped and reported as such. An evaluation writes,
beside its JSON, a confusion-matrix PNG per stream and the per-class CSV.
"""

import csv
import glob
import json
import os
import shutil
import tempfile

import cv2
import numpy as np
import tensorflow as tf

from input_fn import flow_shards
from input_fn import manifest as manifest_lib
from tests import program_runs, tiny_records
from towers import params as params_lib
from serving import (classifier, export_info, saved_model, two_stream, two_stream_options,
                     two_stream_outputs)
from serving.classify_options import ClassifyError
from towers import train_settings
from towers.training import train_and_evaluate

LIMIT = 300


def evaluate(*args: str) -> program_runs.ProgramRun:
  return program_runs.run('serving.evaluate_two_stream_main', *args, timeout=LIMIT)


def with_export_info(model_dir: str, copy: str, removed: tuple[str, ...] = (),
                     **changes) -> str:
  """Copies `model_dir` to `copy`, its export's video_model.json without the fields
  `removed` and with `changes`; returns `copy`."""
  shutil.copytree(model_dir, copy)
  path = os.path.join(saved_model.saved_model_dir(copy), export_info.ASSETS_DIR,
                      export_info.INFO_FILE)
  with open(path) as f:
    info = json.load(f)
  for name in removed:
    del info[name]
  info.update(changes)
  with open(path, 'w') as f:
    json.dump(info, f)
  return copy


def without_training_videos(model_dir: str, copy: str) -> str:
  """`model_dir` copied to `copy`, its export without `train_video_names`, as exports made
  before the list have it."""
  return with_export_info(model_dir, copy, removed=(export_info.TRAIN_VIDEO_NAMES,))


def json_out(args: list[str]) -> str:
  """The --json_out of `args`."""
  return [a.split('=', 1)[1] for a in args if a.startswith('--json_out=')][-1]


class TwoStreamChecksTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.root = tempfile.mkdtemp()
    ucf = tiny_records.make(cls.root, (), classes=3, groups=9, width=24, height=20,
                            min_frames=6, max_frames=7, object_size=8, write_flow=True).data
    cls.data, cls.models = {}, {}
    for stream, source in (('rgb', 'videos'), ('flow', 'flow')):
      for split in (1, 2):
        out = os.path.join(cls.root, f'{stream}{split}')
        tiny_records.prepared(ucf, out, source=source, split=split)
        cls.data[stream, split] = out
      # Split 1 again, its frames (flow) resized to a short side of 32: the models train at 0.
      cls.data[stream, 'short_side_32'] = os.path.join(cls.root, f'{stream}1_32')
      tiny_records.prepared(ucf, cls.data[stream, 'short_side_32'], source=source, split=1,
                            short_side=32)
      params = params_lib.make_params(
          model='c3d_small', stream=stream, data_source='tfrecord', data_dir=cls.data[stream, 1],
          num_classes=3, clip_frames=4, crop_size=16, batch_size=2, num_towers=1, eval_clips=1,
          max_steps=1, save_checkpoints_steps=1, log_every_steps=1,
          model_dir=os.path.join(cls.root, f'{stream}_model'))
      train_and_evaluate(params)
      cls.models[stream] = params.model_dir
    cls.larger_videos = tiny_records.make(
        os.path.join(cls.root, 'larger'), classes=3, groups=9, width=48, height=40, min_frames=6,
        max_frames=7, object_size=16).records['videos']
    cls.four_classes = tiny_records.make(
        os.path.join(cls.root, 'four'), classes=4, groups=9, width=24, height=20, min_frames=6,
        max_frames=7, object_size=8).records['videos']

  def args(self, split: int = 1, **overrides) -> list[str]:
    values = {'rgb_model': self.models['rgb'], 'flow_model': self.models['flow'],
              'rgb_data': self.data['rgb', split], 'flow_data': self.data['flow', split],
              'eval_clips': 1, 'json_out': os.path.join(self.create_tempdir().full_path,
                                                        'out.json')}
    values.update(overrides)
    return [f'--{k}={v}' for k, v in values.items()]

  def assert_refused(self, args: list[str], error: str, options: list[str]) -> None:
    """evaluate_two_stream `args` ends through its entry with exit 2, the `error` type
    naming `options`, and writes no table."""
    done = evaluate(*args)
    self.assertEqual(done.code, 2, done.output())
    self.assertEqual((done.error['error'], done.error_options), (error, options), done.output())
    self.assertFalse(os.path.exists(json_out(args)))

  def test_the_own_split_is_evaluated(self):
    args = self.args()
    done = evaluate(*args)
    self.assertEqual(done.code, 0, done.output())
    with open(json_out(args)) as f:
      result = json.load(f)
    self.assertEqual(set(result['rows']), {'rgb', 'flow', 'fusion'})
    self.assertEqual(result['training_videos_checked'], {'rgb': True, 'flow': True})
    # Beside the JSON: a confusion matrix per stream and the per-class CSV of its rows.
    stem = json_out(args)[:-len('.json')]
    self.assertEqual(result['files'], [f'{stem}_{s}_confusion.png'
                                       for s in ('rgb', 'flow', 'fusion')] +
                     [f'{stem}_per_class.csv'])
    for path in result['files'][:3]:
      image = cv2.imread(path)
      self.assertGreaterEqual(min(image.shape[:2]), 3 * 4)  # 3 classes, 4+ pixels a cell
      self.assertGreater(np.std(image), 10)
    with open(result['files'][3], newline='') as f:
      rows = list(csv.DictReader(f))
    self.assertEqual([row['class'] for row in rows], [r['class'] for r in result['per_class']])
    for row, expected in zip(rows, result['per_class']):
      self.assertEqual({k: float(v) for k, v in row.items() if k != 'class'},
                       {k: v for k, v in expected.items() if k != 'class'})
    self.assertEqual(sum(r['videos'] for r in result['per_class']), result['videos'])
    self.assertAllClose(np.mean([r['fusion'] for r in result['per_class']]),
                        result['rows']['fusion']['mean_per_class'])

  def split_links(self, data_of_split: dict[int, int], listed: bool = False) -> dict[str, str]:
    """The four `{split}` paths of a --splits=1,2 run: split k's data is the records of split
    `data_of_split[k]`; split 1's models are the trained ones, split 2's copies of them whose
    exports list no training videos (evaluated with a warning: split 2's test videos were
    trained on), or with `listed` the trained ones too (refused: they list them)."""
    root = self.create_tempdir().full_path
    for stream in ('rgb', 'flow'):
      if listed:
        os.symlink(self.models[stream], os.path.join(root, f'{stream}_model_s2'))
      else:
        without_training_videos(self.models[stream], os.path.join(root, f'{stream}_model_s2'))
      os.symlink(self.models[stream], os.path.join(root, f'{stream}_model_s1'))
      for split, prepared in data_of_split.items():
        os.symlink(self.data[stream, prepared], os.path.join(root, f'{stream}_data_s{split}'))
    return {f'{stream}_{kind}': os.path.join(root, f'{stream}_{kind}_s{{split}}')
            for stream in ('rgb', 'flow') for kind in ('model', 'data')}

  def test_splits_print_each_table_and_the_mean_video_top_1(self):
    out = os.path.join(self.create_tempdir().full_path, 'splits.json')
    # What an earlier evaluation into the same --json_out without --splits left beside it.
    earlier = [out[:-len('.json')] + end for end in ('_rgb_confusion.png', '_per_class.csv')]
    for path in earlier:
      with open(path, 'w') as f:
        f.write(','.join(two_stream_outputs.CSV_COLUMNS) + '\n')
    pattern = self.split_links({1: 1, 2: 2})
    done = evaluate(*self.args(splits='1,2', json_out=out, **pattern))
    self.assertEqual(done.code, 0, done.output())
    self.assertEqual([p for p in earlier if os.path.exists(p)], [])
    self.assertEqual(two_stream_outputs.earlier_files(out, [out[:-5] + '_split1',
                                                            out[:-5] + '_split2']), [])
    self.assertLen(two_stream_outputs.earlier_files(out, [out[:-5]]), 8)
    result = json.load(open(out))
    self.assertEqual(sorted(result['splits']), ['1', '2'])
    for row in ('rgb', 'flow', 'fusion'):
      self.assertAlmostEqual(result['mean']['rows'][row]['top_1'],
                             np.mean([result['splits'][k]['rows'][row]['top_1']
                                      for k in ('1', '2')]))
    self.assertEqual(result['mean']['splits'], [1, 2])
    # Paths without {split} under --splits, and {split} without --splits.
    self.assert_refused(self.args(splits='1,2'), 'Refused', ['rgb_model'])
    self.assert_refused(self.args(rgb_model=pattern['rgb_model']), 'Refused', ['splits'])

  def test_records_of_another_split_stop_every_split_before_any_inference(self):
    out_dir = self.create_tempdir().full_path
    args = self.args(splits='1,2', json_out=os.path.join(out_dir, 'splits.json'),
                     **self.split_links({1: 1, 2: 1}))
    self.assert_refused(args, 'TwoStreamError', ['rgb_data'])
    self.assertEqual(os.listdir(out_dir), [])  # split 1 was not evaluated either
    # Split 2's models trained on split 2's test videos: refused before split 1's inference.
    args = self.args(splits='1,2', json_out=os.path.join(out_dir, 'splits.json'),
                     **self.split_links({1: 1, 2: 2}, listed=True))
    self.assert_refused(args, 'TwoStreamError', [])
    self.assertEqual(os.listdir(out_dir), [])
    # Without --splits, the RGB and Flow records must be of one split.
    self.assert_refused(self.args(flow_data=self.data['flow', 2]), 'TwoStreamError',
                        ['flow_data'])

  def test_other_class_names_or_order_and_another_dataset_are_refused(self):
    reordered = shutil.copytree(self.data['rgb', 1], os.path.join(
        self.create_tempdir().full_path, 'rgb'))
    test = json.load(open(os.path.join(reordered, 'test.manifest.json')))
    test['classes'] = test['classes'][:1] + test['classes'][1:][::-1]  # labels 1 and 2 swapped
    with open(os.path.join(reordered, 'test.manifest.json'), 'w') as f:
      json.dump(test, f)
    self.assert_refused(self.args(rgb_data=reordered), 'TwoStreamError', ['rgb_data'])
    self.assert_refused(self.args(dataset='hmdb51'), 'TwoStreamError', ['dataset'])
    paths = {'rgb_model': self.models['rgb'], 'flow_model': self.models['flow'],
             'rgb_data': reordered, 'flow_data': self.data['flow', 1]}
    with self.assertRaises(two_stream.TwoStreamError) as caught:
      two_stream.check_agreement(paths)
    self.assertEqual((caught.exception.reason, caught.exception.option, caught.exception.label),
                     ('class_names', 'rgb_data', 1))

  def test_the_class_list_the_others_disagree_with_is_the_one_named(self):
    # An RGB model of other classes (class_<i>: trained on synthetic clips): the flow model
    # and both eval data agree with each other, so the RGB model is at fault.
    export = shutil.copytree(saved_model.saved_model_dir(self.models['rgb']),
                             os.path.join(self.create_tempdir().full_path, 'rgb_export'))
    names = os.path.join(export, 'assets.extra', 'class_names.txt')
    count = len(open(names).read().split())
    with open(names, 'w') as f:
      f.write(''.join(f'class_{i}\n' for i in range(count)))
    paths = {'rgb_model': export, 'flow_model': self.models['flow'],
             'rgb_data': self.data['rgb', 1], 'flow_data': self.data['flow', 1]}
    with self.assertRaises(two_stream.TwoStreamError) as caught:
      two_stream.check_agreement(paths)
    self.assertEqual((caught.exception.reason, caught.exception.option),
                     ('class_names', 'rgb_model'))

  def test_flow_of_other_videos_under_the_same_names_is_refused(self):
    # A second synthetic UCF101 of the same names and other videos (seed 7), its flow
    # records beside the first's RGB records: fused per name, they would mix two videos.
    other = tiny_records.make(os.path.join(self.create_tempdir().full_path, 'other'),
                              ('flow',), classes=3, groups=9, width=24, height=20,
                              min_frames=6, max_frames=7, object_size=8, seed=7)
    self.assert_refused(self.args(flow_data=other.records['flow']), 'TwoStreamError',
                        ['flow_data'])
    paths = {'rgb_model': self.models['rgb'], 'flow_model': self.models['flow'],
             'rgb_data': self.data['rgb', 1], 'flow_data': other.records['flow']}
    with self.assertRaises(two_stream.TwoStreamError) as caught:
      two_stream.check_same_videos(paths)
    self.assertEqual((caught.exception.reason, caught.exception.option),
                     ('other_videos', 'flow_data'))
    self.assertGreater(caught.exception.count, 0)
    # The flow folder moved or deleted once its records exist: they recorded the sizes.
    os.remove(os.path.join(other.data, 'tvl1_flow', flow_shards.SOURCES))
    with self.assertRaises(two_stream.TwoStreamError):
      two_stream.check_same_videos(paths)
    # Flow whose source videos were never recorded (another tool's) cannot be told apart:
    # as before, not refused.
    path = manifest_lib.manifest_path(other.records['flow'], 'test')
    held = json.load(open(path))
    for shard in held['shards']:
      for video in shard['videos']:
        del video['video_size']
    with open(path, 'w') as f:
      json.dump(held, f)
    two_stream.check_same_videos(paths)

  def test_test_videos_the_model_trained_on_are_refused_with_their_count(self):
    trained = set(train_settings.read_record(self.models['rgb'])['train_video_names'])
    split_2_tests = json.load(open(os.path.join(self.data['rgb', 2], 'test.manifest.json')))
    seen = sum(v['name'] in trained for s in split_2_tests['shards'] for v in s['videos'])
    self.assertGreater(seen, 0)
    model = saved_model.load_model(self.models['rgb'], 'rgb')
    with self.assertRaises(two_stream.TwoStreamError) as caught:
      two_stream.check_stream(model, self.models['rgb'], self.data['rgb', 2])
    self.assertEqual((caught.exception.reason, caught.exception.path, caught.exception.count),
                     ('trained_on', self.data['rgb', 2], seen))
    self.assert_refused(self.args(split=2), 'TwoStreamError', [])

  def test_a_test_shard_that_holds_other_videos_than_listed_is_refused(self):
    own = self.data['rgb', 1]
    for name, source in (('split 2 test', os.path.join(self.data['rgb', 2], 'test-*.tfrecord')),
                         ('own train', os.path.join(own, 'train-*.tfrecord'))):
      with self.subTest(name):
        data = shutil.copytree(own, os.path.join(self.create_tempdir().full_path, 'rgb'))
        shard = sorted(glob.glob(os.path.join(data, 'test-*.tfrecord')))[0]
        shutil.copy(sorted(glob.glob(source))[0], shard)
        model = saved_model.load_model(self.models['rgb'], 'rgb')
        with self.assertRaises(two_stream.TwoStreamError) as caught:
          two_stream.check_stream(model, self.models['rgb'], data)
        self.assertEqual((caught.exception.reason, caught.exception.option),
                         ('foreign_shard', 'rgb_data'))
        self.assertIn(shard, str(caught.exception))
    self.assert_refused(self.args(rgb_data=data), 'TwoStreamError', ['rgb_data'])

  def test_the_export_alone_knows_its_training_videos(self):
    # The export copied away from its model_dir (no train_settings.json above it).
    export = shutil.copytree(saved_model.saved_model_dir(self.models['rgb']),
                             os.path.join(self.create_tempdir().full_path, 'rgb_export'))
    listed = export_info.read(export)[0][export_info.TRAIN_VIDEO_NAMES]
    self.assertEqual(listed, train_settings.read_record(self.models['rgb'])['train_video_names'])
    with self.assertRaises(two_stream.TwoStreamError) as caught:
      two_stream.check_stream(saved_model.load_model(export, 'rgb'), export, self.data['rgb', 2])
    self.assertEqual((caught.exception.reason, caught.exception.path),
                     ('trained_on', self.data['rgb', 2]))
    self.assert_refused(self.args(split=2, rgb_model=export), 'TwoStreamError', [])

  def test_a_model_that_learnt_other_clips_of_the_test_groups_is_refused(self):
    # An export whose training videos are clip c09 of each split-1 test video's UCF101 group.
    export = shutil.copytree(saved_model.saved_model_dir(self.models['rgb']),
                             os.path.join(self.create_tempdir().full_path, 'rgb_export'))
    tests = json.load(open(os.path.join(self.data['rgb', 1], 'test.manifest.json')))
    names = [v['name'] for s in tests['shards'] for v in s['videos']]
    info_path = os.path.join(export, 'assets.extra', export_info.INFO_FILE)
    info = json.load(open(info_path))
    info[export_info.TRAIN_VIDEO_NAMES] = sorted({n.rsplit('_c', 1)[0] + '_c09' for n in names})
    with open(info_path, 'w') as f:
      json.dump(info, f)
    with self.assertRaises(two_stream.TwoStreamError) as caught:
      two_stream.check_stream(saved_model.load_model(export, 'rgb'), export, self.data['rgb', 1])
    self.assertEqual((caught.exception.reason, caught.exception.count),
                     ('trained_on', len(names)))

  def test_another_class_count_is_refused_before_inference(self):
    model = saved_model.load_model(self.models['rgb'], 'rgb')
    with self.assertRaises(two_stream.TwoStreamError) as caught:
      two_stream.check_stream(model, self.models['rgb'], self.four_classes)
    self.assertEqual((caught.exception.reason, caught.exception.path, caught.exception.count),
                     ('classes', self.four_classes, 4))
    self.assertEqual(saved_model.model_classes(model), 3)
    self.assert_refused(self.args(rgb_data=self.four_classes), 'TwoStreamError', ['rgb_data'])

  def test_flow_extracted_with_other_settings_than_the_models_is_refused(self):
    # The same flow records, as if their flow had been extracted with 2 more TV-L1 scales,
    # and the flow folder deleted since they were made: the records keep the settings.
    data = shutil.copytree(self.data['flow', 1],
                           os.path.join(self.create_tempdir().full_path, 'flow_records'))
    trained_scales = None
    for subset in manifest_lib.SUBSETS:
      relocated = manifest_lib.read(data, subset)
      trained_scales = relocated['flow_extraction']['tvl1']['scales']
      relocated['flow_extraction']['tvl1']['scales'] = trained_scales + 2
      relocated['source_paths']['flow_dir'] = os.path.join(data, 'deleted_flow')
      manifest_lib.write(data, relocated)
    model = saved_model.load_model(self.models['flow'], 'flow')
    with self.assertRaises(two_stream.TwoStreamError) as caught:
      two_stream.check_stream(model, self.models['flow'], data)
    self.assertEqual(caught.exception.reason, 'flow_extraction')
    self.assertIn(f'tvl1.scales {trained_scales} vs {trained_scales + 2}', str(caught.exception))
    self.assertEqual(two_stream.check_stream(model, self.models['flow'], self.data['flow', 1]), {})

  def test_records_at_another_short_side_than_the_training_frames_are_refused(self):
    for stream in ('rgb', 'flow'):
      with self.subTest(stream):
        data = self.data[stream, 'short_side_32']
        self.assertEqual(manifest_lib.read(data, 'test')['short_side'], 32)
        self.assertEqual(export_info.read(saved_model.saved_model_dir(
            self.models[stream]))[0]['frame_short_side'], 0)
        model = saved_model.load_model(self.models[stream], stream)
        with self.assertRaises(two_stream.TwoStreamError) as caught:
          two_stream.check_stream(model, self.models[stream], data)
        self.assertEqual((caught.exception.reason, caught.exception.path,
                          caught.exception.option), ('short_side', data, f'{stream}_data'))
        self.assertIn('--short_side=20', str(caught.exception))  # the training frames' side
    self.assert_refused(self.args(rgb_data=self.data['rgb', 'short_side_32'],
                                  flow_data=self.data['flow', 'short_side_32']),
                        'TwoStreamError', ['rgb_data'])

  def test_frames_as_decoded_of_another_size_than_the_training_frames_are_refused(self):
    # Both prepared with --short_side=0, the eval records from videos twice the size.
    large = self.larger_videos
    self.assertEqual(manifest_lib.read(large, 'test')['short_side'], 0)
    self.assertEqual(manifest_lib.short_side_range(manifest_lib.read(large, 'test')), (40, 40))
    self.assertEqual(export_info.read(saved_model.saved_model_dir(self.models['rgb']))[0][
        export_info.SHORT_SIDE_RANGE], [20, 20])
    model = saved_model.load_model(self.models['rgb'], 'rgb')
    with self.assertRaises(two_stream.TwoStreamError) as caught:
      two_stream.check_stream(model, self.models['rgb'], large)
    self.assertEqual((caught.exception.reason, caught.exception.option),
                     ('short_side', 'rgb_data'))
    self.assertIn('--short_side=20', str(caught.exception))
    self.assert_refused(self.args(rgb_data=large), 'TwoStreamError', ['rgb_data'])
    # An export that does not record its frames' sizes is evaluated, with a warning.
    unknown = with_export_info(self.models['rgb'],
                               os.path.join(self.create_tempdir().full_path, 'rgb'),
                               removed=(export_info.SHORT_SIDE_RANGE,))
    self.assertEqual(set(two_stream.check_stream(saved_model.load_model(unknown, 'rgb'),
                                                 unknown, large)), {'short_side'})
    # Frames stored at another JPEG quality than the training records': said, evaluated.
    quality = manifest_lib.read(self.data['rgb', 1], 'test')['jpeg_quality']
    other = with_export_info(self.models['rgb'],
                             os.path.join(self.create_tempdir().full_path, 'rgb'),
                             records_jpeg_quality=quality - 40)
    self.assertEqual(set(two_stream.check_stream(saved_model.load_model(other, 'rgb'), other,
                                                 self.data['rgb', 1])), {'jpeg_quality'})

  def test_records_of_another_dataset_than_the_export_records_are_refused(self):
    listed = with_export_info(self.models['rgb'],
                              os.path.join(self.create_tempdir().full_path, 'rgb'),
                              dataset='list')
    with self.assertRaises(two_stream.TwoStreamError) as caught:
      two_stream.check_stream(saved_model.load_model(listed, 'rgb'), listed, self.data['rgb', 1])
    self.assertEqual((caught.exception.reason, caught.exception.option),
                     ('dataset', 'rgb_data'))
    self.assert_refused(self.args(rgb_model=listed), 'TwoStreamError', ['rgb_data'])

  def test_training_videos_named_as_a_list_names_them_are_found_among_test_videos(self):
    # The export's training videos spelled as a list dataset names the same files
    # (<Class>/<stem>), the test records' as UCF101 does (<stem>).
    trained = export_info.read(saved_model.saved_model_dir(self.models['rgb']))[0][
        export_info.TRAIN_VIDEO_NAMES]
    respelled = [f'{name.split("_")[1]}/{name}' for name in trained]  # v_<Class>_gGG_cCC
    model_dir = with_export_info(self.models['rgb'],
                                 os.path.join(self.create_tempdir().full_path, 'rgb'),
                                 **{export_info.TRAIN_VIDEO_NAMES: respelled})
    split_2_tests = manifest_lib.video_names(manifest_lib.read(self.data['rgb', 2], 'test'))
    seen = len(set(trained) & set(split_2_tests))
    self.assertGreater(seen, 0)
    with self.assertRaises(two_stream.TwoStreamError) as caught:
      two_stream.check_stream(saved_model.load_model(model_dir, 'rgb'), model_dir,
                              self.data['rgb', 2])
    self.assertEqual((caught.exception.reason, caught.exception.count), ('trained_on', seen))
    # Split 1's test videos are none of them, under either spelling.
    self.assertEqual(two_stream.check_stream(saved_model.load_model(model_dir, 'rgb'), model_dir,
                                             self.data['rgb', 1]), {})

  def test_a_flow_model_whose_training_flow_settings_are_unknown_is_evaluated_unchecked(self):
    unknown = with_export_info(self.models['flow'],
                               os.path.join(self.create_tempdir().full_path, 'flow'),
                               flow_extraction=None)
    self.assertEqual(set(two_stream.check_stream(saved_model.load_model(unknown, 'flow'),
                                                 unknown, self.data['flow', 1])),
                     {'flow_extraction'})
    args = self.args(flow_model=unknown)
    done = evaluate(*args)
    self.assertEqual(done.code, 0, done.output())
    with open(json_out(args)) as f:
      self.assertEqual(json.load(f)['training_videos_checked'], {'rgb': True, 'flow': True})

  def test_lists_of_other_lengths_are_told_by_their_class_counts(self):
    differ = two_stream.class_list_difference([('the model', ['a', 'b', 'c']),
                                               ('the data', ['a', 'b', 'c', 'd'])])
    self.assertEqual((differ.label, differ.sizes), (3, (3, 4)))
    self.assertEqual(str(differ), 'the model has 3 classes and the data has 4 (the first 3 agree)')

  def test_an_export_without_its_training_videos_is_evaluated_with_a_warning(self):
    bare = without_training_videos(self.models['rgb'],
                                   os.path.join(self.create_tempdir().full_path, 'rgb'))
    unchecked = two_stream.check_stream(saved_model.load_model(bare, 'rgb'), bare,
                                        self.data['rgb', 1])
    self.assertEqual(set(unchecked), {'training_videos'})
    self.assertEqual(two_stream.check_stream(saved_model.load_model(self.models['rgb'], 'rgb'),
                                             self.models['rgb'], self.data['rgb', 1]), {})
    args = self.args(rgb_model=bare)
    done = evaluate(*args)
    self.assertEqual(done.code, 0, done.output())
    with open(json_out(args)) as f:
      self.assertEqual(json.load(f)['training_videos_checked'], {'rgb': False, 'flow': True})

  def test_flow_weight_and_json_out_are_checked_before_anything_is_loaded(self):
    missing = os.path.join(self.root, 'no_such_model')
    for weight in ('nan', '-0.5', '1.5'):
      with self.subTest(weight):
        self.assert_refused(self.args(flow_weight=weight, rgb_model=missing), 'OptionsError',
                            ['flow_weight'])
    for unwritable in (self.root, '/proc/two_stream.json'):  # a directory; no file allowed
      with self.subTest(unwritable):
        done = evaluate(*self.args(json_out=unwritable, rgb_model=missing))
        self.assertEqual(done.code, 2, done.output())
        self.assertEqual((done.error['error'], done.error_options), ('Refused', ['json_out']))

  def test_json_out_over_a_file_it_did_not_write_or_in_a_directory_it_reads_is_refused(self):
    records = shutil.copytree(self.data['rgb', 1], os.path.join(
        self.create_tempdir().full_path, 'rgb'))  # the run must not rewrite shared records
    manifest = os.path.join(records, 'test.manifest.json')
    with open(manifest, 'rb') as f:
      before = f.read()
    foreign = os.path.join(self.create_tempdir().full_path, 'notes.json')
    with open(foreign, 'w') as f:
      f.write('{"mine": 1}')
    beside = self.create_tempdir().full_path  # a user's CSV where the per-class CSV goes
    with open(os.path.join(beside, 'out_per_class.csv'), 'w') as f:
      f.write('a,b\n')
    for path in (manifest, foreign, os.path.join(beside, 'out.json'),
                 os.path.join(self.models['flow'], 'new.json')):
      with self.subTest(path):
        done = evaluate(*self.args(rgb_data=records, json_out=path))
        self.assertEqual(done.code, 2, done.output())
        self.assertEqual((done.error['error'], done.error_options), ('Refused', ['json_out']))
    with open(manifest, 'rb') as f:
      self.assertEqual(f.read(), before)
    self.assertFalse(os.path.exists(os.path.join(self.models['flow'], 'new.json')))
    # An earlier table and its CSV are the program's own: written over.
    earlier = os.path.join(beside, 'earlier.json')
    with open(earlier, 'w') as f:
      json.dump({'rows': {}, 'per_class': []}, f)
    with open(os.path.join(beside, 'earlier_per_class.csv'), 'w') as f:
      f.write('class,label,videos,rgb,flow,fusion,fusion_gain\n')
    two_stream_options.check_options(two_stream_options.EvaluateTwoStreamOptions(
        rgb_model=self.models['rgb'], flow_model=self.models['flow'], rgb_data=records,
        flow_data=self.data['flow', 1], json_out=earlier))

  def test_a_damaged_test_manifest_is_one_line_naming_it_and_a_bom_reads_as_none(self):
    records = shutil.copytree(self.data['rgb', 1], os.path.join(
        self.create_tempdir().full_path, 'rgb'))
    manifest = os.path.join(records, 'test.manifest.json')
    with open(manifest, encoding='utf-8') as f:
      text = f.read()
    for damaged in (text[:300], '{}'):
      with open(manifest, 'w', encoding='utf-8') as f:
        f.write(damaged)
      with self.subTest(damaged[:20]):
        self.assert_refused(self.args(rgb_data=records), 'TwoStreamError', ['rgb_data'])
        with self.assertRaises(two_stream.TwoStreamError) as caught:
          two_stream.class_names(records)
        self.assertEqual((caught.exception.reason, caught.exception.path),
                         ('damaged_manifest', records))
    with open(manifest, 'w', encoding='utf-8') as f:
      f.write('\ufeff' + text)
    self.assertEqual(two_stream.class_names(records), json.loads(text)['classes'])
    # A test shard it lists is gone: refused before a model loads, not a traceback after.
    for shard in glob.glob(os.path.join(records, 'test-*')):
      os.remove(shard)
    self.assert_refused(self.args(rgb_data=records), 'TwoStreamError', ['rgb_data'])

  def test_a_model_of_the_wrong_stream_says_which_is_needed_and_swap_only_when_both_are(self):
    with self.assertRaises(saved_model.ModelError) as caught:
      saved_model.load_pair(self.models['rgb'], self.models['rgb'])
    self.assertEqual((caught.exception.reason, caught.exception.stream), ('wrong_stream', 'flow'))
    self.assertNotIn('swap', str(caught.exception))
    with self.assertRaises(saved_model.ModelError) as caught:
      saved_model.load_pair(self.models['flow'], self.models['rgb'])
    self.assertEqual((caught.exception.reason, caught.exception.stream), ('wrong_stream', 'rgb'))
    self.assertIn('swap the arguments', str(caught.exception))

  def test_an_export_whose_weights_are_another_exports_is_refused(self):
    copy = shutil.copytree(saved_model.saved_model_dir(self.models['rgb']),
                           os.path.join(self.create_tempdir().full_path, 'rgb_export'))
    info_path = os.path.join(copy, export_info.ASSETS_DIR, export_info.INFO_FILE)
    info = json.load(open(info_path))
    self.assertEqual(export_info.read(copy)[0]['step'], info['step'])  # its own: read
    with open(info_path, 'w') as f:  # as if variables/ came from an export at another step
      json.dump(dict(info, step=info['step'] + 7), f)
    with self.assertRaises(export_info.ExportInfoError) as caught:
      export_info.read(copy)
    self.assertEqual((caught.exception.path, caught.exception.reason), (info_path, 'mixed'))

  def test_swapped_eval_data_names_the_option_at_fault(self):
    with self.assertRaises(two_stream.TwoStreamError) as caught:
      two_stream.check_stream(saved_model.load_model(self.models['rgb']), self.models['rgb'],
                              self.data['flow', 1])
    self.assertEqual((caught.exception.reason, caught.exception.option),
                     ('wrong_stream', 'rgb_data'))

  def test_an_export_copied_without_one_of_its_two_files_is_refused_naming_it(self):
    copy = shutil.copytree(saved_model.saved_model_dir(self.models['rgb']),
                           os.path.join(self.create_tempdir().full_path, 'rgb_export'))
    info = os.path.join(copy, export_info.ASSETS_DIR, export_info.INFO_FILE)
    os.remove(info)
    with self.assertRaises(export_info.ExportInfoError) as caught:
      export_info.read(copy)
    self.assertEqual((caught.exception.path, caught.exception.reason), (info, 'missing'))
    self.assert_refused(self.args(rgb_model=copy), 'TwoStreamError', ['rgb_model'])

  def test_an_export_whose_class_names_file_is_not_its_graphs_list_is_refused(self):
    copy = shutil.copytree(self.models['rgb'], os.path.join(
        self.create_tempdir().full_path, 'rgb_model'))
    names_file = os.path.join(saved_model.saved_model_dir(copy), export_info.ASSETS_DIR,
                              export_info.CLASS_NAMES_FILE)
    with open(names_file) as f:
      names = f.read().split()
    with open(names_file, 'w') as f:  # another model's order, or "fixed" by hand
      f.write('\n'.join(names[1:] + names[:1]) + '\n')
    model = saved_model.load_model(copy, 'rgb')
    self.assertEqual(saved_model.signature_class_names(model), names)
    with self.assertRaises(two_stream.TwoStreamError) as caught:
      two_stream.check_stream(model, copy, self.data['rgb', 1])
    self.assertEqual((caught.exception.reason, caught.exception.path),
                     ('names_disagree', names_file))
    with self.assertRaises(ClassifyError) as caught:
      classifier.load_stream(copy)
    self.assertEqual((caught.exception.reason, caught.exception.option),
                     ('names_disagree', 'model'))
    self.assertEqual(list(classifier.load_stream(self.models['rgb']).class_names), names)


if __name__ == '__main__':
  tf.test.main()

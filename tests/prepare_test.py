"""//data_tools:prepare: records, manifest, every bad input reported (not fatal), --strict,
resume after an interruption, idempotent reruns."""

import glob
import json
import os
import re
import shutil
import tempfile
import types
from typing import Any

import numpy as np
import tensorflow as tf

from tests import program_runs
from data_tools import layouts, make_synthetic_ucf101, prepare

from input_fn import datasets, frame_folders, records, ucf101, video_lists

SPLIT = 'ucfTrainTestlist'


def append_lines(path: str, lines: list[str]) -> None:
  with open(path, 'ab') as f:
    f.write(''.join(line + '\r\n' for line in lines).encode())


def read_records(out: str, subset: str) -> list[dict]:
  rows = []
  for path in sorted(glob.glob(os.path.join(out, f'{subset}-*.tfrecord'))):
    for raw in tf.data.TFRecordDataset(path):
      parsed = records.parse(raw)
      rows.append({'video': parsed['video'].numpy().decode(), 'label': int(parsed['label']),
                   'num_frames': int(parsed['num_frames']), 'index': int(parsed['index']),
                   'frames': len(parsed['frames'])})
  return rows


def manifest_files(out: str) -> list[str]:
  return sorted(glob.glob(os.path.join(out, '*.manifest.json')))


def prepare_plan(config: prepare.PrepareOptions) -> dict[str, Any]:
  """Runs `prepare` and returns its `prepare_plan` status event."""
  with program_runs.recorded_events() as events:
    prepare.prepare(config, log=lambda s: None)
  return next(e for e in events if e['event'] == 'prepare_plan')


class PrepareTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.clean = os.path.join(tempfile.mkdtemp(), 'ucf')
    make_synthetic_ucf101.make_dataset(cls.clean, classes=2, groups=9, min_frames=8,
                                       max_frames=12, write_frames=True)

  def config(self, data: str, out: str, **kwargs) -> prepare.PrepareOptions:
    values = dict(source='videos', data_dir=data, out=out, short_side=0, videos_per_shard=2,
                  workers=1)
    values.update(kwargs)
    return prepare.PrepareOptions(**values)

  def copy(self) -> str:
    data = os.path.join(self.create_tempdir().full_path, 'ucf')
    shutil.copytree(self.clean, data)
    return data

  def test_folder_flags_of_another_source_and_a_flow_channel_as_frames_are_refused(self):
    root = self.create_tempdir().full_path
    for channel in ('u', 'v'):
      os.makedirs(os.path.join(root, 'tvl1_flow', channel, 'v_A_g01_c01'))
    folder, listing = os.path.join(root, 'tvl1_flow'), os.path.join(root, 'rgb.txt')
    with open(listing, 'w') as f:
      f.write('')
    for flags, option in ((dict(flow_dir=folder), 'flow_dir'),
                          (dict(flow_list=listing), 'flow_list'),
                          (dict(frames_dir=folder), 'frames_dir'),
                          (dict(frame_list=listing), 'frame_list'),
                          (dict(source='flow', frames_dir=folder), 'frames_dir'),
                          (dict(source='frames', videos_dir=folder), 'videos_dir'),
                          (dict(source='frames', frames_dir=os.path.join(folder, 'u')),
                           'frames_dir')):
      with self.subTest(flags=flags):
        with self.assertRaises(prepare.PrepareError) as caught:
          prepare.check_options(prepare.PrepareOptions(data_dir=root, out=root + '/out',
                                                       **flags))
        self.assertEqual(caught.exception.option, option)

  def test_no_layout_found_names_a_listed_video_and_the_folder_looked_in(self):
    # extract_flow's flat u/<video>/ folders, read for a list whose videos are Class/v_X.
    flow = self.create_tempdir().full_path
    for channel in ('u', 'v'):
      os.makedirs(os.path.join(flow, channel, 'v_X'))
      with open(frame_folders.frame_path(os.path.join(flow, channel, 'v_X'), 0), 'wb') as f:
        f.write(b'')
    with self.assertRaises(layouts.LayoutError) as caught:
      layouts.resolve(layouts.AUTO, flow, ['Class/v_X'], {}, True, '--flow_dir')
    self.assertEqual((caught.exception.option, caught.exception.example),
                     ('flow_dir', ('Class/v_X', os.path.join(flow, 'u', 'Class', 'v_X'))))

  def test_records_hold_every_frame_label_name_and_split_index(self):
    out = self.create_tempdir().full_path
    manifests = prepare.prepare(self.config(self.clean, out), log=lambda s: None)
    rows = read_records(out, 'train')
    split = ucf101.read_split(os.path.join(self.clean, SPLIT), 1)
    self.assertEqual(sorted(r['video'] for r in rows), sorted(e.name for e in split.train))
    for row in rows:
      entry = next(e for e in split.train if e.name == row['video'])
      self.assertEqual((row['label'], row['index']), (entry.label, entry.index))
      self.assertEqual(row['frames'], row['num_frames'])
      self.assertBetween(row['num_frames'], 8, 12)
    manifest = manifests['train']
    self.assertEqual(manifest['num_records'], 4)
    self.assertEqual(manifest['counts_per_class'], {'MoveRightSpeed1': 2, 'MoveLeftSpeed1': 2})
    self.assertEqual(sum(s['records'] for s in manifest['shards']), 4)
    with open(os.path.join(out, 'test.manifest.json')) as f:
      self.assertEqual(json.load(f)['num_records'], 14)

  def test_short_side_resize(self):
    out = self.create_tempdir().full_path
    prepare.prepare(self.config(self.clean, out, short_side=64, subsets=('train',)),
                    log=lambda s: None)
    raw = next(iter(tf.data.TFRecordDataset(glob.glob(os.path.join(out, 'train-*'))[0])))
    parsed = records.parse(raw)
    self.assertEqual(tf.io.decode_jpeg(parsed['frames'][0]).shape, (64, 85, 3))
    self.assertEqual((int(parsed['height']), int(parsed['width'])), (64, 85))

  def _break_videos(self, data: str) -> dict[str, str]:
    """Every kind of bad video and list line; returns {kind: what}."""
    videos = os.path.join(data, 'UCF-101')
    lists = os.path.join(data, SPLIT)
    right = os.path.join(videos, 'MoveRightSpeed1')
    good = open(os.path.join(right, 'v_MoveRightSpeed1_g01_c01.avi'), 'rb').read()
    open(os.path.join(right, 'v_MoveRightSpeed1_g01_c01.avi'), 'wb').close()  # zero bytes
    with open(os.path.join(right, 'v_MoveRightSpeed1_g02_c01.avi'), 'wb') as f:
      f.write(good[:len(good) // 2])  # truncated
    with open(os.path.join(right, 'v_MoveRightSpeed1_g03_c01.avi'), 'wb') as f:
      f.write(np.random.default_rng(0).bytes(3000))  # undecodable
    corrupt = bytearray(good)
    at = corrupt.find(b'\xff\xd8\xff')
    while at >= 0:  # blank every JPEG frame from SOI to EOI, keep the AVI container
      end = corrupt.find(b'\xff\xd9', at) + 2
      corrupt[at:end] = bytes(end - at)
      at = corrupt.find(b'\xff\xd8\xff', end)
    with open(os.path.join(right, 'v_MoveRightSpeed1_g04_c01.avi'), 'wb') as f:
      f.write(bytes(corrupt))  # a container without a readable frame
    os.remove(os.path.join(right, 'v_MoveRightSpeed1_g05_c01.avi'))  # listed, not there
    append_lines(os.path.join(lists, 'testlist01.txt'), [
        'NoSuchClass/v_NoSuchClass_g01_c01.avi',   # unknown class
        'two words here',                          # malformed
    ])
    append_lines(os.path.join(lists, 'trainlist01.txt'), [
        'MoveLeftSpeed1/v_MoveLeftSpeed1_g09_c02.avi 9',  # label out of range
    ])

  def test_every_bad_input_is_skipped_with_its_reason(self):
    data = self.copy()
    self._break_videos(data)
    out = self.create_tempdir().full_path
    manifests = prepare.prepare(self.config(data, out), log=lambda s: None)
    test = manifests['test']
    kinds = test['skipped_by_kind']
    self.assertEqual(kinds, {'empty file': 1, 'truncated video': 1, 'undecodable video': 1,
                             'no readable frame': 1, 'missing file': 1, 'unknown class': 1,
                             'malformed line': 1})
    self.assertEqual(test['num_records'], 14 - 5)
    self.assertEqual(manifests['train']['skipped_by_kind'], {'label out of range': 1})
    by_kind = {s['kind']: s for s in test['skipped']}
    self.assertIn('v_MoveRightSpeed1_g01_c01.avi', by_kind['empty file']['input'])
    self.assertIn('testlist01.txt:1', by_kind['empty file']['reason'])
    self.assertTrue(by_kind['missing file']['input'].endswith('testlist01.txt'))
    self.assertEqual(by_kind['missing file']['line'], 5)
    self.assertEqual(by_kind['unknown class']['line'], 15)
    self.assertEqual(by_kind['malformed line']['line'], 16)
    # 9 + 7 skipped = 16 lines
    self.assertEqual((test['num_records'], test['num_skipped'], test['num_listed']), (9, 7, 16))
    names = {r['video'] for r in read_records(out, 'test')}
    self.assertNotIn('v_MoveRightSpeed1_g01_c01', names)
    self.assertIn('v_MoveRightSpeed1_g06_c01', names)

  def test_frame_folder_problems_are_skipped_and_short_folders_kept(self):
    data = self.copy()
    frames = os.path.join(data, 'jpegs_256')
    shutil.rmtree(os.path.join(frames, 'v_MoveRightSpeed1_g01_c01'))  # missing folder
    os.remove(frame_folders.frame_path(os.path.join(frames, 'v_MoveRightSpeed1_g02_c01'), 2))  # gap
    tail = os.path.join(frames, 'v_MoveRightSpeed1_g03_c01')
    count, _ = frame_folders.count_frames(tail)
    for i in (count - 1, count - 2):  # 2 fewer than rgb.txt says: tolerated
      os.remove(frame_folders.frame_path(tail, i))
    out = self.create_tempdir().full_path
    manifest = prepare.prepare(self.config(data, out, source='frames', subsets=('test',)),
                               log=lambda s: None)['test']
    self.assertEqual(manifest['skipped_by_kind'], {'missing frame folder': 1,
                                                   'missing frames': 1})
    gap = next(s for s in manifest['skipped'] if s['kind'] == 'missing frames')
    self.assertIn('frame000003.jpg', gap['reason'])
    rows = {r['video']: r for r in read_records(out, 'test')}
    self.assertEqual(rows['v_MoveRightSpeed1_g03_c01']['num_frames'], count - 2)
    self.assertLen(rows, 12)

  @staticmethod
  def relabel_frame_list(listing: str, rows: list[list[str]], relabel) -> None:
    """Writes the frame list `listing` as its `rows` (as first read), each label replaced
    by `relabel(row index, label)`."""
    with open(listing, 'w') as f:
      f.write(''.join(f'{n} {p} {c} {relabel(i, label)}\n'
                      for i, (n, p, c, label) in enumerate(rows)))

  def assert_frame_list_refused(self, data: str, out: str, listing: str) -> None:
    """Preparing data's frames into `out` stops before work naming `listing` and
    --frame_list."""
    with self.assertRaises(video_lists.DatasetError) as caught:
      prepare.prepare(self.config(data, out, source='frames'), log=lambda s: None)
    self.assertEqual((caught.exception.path, caught.exception.option),
                     (listing, 'frame_list'))
    self.assertEmpty(manifest_files(out) if os.path.isdir(out) else [])

  def test_a_frame_list_counted_from_one_stops_both_routes_naming_it(self):
    data = self.copy()
    listing = os.path.join(data, ucf101.FRAME_LIST_NAME)
    rows = [text.split() for _, text in video_lists.read_lines(listing)]
    self.relabel_frame_list(listing, rows, lambda i, label: int(label) + 1)
    self.assert_frame_list_refused(data, os.path.join(self.create_tempdir().full_path, 'out'),
                                   listing)
    with self.assertRaises(video_lists.DatasetError) as direct:
      datasets.direct_frame_list(types.SimpleNamespace(data_dir=data, stream='rgb'), 2)
    self.assertEqual((direct.exception.path, direct.exception.option), (listing, 'data_dir'))

  def test_a_frame_list_in_another_class_order_stops_before_work_naming_it(self):
    data = self.copy()
    listing = os.path.join(data, ucf101.FRAME_LIST_NAME)
    rows = [text.split() for _, text in video_lists.read_lines(listing)]
    swapped = {'0': '1', '1': '0'}  # classes 0 and 1 of another class list's order
    self.relabel_frame_list(listing, rows, lambda i, label: swapped.get(label, label))
    out = os.path.join(self.create_tempdir().full_path, 'out')
    self.assert_frame_list_refused(data, out, listing)
    # One row of another label is that video's problem, counted: the rest is prepared.
    self.relabel_frame_list(listing, rows, lambda i, label: swapped[label] if i == 0 else label)
    prepared = prepare.prepare(self.config(data, out, source='frames'), log=lambda s: None)
    skipped = sum(m['skipped_by_kind'].get('label mismatch', 0) for m in prepared.values())
    self.assertEqual(skipped, 1)

  def test_strict_fails_on_the_first_bad_input_naming_file_and_line(self):
    data = self.copy()
    append_lines(os.path.join(data, SPLIT, 'trainlist01.txt'),
                 ['MoveLeftSpeed1/v_MoveLeftSpeed1_g09_c02.avi 9'])
    with self.assertRaises(video_lists.InputError) as caught:
      prepare.prepare(self.config(data, self.create_tempdir().full_path, strict=True),
                      log=lambda s: None)
    problem = caught.exception.problem
    self.assertEqual((os.path.basename(problem.source), problem.line, problem.kind),
                     ('trainlist01.txt', 5, 'label out of range'))
    data = self.copy()
    open(os.path.join(data, 'UCF-101', 'MoveLeftSpeed1', 'v_MoveLeftSpeed1_g08_c01.avi'),
         'wb').close()
    with self.assertRaises(video_lists.InputError) as caught:
      prepare.prepare(self.config(data, self.create_tempdir().full_path, strict=True),
                      log=lambda s: None)
    problem = caught.exception.problem
    self.assertEqual((os.path.basename(problem.source), problem.kind),
                     ('v_MoveLeftSpeed1_g08_c01.avi', 'empty file'))

  def test_resumed_preparation_equals_an_uninterrupted_one_and_reruns_change_nothing(self):
    whole = self.create_tempdir().full_path
    prepare.prepare(self.config(self.clean, whole), log=lambda s: None)
    resumed = self.create_tempdir().full_path
    with self.assertRaises(prepare.PrepareInterrupted):
      prepare.prepare(self.config(self.clean, resumed), log=lambda s: None,
                      stop_after_shards=3)
    # A shard being written when the run died leaves a partial temporary file.
    with open(os.path.join(resumed, 'test-00004-of-00007.tfrecord.tmp'), 'wb') as f:
      f.write(b'partial')
    done_before = sorted(glob.glob(os.path.join(resumed, '*.tfrecord')))
    self.assertLen(done_before, 3)
    mtimes = {p: os.stat(p).st_mtime_ns for p in done_before}
    plan = prepare_plan(self.config(self.clean, resumed))
    self.assertEqual((plan['videos'], plan['shards'], plan['workers']), (12, 6, 1))
    for path, mtime in mtimes.items():
      self.assertEqual(os.stat(path).st_mtime_ns, mtime, f'{path} was rewritten')
    names = lambda d: sorted(os.path.basename(p) for p in glob.glob(os.path.join(d, '*')))
    self.assertEqual(names(resumed), names(whole))
    for name in names(whole):
      with open(os.path.join(whole, name), 'rb') as a, open(os.path.join(resumed, name),
                                                           'rb') as b:
        self.assertEqual(a.read(), b.read(), name)
    plan = prepare_plan(self.config(self.clean, resumed))
    self.assertEqual((plan['videos'], plan['shards']), (0, 0))
    self.assertEqual(plan['subsets'], {'train': {'shards': 2, 'already_done': 2},
                                       'test': {'shards': 7, 'already_done': 7}})

  def test_a_second_prepare_into_an_out_being_written_is_refused(self):
    out = self.create_tempdir().full_path
    with prepare.writing_out_dir(out):  # as a prepare writing it holds it
      with self.assertRaises(prepare.PrepareError) as caught:
        prepare.prepare(self.config(self.clean, os.path.join(out, '.', '')),
                        log=lambda s: None)
      self.assertEqual(caught.exception.option, 'out')
      self.assertEqual(manifest_files(out), [])
    prepare.prepare(self.config(self.clean, out), log=lambda s: None)  # then it may
    self.assertLen(manifest_files(out), 2)

  def test_changed_settings_need_overwrite_and_then_redo_the_shards(self):
    out = self.create_tempdir().full_path
    prepare.prepare(self.config(self.clean, out, subsets=('train',)), log=lambda s: None)
    with self.assertRaises(prepare.PrepareError) as caught:
      prepare.prepare(self.config(self.clean, out, subsets=('train',), short_side=32),
                      log=lambda s: None)
    self.assertEqual((caught.exception.option, caught.exception.differences),
                     ('out', ('short_side',)))
    plan = prepare_plan(self.config(self.clean, out, subsets=('train',), short_side=32,
                                    overwrite=True))
    self.assertEqual((plan['videos'], plan['shards'], plan['workers']), (4, 2, 1))

  def test_a_subset_kept_from_before_the_lists_changed_is_refused(self):
    # --subsets=train, then a clip of a training group added to the test list, then
    # --subsets=test: the train records would hold a clip the split now keeps out.
    data, out = self.copy(), self.create_tempdir().full_path
    prepare.prepare(self.config(data, out, subsets=('train',)), log=lambda s: None)
    lists = os.path.join(data, 'ucfTrainTestlist')
    trained = ucf101.read_split(lists, 1).train[0]
    append_lines(os.path.join(lists, 'testlist01.txt'),
                 [re.sub(r'_c\d+\.avi$', '_c99.avi', trained.rel_path)])
    with self.assertRaises(prepare.PrepareError) as caught:
      prepare.prepare(self.config(data, out, subsets=('test',)), log=lambda s: None)
    self.assertEqual(caught.exception.option, 'subsets')
    self.assertIn(trained.name, str(caught.exception))
    self.assertIn('test group in training list', str(caught.exception))
    self.assertFalse(os.path.exists(os.path.join(out, 'test.manifest.json')))
    # Both subsets prepared again: the clip is out of training.
    prepare.prepare(self.config(data, out, subsets=('train', 'test')), log=lambda s: None)
    self.assertNotIn(trained.name, [r['video'] for r in read_records(out, 'train')])

  def test_a_subset_kept_whose_list_now_gives_more_videos_is_refused(self):
    # --subsets=test, then a video added to the test list, then --subsets=train: the test
    # records would lack it, evaluated as if they were the whole list.
    data, out = self.copy(), self.create_tempdir().full_path
    prepare.prepare(self.config(data, out, subsets=('test',)), log=lambda s: None)
    lists = os.path.join(data, 'ucfTrainTestlist')
    tested = ucf101.read_split(lists, 1).test[0]
    added = re.sub(r'_c\d+$', '_c99', tested.name)
    shutil.copy(os.path.join(data, 'UCF-101', tested.rel_path),
                os.path.join(data, 'UCF-101', os.path.dirname(tested.rel_path), added + '.avi'))
    append_lines(os.path.join(lists, 'testlist01.txt'),
                 [f'{os.path.dirname(tested.rel_path)}/{added}.avi'])
    with self.assertRaises(prepare.PrepareError) as caught:
      prepare.prepare(self.config(data, out, subsets=('train',)), log=lambda s: None)
    self.assertEqual(caught.exception.option, 'subsets')
    self.assertIn(added, str(caught.exception))
    self.assertFalse(os.path.exists(os.path.join(out, 'train.manifest.json')))
    # Both prepared again: the test records hold it.
    prepare.prepare(self.config(data, out, subsets=('train', 'test')), log=lambda s: None)
    self.assertIn(added, [r['video'] for r in read_records(out, 'test')])

  def test_process_pool_gives_the_same_records(self):
    one = self.create_tempdir().full_path
    pool = self.create_tempdir().full_path
    prepare.prepare(self.config(self.clean, one, subsets=('train',)), log=lambda s: None)
    prepare.prepare(self.config(self.clean, pool, subsets=('train',), workers=2),
                    log=lambda s: None)
    self.assertEqual(read_records(one, 'train'), read_records(pool, 'train'))


if __name__ == '__main__':
  tf.test.main()

"""Users' own text files and paths: read alike with or without a byte-order mark, CRLF or
trailing whitespace; a video is its file (any spelling, symlink or hard link); class-names lines that would shift labels,
HMDB51 trees that disagree with their split files, multi-label lines and rawframe counts
that disagree with their folders are named, never silently renumbered or dropped.

testdata/mmaction2/ holds MMAction2's multi-label list (SOURCE.md); the HMDB51 split files are
the real sample of testdata/hmdb51_splits/."""

import glob
import os
import shutil
import tempfile
import types
import zlib
from typing import Sequence

import cv2
import numpy as np
from absl.testing import absltest

from data_tools import prepare
from input_fn import data_checks, datasets, frame_folders, ucf101, video_io, video_lists
from serving import classifier
from towers import params as params_lib

TESTDATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'testdata')
HMDB51_SAMPLE = os.path.join(TESTDATA, 'hmdb51_splits')
MULTI_LABEL = os.path.join(TESTDATA, 'mmaction2', 'video_test_list_multi_label.txt')


def write(path: str, text: str) -> str:
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, 'w') as f:
    f.write(text)
  return path


def decorate(path: str) -> None:
  """Rewrites a text file as a Windows editor may save it: a UTF-8 byte-order mark, CRLF,
  trailing spaces and tabs."""
  with open(path, encoding='utf-8') as f:
    lines = f.read().splitlines()
  with open(path, 'wb') as f:
    f.write(b'\xef\xbb\xbf' + ''.join(line + ' \t\r\n' for line in lines).encode())


def hmdb51_tree(root: str) -> str:
  """The real split-file sample with an .avi (holding its own name: no two are copies)
  of every listed video under hmdb51_org/<class>/; returns the split folder."""
  splits = os.path.join(root, 'testTrainMulti_7030_splits')
  shutil.copytree(HMDB51_SAMPLE, splits)
  for name in os.listdir(splits):
    if name.endswith('_test_split1.txt'):
      for _, text in video_lists.read_lines(os.path.join(splits, name)):
        write(os.path.join(root, 'hmdb51_org', name[:-len('_test_split1.txt')],
                           text.split()[0]), text.split()[0])
  return splits


def entries(split: video_lists.Split) -> dict[str, list[tuple[str, str, int]]]:
  return {s: [(e.name, e.class_name, e.label) for e in split.subset(s)]
          for s in ('train', 'test')}


class OneReaderTest(absltest.TestCase):
  """Every user text file reads the same decorated (BOM, CRLF, trailing spaces and tabs)."""

  def setUp(self):
    super().setUp()
    self.root = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, self.root, ignore_errors=True)

  def test_hmdb51_split_files_keep_the_first_video_of_every_class(self):
    splits = hmdb51_tree(self.root)
    plain = datasets.read_split('hmdb51', splits, 1)
    for name in os.listdir(splits):
      decorate(os.path.join(splits, name))
    decorated = datasets.read_split('hmdb51', splits, 1)
    self.assertEqual(decorated.problems, [])
    self.assertEqual(entries(decorated), entries(plain))
    self.assertEqual(decorated.unused, plain.unused)
    self.assertLen(plain.train + plain.test, 11)

  def test_ucf101_class_index_split_lists_and_frame_list(self):
    folder = os.path.join(self.root, 'ucfTrainTestlist')
    write(os.path.join(folder, 'classInd.txt'), '1 ApplyEyeMakeup\n2 Archery\n')
    write(os.path.join(folder, 'trainlist01.txt'),
          'ApplyEyeMakeup/v_ApplyEyeMakeup_g08_c01.avi 1\nArchery/v_Archery_g08_c01.avi 2\n')
    write(os.path.join(folder, 'testlist01.txt'),
          'ApplyEyeMakeup/v_ApplyEyeMakeup_g01_c01.avi\nArchery/v_Archery_g01_c01.avi\n')
    frame_list = write(os.path.join(self.root, 'rgb.txt'),
                       'v_ApplyEyeMakeup_g08_c01 a 30 0\nv_Archery_g08_c01 b 25 1\n')
    plain = ucf101.read_split(folder, 1), video_lists.read_frame_list(frame_list)
    for name in os.listdir(folder):
      decorate(os.path.join(folder, name))
    decorate(frame_list)
    split, (infos, problems) = ucf101.read_split(folder, 1), video_lists.read_frame_list(frame_list)
    self.assertEqual((split.problems, problems), ([], []))
    self.assertEqual((split.classes.names, entries(split)),
                     (plain[0].classes.names, entries(plain[0])))
    self.assertEqual(infos, plain[1][0])

  def test_mmaction2_lists_and_class_names(self):
    for rel in ('abseiling/a1.mp4', 'juggling/j1.mp4'):
      write(os.path.join(self.root, rel), rel)  # each its own bytes
    lists = datasets.ListFiles(write(os.path.join(self.root, 'train.txt'), 'abseiling/a1.mp4 0\n'),
                               write(os.path.join(self.root, 'test.txt'), 'juggling/j1.mp4 1\n'),
                               write(os.path.join(self.root, 'classes.txt'),
                                     'abseiling\njuggling\n'), self.root)
    plain = datasets.read_list_split(lists)
    for path in (lists.train, lists.test, lists.class_names):
      decorate(path)
    decorated = datasets.read_list_split(lists)
    self.assertEqual(decorated.problems, [])
    self.assertEqual(decorated.classes.names, ('abseiling', 'juggling'))
    self.assertEqual(entries(decorated), entries(plain))

  def test_a_file_that_is_not_utf8_is_refused_naming_it_and_the_line(self):
    for encoding, data, line in (('utf-16', 'a.avi 0\nb.avi 1\n'.encode('utf-16'), 0),
                                 ('latin-1', 'abseiling\njuggl\xe9\n'.encode('latin-1'), 2)):
      with self.subTest(encoding):
        path = os.path.join(self.root, f'{encoding}.txt')
        with open(path, 'wb') as f:
          f.write(data)
        with self.assertRaises(datasets.DatasetError) as caught:
          video_lists.read_lines(path)
        self.assertEqual((caught.exception.path, caught.exception.line), (path, line))

  def test_classify_video_lists(self):
    for rel in ('clips/a.mp4', 'clips/b.mp4'):
      write(os.path.join(self.root, rel), rel)  # each its own bytes
    listed = write(os.path.join(self.root, 'videos.txt'),
                   '# my clips\nclips/a.mp4\nclips/b.mp4 1\n')
    plain = classifier.find_videos([listed])
    decorate(listed)
    self.assertEqual(classifier.find_videos([listed]), plain)
    self.assertTrue(all(os.path.isfile(path) for path in plain))
    self.assertLen(plain, 2)  # the comment is no video

  def test_classify_keeps_a_given_folder_without_videos_beside_other_videos(self):
    video = write(os.path.join(self.root, 'clips', 'a.mp4'), 'x')
    empty, pngs = (os.path.join(self.root, name) for name in ('empty', 'pngs'))
    os.makedirs(empty)
    write(os.path.join(pngs, 'frame000001.png'), 'x')
    # Classifying them reports each as failed; alone they are nothing to classify.
    self.assertEqual(classifier.find_videos([video, empty, pngs]), [video, empty, pngs])
    self.assertEqual(classifier.find_videos([empty, pngs]), [])

  def test_classify_passes_over_the_flow_folders_of_a_dataset_tree(self):
    # A prepared UCF101 root holds each video three more times as folders of frames: RGB
    # (jpegs_256/) and, under tvl1_flow/u/ and v/, one flow channel each; those are no RGB.
    write(os.path.join(self.root, 'UCF-101', 'A', 'v_A_g01_c01.avi'), 'x')
    for folder in ('jpegs_256/v_A_g01_c01', 'tvl1_flow/u/v_A_g01_c01',
                   'tvl1_flow/v/v_A_g01_c01'):
      write(os.path.join(self.root, folder, 'frame000001.jpg'), 'x')
    for name in ('flow_x_00001.jpg', 'flow_y_00001.jpg'):  # MMAction2's flow-only folders
      write(os.path.join(self.root, 'rawflow', 'v_A_g01_c01', name), 'x')
    with self.assertLogs(level='WARNING') as logged:
      found = classifier.find_videos([self.root])
    self.assertEqual(found, [os.path.join(self.root, 'UCF-101', 'A', 'v_A_g01_c01.avi'),
                             os.path.join(self.root, 'jpegs_256', 'v_A_g01_c01')])
    self.assertIn('passed over 3 folders of optical flow', logged.output[0])
    self.assertIn('1 video is found more than once', logged.output[1])
    with self.assertLogs(level='WARNING'):  # one flow channel given by its path
      self.assertEqual(classifier.find_videos(
          [os.path.join(self.root, 'tvl1_flow', 'u', 'v_A_g01_c01')]), [])

  def test_one_video_given_by_several_spellings_is_classified_once(self):
    video = write(os.path.join(self.root, 'UCF-101', 'A', 'v_A_g01_c01.avi'), 'x')
    relative = os.path.relpath(video)
    with self.assertLogs(level='WARNING') as logged:
      found = classifier.find_videos([video, os.path.join('.', relative), relative])
    self.assertEqual(found, [video])
    self.assertIn('1 video is given more than once', logged.output[0])
    self.assertNotIn('frame folder', logged.output[0])

  def test_a_list_beside_the_video_folder_finds_its_videos_and_says_where_it_looked(self):
    video = write(os.path.join(self.root, 'UCF-101', 'A', 'v_A_g01_c01.avi'), 'x')
    listed = write(os.path.join(self.root, 'mylist.txt'), 'A/v_A_g01_c01.avi\nA/v_A_g09_c01.avi\n')
    missing = os.path.join(self.root, 'A', 'v_A_g09_c01.avi')
    self.assertEqual(classifier.find_videos([listed]), [video, missing])
    found, unfound = classifier.find_inputs([listed])
    self.assertEqual((found, list(unfound)), ([video, missing], [missing]))
    for looked in (missing, os.path.join(self.root, 'UCF-101', 'A', 'v_A_g09_c01.avi')):
      self.assertIn(looked, unfound[missing])


class VideoIdentityTest(absltest.TestCase):
  """A listed video is its file, however the line spells it (symlinks and hard links too)."""

  def setUp(self):
    super().setUp()
    self.root = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, self.root, ignore_errors=True)
    for rel in ('vids/v1.avi', 'vids/v4.avi', 'vids/test.avi', 'vids/test.mp4'):
      write(os.path.join(self.root, rel), rel)
    os.symlink('v4.avi', os.path.join(self.root, 'vids', 'link4.avi'))
    self.classes = write(os.path.join(self.root, 'classes.txt'), 'a\nb\n')

  def split(self, train: str, test: str) -> video_lists.Split:
    return datasets.read_list_split(datasets.ListFiles(
        write(os.path.join(self.root, 'train.txt'), train),
        write(os.path.join(self.root, 'test.txt'), test), self.classes, self.root))

  def test_a_test_video_is_never_trained_on_whatever_its_spelling(self):
    absolute = os.path.join(self.root, 'vids', 'v4.avi')
    for spelling in ('vids/./v4.avi', absolute, 'vids/../vids/v4.avi', 'vids/link4.avi'):
      with self.subTest(spelling=spelling):
        split = self.split(f'vids/v1.avi 0\n{spelling} 1\n', 'vids/v4.avi 1\n')
        self.assertEqual([e.name for e in split.train], ['vids/v1'])
        self.assertEqual([(p.line, p.kind) for p in split.problems],
                         [(2, 'test video in training list')])

  def test_one_file_under_two_spellings_is_one_video(self):
    split = self.split(f'vids/v1.avi 0\n./vids/v1.avi 0\n{self.root}/vids/v1.avi 0\n',
                       'vids/v4.avi 1\nvids/link4.avi 1\n')
    self.assertEqual([e.name for e in split.train], ['vids/v1'])
    self.assertEqual([e.name for e in split.test], ['vids/v4'])
    self.assertEqual(sorted((os.path.basename(p.source), p.line, p.kind)
                            for p in split.problems),
                     [('test.txt', 2, 'duplicate'), ('train.txt', 2, 'duplicate'),
                      ('train.txt', 3, 'duplicate')])

  def test_a_video_given_two_labels_is_one_conflicting_label_not_a_duplicate(self):
    split = self.split('vids/v1.avi 0\nvids/v4.avi 1\n./vids/v1.avi 1\nvids/v1.avi 1\n'
                       'vids/v4.avi 1\n', 'vids/test.avi 0\n')
    self.assertEqual([(p.line, p.kind) for p in split.problems],
                     [(3, 'conflicting label'), (5, 'duplicate')])
    self.assertEqual([(e.name, e.index) for e in split.train], [('vids/v4', 0)])

  def test_a_video_given_one_label_for_training_and_another_for_testing_is_kept_out(self):
    split = self.split('vids/v1.avi 0\nvids/v4.avi 0\n', 'vids/test.avi 1\n./vids/v4.avi 1\n')
    self.assertEqual([(e.name, e.index) for e in split.train], [('vids/v1', 0)])
    self.assertEqual([(e.name, e.index) for e in split.test], [('vids/test', 0)])
    self.assertEqual([(os.path.basename(p.source), p.line, p.kind, p.subset)
                      for p in split.problems],
                     [('train.txt', 2, 'conflicting label', 'train'),
                      ('test.txt', 2, 'conflicting label', 'test')])

  def test_a_hard_link_to_a_training_video_is_that_video(self):
    os.link(os.path.join(self.root, 'vids', 'v4.avi'), os.path.join(self.root, 'vids', 'hard4.avi'))
    for label, kind in ((1, 'test video in training list'), (0, 'conflicting label')):
      with self.subTest(label=label):
        split = self.split('vids/v1.avi 0\nvids/v4.avi 1\n', f'vids/hard4.avi {label}\n')
        self.assertEqual([e.name for e in split.train], ['vids/v1'])
        self.assertEqual(sorted((os.path.basename(p.source), p.line, p.kind)
                                for p in split.problems),
                         [('test.txt', 1, kind)] * (kind == 'conflicting label') +
                         [('train.txt', 2, kind)])

  def test_a_list_counted_from_one_is_refused_naming_it(self):
    for train, test, option in (('vids/v1.avi 1\nvids/v4.avi 2\n', 'vids/test.avi 1\n',
                                 'train_list'),
                                ('vids/v1.avi 0\n', 'vids/test.avi 2\nvids/v4.avi 1\n',
                                 'test_list')):
      with self.subTest(option):
        with self.assertRaises(datasets.DatasetError) as caught:
          self.split(train, test)
        self.assertEqual((caught.exception.line, caught.exception.option),
                         (train.count('\n') if option == 'train_list' else 1, option))
    # Counted from 0 with the last class listed, or with label 0 missing only: as before.
    self.assertLen(self.split('vids/v1.avi 0\nvids/v4.avi 1\n', 'vids/test.avi 1\n').train, 2)
    self.assertLen(self.split('vids/v1.avi 1\n', 'vids/test.avi 1\n').train, 1)

  def test_two_files_differing_by_extension_are_two_videos(self):
    split = self.split('vids/test.avi 0\n', 'vids/test.mp4 1\n')
    self.assertEqual(split.problems, [])
    self.assertEqual(([e.name for e in split.train], [e.name for e in split.test]),
                     (['vids/test.avi'], ['vids/test.mp4']))

  def test_a_models_training_videos_are_found_among_test_videos_named_by_another_dataset(self):
    trained = ['MoveDownSpeed1/v_MoveDownSpeed1_g04_c01', 'walking/001', 'vids/test.avi',
               '/data/own/Run/v_Run_g01_c02']
    tests = ['v_MoveDownSpeed1_g04_c01', 'v_movedownspeed1_G04_c01', 'v_MoveDownSpeed1_g05_c01',
             'running/001', 'walking/001', 'vids/test.mp4', 'own/Run/v_Run_g01_c02',
             'v_Run_g01_c02']
    self.assertEqual(video_lists.trained_on(trained, tests),
                     ['own/Run/v_Run_g01_c02', 'v_MoveDownSpeed1_g04_c01', 'v_Run_g01_c02',
                      'v_movedownspeed1_G04_c01', 'walking/001'])
    self.assertEqual(video_lists.trained_on(tests[:1], trained), [trained[0]])

  def test_a_respelled_list_resumes_the_shards_already_written(self):
    fingerprints = []
    for train in ('vids/v1.avi 0\n', f'./vids/../vids/v1.avi 0\n'):
      config = prepare.PrepareOptions(
          dataset='list', data_dir=self.root, out=os.path.join(self.root, 'out'),
          train_list=write(os.path.join(self.root, 'train.txt'), train),
          test_list=write(os.path.join(self.root, 'test.txt'), 'vids/v4.avi 1\n'),
          class_names=self.classes, workers=1)
      fingerprints.append([s['fingerprint'] for s in prepare.plan(config)[1]['train']])
    self.assertEqual(fingerprints[0], fingerprints[1])


class SameFileTest(absltest.TestCase):
  """A test video that is a training video's file under another name (a symlink, a hard link)
  is that video on UCF101 and HMDB51, in prepare's split and the direct route's alike."""

  def setUp(self):
    super().setUp()
    self.root = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, self.root, ignore_errors=True)

  def both_routes(self, dataset: str, source: str) -> list[list[tuple[str, int, str]]]:
    """[(list file, line, kind) of each problem] of the direct route's split and prepare's
    (source 'flow': the direct route's frames of the flow stream)."""
    params = types.SimpleNamespace(dataset=dataset, data_dir=self.root, split=1,
                                   data_source='frames' if source == 'flow' else source,
                                   stream='flow' if source == 'flow' else 'rgb')
    config = prepare.PrepareOptions(dataset=dataset, data_dir=self.root, source=source,
                                    out=os.path.join(self.root, 'out'), workers=1)
    return [sorted((os.path.basename(p.source), p.line, p.kind) for p in split.problems)
            for split in (datasets.params_split(params), prepare.plan(config)[0])]

  def ucf101(self, source: str) -> str:
    """Two classes, g08 and g09 of A for training and g01, g02, g03 for testing, one of
    B each; returns the folder of A's videos (files) or frame folders (folders)."""
    write(os.path.join(self.root, 'ucfTrainTestlist', 'classInd.txt'), '1 A\n2 B\n')
    write(os.path.join(self.root, 'ucfTrainTestlist', 'trainlist01.txt'),
          'A/v_A_g08_c01.avi 1\nA/v_A_g09_c01.avi 1\nB/v_B_g08_c01.avi 2\n')
    write(os.path.join(self.root, 'ucfTrainTestlist', 'testlist01.txt'),
          'A/v_A_g01_c01.avi\nA/v_A_g02_c01.avi\nA/v_A_g03_c01.avi\nB/v_B_g01_c01.avi\n')
    for video in ('A/v_A_g08_c01', 'A/v_A_g09_c01', 'A/v_A_g03_c01', 'B/v_B_g08_c01',
                  'B/v_B_g01_c01'):
      if source == 'videos':
        write(os.path.join(self.root, 'UCF-101', video + '.avi'), video)
      else:
        write(os.path.join(self.root, 'jpegs_256', video.split('/')[1], 'frame000001.jpg'), '')
    return os.path.join(self.root, 'UCF-101', 'A') if source == 'videos' else os.path.join(
        self.root, 'jpegs_256')

  def test_ucf101_videos_symlinked_or_hard_linked_to_a_training_video(self):
    folder = self.ucf101('videos')
    os.symlink('v_A_g08_c01.avi', os.path.join(folder, 'v_A_g01_c01.avi'))
    os.link(os.path.join(folder, 'v_A_g09_c01.avi'), os.path.join(folder, 'v_A_g02_c01.avi'))
    for problems in self.both_routes('ucf101', 'videos'):
      self.assertEqual(problems, [('trainlist01.txt', 1, 'test video in training list'),
                                  ('trainlist01.txt', 2, 'test video in training list')])

  def test_a_ucf101_frame_folder_symlinked_to_a_training_video_of_another_class(self):
    folder = self.ucf101('frames')
    os.symlink('v_B_g08_c01', os.path.join(folder, 'v_A_g01_c01'))
    for problems in self.both_routes('ucf101', 'frames'):
      self.assertEqual(problems, [('testlist01.txt', 1, 'conflicting label'),
                                  ('trainlist01.txt', 3, 'conflicting label')])

  def frame_list(self, rows: dict[str, str]) -> None:
    """rgb.txt naming each frame folder of `ucf101('frames')` (one frame each), but the
    videos of `rows` ({video: the folder its row names instead})."""
    videos = ('v_A_g08_c01 0', 'v_A_g09_c01 0', 'v_A_g03_c01 0', 'v_B_g08_c01 1',
              'v_B_g01_c01 1')
    write(os.path.join(self.root, 'rgb.txt'), ''.join(
        f'{video} jpegs_256/{rows.get(video, video)} 1 {label}\n'
        for video, label in (v.split() for v in videos)))

  def test_a_frame_list_row_naming_a_test_videos_folder_for_a_training_video(self):
    self.ucf101('frames')
    self.frame_list({'v_A_g08_c01': 'v_A_g03_c01'})
    for problems in self.both_routes('ucf101', 'frames'):
      self.assertEqual(problems, [('trainlist01.txt', 1, 'test video in training list')])

  def copy_of_test_video(self, name: str) -> None:
    """A copy (`cp -r`) of the frame folder of `ucf101('frames')`'s test video v_A_g03_c01,
    given a frame of its own, as jpegs_256/`name` (replacing a folder of that name)."""
    folder = os.path.join(self.root, 'jpegs_256')
    write(os.path.join(folder, 'v_A_g03_c01', 'frame000001.jpg'), 'the frame of g03')
    shutil.rmtree(os.path.join(folder, name), ignore_errors=True)
    shutil.copytree(os.path.join(folder, 'v_A_g03_c01'), os.path.join(folder, name))

  def test_a_copy_of_a_test_videos_frame_folder_as_a_training_videos_folder(self):
    self.ucf101('frames')
    self.copy_of_test_video('v_A_g08_c01')
    for problems in self.both_routes('ucf101', 'frames'):
      self.assertEqual(problems, [('trainlist01.txt', 1, 'test video in training list')])

  def test_a_copy_with_other_files_beside_the_frames_is_still_a_copy(self):
    self.ucf101('frames')
    self.copy_of_test_video('v_A_g08_c01')
    folder = os.path.join(self.root, 'jpegs_256')
    write(os.path.join(folder, 'v_A_g08_c01', 'Thumbs.db'), 'thumbnails')
    write(os.path.join(folder, 'v_A_g03_c01', '.DS_Store'), 'finder')
    for problems in self.both_routes('ucf101', 'frames'):
      self.assertEqual(problems, [('trainlist01.txt', 1, 'test video in training list')])

  def test_a_frame_list_row_naming_a_copy_of_a_test_videos_folder_for_a_training_video(self):
    self.ucf101('frames')
    self.copy_of_test_video('extra_clip_001')
    self.frame_list({'v_A_g09_c01': 'extra_clip_001'})
    for problems in self.both_routes('ucf101', 'frames'):
      self.assertEqual(problems, [('trainlist01.txt', 2, 'test video in training list')])

  def test_a_frame_list_row_naming_a_test_video_of_another_class_for_a_training_video(self):
    self.ucf101('frames')
    self.frame_list({'v_B_g08_c01': 'v_A_g03_c01'})
    for problems in self.both_routes('ucf101', 'frames'):
      self.assertEqual(problems, [('testlist01.txt', 3, 'conflicting label'),
                                  ('trainlist01.txt', 3, 'conflicting label')])

  def test_frame_list_rows_shifted_by_one_never_train_on_a_test_videos_folder(self):
    self.ucf101('frames')  # rows: train A g08, A g09, B g08; test A g03, B g01
    self.frame_list({'v_A_g09_c01': 'v_A_g03_c01', 'v_A_g03_c01': 'v_B_g01_c01',
                     'v_B_g01_c01': 'v_B_g08_c01', 'v_B_g08_c01': 'v_A_g08_c01',
                     'v_A_g08_c01': 'v_A_g09_c01'})
    for problems in self.both_routes('ucf101', 'frames'):
      self.assertEqual(problems, [('testlist01.txt', 3, 'conflicting label'),
                                  ('testlist01.txt', 4, 'conflicting label'),
                                  ('trainlist01.txt', 2, 'test video in training list'),
                                  ('trainlist01.txt', 3, 'test video in training list')])

  def test_two_training_rows_naming_one_folder_are_one_video(self):
    self.ucf101('frames')
    self.frame_list({'v_A_g09_c01': 'v_A_g08_c01'})
    for problems in self.both_routes('ucf101', 'frames'):
      self.assertEqual(problems, [('trainlist01.txt', 2, 'duplicate')])

  def test_two_training_rows_of_two_classes_naming_one_folder_are_a_conflicting_label(self):
    self.ucf101('frames')
    self.frame_list({'v_B_g08_c01': 'v_A_g08_c01'})
    for problems in self.both_routes('ucf101', 'frames'):
      self.assertEqual(problems, [('trainlist01.txt', 1, 'conflicting label'),
                                  ('trainlist01.txt', 3, 'conflicting label')])

  def test_a_flow_list_row_naming_a_test_videos_flow_for_a_training_video(self):
    self.ucf101('videos')
    rows = []
    for video, label in (('v_A_g08_c01', 0), ('v_A_g09_c01', 0), ('v_A_g03_c01', 0),
                         ('v_B_g08_c01', 1), ('v_B_g01_c01', 1)):
      for channel in 'uv':
        write(os.path.join(self.root, 'tvl1_flow', channel, video, 'frame000001.jpg'), '')
      folder = 'v_A_g03_c01' if video == 'v_A_g09_c01' else video
      rows.append(f'{video} tvl1_flow/{{:s}}/{folder} 1 {label}\n')
    write(os.path.join(self.root, 'flow.txt'), ''.join(rows))
    for problems in self.both_routes('ucf101', 'flow'):
      self.assertEqual(problems, [('trainlist01.txt', 2, 'test video in training list')])

  def test_an_hmdb51_test_video_linked_to_a_training_video_of_another_class(self):
    splits = hmdb51_tree(self.root)
    train = next(text.split()[0] for _, text in video_lists.read_lines(
        os.path.join(splits, 'catch_test_split1.txt')) if text.split()[1] == '1')
    other = sorted(n for n in os.listdir(splits) if n.endswith('_test_split1.txt') and
                   not n.startswith('catch'))[0]
    other_class = other[:-len('_test_split1.txt')]
    os.symlink(os.path.join('..', 'catch', train),
               os.path.join(self.root, 'hmdb51_org', other_class, 'Copy_x.avi'))
    with open(os.path.join(splits, other), 'a') as f:
      f.write('Copy_x.avi 2 \n')
    line = len(video_lists.read_lines(os.path.join(splits, other)))
    train_line = next(number for number, text in video_lists.read_lines(
        os.path.join(splits, 'catch_test_split1.txt')) if text.split()[0] == train)
    for problems in self.both_routes('hmdb51', 'videos'):
      self.assertEqual(problems, sorted([('catch_test_split1.txt', train_line, 'conflicting label'),
                                         (other, line, 'conflicting label')]))


class ClassNamesTest(absltest.TestCase):
  """A class-names line that would move the labels after it stops the run, naming it."""

  def setUp(self):
    super().setUp()
    self.root = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, self.root, ignore_errors=True)

  def read(self, text: str) -> datasets.ClassIndex:
    return datasets.read_class_names(write(os.path.join(self.root, 'classes.txt'), text))

  def assert_refused_at(self, cases: Sequence[tuple[str, int]]) -> None:
    """Each (file text, line): reading it raises DatasetError naming the file and line."""
    for text, line in cases:
      with self.subTest(text=text):
        with self.assertRaises(datasets.DatasetError) as caught:
          self.read(text)
        self.assertEqual((caught.exception.path, caught.exception.line,
                          caught.exception.option),
                         (os.path.join(self.root, 'classes.txt'), line, 'class_names'))

  def test_blank_whitespace_only_and_padded_lines_are_refused_by_line(self):
    self.assert_refused_at((('a\n\nb\nc\n', 2), ('a\nb\n \t\nc\n', 3), ('a\n  b\nc\n', 2),
                            ('a\n b \nc\n', 2)))

  def test_classind_given_as_class_names_is_refused_naming_the_file(self):
    with self.assertRaises(datasets.DatasetError) as caught:
      self.read('1 ApplyEyeMakeup\r\n2 ApplyLipstick\r\n3 Archery\r\n')
    self.assertEqual((caught.exception.line, caught.exception.option), (1, 'class_names'))
    self.assertEqual(self.read('1 cat\ndog\n').names, ('1 cat', 'dog'))  # names as written

  def test_blank_lines_ending_the_file_and_inner_spaces_are_names_as_written(self):
    self.assertEqual(self.read('air drumming\nabseiling\n\n\n').names,
                     ('air drumming', 'abseiling'))

  def test_an_annotation_list_or_label_map_given_as_class_names_is_refused_by_line(self):
    self.assert_refused_at((('cls_a/a1.avi 0\ncls_a/a2.avi 0\ncls_b/b1.avi 1\n', 1),
                            ('cat 0\ndog 1\n', 1), ('cat\nb1.mp4 1\n', 2),
                            ('cat\nApplyEyeMakeup/v_ApplyEyeMakeup_g01_c01.avi\n', 2)))
    self.assert_refused_at((('id,name\n0,cls_a\n1,cls_b\n', 2), ('cls_a,0\ncls_b,1\n', 1),
                            ('a1 0\na2 0\nb1 1\n', 1), ('cat 1\ndog 2\n', 1)))
    self.assertEqual(self.read('catch 22\ndog\n').names, ('catch 22', 'dog'))
    self.assertEqual(self.read('speed 10\nspeed 20\n').names, ('speed 10', 'speed 20'))
    self.assertEqual(self.read('a, b\nc\n').names, ('a, b', 'c'))
    kinetics = 'abseiling\nair drumming\nanswering questions\n'  # Kinetics' label map
    self.assertLen(self.read(kinetics).names, 3)


class Hmdb51TreeTest(absltest.TestCase):
  """Class folders and split files of HMDB51 that disagree stop the run before work."""

  def setUp(self):
    super().setUp()
    self.root = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, self.root, ignore_errors=True)
    self.splits = hmdb51_tree(self.root)
    self.videos = os.path.join(self.root, 'hmdb51_org')

  def refused(self, source: str = 'videos') -> datasets.DatasetError:
    """The error of both routes reading `source`: the direct route's split and prepare's,
    which writes nothing."""
    params = types.SimpleNamespace(dataset='hmdb51', data_dir=self.root, split=1,
                                   data_source=source)
    with self.assertRaises(datasets.DatasetError) as direct:
      datasets.params_split(params)
    out = os.path.join(self.root, 'out')
    with self.assertRaises(datasets.DatasetError) as prepared:
      prepare.prepare(prepare.PrepareOptions(dataset='hmdb51', data_dir=self.root, out=out,
                                            source=source, workers=1), log=lambda s: None)
    self.assertFalse(os.path.exists(out))
    self.assertEqual(str(direct.exception), str(prepared.exception))
    return prepared.exception

  def test_the_tree_as_released_is_read(self):
    params = types.SimpleNamespace(dataset='hmdb51', data_dir=self.root, split=1,
                                   data_source='videos')
    self.assertLen(datasets.params_split(params).classes, 5)

  def test_the_tree_read_as_ucf101_names_the_dataset_it_holds(self):
    params = params_lib.make_params(data_source='videos', data_dir=self.root, num_classes=5)
    self.assertEqual([(p.option, 'set --dataset=hmdb51' in p) for p in
                      data_checks.problems(params, ('test',))], [('dataset', True)])

  def test_the_tree_prepared_as_ucf101_names_the_dataset_it_holds(self):
    out = os.path.join(self.root, 'as_ucf101')
    with self.assertRaises(datasets.DatasetError) as caught:
      prepare.prepare(prepare.PrepareOptions(data_dir=self.root, out=out, workers=1),
                      log=lambda s: None)
    self.assertEqual(caught.exception.option, 'dataset')
    self.assertIn('--dataset=hmdb51', str(caught.exception))
    self.assertFalse(os.path.exists(out))

  def test_a_split_file_without_its_class_folder(self):
    extra = write(os.path.join(self.splits, 'brush_hairs_test_split1.txt'),
                  'Brushing_Hair_with_Beautiful_Girl_brush_hair_f_nm_np1_fr_goo_0.avi 1 \n')
    error = self.refused()
    self.assertEqual((error.path, error.option), (extra, 'split_dir'))
    self.assertIn("'brush_hairs'", str(error))

  def test_a_class_folder_without_its_split_file(self):
    write(os.path.join(self.videos, 'wave', 'wave_it_h_nm_np1_fr_goo_0.avi'), '')
    error = self.refused()
    self.assertEqual((error.path, error.option),
                     (os.path.join(self.videos, 'wave'), 'split_dir'))

  def test_a_class_folder_of_frame_folders_without_its_split_file(self):
    os.rename(self.videos, os.path.join(self.root, 'rawframes'))
    for folder in glob.glob(os.path.join(self.root, 'rawframes', '*', '*.avi')):
      os.remove(folder)
      write(os.path.join(folder[:-len('.avi')], 'img_00001.jpg'), '')
    write(os.path.join(self.root, 'rawframes', 'wave', 'wave_it_0', 'img_00001.jpg'), '')
    error = self.refused('frames')
    self.assertEqual(error.path, os.path.join(self.root, 'rawframes', 'wave'))

  def test_an_empty_split_file(self):
    empty = write(os.path.join(self.splits, 'catch_test_split1.txt'), ' \n')
    error = self.refused()
    self.assertEqual((error.path, error.option), (empty, 'split_dir'))

  def test_a_split_file_of_id_0_lines_only(self):
    # Neither train (1) nor test (2): its class would be a label without videos.
    unused = write(os.path.join(self.splits, 'catch_test_split1.txt'),
                   'a.avi 0\nb.avi 0\n')
    error = self.refused()
    self.assertEqual((error.path, error.option), (unused, 'split_dir'))


class ListLinesTest(absltest.TestCase):
  """Lines of MMAction2 lists this project cannot use as they mean are named for what they
  are."""

  def setUp(self):
    super().setUp()
    self.root = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, self.root, ignore_errors=True)
    self.classes = write(os.path.join(self.root, 'classes.txt'),
                         ''.join(f'class{i}\n' for i in range(5)))

  def test_mmaction2s_multi_label_lines_are_named_multi_label(self):
    write(os.path.join(self.root, 'test.mp4'), '')
    write(os.path.join(self.root, 'other.mp4'), '')
    train = os.path.join(self.root, 'train.txt')
    shutil.copy(MULTI_LABEL, train)
    split = datasets.read_list_split(datasets.ListFiles(
        train, write(os.path.join(self.root, 'test.txt'), 'other.mp4 1\n'), self.classes,
        self.root))
    self.assertEqual(split.train, [])
    self.assertEqual([(p.line, p.kind) for p in split.problems],
                     [(1, 'multi-label'), (2, 'multi-label')])

  def test_a_video_list_beside_a_rawframe_list_is_refused_naming_both(self):
    write(os.path.join(self.root, 'a.mp4'), '')
    self.frame_folders((('f/t', 4),))
    with self.assertRaises(datasets.DatasetError) as caught:
      datasets.read_list_split(datasets.ListFiles(
          write(os.path.join(self.root, 'train.txt'), 'a.mp4 0\n'),
          write(os.path.join(self.root, 'test.txt'), 'f/t 4 0\n'), self.classes, self.root))
    self.assertEqual((caught.exception.option, caught.exception.path),
                     ('test_list', os.path.join(self.root, 'test.txt')))
    self.assertIn('rawframe list', str(caught.exception))

  def frame_folders(self, folders: tuple[tuple[str, int], ...]) -> None:
    """`folders` ((path under root, frames), ...) of 8x8 JPEG frames img_00001.jpg, ...;
    each folder's frames are its own (pixels of its path's crc32: no two are copies)."""
    for video, frames in folders:
      pixels = np.zeros((8, 8, 3), np.uint8)
      pixels[0, :4, 0] = list(zlib.crc32(video.encode()).to_bytes(4, 'big'))
      image = cv2.imencode('.jpg', pixels)[1].tobytes()
      for t in range(frames):
        folder = os.path.join(self.root, video)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, f'img_{t + 1:05d}.jpg'), 'wb') as f:
          f.write(image)

  def prepare_frames(self, train: str, test: str) -> dict:
    """The manifests of a list dataset of frame folders, `train` and `test` its lists'
    lines, prepared into root/out."""
    return prepare.prepare(prepare.PrepareOptions(
        dataset='list', source='frames', data_dir=self.root,
        train_list=write(os.path.join(self.root, 'train.txt'), train),
        test_list=write(os.path.join(self.root, 'test.txt'), test),
        class_names=self.classes, out=os.path.join(self.root, 'out'), short_side=0,
        workers=1), log=lambda s: None)

  def test_a_video_with_two_labels_is_counted_once_as_a_conflicting_label(self):
    self.frame_folders((('f/a', 4), ('f/b', 4), ('f/t', 4)))
    found = self.prepare_frames('f/a 4 0\nf/b 4 1\nf/b 4 2\nf/b 4 3\n', 'f/t 4 0\n')['train']
    self.assertEqual((found['num_listed'], found['num_records'], found['skipped_by_kind']),
                     (2, 1, {'conflicting label': 1}))

  def test_a_video_labelled_apart_for_training_and_testing_is_skipped_in_both_subsets(self):
    self.frame_folders((('f/a', 4), ('f/b', 4), ('f/t', 4)))
    found = self.prepare_frames('f/a 4 0\nf/b 4 0\n', 'f/t 4 1\n./f/b 4 1\n')
    self.assertEqual({s: (found[s]['num_listed'], found[s]['num_records'],
                          found[s]['skipped_by_kind']) for s in ('train', 'test')},
                     {s: (2, 1, {'conflicting label': 1}) for s in ('train', 'test')})

  def test_a_copied_frame_folder_of_a_test_video_is_kept_out_of_training(self):
    self.frame_folders((('f/a', 4), ('f/t', 4), ('f/u', 5)))
    for empty in ('f/empty', 'f/also_empty'):  # damaged, not copies of each other
      os.makedirs(os.path.join(self.root, empty))
    shutil.copytree(os.path.join(self.root, 'f/t'), os.path.join(self.root, 'f/copy'))
    write(os.path.join(self.root, 'f/copy', 'desktop.ini'), 'not a frame')
    found = self.prepare_frames('f/a 4 0\nf/copy 4 0\nf/also_empty 4 1\n',
                                'f/t 4 0\nf/u 5 1\nf/empty 4 1\n')['train']
    self.assertEqual((found['num_records'], found['skipped_by_kind']),
                     (1, {'test video in training list': 1, 'no readable frame': 1}))
    self.assertIn('f/copy is a copy of the test video f/t (the same frames)',
                  [s['reason'] for s in found['skipped']][0])

  def test_frame_files_with_an_upper_case_extension_are_read_by_every_reader(self):
    self.frame_folders((('f/t', 4), ('f/A', 4), ('f/B', 4)))
    for video, pattern in (('f/A', frame_folders.FRAME_PATTERN), ('f/B', 'img_%05d.jpg')):
      folder = os.path.join(self.root, video)
      for t in range(1, 5):
        os.rename(os.path.join(folder, f'img_{t:05d}.jpg'),
                  os.path.join(folder, pattern.replace('.jpg', '.JPG') % t))
      with self.subTest(pattern):
        self.assertEqual(classifier.read_frames(folder).shape, (4, 8, 8, 3))  # classify
        self.assertLen(classifier.frame_files(folder), 4)
        found = frame_folders.frame_pattern(folder)  # the direct route's reading
        self.assertEqual(found, pattern)
        self.assertEqual(frame_folders.read_frames(folder, [0, 3], pattern=found).shape,
                         (2, 8, 8, 3))
    found = self.prepare_frames('f/B 4 0\n', 'f/t 4 0\n')['train']
    self.assertEqual((found['num_records'], found['skipped_by_kind']), (1, {}))

  def test_a_frame_folder_numbered_from_zero_is_never_read_without_frame_zero(self):
    for pattern in frame_folders.FRAME_PATTERNS:
      with self.subTest(pattern):
        folder = os.path.join(self.root, pattern[:3])
        for t in range(4):
          write(os.path.join(folder, pattern % t), 'jpeg')
        count, reason = frame_folders.count_frames(folder, pattern=pattern)
        self.assertEqual(count, 0)
        self.assertTrue(reason.startswith('numbered from 0'), reason)

  def mixed_folder(self, video: str) -> str:
    """Frame folder `video` of img_00001-4.jpg (`frame_folders`) and frame000005-6.jpg: the
    frames of two extraction runs in one folder."""
    self.frame_folders(((video, 4),))
    folder = os.path.join(self.root, video)
    for t in (5, 6):
      shutil.copy(os.path.join(folder, 'img_00001.jpg'), os.path.join(folder, f'frame{t:06d}.jpg'))
    return folder

  def test_a_frame_folder_of_two_frame_patterns_is_skipped_by_prepare(self):
    self.frame_folders((('f/a', 4), ('f/t', 4)))
    self.mixed_folder('f/m')
    found = self.prepare_frames('f/a 4 0\nf/m 4 1\n', 'f/t 4 0\n')['train']
    self.assertEqual((found['num_records'], found['skipped_by_kind']),
                     (1, {'two frame patterns': 1}))

  def test_a_frame_folder_of_two_frame_patterns_is_a_failed_video_for_classify(self):
    folder = self.mixed_folder('m')
    with self.assertRaises(video_io.VideoError) as caught:
      classifier.read_frames(folder)
    self.assertEqual(str(caught.exception),
                     f'two frame patterns: {folder} holds 4 img_%05d.jpg and 2 frame%06d.jpg '
                     'files (two runs of frame extraction?): keep the frames of one')

  def test_one_frame_under_two_spellings_is_two_frame_patterns(self):
    self.frame_folders((('f/a', 4), ('f/t', 4), ('f/m', 4)))
    folder = os.path.join(self.root, 'f/m')
    shutil.copy(os.path.join(self.root, 'f/t/img_00002.jpg'), os.path.join(folder, 'img_00002.JPG'))
    found = self.prepare_frames('f/a 4 0\nf/m 4 1\n', 'f/t 4 0\n')['train']
    self.assertEqual((found['num_records'], found['skipped_by_kind']),
                     (1, {'two frame patterns': 1}))
    with self.assertRaises(video_io.VideoError) as caught:
      classifier.read_frames(folder)
    self.assertIn('img_00002.JPG and img_00002.jpg', str(caught.exception))

  def test_an_empty_frame_file_is_an_undecodable_frame(self):
    self.frame_folders((('f/a', 4), ('f/e', 4), ('f/t', 4)))
    with open(os.path.join(self.root, 'f/e/img_00002.jpg'), 'wb'):
      pass  # what a write stopped by a full disk or a kill leaves
    found = self.prepare_frames('f/a 4 0\nf/e 4 1\n', 'f/t 4 0\n')['train']
    self.assertEqual((found['num_records'], found['skipped_by_kind']),
                     (1, {'undecodable frame': 1}))

  def test_a_frame_folder_numbered_from_zero_is_skipped_not_read_without_its_first_frame(self):
    self.frame_folders((('f/a', 4), ('f/t', 4), ('f/z', 4)))
    os.rename(os.path.join(self.root, 'f/z/img_00004.jpg'),
              os.path.join(self.root, 'f/z/img_00000.jpg'))  # f/z holds frames 0..3
    found = self.prepare_frames('f/a 4 0\nf/z 4 1\n', 'f/t 4 0\n')['train']
    self.assertEqual((found['num_records'], found['skipped_by_kind']),
                     (1, {'numbered from 0': 1}))

  def test_a_class_names_file_edited_in_place_is_another_dataset(self):
    self.frame_folders((('f/a', 4), ('f/t', 4)))
    lines = ('f/a 4 0\n', 'f/t 4 1\n')
    found = self.prepare_frames(*lines)['train']
    self.assertEqual(self.prepare_frames(*lines)['train']['shards'], found['shards'])
    write(self.classes, ''.join(f'class{i}\n' for i in reversed(range(5))))
    with self.assertRaises(prepare.PrepareError) as caught:
      self.prepare_frames(*lines)
    self.assertEqual((caught.exception.option, caught.exception.differences),
                     ('out', ('class_names',)))

  def test_a_rawframe_count_that_disagrees_with_its_folder_is_counted_in_the_manifest(self):
    self.frame_folders((('f/good', 6), ('f/fewer', 5), ('f/more', 9), ('f/test', 6)))
    train = 'f/good 6 0\nf/fewer 7 1\nf/more 7 2\n'
    found = self.prepare_frames(train, 'f/test 6 0\n')['train']
    self.assertEqual((found['num_listed'], found['num_records'], found['skipped_by_kind']),
                     (3, 1, {'frame count mismatch': 2}))
    self.assertEqual(sorted(s['input'] for s in found['skipped']),
                     [os.path.join(self.root, 'f/fewer'), os.path.join(self.root, 'f/more')])


if __name__ == '__main__':
  absltest.main()

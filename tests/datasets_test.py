"""HMDB51's official split files and MMAction2's annotation lists read into one split:
labels, subsets, odd names, id-0 videos, and every bad line named by file and line.

The HMDB51 sample in testdata/hmdb51_splits/ is real (names and format; SOURCE.md)."""

import os
import shutil
import tempfile

from absl.testing import absltest

from input_fn import datasets, video_lists

SAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'testdata', 'hmdb51_splits')


def write(path: str, text: str) -> str:
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, 'w') as f:
    f.write(text)
  return path


class Hmdb51SplitTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.root = tempfile.mkdtemp()
    self.splits = os.path.join(self.root, 'testTrainMulti_7030_splits')
    shutil.copytree(SAMPLE, self.splits)

  def tearDown(self):
    shutil.rmtree(self.root, ignore_errors=True)
    super().tearDown()

  def test_the_real_sample_reads_with_sorted_labels_ids_and_odd_names_intact(self):
    self.assertEqual(datasets.split_dir('hmdb51', self.root), self.splits)
    split = datasets.read_split('hmdb51', self.splits, 1)
    self.assertEqual(split.classes.names, ('brush_hair', 'cartwheel', 'catch', 'chew', 'kick'))
    self.assertEqual(split.problems, [])
    expected = {'train': [], 'test': []}
    unused = 0
    for label, name in enumerate(split.classes.names):
      with open(os.path.join(SAMPLE, f'{name}_test_split1.txt')) as f:
        for line in f:
          self.assertTrue(line.endswith(' \n'))  # the release's trailing space
          video, id_ = line.split()
          if id_ == '0':
            unused += 1
          else:
            expected['train' if id_ == '1' else 'test'].append((video[:-4], label,
                                                                f'{name}/{video}'))
    for subset in ('train', 'test'):
      self.assertEqual([(e.name, e.label, e.rel_path) for e in split.subset(subset)],
                       expected[subset])
      self.assertEqual([e.index for e in split.subset(subset)],
                       list(range(len(expected[subset]))))
    self.assertEqual(split.unused, unused)
    self.assertIn('#2_Gum_chew_h_nm_np1_fr_med_0', [e.name for e in split.train])
    self.assertIn('Goal_1_&_2_kick_ball_f_cm_np1_fr_goo_2', [e.name for e in split.train])
    self.assertIn('Torwarttraining_3_(_sterreich)_catch_f_nm_np1_fr_med_3',
                  [e.name for e in split.test])
    self.assertEqual(datasets.read_classes('hmdb51', self.root)[0].names, split.classes.names)

  def test_crlf_and_mmaction2s_annotations_folder_are_read_too(self):
    annotations = os.path.join(self.root, 'annotations')
    os.rename(self.splits, annotations)
    for name in os.listdir(annotations):
      path = os.path.join(annotations, name)
      with open(path) as f:
        text = f.read()
      with open(path, 'wb') as f:
        f.write(text.replace('\n', '\r\n').encode())
    self.assertEqual(datasets.split_dir('hmdb51', self.root), annotations)
    split = datasets.read_split('hmdb51', annotations, 1)
    self.assertLen(split.train, 6)
    self.assertLen(split.test, 5)
    self.assertEqual(split.unused, 2)

  def test_a_video_in_the_files_of_two_classes_is_one_conflicting_label_kept_out(self):
    kick = 'Goal_1_&_2_kick_ball_f_cm_np1_fr_goo_2'
    with open(os.path.join(self.splits, 'chew_test_split1.txt'), 'a') as f:
      f.write(f'{kick}.avi 1 \n')  # line 5: the kick video of kick_test_split1.txt, as chew
    before = datasets.read_split('hmdb51', self.splits, 1)
    self.assertEqual([(os.path.basename(p.source), p.line, p.kind) for p in before.problems],
                     [('kick_test_split1.txt', 1, 'conflicting label')])
    self.assertNotIn(kick, [e.name for e in before.train + before.test])
    self.assertEqual([e.index for e in before.train], list(range(len(before.train))))
    self.assertLen(before.train, 5)

  def test_a_video_in_two_classes_for_test_and_train_is_counted_in_both_subsets(self):
    kick = 'Goal_1_&_2_kick_ball_f_cm_np1_fr_goo_2'  # id 1 (train) in kick_test_split1.txt
    with open(os.path.join(self.splits, 'chew_test_split1.txt'), 'a') as f:
      f.write(f'{kick}.avi 2 \n')  # line 5: the same video for testing, as chew
    split = datasets.read_split('hmdb51', self.splits, 1)
    self.assertEqual(sorted((os.path.basename(p.source), p.line, p.kind, p.subset)
                            for p in split.problems),
                     [('chew_test_split1.txt', 5, 'conflicting label', 'test'),
                      ('kick_test_split1.txt', 1, 'conflicting label', 'train')])
    self.assertNotIn(kick, [e.name for e in split.train + split.test])

  def test_bad_lines_are_named_by_file_and_line_and_a_test_video_never_trains(self):
    chew = os.path.join(self.splits, 'chew_test_split1.txt')
    with open(chew, 'a') as f:
      f.write('no_id_here.avi \n')                                     # line 5
      f.write('odd_id.avi 3 \n')                                       # line 6
      f.write('not_a_video.mp4 1 \n')                                  # line 7
      f.write('#2_Gum_chew_h_nm_np1_fr_med_0.avi 2 \n')                # line 8: train and test
      f.write('Blowing_Bubbles!_chew_h_nm_np1_fr_goo_2.avi 2 \n')      # line 9: twice in test
    split = datasets.read_split('hmdb51', self.splits, 1)
    found = {(os.path.basename(p.source), p.line, p.kind, p.subset) for p in split.problems}
    self.assertEqual(found, {
        ('chew_test_split1.txt', 5, 'malformed line', ''),
        ('chew_test_split1.txt', 6, 'malformed line', ''),
        ('chew_test_split1.txt', 7, 'malformed line', ''),
        ('chew_test_split1.txt', 1, 'test video in training list', 'train'),
        ('chew_test_split1.txt', 9, 'duplicate', 'test'),  # id 0 on line 3
    })
    self.assertNotIn('#2_Gum_chew_h_nm_np1_fr_med_0', [e.name for e in split.train])
    self.assertIn('#2_Gum_chew_h_nm_np1_fr_med_0', [e.name for e in split.test])
    odd = next(p for p in split.problems if p.line == 6)
    self.assertEqual((os.path.basename(odd.source), odd.kind, odd.reason),
                     ('chew_test_split1.txt', 'malformed line', "malformed line 'odd_id.avi 3' "
                      '(expected "<video>.avi <id>" with id 0, 1 or 2)'))

  def test_a_missing_split_is_one_error_naming_the_folder(self):
    with self.assertRaises(datasets.DatasetError) as caught:
      datasets.read_split('hmdb51', self.splits, 2)
    self.assertEqual((caught.exception.path, caught.exception.option),
                     (self.splits, 'split_dir'))


class ListDatasetTest(absltest.TestCase):
  """MMAction2's VideoDataset and RawframeDataset lines (mmaction/datasets/video_dataset.py
  and rawframe_dataset.py, commit 4d6c934: `<filename> <label>`, `<frame_dir> <total_frames>
  <label>`, whitespace-split, paths under the data prefix)."""

  def setUp(self):
    super().setUp()
    self.root = tempfile.mkdtemp()
    for rel in ('abseiling/a1.mp4', 'abseiling/a2.mp4', 'juggling/j1.mp4', 'juggling/j2.mp4'):
      write(os.path.join(self.root, rel), rel)  # each its own bytes
    for rel in ('frames/a1', 'frames/j1'):
      os.makedirs(os.path.join(self.root, rel))
    self.classes = write(os.path.join(self.root, 'classes.txt'), 'abseiling\njuggling\n')

  def tearDown(self):
    shutil.rmtree(self.root, ignore_errors=True)
    super().tearDown()

  def lists(self, train: str, test: str) -> datasets.ListFiles:
    return datasets.ListFiles(write(os.path.join(self.root, 'train.txt'), train),
                              write(os.path.join(self.root, 'test.txt'), test),
                              self.classes, self.root)

  def test_video_and_rawframe_lists_give_entries_labels_and_folders(self):
    split = datasets.read_list_split(self.lists(
        'abseiling/a1.mp4 0\njuggling/j1.mp4 1\n', 'abseiling/a2.mp4 0\njuggling/j2.mp4 1\n'))
    self.assertEqual(split.classes.names, ('abseiling', 'juggling'))
    self.assertEqual([(e.name, e.label, e.rel_path) for e in split.train],
                     [('abseiling/a1', 0, 'abseiling/a1.mp4'), ('juggling/j1', 1, 'juggling/j1.mp4')])
    self.assertEqual(video_lists.resolve_video(self.root, split.test[1]),
                     os.path.join(self.root, 'juggling/j2.mp4'))
    frames = datasets.read_list_split(self.lists('frames/a1 30 0\n', 'frames/j1 25 1\n'))
    self.assertEqual([(e.name, e.label) for e in frames.test], [('frames/j1', 1)])
    self.assertEqual(frames.frame_folders['frames/j1'].path, os.path.join(self.root, 'frames/j1'))
    self.assertEqual(frames.frame_folders['frames/a1'].num_frames, 30)

  def test_a_list_of_ucf101_clips_keeps_a_test_group_out_of_training(self):
    for rel in ('YoYo/v_YoYo_g08_c01.avi', 'YoYo/v_YoYo_g08_c02.avi', 'YoYo/v_YoYo_g09_c01.avi'):
      write(os.path.join(self.root, rel), rel)  # each its own bytes
    self.classes = write(os.path.join(self.root, 'classes.txt'), 'abseiling\nYoYo\n')
    split = datasets.read_list_split(self.lists(
        'YoYo/v_YoYo_g08_c01.avi 1\nYoYo/v_YoYo_g09_c01.avi 1\nabseiling/a1.mp4 0\n',
        'YoYo/v_YoYo_g08_c02.avi 1\n'))
    self.assertEqual([e.name for e in split.train], ['YoYo/v_YoYo_g09_c01', 'abseiling/a1'])
    self.assertEqual([(os.path.basename(p.source), p.line, p.kind) for p in split.problems],
                     [('train.txt', 1, 'test group in training list')])

  def test_a_copy_of_a_test_video_under_another_name_is_kept_out_of_training(self):
    with open(os.path.join(self.root, 'abseiling/a2.mp4'), 'rb') as f:
      write(os.path.join(self.root, 'copies/renamed.mp4'), f.read().decode())
    split = datasets.read_list_split(self.lists(
        'abseiling/a1.mp4 0\ncopies/renamed.mp4 0\n', 'abseiling/a2.mp4 0\njuggling/j2.mp4 1\n'))
    self.assertEqual([e.name for e in split.train], ['abseiling/a1'])
    self.assertEqual([(p.line, p.kind) for p in split.problems],
                     [(2, 'test video in training list')])
    self.assertIn('a copy of the test video abseiling/a2', split.problems[0].reason)

  def test_every_bad_line_names_its_file_and_line(self):
    split = datasets.read_list_split(self.lists(
        'abseiling/a1.mp4 0\n'
        'juggling/j1.mp4 2\n'            # 2: label beyond 2 classes
        'juggling/missing.mp4 1\n'       # 3: no such file
        'juggling/j1.mp4 one\n'          # 4: not an integer
        'frames/a1 30 0\n'               # 5: another format than line 1
        'abseiling/a1.mp4 0\n'           # 6: twice
        'juggling/j2.mp4 1\n',           # 7: also a test video
        'juggling/j2.mp4 1\n'))
    found = {(os.path.basename(p.source), p.line, p.kind) for p in split.problems}
    self.assertEqual(found, {('train.txt', 2, 'label out of range'),
                             ('train.txt', 3, 'missing file'),
                             ('train.txt', 4, 'malformed line'),
                             ('train.txt', 5, 'malformed line'),
                             ('train.txt', 6, 'duplicate'),
                             ('train.txt', 7, 'test video in training list')})
    self.assertEqual([e.name for e in split.train], ['abseiling/a1'])
    self.assertTrue(all(p.subset == 'train' for p in split.problems))
    first = split.problems[0]
    self.assertEqual((os.path.basename(first.source), first.line, first.kind),
                     ('train.txt', 2, 'label out of range'))  # problems in line order

  def test_a_line_given_twice_is_one_listed_video_for_an_evaluation(self):
    split = datasets.read_list_split(self.lists(
        'abseiling/a1.mp4 0\n', 'juggling/j2.mp4 1\njuggling/j2.mp4 1\nabseiling/a2.mp4 0\n'))
    self.assertEqual((split.num_listed('test'), split.num_videos('test')), (3, 2))

  def test_frame_folders_whose_names_differ_only_by_case_are_not_read_as_one(self):
    # Frame folders are found by name in any case: the second would read the first's.
    os.makedirs(os.path.join(self.root, 'frames/A1'))
    split = datasets.read_list_split(self.lists('frames/j1 25 1\n',
                                                'frames/a1 30 0\nframes/A1 12 0\n'))
    self.assertEqual([e.name for e in split.test], ['frames/a1'])
    self.assertEqual([(os.path.basename(p.source), p.line, p.kind) for p in split.problems],
                     [('test.txt', 2, 'duplicate name')])
    self.assertEqual(split.frame_folders['frames/a1'].num_frames, 30)

  def test_a_test_list_counted_from_1_without_the_last_class_stops_at_a_line(self):
    # Label 2 (= N) is absent, so "no 0 and label N" does not see it; every label is one off.
    with self.assertRaises(datasets.DatasetError) as caught:
      datasets.read_list_split(self.lists(
          'abseiling/a1.mp4 0\njuggling/j1.mp4 1\n', 'abseiling/a2.mp4 1\n'))
    self.assertEqual((caught.exception.path, caught.exception.line, caught.exception.option),
                     (os.path.join(self.root, 'test.txt'), 1, 'test_list'))
    self.assertIn('counted from 1', str(caught.exception))

  def test_a_class_folder_labelled_differently_in_the_two_lists_stops_at_a_line(self):
    for rel in ('x/a3.mp4', 'x/a4.mp4', 'x/j3.mp4', 'x/j4.mp4'):
      write(os.path.join(self.root, rel), rel)
    with self.assertRaises(datasets.DatasetError) as caught:
      datasets.read_list_split(self.lists('x/a3.mp4 0\nx/a4.mp4 0\n', 'x/j3.mp4 1\nx/j4.mp4 1\n'))
    self.assertEqual((caught.exception.path, caught.exception.line, caught.exception.option),
                     (os.path.join(self.root, 'test.txt'), 1, 'test_list'))
    self.assertIn('train.txt:1', str(caught.exception))
    # A flat folder (videos of both labels in one list) is no class folder: no stop.
    split = datasets.read_list_split(self.lists('x/a3.mp4 0\nx/a4.mp4 1\n',
                                                'x/j3.mp4 1\nx/j4.mp4 1\n'))
    self.assertEqual([e.name for e in split.test], ['x/j3', 'x/j4'])

  def test_a_list_whose_class_folders_mostly_hold_other_labels_stops(self):
    for rel in ('x/a3.mp4', 'x/j3.mp4'):
      write(os.path.join(self.root, rel), rel)
    with self.assertRaises(datasets.DatasetError) as caught:  # class names in another order
      datasets.read_list_split(self.lists('x/a3.mp4 0\nx/j3.mp4 1\n',
                                          'abseiling/a2.mp4 1\njuggling/j2.mp4 0\n'))
    self.assertEqual((caught.exception.path, caught.exception.line, caught.exception.option),
                     (os.path.join(self.root, 'test.txt'), 1, 'test_list'))
    # One odd line among agreeing ones is the list's own choice: kept.
    split = datasets.read_list_split(self.lists(
        'abseiling/a1.mp4 0\njuggling/j1.mp4 1\nabseiling/a2.mp4 1\njuggling/j2.mp4 1\n',
        'x/j3.mp4 1\n'))
    self.assertEqual([(e.name, e.label) for e in split.train][2:],
                     [('abseiling/a2', 1), ('juggling/j2', 1)])

  def test_two_classes_swapped_against_the_class_names_stop_whatever_the_others_do(self):
    write(self.classes, 'c0\nc1\nc2\nc3\n')
    for c in range(4):
      for v in range(3):
        write(os.path.join(self.root, f'c{c}', f'v{v}.mp4'), f'c{c}/v{v}')
    swapped = {0: 1, 1: 0, 2: 2, 3: 3}  # half the lines disagree: not "mostly"
    train = ''.join(f'c{c}/v{v}.mp4 {swapped[c]}\n' for c in range(4) for v in range(2))
    test = ''.join(f'c{c}/v2.mp4 {c}\n' for c in range(4))
    with self.assertRaises(datasets.DatasetError) as caught:
      datasets.read_list_split(self.lists(train, test))
    self.assertEqual((caught.exception.path, caught.exception.line, caught.exception.option),
                     (os.path.join(self.root, 'train.txt'), 1, 'train_list'))
    # One class's folder labelled as another, not the reverse: the list's own filing.
    moved = ''.join(f'c{c}/v{v}.mp4 {1 if c == 0 else c}\n' for c in range(4) for v in range(2))
    self.assertLen(datasets.read_list_split(self.lists(moved, test)).train, 8)

  def test_a_header_comment_of_the_class_names_is_no_class(self):
    write(self.classes, '# class names, in label order\nabseiling\njuggling\n')
    self.assertEqual(datasets.read_class_names(self.classes).names, ('abseiling', 'juggling'))

  def test_a_class_named_twice_or_a_missing_file_is_one_error(self):
    write(self.classes, 'abseiling\njuggling\nabseiling\n')
    with self.assertRaises(datasets.DatasetError) as caught:
      datasets.read_list_split(self.lists('abseiling/a1.mp4 0\n', 'juggling/j1.mp4 1\n'))
    self.assertEqual((caught.exception.path, caught.exception.line, caught.exception.option),
                     (self.classes, 3, 'class_names'))
    nope = os.path.join(self.root, 'nope.txt')
    with self.assertRaises(FileNotFoundError) as caught:
      datasets.read_list_split(datasets.ListFiles(self.classes, nope, self.classes, self.root))
    self.assertEqual((caught.exception.path, caught.exception.option), (nope, 'test_list'))


if __name__ == '__main__':
  absltest.main()

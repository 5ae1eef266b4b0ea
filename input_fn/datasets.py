"""The datasets a split is read from: UCF101, HMDB51, or any labelled list of videos.

Every reader returns a `video_lists.Split` (class names in label order, train and test entries,
problems naming file and line), so preparation, the direct route and training handle all
three alike. The split rule is the same everywhere: a video listed for testing is never
trained on (`video_lists.apply_split_rule`).

* `ucf101`: `input_fn/ucf101.py` (classInd.txt, trainlist0N.txt, testlist0N.txt).
* `hmdb51`, the official release (serre-lab.clps.brown.edu, test_train_splits.rar):
  videos `hmdb51_org/<class>/<video>.avi` (or `videos/<class>/`, MMAction2's, or the class
  folders directly in the root); splits `testTrainMulti_7030_splits/<class>_test_split<k>.txt`
  (or MMAction2's `annotations/`, which holds the same files), one `<video>.avi <id>` per line
  with a trailing space: id 1 train, 2 test, 0 neither (counted as `unused`). Labels: the
  class names sorted, from 0 (MMAction2 tools/data/parse_file_list.py `parse_hmdb51_split`,
  commit 4d6c934, numbers `sorted(os.listdir(videos))`; I3D_Finetune's
  data/hmdb51/label_map.txt is the same order). Names keep every character (`#`, `&`, `!`,
  `(`, `)`, `;`). Frame folders: TSN / MMAction2 `rawframes/<class>/<video>/img_00001.jpg`
  (flow `flow_x_00001.jpg`, `flow_y_`) or flat `<video>/` folders.
* `list`: MMAction2's annotation files (mmaction/datasets/video_dataset.py and
  rawframe_dataset.py `load_data_list`, commit 4d6c934: whitespace-split lines) -
  VideoDataset `<path> <label>` and RawframeDataset `<frame_dir> <total_frames> <label>`,
  labels from 0, paths relative to the data root - one train and one test list, and a
  class-names file, one name per line in label order.
No TensorFlow here.
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Any, Callable

from input_fn import frame_folders, ucf101, video_lists
from input_fn.video_lists import (ClassIndex, DatasetError, FrameInfo, InputProblem, Split,
                                   VideoEntry)

NAMES = ('ucf101', 'hmdb51', 'list')
SPLITS = (1, 2, 3)  # the official train/test splits of ucf101 and hmdb51
# Evaluation crops per clip: the centre, or 3 along the long side (`pipeline.eval_crop_windows`).
EVAL_CROPS = (1, 3)
DEFAULT = 'ucf101'
HELP = ('Which dataset the files are: ucf101 (UCF-101/ + ucfTrainTestlist/), hmdb51 (the '
        'official release: hmdb51_org/<class>/*.avi or class folders in the root, and '
        'testTrainMulti_7030_splits/), or list (MMAction2-style annotation files: '
        '--train_list, --test_list, --class_names). Prepared records hold their dataset.')

HMDB51_SPLIT_DIR_NAMES = ('testTrainMulti_7030_splits', 'annotations/testTrainMulti_7030_splits',
                          'annotations', '')
HMDB51_VIDEO_DIR_NAMES = ('hmdb51_org', 'videos', '')
HMDB51_FRAMES_DIR_NAMES = ('rawframes', 'jpegs_256', '')
HMDB51_SPLIT_FILE = re.compile(r'^(?P<cls>.+)_test_split(?P<k>\d+)\.txt$', re.IGNORECASE)
HMDB51_IDS = {'1': 'train', '2': 'test', '0': None}



def split_dir(dataset: str, data_dir: str) -> str:
  """Where the split files of `dataset` are under `data_dir` ('' for list datasets)."""
  if dataset == 'hmdb51':
    for name in HMDB51_SPLIT_DIR_NAMES:
      folder = os.path.join(data_dir, name) if name else data_dir
      if os.path.isdir(folder) and _hmdb51_split_files(folder):
        return folder
    return data_dir
  if dataset == 'list':
    return ''
  return video_lists.find_dir(data_dir, ucf101.SPLIT_DIR_NAMES, ucf101.CLASS_INDEX_FILE)


def videos_dir(dataset: str, data_dir: str) -> str:
  """The folder holding the class folders of videos (list datasets: the data root)."""
  if dataset == 'hmdb51':
    return video_lists.find_dir(data_dir, HMDB51_VIDEO_DIR_NAMES)
  if dataset == 'list':
    return data_dir
  return video_lists.find_dir(data_dir, ucf101.VIDEO_DIR_NAMES)


def frames_dir(dataset: str, data_dir: str) -> str:
  """The folder holding the frame folders."""
  if dataset == 'hmdb51':
    return video_lists.find_dir(data_dir, HMDB51_FRAMES_DIR_NAMES)
  if dataset == 'list':
    return data_dir
  return video_lists.find_dir(data_dir, ucf101.FRAMES_DIR_NAMES)


@dataclasses.dataclass(frozen=True)
class ListFiles:
  """A list dataset's files; relative paths in the lists resolve against `root`."""
  train: str
  test: str
  class_names: str
  root: str


def read_split(dataset: str, split_folder: str, split: int,
               lists: ListFiles | None = None, class_root: str = '') -> Split:
  """The split of `dataset` (see the module docstring). Raises FileNotFoundError naming a
  missing split file, `DatasetError` when none of HMDB51's is there or, given the
  `class_root` read (videos or frames), HMDB51's class folders and split files disagree.
  Under `class_root` videos are also compared by file (`video_lists.with_files`)."""
  if dataset == 'hmdb51':
    return read_hmdb51_split(split_folder, split, class_root)
  if dataset == 'list':
    if lists is None:
      raise DatasetError('dataset=list needs --train_list, --test_list and --class_names',
                         option='train_list')
    return read_list_split(lists)
  return ucf101.read_split(split_folder, split, class_root)


def other_dataset(dataset: str, data_dir: str) -> str | None:
  """The other named dataset (ucf101, hmdb51) whose class files `data_dir` holds when those
  of `dataset` are missing there: the likely --dataset; None when there is none."""
  for name in ('ucf101', 'hmdb51'):
    if name == dataset:
      continue
    try:
      if read_classes(name, data_dir)[0] is not None:
        return name
    except DatasetError:  # its class file is there, though unreadable
      return name
  return None


def read_classes(dataset: str, data_dir: str, lists: ListFiles | None = None
                 ) -> tuple[ClassIndex | None, str]:
  """(class index, file it came from) of `dataset` under `data_dir`, or (None, what is
  missing) when its class files are not there."""
  folder = split_dir(dataset, data_dir)
  if dataset == 'hmdb51':
    names = sorted(_hmdb51_split_files(folder).get(1, {}))
    return (ClassIndex(tuple(names)), folder) if names else (
        None, f'{os.path.join(folder, "<class>_test_split1.txt")}')
  if dataset == 'list':
    if lists is None or not os.path.isfile(lists.class_names):
      return None, lists.class_names if lists else '--class_names'
    return read_class_names(lists.class_names), lists.class_names
  path = video_lists.find_child(folder, ucf101.CLASS_INDEX_FILE)
  if path is None:
    return None, os.path.join(folder, ucf101.CLASS_INDEX_FILE)
  return ucf101.read_class_index(path)[0], path


# --- HMDB51 --------------------------------------------------------------------------------


def _hmdb51_split_files(folder: str) -> dict[int, dict[str, str]]:
  """{k: {class name: path of <class>_test_split<k>.txt}} of `folder`."""
  found: dict[int, dict[str, str]] = {}
  try:
    children = os.listdir(folder)
  except OSError:
    return found
  for child in children:
    m = HMDB51_SPLIT_FILE.match(child)
    if m and os.path.isfile(os.path.join(folder, child)):
      found.setdefault(int(m.group('k')), {})[m.group('cls')] = os.path.join(folder, child)
  return found


def read_hmdb51_split(folder: str, split: int, class_root: str = '') -> Split:
  """Reads every `<class>_test_split<split>.txt` of `folder`: classes sorted from 0, id 1
  train, 2 test, 0 neither (`Split.unused`). A line that is not `<video>.avi <id>` with id
  0, 1 or 2, or that names a video again (other than once train and once test), is an
  InputProblem (a video in the files of two classes: 'conflicting label', one per video in
  each subset that a line lists it in, kept out of both subsets); a video in train and
  test, by name or by its file under `class_root`, is kept out of training
  (`video_lists.apply_split_rule`).
  Raises `DatasetError` for a split file without a line of id 1 or 2 (empty, or all 0)
  and, when `class_root` holds class folders (of videos or of frame folders), for a split
  file without its class folder or a class folder without its split file (`check_hmdb51_classes`): either would renumber the
  labels."""
  files = _hmdb51_split_files(folder).get(split)
  if not files:
    raise DatasetError(f'{folder} holds no HMDB51 split file of split {split} '
                       f'(<class>_test_split{split}.txt, from testTrainMulti_7030_splits/ of '
                       'the official test_train_splits.rar): the HMDB51 root holds them in '
                       'testTrainMulti_7030_splits/', folder, option='split_dir')
  check_hmdb51_classes(files, class_root)
  names = sorted(files)
  classes = ClassIndex(tuple(names))
  subsets: dict[str, list[VideoEntry]] = {'train': [], 'test': []}
  problems: list[InputProblem] = []
  # video -> (subset, file, class, path, line) of its last line read
  seen: dict[str, tuple[str | None, str, str, str, int]] = {}
  conflicting: dict[str, set[str | None]] = {}  # video -> subsets its problem is counted in
  unused = 0
  for label, name in enumerate(names):
    path = files[name]
    lines = video_lists.read_lines(path)
    if not lines:
      raise DatasetError(f'{path} lists no video: class {name!r} would be a label without '
                         'videos; copy the file again from test_train_splits.rar', path,
                         option='split_dir')
    for number, text in lines:
      parts = text.split()
      if len(parts) != 2 or parts[1] not in HMDB51_IDS or \
          not parts[0].lower().endswith('.avi') or '/' in parts[0]:
        problems.append(InputProblem(path, number, f'malformed line {text!r} (expected '
                                '"<video>.avi <id>" with id 0, 1 or 2)', 'malformed line'))
        continue
      subset = HMDB51_IDS[parts[1]]
      stem = parts[0][:-4]
      prior = seen.get(stem.lower())
      if prior is not None and prior[2] != name:
        problems.extend(_conflicting_lines(conflicting.setdefault(stem.lower(), set()), stem,
                                           prior, (subset, os.path.basename(path), name, path,
                                                   number)))
        continue
      if prior is not None and {prior[0], subset} != {'train', 'test'}:  # train + test: below
        problems.append(InputProblem(path, number, f'video {stem!r} is listed again (first in '
                                f'{prior[1]})', 'duplicate', subset or ''))
        continue
      seen[stem.lower()] = (subset, os.path.basename(path), name, path, number)
      if subset is None:
        unused += 1
        continue
      entries = subsets[subset]
      entries.append(VideoEntry(stem, name, label, 0, 0, f'{name}/{parts[0]}', len(entries),
                                path, number))
    if not any(e.label == label for entries in subsets.values() for e in entries):
      raise DatasetError(f'{path} lists no video for training or testing (no line with id 1 '
                         f'or 2 of {len(lines)}): class {name!r} would be a label without '
                         'videos; copy the file again from test_train_splits.rar', path,
                         option='split_dir')
  train, test = (video_lists.with_files(
      without(subsets[subset], lambda e: e.name.lower() in conflicting), class_root)
                 for subset in ('train', 'test'))
  train, test, problems = video_lists.apply_split_rule(train, test, problems)
  train, problems = video_lists.apply_copy_rule(train, test, problems, class_root)
  return Split(classes, train, test, problems, unused)


def _conflicting_lines(counted: set[str | None], video: str,
                       first: tuple[str | None, str, str, str, int],
                       again: tuple[str | None, str, str, str, int]) -> list[InputProblem]:
  """The 'conflicting label' problems of an HMDB51 `video` whose line `again` (subset, file,
  class, path, line) names another class than an earlier line `first`: one per subset
  (train, test) that the two lines list it in and that has none yet in `counted` (updated),
  each at a line of that subset (`again` when both are); one without a subset when neither
  line names a subset (ids 0) and none is counted yet."""
  labels = ((first[1], first[2]), (again[1], again[2]))
  found = []
  for subset, path, number in ((again[0], again[3], again[4]),
                               (first[0], first[3], first[4])):
    if subset is not None and subset not in counted:
      counted.add(subset)
      found.append(video_lists.conflicting_label(path, number, video, *labels, subset))
  if not counted:
    counted.add(None)
    found.append(video_lists.conflicting_label(again[3], again[4], video, *labels, None))
  return found


def without(entries: list[VideoEntry], dropped: Callable[[VideoEntry], bool]
            ) -> list[VideoEntry]:
  """`entries` but those `dropped`, renumbered 0..n-1."""
  return [dataclasses.replace(e, index=i)
          for i, e in enumerate(e for e in entries if not dropped(e))]


def check_hmdb51_classes(files: dict[str, str], class_root: str) -> None:
  """Raises `DatasetError` naming the first class whose split file (`files`: {class: path})
  has no class folder in `class_root`, or whose class folder has no split file. A class
  folder holds .avi files or frame folders (.jpg files); a root holding none (flat frame
  folders) is not checked."""
  folders = {name.lower(): name for name in _class_folders(class_root)}
  if not folders:
    return
  for name, path in sorted(files.items()):
    if name.lower() not in folders:
      raise DatasetError(f'{path} names class {name!r}, which has no class folder in '
                         f'{class_root}: rename the split file or the folder to match',
                         path, option='split_dir')
  listed = {name.lower() for name in files}
  for key, name in sorted(folders.items()):
    if key not in listed:
      split_folder = os.path.dirname(next(iter(files.values())))
      raise DatasetError(f'{os.path.join(class_root, name)} holds videos of class '
                         f'{name!r}, which has no split file in {split_folder}: add its '
                         f'{name}_test_split<k>.txt or move the folder out',
                         os.path.join(class_root, name), option='split_dir')


def _class_folders(root: str) -> list[str]:
  """The sub-folders of `root` holding .avi files or folders of .jpg files ([] when `root`
  is not a folder)."""
  if not root or not os.path.isdir(root):
    return []
  with os.scandir(root) as children:
    return sorted(c.name for c in children if c.is_dir() and _holds_videos(c.path))


def _holds_videos(folder: str) -> bool:
  """Whether `folder` holds an .avi file or a folder holding a .jpg file."""
  with os.scandir(folder) as children:
    return any(c.name.lower().endswith('.avi') if c.is_file() else
               c.is_dir() and any(f.lower().endswith('.jpg') for f in os.listdir(c.path))
               for c in children)


# --- Labelled lists (MMAction2 annotation files) -------------------------------------------


def read_class_names(path: str) -> ClassIndex:
  """A class-names file: one name per line, the k-th name (from 1) is label k - 1; '#'
  lines before the first name are a header, not classes; blank lines may only end the file. A blank line before the last name, a name with leading whitespace or a
  name given twice raises `DatasetError` naming the file and line (the labels after it would
  shift, or a name would not be what the lines say), as does a file whose every line is
  '<number> <name>' (UCF101's classInd.txt: the numbers would become part of the names) or
  '<name> <integer>' whose integers index the lines or repeat (a label map, an annotation
  list; 'speed 10', 'speed 20' are names), every line but a header a CSV '<index>,<name>' or
  '<name>,<index>', or with a line whose first word is a path (a '/' or a
  video extension: an annotation or split list), whose lines would become the names."""
  lines = video_lists.read_lines(path, blank=True)
  while lines and not lines[-1][1]:
    lines.pop()
  names: list[str] = []
  for number, text in lines:
    if text.startswith('#') and not names:
      continue  # a header comment, before the first name
    if not text:
      reason = 'is blank: every line up to the last names a class (label = line - 1)'
    elif text != text.lstrip():
      reason = f'class {text!r} starts with whitespace: write the name alone on its line'
    elif text.lower() in {n.lower() for n in names}:
      reason = f'class {text!r} is named twice (one name per line, in label order)'
    else:
      names.append(text)
      continue
    raise DatasetError(f'{path}:{number}: {reason}', path, number, 'class_names')
  if len(names) > 1 and all(_NUMBERED_NAME.match(n) for n in names):
    raise DatasetError(f'{path}:1: every line is "<number> <name>" ({names[0]!r}), as in '
                       'UCF101\'s classInd.txt: write each name alone on its line, in label '
                       'order (line k is label k - 1)', path, 1, 'class_names')
  numbers = [int(m.group(1)) for n in names for m in [_NAME_NUMBERED.match(n)] if m]
  indexed = len(names) > 1 and len(numbers) == len(names) and (
      len(set(numbers)) < len(numbers) or  # labels shared by lines: an annotation list
      sorted(numbers) in (list(range(len(names))), list(range(1, len(names) + 1))))
  labelled = [n for n in names if _NAME_NUMBERED.match(n)] if indexed else []
  csv_like = [n for n in names if _CSV_INDEX.search(n)]
  if len(csv_like) < max(2, len(names) - 1):  # all but a header line: a CSV label map
    csv_like = []
  pathlike = [n for n in names if '/' in n.split()[0] or '\\' in n.split()[0] or
              os.path.splitext(n.split()[0])[1].lower() in video_lists.VIDEO_EXTENSIONS]
  if labelled or csv_like or pathlike:
    first = (pathlike or labelled or csv_like)[0]
    line = next(number for number, text in lines if text == first)
    raise DatasetError(f'{path}:{line}: {first!r} is a line of an annotation list or a split '
                       'list ("<path> <label>", a video path) or of a label map ("<name> '
                       '<index>", "<index>,<name>"), not a class name: give the file of class '
                       'names, each alone on its line in label order (line k is label k - 1)',
                       path, line,
                       'class_names')
  return ClassIndex(tuple(names))


# A class-names line that is an index and a name (classInd.txt's '1 ApplyEyeMakeup').
_NUMBERED_NAME = re.compile(r'^\d+\s+\S')
# A class-names line that is a name (or video) and an integer (a label map's 'cat 0', an
# annotation list's 'cls/a1.avi 0').
_NAME_NUMBERED = re.compile(r'^\S.*\s([+-]?\d+)$')
# A CSV label map's line: an integer field first or last ('0,cat', 'cat,0').
_CSV_INDEX = re.compile(r'^\s*[+-]?\d+\s*,|,\s*[+-]?\d+\s*$')


def read_annotation_list(path: str, subset: str, classes: ClassIndex, root: str
                         ) -> tuple[list[VideoEntry], dict[str, FrameInfo], list[InputProblem],
                                    int | None]:
  """One MMAction2 annotation file: `<path> <label>` (VideoDataset) or `<frame_dir>
  <total_frames> <label>` (RawframeDataset) lines, not mixed. Returns the entries, the frame
  folders of a rawframe list (their `total_frames` must be what the folder holds), the
  list's fields per line (2 video lines, 3 rawframe lines, None: no well-formed line), and one
  InputProblem per line that is malformed, multi-label (a video file with several labels,
  VideoDataset's `multi_class`), has a label outside 0..classes-1, names a missing file or
  folder, or repeats a video ('duplicate'; with another label: 'conflicting label', one
  InputProblem per video, kept out with every line of it). A video is its file
  (`identity`: `video_lists.file_identity`, so `./`, `..`, symlinks and hard links are one
  video, relative or absolute alike); its name is the path below `root` without the
  extension (`list_name`). A list counted from 1 (no label 0, and label len(classes) on some
  line) raises `DatasetError` (`video_lists.check_counted_from_one`); so does a list whose
  videos in class-named folders mostly hold other labels (`check_class_folder_names`)."""
  entries: list[VideoEntry] = []
  labels: dict[int, int] = {}  # label -> its first line
  folders: dict[str, FrameInfo] = {}
  problems = []
  fields = None
  seen: dict[str, tuple[int, int]] = {}  # identity -> (line, label)
  conflicting: set[str] = set()
  for number, text in video_lists.read_lines(path):
    def bad(kind: str, reason: str) -> None:
      problems.append(InputProblem(path, number, reason, kind, subset))
    parts = text.split()
    rel = parts[0].replace('\\', '/')
    full = rel if os.path.isabs(rel) else os.path.join(root, rel)
    if len(parts) > 2 and os.path.isfile(full) and all(p.isdigit() for p in parts[1:]):
      bad('multi-label', f'{rel} is given {len(parts) - 1} labels ({", ".join(parts[1:])}): '
          'multi-label lines are not supported, one label per video')
      continue
    if len(parts) not in (2, 3) or (fields is not None and len(parts) != fields):
      expected = {None: '"<path> <label>" or "<frame_dir> <total_frames> <label>"',
                  2: '"<path> <label>" like the lines before', 3: '"<frame_dir> '
                  '<total_frames> <label>" like the lines before'}[fields]
      bad('malformed line', f'malformed line {text!r} (expected {expected})')
      continue
    fields = len(parts)
    try:
      numbers = [int(p) for p in parts[1:]]
    except ValueError:
      bad('malformed line', f'malformed line {text!r}: {" and ".join(parts[1:])} must be '
          'integers')
      continue
    label = numbers[-1]
    labels.setdefault(label, number)
    if not 0 <= label < len(classes):
      bad('label out of range', f'label {label} out of range 0..{len(classes) - 1} '
          f'({len(classes)} classes in the class-names file)')
      continue
    exists = os.path.isdir(full) if fields == 3 else os.path.isfile(full)
    if not exists:
      bad('missing file', f'{rel} not found under {root}')
      continue
    identity = video_lists.file_identity(full)
    if identity in seen and seen[identity][1] != label:
      if identity not in conflicting:
        problems.append(video_lists.conflicting_label(path, number, rel, (
            f'line {seen[identity][0]}', seen[identity][1]), (f'line {number}', label), subset))
      conflicting.add(identity)
      continue
    if identity in seen:
      bad('duplicate', f'{rel} is the video of line {seen[identity][0]} again (the same file)')
      continue
    name = list_name(full, root, keep_extension=fields == 3)
    if fields == 3 and name.lower() in folders:  # frame folders are found by name, any case
      bad('duplicate name', f'{rel} differs only by case from {folders[name.lower()].name} '
          f'(line {folders[name.lower()].line}): the two frame folders would be read as one '
          'video; rename one')
      continue
    seen[identity] = (number, label)
    entries.append(VideoEntry(name, classes.names[label], label, 0, 0, rel, len(entries), path,
                              number, identity))
    if fields == 3:
      folders[name.lower()] = FrameInfo(name, full, numbers[0], label, number, exact=True)
  video_lists.check_counted_from_one(path, labels, len(classes), f'{subset}_list')
  check_class_folder_names(path, subset, entries, classes)
  entries = without(entries, lambda e: e.identity in conflicting)
  kept = {e.name.lower() for e in entries}
  return entries, {k: v for k, v in folders.items() if k in kept}, problems, fields


def check_class_folder_names(path: str, subset: str, entries: list[VideoEntry],
                             classes: ClassIndex) -> None:
  """Raises `DatasetError` at the first such line when more than half of the entries whose
  parent folder is named like a class (`ClassIndex.label`, any case) hold another class's
  label: the labels are shifted (counted from 1) or follow another class order than
  --class_names; also when two class-named folders' videos all hold each other's label (two
  classes swapped, `_swapped_folders`). Otherwise half or fewer is the list's own choice (a
  video filed under one class and labelled another) and is kept: a shift moves every label,
  not a few."""
  named = [(e, classes.label(os.path.basename(os.path.dirname(os.path.normpath(e.rel_path)))))
           for e in entries]
  named = [(e, label) for e, label in named if label is not None]
  other = [(e, label) for e, label in named if label != e.label]
  swapped = _swapped_folders(named)
  if len(other) * 2 > len(named) or swapped:
    entry, label = swapped or other[0]
    raise DatasetError(
        f'{path}:{entry.line}: {entry.rel_path} is labelled {entry.label} ({entry.class_name}) '
        f'but its folder is class {label} ({classes.names[label]}) of --class_names, as '
        f'{len(other)} of the {len(named)} lines in class-named folders disagree: the labels '
        'are shifted (counted from 1?) or in another class order; write each label as its '
        'class\'s line number in --class_names minus 1', path, entry.line, f'{subset}_list')


def _swapped_folders(named: list[tuple[VideoEntry, int]]) -> tuple[VideoEntry, int] | None:
  """The first (entry, its folder's label) of two class-named folders whose videos (two or
  more each) all hold the other folder's label: two classes swapped against --class_names,
  whatever the other classes do; None when there are none."""
  labels: dict[int, set[int]] = {}
  first: dict[int, VideoEntry] = {}
  counts: dict[int, int] = {}
  for entry, folder in named:
    labels.setdefault(folder, set()).add(entry.label)
    first.setdefault(folder, entry)
    counts[folder] = counts.get(folder, 0) + 1
  for folder, held in labels.items():
    if len(held) == 1 and counts[folder] > 1:
      (other,) = held
      if other != folder and labels.get(other) == {folder} and counts[other] > 1:
        return first[folder], folder
  return None


def check_lists_agree(lists: ListFiles, train: list[VideoEntry], test: list[VideoEntry]
                      ) -> None:
  """Raises `DatasetError` at a test list line when a folder is a class folder in both lists
  (each list names two or more of its videos, all with one label; videos listed in both left
  aside: the split rule counts those) with another label in each: one list's labels are
  shifted. A folder holding videos of several labels in a list (a flat list), or one video
  of it, is no class folder."""
  def class_folders(entries: list[VideoEntry], shared: set[str]) -> dict[str, VideoEntry]:
    videos: dict[str, list[VideoEntry]] = {}
    for e in entries:
      if e.identity not in shared:
        folder = os.path.dirname(os.path.normpath(os.path.join(lists.root, e.rel_path)))
        videos.setdefault(folder, []).append(e)
    return {folder: found[0] for folder, found in videos.items()
            if len(found) > 1 and len({e.label for e in found}) == 1}
  shared = {e.identity for e in train} & {e.identity for e in test}
  in_train = class_folders(train, shared)
  for folder, e in class_folders(test, shared).items():
    other = in_train.get(folder)
    if other is not None and other.label != e.label:
      raise DatasetError(
          f'{lists.test}:{e.line}: folder {folder} holds label {e.label} ({e.class_name}) '
          f'here but label {other.label} ({other.class_name}) in {lists.train}:{other.line}: '
          'one list\'s labels are shifted (counted from 1?); write both with each label the '
          'class\'s line number in --class_names minus 1', lists.test, e.line, 'test_list')


def list_name(full: str, root: str, keep_extension: bool = False) -> str:
  """The name of a listed video at `full`: its normalised path relative to `root` when under
  it (else the normalised absolute path), without the file extension unless
  `keep_extension`."""
  path = os.path.normpath(full)
  under = os.path.relpath(path, os.path.normpath(root))
  if under != os.pardir and not under.startswith(os.pardir + os.sep):
    path = under
  stem, extension = os.path.splitext(path)
  return path if keep_extension or not extension else stem


def read_list_split(lists: ListFiles) -> Split:
  """A list dataset's split: the class names, the train and test lists (see
  `read_annotation_list`); a video in both lists is kept out of training, and so is a UCF101
  clip (`v_<Class>_gGG_cCC`) of a group with a clip in the test list
  (`ucf101.apply_group_rule`). Two videos whose
  names differ only by extension (`a.avi`, `a.mp4`) are named with it. A class folder
  labelled differently in the two lists raises `DatasetError` (`check_lists_agree`), and so
  does a video list beside a rawframe list."""
  for flag, path in (('--class_names', lists.class_names), ('--train_list', lists.train),
                     ('--test_list', lists.test)):
    if not os.path.isfile(path):
      raise video_lists.not_found(f'{flag}={path} not found', path, flag[2:])
  classes = read_class_names(lists.class_names)
  if not len(classes):
    raise DatasetError(f'--class_names={lists.class_names} names no class', lists.class_names,
                       option='class_names')
  train, folders, found, train_fields = read_annotation_list(lists.train, 'train', classes,
                                                             lists.root)
  test, test_folders, test_found, test_fields = read_annotation_list(lists.test, 'test',
                                                                     classes, lists.root)
  if None not in (train_fields, test_fields) and train_fields != test_fields:
    kinds = {2: 'a video list (<path> <label>)',
             3: 'a rawframe list (<frame_dir> <total_frames> <label>)'}
    raise DatasetError(f'--train_list={lists.train} is {kinds[train_fields]} but '
                       f'--test_list={lists.test} is {kinds[test_fields]}: give both lists of '
                       'one kind (rawframe lists with --source=frames)', lists.test,
                       option='test_list')
  check_lists_agree(lists, train, test)
  videos: dict[str, set[str]] = {}
  for entry in train + test:
    videos.setdefault(entry.key, set()).add(entry.identity)
  train, test = ([e if len(videos[e.key]) == 1 else dataclasses.replace(
      e, name=list_name(os.path.join(lists.root, e.rel_path), lists.root, True))
                  for e in entries] for entries in (train, test))
  train, test, problems = video_lists.apply_split_rule(train, test, found + test_found)
  train, problems = video_lists.apply_copy_rule(train, test, problems, lists.root)
  train, problems = ucf101.apply_group_rule(train, test, problems)
  return Split(classes, train, test, problems, 0, {**folders, **test_folders})


# --- Frame folders in class folders --------------------------------------------------------


def class_folder_frames(root: str, entries: list[VideoEntry]) -> dict[str, FrameInfo]:
  """{video key: FrameInfo} for the entries whose frames are in a class folder,
  `<root>/<class>/<video>/` (TSN's and MMAction2's rawframes); the frame count is what is on
  disk (None claimed)."""
  found = {}
  for entry in entries:
    folder = video_lists.find_child(root, entry.class_name) if root else None
    video = video_lists.find_child(folder, entry.name) if folder else None
    if video and os.path.isdir(video):
      found[entry.key] = FrameInfo(entry.name, video, None, entry.label, 0)
  return found


# --- Videos of a dataset (flow extraction) -------------------------------------------------


def class_folder_videos(videos_root: str, classes: ClassIndex | None
                        ) -> tuple[list[tuple[str, str, int]], list[InputProblem]]:
  """HMDB51's videos: every `<class>/<video>.avi` under `videos_root` as (path, name,
  label), sorted by name; label -1 without a class index; a class folder not in it is a
  InputProblem."""
  videos, problems = [], []
  for class_folder in sorted(os.listdir(videos_root)):
    folder = os.path.join(videos_root, class_folder)
    if not os.path.isdir(folder):
      continue
    files = [f for f in sorted(os.listdir(folder)) if os.path.splitext(f)[1].lower() == '.avi']
    label = classes.label(class_folder) if classes else -1
    if label is None and files:  # folders without videos (tvl1_flow/, rawframes/) are not
      problems.append(InputProblem(folder, 0, f'class folder {class_folder!r} is not a class of '
                              'the split files', 'unknown class'))
    if label is None:
      continue
    videos += [(os.path.join(folder, f), os.path.splitext(f)[0], label) for f in files]
  return sorted(videos, key=lambda v: v[1]), problems


def params_split(params: Any) -> Split:
  """The split the direct route of `params` reads (dataset, data_dir, split; HMDB51's class
  folders of videos or frames checked against its split files)."""
  roots = {'videos': videos_dir, 'frames': frames_dir}
  class_root = (roots[params.data_source](params.dataset, params.data_dir)
                if params.data_source in roots else '')
  split = read_split(params.dataset, split_dir(params.dataset, params.data_dir), params.split,
                     class_root=class_root)
  if params.data_source != 'frames':
    return split
  infos = direct_frame_list(params, len(split.classes))[0]
  return video_lists.apply_folder_rule(
      split, lambda e: direct_folder(params, e, infos.get(e.key)),
      lambda e, folder: frame_folders.frame_files_in(folder))


def direct_frame_list(params: Any, num_classes: int
                      ) -> tuple[dict[str, FrameInfo], list[InputProblem]]:
  """The rows of the direct route's frame list (`video_lists.read_frame_list`):
  `<data_dir>/rgb.txt`, for the flow stream `<data_dir>/flow.txt`; none without one."""
  path = video_lists.find_child(params.data_dir, ucf101.FLOW_LIST_NAME if params.stream ==
                                'flow' else ucf101.FRAME_LIST_NAME)
  return video_lists.read_frame_list(path, num_classes, 'data_dir') if path else ({}, [])


def direct_folder(params: Any, entry: VideoEntry, info: FrameInfo | None) -> str | None:
  """The folder the direct route reads `entry`'s frames from, as `input_fn/direct.py` finds
  it: the flow stream's u folder (a flow row's path with `{:s}`, else
  `<data_dir>/tvl1_flow/u/<video>`); an RGB row's folder when it exists, else the video's
  own folder (`<class>/<video>/` or `<video>/` under the frames folder); None for an RGB
  video without one."""
  if params.stream == 'flow':
    if info and '{:s}' in info.path:
      return info.path.format('u')
    root = os.path.join(params.data_dir, ucf101.FLOW_DIR_NAME, 'u')
    return video_lists.find_child(root, entry.name) or os.path.join(root, entry.name)
  if info and os.path.isdir(info.path):
    return info.path
  return video_lists.locate(frames_dir(params.dataset, params.data_dir), entry)

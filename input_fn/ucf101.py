"""Readers for UCF101 exactly as it is found on disk.

Formats (every text file is read by `video_lists.read_lines`: a UTF-8 byte-order mark, CRLF
line ends and trailing whitespace are ignored, and so are blank lines):

* `classInd.txt`: `"<label1> <ClassName>"`, label 1-based, e.g. `1 ApplyEyeMakeup`.
* `trainlist0N.txt`: `"<Class>/v_<Class>_gGG_cCC.avi <label1>"`.
* `testlist0N.txt`: `"<Class>/v_<Class>_gGG_cCC.avi"` (no label).
* Raw videos: `UCF-101/<Class>/v_<Class>_gGG_cCC.avi`.
* Frame folders: `jpegs_256/<video>/frame000001.jpg` (1-based, `%06d`) with the info list
  `rgb.txt`, rows `"<video> <path> <nframes> <label0>"` (label 0-based). Real folders may hold
  1-3 frames fewer than `nframes` says; that is tolerated (the frames on disk are used).
  Other file names (`img_%05d.jpg`, ...) via `pattern=` (`data_tools/layouts.py`).
* Optical flow: `tvl1_flow/{u,v}/<video>/frame%06d.jpg`, one grayscale JPEG per channel.

Names are matched case-insensitively everywhere: the official lists spell
`HandStandPushups` where the class index and the video files say `HandstandPushups`.
A video that is listed for testing is never used for training, whatever the spelling, and
neither is another clip of its group (one long video).

Nothing here raises on bad input: readers return what they could read plus a list of
`InputProblem`s (`input_fn/video_lists.py`, with what every layout shares; frame folders:
`input_fn/frame_folders.py`). Standard library only (no TensorFlow): the config
(`towers/params.py`, through `input_fn/datasets.py`) imports it, and a program checks its
flags before any of those load.
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Iterable, Sequence

from input_fn.video_lists import (ClassIndex, DatasetError, InputProblem, Split, VideoEntry,
                                  apply_copy_rule, apply_split_rule, find_child, not_found, read_lines,
                                  with_files)

CLASS_INDEX_FILE = 'classInd.txt'
SPLIT_DIR_NAMES = ('ucfTrainTestlist', '')
VIDEO_DIR_NAMES = ('UCF-101', 'UCF101', '')
FRAMES_DIR_NAMES = ('jpegs_256', '')
FRAME_LIST_NAME = 'rgb.txt'
FLOW_DIR_NAME = 'tvl1_flow'  # //data_tools:extract_flow's output under the UCF101 root
FLOW_LIST_NAME = 'flow.txt'  # I3D_Finetune's flow list: name path-with-{:s} nframes label0
VIDEO_RE = re.compile(r'^v_(?P<cls>.+)_g(?P<group>\d+)_c(?P<clip>\d+)$', re.IGNORECASE)
GROUPS_PER_SPLIT = 7


def read_class_index(path: str) -> tuple[ClassIndex, list[InputProblem]]:
  """Parses classInd.txt. Labels must be 1..N, each once: numbers with a gap raise
  `DatasetError` (every list label would be read against them); other lines are Problems."""
  by_label: dict[int, str] = {}
  problems = []
  for number, text in read_lines(path):
    parts = text.split()
    if len(parts) != 2 or not parts[0].isdigit():
      problems.append(InputProblem(path, number, f'malformed class line {text!r} '
                              '(expected "<label> <ClassName>")', 'malformed line'))
      continue
    label = int(parts[0])
    if label in by_label or parts[1].lower() in {n.lower() for n in by_label.values()}:
      problems.append(InputProblem(path, number, f'duplicate class {text!r}', 'duplicate'))
      continue
    by_label[label] = parts[1]
  labels = sorted(by_label)
  if labels != list(range(1, len(labels) + 1)):
    missing = next(i for i in range(1, len(labels) + 2) if i not in by_label)
    raise DatasetError(f'{path}: class labels are not 1..{len(labels)} ({missing} is missing, '
                       f'{labels[-1]} the largest): the lists\' labels would name other '
                       'classes than it says; number its classes 1..N, one per line',
                       path, 0)
  return ClassIndex(tuple(by_label[k] for k in labels)), problems


def parse_video_name(stem: str) -> tuple[str, int, int] | None:
  """`v_<Class>_gGG_cCC` -> (class as spelled, group, clip), or None if not that shape."""
  m = VIDEO_RE.match(stem)
  if not m:
    return None
  return m.group('cls'), int(m.group('group')), int(m.group('clip'))


def canonical_name(stem: str, class_name: str) -> str:
  """The one spelling of a video's name: `v_<class as in classInd.txt>_gGG_cCC`.

  The official lists and file names spell `v_HandStandPushups_g08_c01` where the class index,
  the frame folders and rgb.txt say `HandstandPushups`; every record, flow folder and
  prediction carries the class index's spelling. `stem` must parse (`parse_video_name`)."""
  listed_class = parse_video_name(stem)[0]
  return f'v_{class_name}{stem[2 + len(listed_class):]}'


def read_split_list(path: str, classes: ClassIndex) -> tuple[list[VideoEntry], list[InputProblem]]:
  """Parses a trainlist0N.txt (`path label1`) or testlist0N.txt (`path`) file.

  An entry is kept only if its line has 1 or 2 fields, its path is `<Class>/v_<Class>_gGG_cCC.avi`
  with a class of `classes` (case-insensitive) matching the file name's class, and its label,
  when given, is an integer in 1..len(classes) equal to the class's label. A class whose
  every labelled line is a 'label mismatch' raises `DatasetError` naming the list and
  classInd.txt: the two files disagree (other releases, or one edited), and the class would
  lose all its videos.
  """
  entries: list[VideoEntry] = []
  problems = []
  seen: set[str] = set()
  labelled: dict[str, list[tuple[int, int]]] = {}  # class -> [(line, its label1 there)]
  for number, text in read_lines(path):
    def bad(kind: str, reason: str) -> None:
      problems.append(InputProblem(path, number, reason, kind))
    parts = text.split()
    if len(parts) not in (1, 2):
      bad('malformed line', f'malformed line {text!r} (expected "<Class>/<video>.avi [label]")')
      continue
    rel = parts[0].replace('\\', '/')
    pieces = rel.split('/')
    stem, ext = os.path.splitext(pieces[-1])
    parsed = parse_video_name(stem)
    if len(pieces) != 2 or ext.lower() != '.avi' or parsed is None:
      bad('malformed line', f'malformed video path {rel!r} (expected "<Class>/v_<Class>_gGG_cCC.avi")')
      continue
    folder_class, (file_class, group, clip) = pieces[0], parsed
    label = classes.label(folder_class)
    if label is None:
      bad('unknown class', f'unknown class {folder_class!r} (not in classInd.txt)')
      continue
    if file_class.lower() != folder_class.lower():
      bad('unknown class', f'video {stem!r} is not of its folder class {folder_class!r}')
      continue
    if len(parts) == 2:
      try:
        label1 = int(parts[1])
      except ValueError:
        bad('malformed line', f'malformed label {parts[1]!r} (expected an integer)')
        continue
      if not 1 <= label1 <= len(classes):
        bad('label out of range', f'label {label1} out of range 1..{len(classes)}')
        continue
      labelled.setdefault(folder_class.lower(), []).append((number, label1))
      if label1 - 1 != label:
        bad('label mismatch', f'label {label1} does not match class {folder_class!r} (label {label + 1})')
        continue
    if stem.lower() in seen:
      bad('duplicate', f'duplicate video {stem!r}')
      continue
    seen.add(stem.lower())
    entries.append(VideoEntry(canonical_name(stem, classes.names[label]), classes.names[label],
                              label, group, clip, rel,
                              len(entries), path, number))
  for name, lines in labelled.items():
    label = classes.label(name)
    if all(label1 - 1 != label for _, label1 in lines):
      number, label1 = lines[0]
      raise DatasetError(
          f'{path}:{number}: every line of class {classes.names[label]!r} gives label {label1}, '
          f'but {CLASS_INDEX_FILE} gives it {label + 1}: the two files disagree (from other '
          f'releases, or one edited); use the {CLASS_INDEX_FILE} of this list\'s release',
          path, number, 'split_dir')
  return entries, problems


def read_split(split_dir: str, split: int, video_root: str = '') -> Split:
  """Reads classInd.txt, trainlist0<split>.txt and testlist0<split>.txt from `split_dir`.

  The split rule: a video named in the test list, or whose file under `video_root` (videos
  or frame folders, `with_files`) is a training video's, is removed from training
  (`apply_split_rule`), and so is a clip of a group with a clip in the test list
  (`apply_group_rule`), each with an InputProblem, so no test video, nor another clip of its
  video, can ever be trained on. Entry indices are renumbered 0..n-1 after removal.
  """
  class_path = find_child(split_dir, CLASS_INDEX_FILE)
  if class_path is None:
    raise not_found(f'{os.path.join(split_dir, CLASS_INDEX_FILE)} not found',
                    os.path.join(split_dir, CLASS_INDEX_FILE), 'split_dir')
  classes, problems = read_class_index(class_path)
  lists = {}
  for subset in ('train', 'test'):
    list_path = find_child(split_dir, f'{subset}list{split:02d}.txt')
    if list_path is None:
      wanted = os.path.join(split_dir, f'{subset}list{split:02d}.txt')
      raise not_found(f'{wanted} not found', wanted, 'split_dir')
    entries, list_problems = read_split_list(list_path, classes)
    lists[subset] = with_files(entries, video_root)
    problems += list_problems
  train, test, problems = apply_split_rule(lists['train'], lists['test'], problems)
  train, problems = apply_copy_rule(train, test, problems, video_root)
  train, problems = apply_group_rule(train, test, problems)
  return Split(classes, train, test, problems)


def group_of(name: str) -> tuple[str, int] | None:
  """(class in lower case, group) of a UCF101 clip named `name` (its file name
  `v_<Class>_gGG_cCC`, any folder before it, no extension); None for other names."""
  parsed = parse_video_name(name.replace('\\', '/').rsplit('/', 1)[-1])
  return (parsed[0].lower(), parsed[1]) if parsed is not None else None


def apply_group_rule(train: list[VideoEntry], test: list[VideoEntry],
                     problems: list[InputProblem]) -> tuple[list[VideoEntry], list[InputProblem]]:
  """(train, `problems` plus one 'test group in training list' per entry removed): a
  training clip of a UCF101 group with a clip in `test` (`group_of`) is kept out of
  training. A group's clips are cut from one long video, so training on one scores the
  others on their own footage. Names that are not UCF101 names are left as they are;
  indices are renumbered 0..n-1."""
  tested = clips_by_group(e.name for e in test)
  kept, problems = [], list(problems)
  for e in train:
    group = group_of(e.name)
    other = tested.get(group) if group is not None else None
    if other is None:
      kept.append(dataclasses.replace(e, index=len(kept)))
      continue
    problems.append(InputProblem(
        e.source, e.line, f'{e.name} is of group g{group[1]:02d} of '
        f'{parse_video_name(e.name.rsplit("/", 1)[-1])[0]}, whose clip {other} is in the test '
        'list: clips of a group are cut from one video, so it is kept out of training (the '
        'official splits keep each group in one list)', 'test group in training list', 'train'))
  return kept, problems


def clips_by_group(names: Iterable[str]) -> dict[tuple[str, int], str]:
  """The first of `names` of each UCF101 group (`group_of`); other names are left out."""
  found: dict[tuple[str, int], str] = {}
  for name in names:
    group = group_of(name)
    if group is not None:
      found.setdefault(group, name)
  return found


def groups_learnt(trained: Sequence[str], tests: Sequence[str]) -> list[tuple[str, str]]:
  """(test name, a trained clip of its group) for each of `tests`, sorted, that is a UCF101
  clip of a group `trained` holds a clip of (the group rule, for a model's training videos
  read from its record or export; the same video is `video_lists.trained_on`'s)."""
  learnt = clips_by_group(trained)
  groups = ((name, group_of(name)) for name in tests)
  return sorted((name, learnt[group]) for name, group in groups if group in learnt)


def test_groups(split: int) -> range:
  """Groups that are test videos in official split `split` (1: 1-7, 2: 8-14, 3: 15-21)."""
  first = GROUPS_PER_SPLIT * (split - 1) + 1
  return range(first, first + GROUPS_PER_SPLIT)

"""Readers for UCF101 exactly as it is found on disk.

Formats (every text file is read by `read_lines`: a UTF-8 byte-order mark, CRLF line ends and
trailing whitespace are ignored, and so are blank lines):

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
A video that is listed for testing is never used for training, whatever the spelling.

Nothing here raises on bad input: readers return what they could read plus a list of
`Problem`s (file, line, reason); callers decide whether to skip (default) or fail (strict).
This module needs only the standard library, and numpy and OpenCV in `read_frames` (no
TensorFlow): the config (`towers/params.py`, through `input_fn/datasets.py`) imports it, and
a program checks its flags before any of those load.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
from typing import TYPE_CHECKING, Iterable, Sequence

if TYPE_CHECKING:
  import numpy as np

CLASS_INDEX_FILE = 'classInd.txt'
SPLIT_DIR_NAMES = ('ucfTrainTestlist', '')
VIDEO_DIR_NAMES = ('UCF-101', 'UCF101', '')
FRAMES_DIR_NAMES = ('jpegs_256', '')
FRAME_LIST_NAME = 'rgb.txt'
FLOW_DIR_NAME = 'tvl1_flow'  # //data_tools:extract_flow's output under the UCF101 root
FLOW_LIST_NAME = 'flow.txt'  # I3D_Finetune's flow list: name path-with-{:s} nframes label0
FRAME_PATTERN = 'frame%06d.jpg'
FRAME_RE = re.compile(r'^frame(\d{6})\.jpg$', re.IGNORECASE)
# File names of one video's frame folder that are read, in this order: this project's and
# the community release's, then TSN's and mmaction's (`data_tools/layouts.py`).
FRAME_PATTERNS = (FRAME_PATTERN, 'img_%05d.jpg')
VIDEO_RE = re.compile(r'^v_(?P<cls>.+)_g(?P<group>\d+)_c(?P<clip>\d+)$', re.IGNORECASE)
# Real jpegs_256 folders sometimes hold this many frames fewer than rgb.txt says.
MISSING_TAIL_TOLERANCE = 3
GROUPS_PER_SPLIT = 7
VIDEO_EXTENSIONS = ('.avi', '.mp4', '.mkv', '.webm', '.mov')


@dataclasses.dataclass(frozen=True)
class Problem:
  """One input that cannot be used: `source` file, 1-based `line` (0: not a line), why."""
  source: str
  line: int
  reason: str
  kind: str = 'bad input'
  subset: str = ''  # the subset the line would have listed the video in, when known

  def __str__(self) -> str:
    where = f'{self.source}:{self.line}' if self.line else self.source
    return f'{where}: {self.reason}'

  def to_json(self) -> dict:
    return {'input': self.source, 'line': self.line, 'kind': self.kind, 'reason': self.reason}


def not_found(message: str, path: str, option: str | None = None) -> FileNotFoundError:
  """A FileNotFoundError whose text is `message`, with the missing `path` as `path` and the
  option naming it (e.g. 'test_list') as `option`."""
  error = FileNotFoundError(message)
  error.path = path
  error.option = option
  return error


class InputError(ValueError):
  """Raised in strict mode: the message names the file (and line) and the reason."""

  def __init__(self, problem: Problem):
    super().__init__(str(problem))
    self.problem = problem


@dataclasses.dataclass(frozen=True)
class ClassIndex:
  """Class names in label order: `names[label0]`. Lookup is case-insensitive."""
  names: tuple[str, ...]

  def label(self, name: str) -> int | None:
    """0-based label of `name` (any case), or None if it is not a class."""
    return self._lookup.get(name.lower())

  @functools.cached_property
  def _lookup(self) -> dict[str, int]:
    return {n.lower(): i for i, n in enumerate(self.names)}

  def __len__(self) -> int:
    return len(self.names)


@dataclasses.dataclass(frozen=True)
class VideoEntry:
  """One video of a split list.

  `name` is the canonical name (`canonical_name`: the file stem with the class spelled as in
  classInd.txt, e.g. `v_HandstandPushups_g08_c01`); `key` its lower-case form used for
  every match; `rel_path` the list's spelling of the file. `class_name` is the spelling of
  classInd.txt, `label` 0-based.
  `index` is the position among the usable entries of the list (0..n-1); `source`/`line`
  say where the entry came from. `identity`: the resolved path of the listed file or folder
  where a list names videos by path (list datasets), '' where videos are matched by `key`.
  """
  name: str
  class_name: str
  label: int
  group: int
  clip: int
  rel_path: str
  index: int
  source: str
  line: int
  identity: str = ''

  @property
  def key(self) -> str:
    return self.name.lower()

  @property
  def video(self) -> str:
    """What makes two entries the same video: `identity` when known, else `same_video(name)`."""
    return self.identity or same_video(self.name)


def same_video(name: str) -> str:
  """The one rule of every train/test leakage check (prepare's split rule, training's check of
  prepared records): two videos are the same when their names are, case included, as file
  names on Linux are."""
  return name


def read_lines(path: str, blank: bool = False) -> list[tuple[int, str]]:
  """The lines of a user's text file (split files, class lists, annotation lists, info
  lists) as (1-based line number, text): every such file is read here, so a UTF-8 byte-order
  mark, CRLF or CR line ends and trailing spaces or tabs read the same as without. The text
  keeps its leading whitespace; blank lines are left out unless `blank`."""
  with open(path, 'rb') as f:
    data = f.read().decode('utf-8-sig', errors='replace')
  lines = [(i + 1, line.rstrip()) for i, line in enumerate(data.splitlines())]
  return lines if blank else [(number, text) for number, text in lines if text]


def read_class_index(path: str) -> tuple[ClassIndex, list[Problem]]:
  """Parses classInd.txt. Labels must be 1..N, each once; other lines are Problems."""
  by_label: dict[int, str] = {}
  problems = []
  for number, text in read_lines(path):
    parts = text.split()
    if len(parts) != 2 or not parts[0].isdigit():
      problems.append(Problem(path, number, f'malformed class line {text!r} '
                              '(expected "<label> <ClassName>")', 'malformed line'))
      continue
    label = int(parts[0])
    if label in by_label or parts[1].lower() in {n.lower() for n in by_label.values()}:
      problems.append(Problem(path, number, f'duplicate class {text!r}', 'duplicate'))
      continue
    by_label[label] = parts[1]
  labels = sorted(by_label)
  if labels != list(range(1, len(labels) + 1)):
    problems.append(Problem(path, 0, f'class labels are not 1..{len(labels)}: {labels[:10]}',
                            'label out of range'))
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


def read_split_list(path: str, classes: ClassIndex) -> tuple[list[VideoEntry], list[Problem]]:
  """Parses a trainlist0N.txt (`path label1`) or testlist0N.txt (`path`) file.

  An entry is kept only if its line has 1 or 2 fields, its path is `<Class>/v_<Class>_gGG_cCC.avi`
  with a class of `classes` (case-insensitive) matching the file name's class, and its label,
  when given, is an integer in 1..len(classes) equal to the class's label.
  """
  entries: list[VideoEntry] = []
  problems = []
  seen: set[str] = set()
  for number, text in read_lines(path):
    def bad(kind: str, reason: str) -> None:
      problems.append(Problem(path, number, reason, kind))
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
  return entries, problems


def find_dir(root: str, names: Sequence[str], must_contain: str | None = None) -> str:
  """First `root/<name>` that exists (and holds `must_contain`, any case); else `root`."""
  for name in names:
    candidate = os.path.join(root, name) if name else root
    if os.path.isdir(candidate) and (must_contain is None or
                                     find_child(candidate, must_contain) is not None):
      return candidate
  return root


def find_child(directory: str, name: str) -> str | None:
  """Path of the entry of `directory` called `name`, compared case-insensitively."""
  exact = os.path.join(directory, name)
  if os.path.exists(exact):
    return exact
  try:
    for child in os.listdir(directory):
      if child.lower() == name.lower():
        return os.path.join(directory, child)
  except OSError:
    pass
  return None


@dataclasses.dataclass
class Split:
  """Train and test entries of one split, the class index, and list problems. `unused`:
  videos the split files name for neither subset (HMDB51's id 0); `frame_folders`: lower-case
  video name -> FrameInfo of a folder the lists name (MMAction2's rawframe lists)."""
  classes: ClassIndex
  train: list[VideoEntry]
  test: list[VideoEntry]
  problems: list[Problem]
  unused: int = 0
  frame_folders: dict = dataclasses.field(default_factory=dict)

  def subset(self, name: str) -> list[VideoEntry]:
    return {'train': self.train, 'test': self.test}[name]


def read_split(split_dir: str, split: int) -> Split:
  """Reads classInd.txt, trainlist0<split>.txt and testlist0<split>.txt from `split_dir`.

  The split rule: a video named in the test list is removed from training
  (`apply_split_rule`), with a Problem, so no test video can ever be trained on. Entry
  indices are renumbered 0..n-1 after removal.
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
    lists[subset], list_problems = read_split_list(list_path, classes)
    problems += list_problems
  train, problems = apply_split_rule(lists['train'], lists['test'], problems)
  return Split(classes, train, lists['test'], problems)


def apply_split_rule(train_entries: list[VideoEntry], test: list[VideoEntry],
                     problems: list[Problem]) -> tuple[list[VideoEntry], list[Problem]]:
  """(train without any video of `test`, `problems` plus one Problem per removed video):
  a video listed for testing is never trained on (compared by `VideoEntry.video`: the
  resolved path, else `same_video` of the name); train indices are renumbered 0..n-1."""
  test_videos = {e.video for e in test}
  train, problems = [], list(problems)
  for e in train_entries:
    if e.video in test_videos:
      problems.append(Problem(e.source, e.line, f'{e.name} is also in the test list: '
                              'kept out of training', 'test video in training list', 'train'))
    else:
      train.append(dataclasses.replace(e, index=len(train)))
  return train, problems


def test_groups(split: int) -> range:
  """Groups that are test videos in official split `split` (1: 1-7, 2: 8-14, 3: 15-21)."""
  first = GROUPS_PER_SPLIT * (split - 1) + 1
  return range(first, first + GROUPS_PER_SPLIT)


def resolve_video(video_root: str, entry: VideoEntry) -> str | None:
  """Path of `entry`'s video file under `video_root` (`rel_path`, e.g. `<Class>/<file>`,
  each part matched case-insensitively; an absolute `rel_path` as it is), else None."""
  if os.path.isabs(entry.rel_path):
    return entry.rel_path if os.path.isfile(entry.rel_path) else None
  path = video_root
  for part in entry.rel_path.split('/'):
    path = find_child(path, part)
    if path is None:
      return None
  return path if os.path.isfile(path) else None


# --- Frame folders -------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class FrameInfo:
  """One row of rgb.txt: video name, folder path, frame count it claims, 0-based label.
  `exact`: the folder must hold exactly `num_frames` (MMAction2's `total_frames`), not up to
  MISSING_TAIL_TOLERANCE fewer."""
  name: str
  path: str
  num_frames: int
  label: int
  line: int
  exact: bool = False


def read_frame_list(path: str, num_classes: int | None = None
                    ) -> tuple[dict[str, FrameInfo], list[Problem]]:
  """Parses rgb.txt rows `name path nframes label0` into {lower-case name: FrameInfo}.

  Relative paths are resolved against the list's directory.
  """
  infos: dict[str, FrameInfo] = {}
  problems = []
  base = os.path.dirname(path)
  for number, text in read_lines(path):
    parts = text.split()
    if len(parts) != 4:
      problems.append(Problem(path, number, f'malformed line {text!r} '
                              '(expected "<name> <path> <nframes> <label0>")', 'malformed line'))
      continue
    name, folder, nframes, label = parts
    try:
      nframes_i, label_i = int(nframes), int(label)
    except ValueError:
      problems.append(Problem(path, number, f'malformed numbers in {text!r}', 'malformed line'))
      continue
    if num_classes is not None and not 0 <= label_i < num_classes:
      problems.append(Problem(path, number, f'label {label_i} out of range 0..{num_classes - 1}',
                              'label out of range'))
      continue
    name = os.path.basename(name.rstrip('/'))
    if os.path.splitext(name)[1].lower() in VIDEO_EXTENSIONS:
      name = os.path.splitext(name)[0]  # HMDB51 names may hold other dots
    folder = folder if os.path.isabs(folder) else os.path.join(base, folder)
    infos[name.lower()] = FrameInfo(name, folder, nframes_i, label_i, number)
  return infos, problems


def name_regex(pattern: str) -> re.Pattern:
  """Regex of the file names of `pattern` (`frame%06d.jpg`, `img_%05d.jpg`, ...), the frame
  number as group 1; case-insensitive."""
  m = re.search(r'%(0(\d+))?d', pattern)
  if m is None:
    raise ValueError(f'file name pattern {pattern!r} has no %0Nd frame number')
  digits = rf'(\d{{{m.group(2)}}})' if m.group(2) else r'(\d+)'
  return re.compile('^' + re.escape(pattern[:m.start()]) + digits +
                    re.escape(pattern[m.end():]) + '$', re.IGNORECASE)


def count_frames(folder: str, claimed: int | None = None,
                 tolerance: int = MISSING_TAIL_TOLERANCE,
                 pattern: str = FRAME_PATTERN, exact: bool = False
                 ) -> tuple[int, str | None]:
  """Usable frames of a folder of `pattern` files (1-based numbers): (count, None) or
  (0, reason).

  Frames must be 1..count without a gap. A folder holding up to `tolerance` frames fewer
  than `claimed` (the info list's count) is fine and `count` is what is on disk; a larger
  shortfall, a gap, an empty or missing folder give a reason instead, and with `exact` any
  count other than `claimed` does (reason starting 'the list says').
  """
  if not os.path.isdir(folder):
    return 0, f'missing frame folder {folder}'
  regex = FRAME_RE if pattern == FRAME_PATTERN else name_regex(pattern)
  indices = set()
  for child in os.listdir(folder):
    m = regex.match(child)
    if m:
      indices.add(int(m.group(1)))
  if not indices:
    return 0, f'no {pattern} files in {folder}'
  last = max(indices)
  gaps = [i for i in range(1, last + 1) if i not in indices]
  if gaps:
    shown = ', '.join(pattern % i for i in gaps[:5])
    return 0, f'missing frames inside {folder}: {shown}{" ..." if len(gaps) > 5 else ""} ' \
              f'({len(gaps)} of {last} missing)'
  if exact and claimed is not None and last != claimed:
    return 0, f'the list says {claimed} frames but {folder} holds {last}'
  if claimed is not None and claimed - last > tolerance:
    return 0, f'{folder} holds {last} frames but the list says {claimed}'
  return last, None


def frame_pattern(folder: str) -> str:
  """The `FRAME_PATTERNS` entry whose frame 1 is in `folder` (per folder, so a tree mixing
  them is read video by video); FRAME_PATTERN when none is."""
  return next((p for p in FRAME_PATTERNS if os.path.isfile(os.path.join(folder, p % 1))),
              FRAME_PATTERN)


def frame_path(folder: str, index0: int, pattern: str = FRAME_PATTERN) -> str:
  """Path of the frame with 0-based index `index0` (file names are 1-based)."""
  return os.path.join(folder, pattern % (index0 + 1))


def read_frames(folder: str, indices: Iterable[int], grayscale: bool = False,
                pattern: str = FRAME_PATTERN) -> np.ndarray:
  """Reads frames (0-based indices) of `pattern` files as uint8 RGB [T, H, W, 3]
  (grayscale: [T, H, W]).

  Raises `IOError` naming the file if one cannot be decoded.
  """
  import cv2  # pylint: disable=import-outside-toplevel
  import numpy as np  # pylint: disable=import-outside-toplevel,redefined-outer-name
  frames = []
  for i in indices:
    path = frame_path(folder, int(i), pattern)
    image = cv2.imread(path, cv2.IMREAD_GRAYSCALE if grayscale else cv2.IMREAD_COLOR)
    if image is None:
      raise IOError(f'cannot decode {path}')
    frames.append(image if grayscale else cv2.cvtColor(image, cv2.COLOR_BGR2RGB))
  return np.stack(frames)


def flow_folders(flow_root: str, video: str) -> tuple[str, str]:
  """(u, v) folders of a video's TV-L1 flow: `<flow_root>/u/<video>`, `<flow_root>/v/<video>`."""
  return os.path.join(flow_root, 'u', video), os.path.join(flow_root, 'v', video)


def count_flow_frames(flow_root: str, video: str) -> tuple[int, str | None]:
  """Frames available in both u and v folders (see `count_frames`), or (0, reason)."""
  counts = []
  for folder in flow_folders(flow_root, video):
    count, reason = count_frames(folder)
    if reason:
      return 0, reason
    counts.append(count)
  return min(counts), None

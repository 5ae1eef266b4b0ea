"""What every dataset's layout shares: reading a user's text files, the video entries of a
split, and the problems of bad input.

    read_lines(path) -> [(line number, text)]      # every list, class or info file
    VideoEntry, ClassIndex, Split, FrameInfo       # what a dataset reader returns
    with_files(entries, root)                      # each entry's file identity under root
    apply_split_rule(train, test, problems)        # a test video is never trained on;
    apply_folder_rule(split, folder_of, frames_in) # ... nor read from a test video's folder
    trained_on(trained, tests)                     # a model's training videos among tests
    conflicting_label(...)                         # one video, two labels: kept out of both
    InputProblem / InputError                      # one unusable input; strict mode's error
    DatasetError                                   # a file that cannot be read at all

The readers of UCF101 (`input_fn/ucf101.py`), HMDB51 and MMAction2's lists
(`input_fn/datasets.py`) build on these. Nothing here raises on bad input: readers return
what they could read plus a list of `InputProblem`s (file, line, reason, kind), counted in
videos; callers decide whether to skip (default) or fail (strict); only a file that cannot be
read at all (not UTF-8 text) raises `DatasetError`. Standard library only:
the config (`towers/params.py`) imports it before TensorFlow loads.
"""

from __future__ import annotations

import dataclasses
import hashlib
import functools
import os
from typing import Any, Callable, Mapping, Sequence

from command_line import text_files

VIDEO_EXTENSIONS = ('.avi', '.mp4', '.mkv', '.webm', '.mov')


@dataclasses.dataclass(frozen=True)
class InputProblem:
  """One input (a list line, a video, a frame folder) that cannot be used, counted and
  skipped (or, strict, raised as `InputError`); not an option's problem
  (`command_line.options.Problem`): `source` file, 1-based `line` (0: not a line), why."""
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


class DatasetError(ValueError):
  """The dataset's split files cannot be read at all; the message names the file. `path`:
  the file or folder concerned ('' for none); `line`: its line (1-based, 0 for none);
  `option`: the option that names it, when one does."""

  def __init__(self, message: str, path: str = '', line: int = 0,
               option: str | None = None) -> None:
    super().__init__(message)
    self.path, self.line, self.option = path, line, option


class InputError(ValueError):
  """Raised in strict mode: the message names the file (and line) and the reason."""

  def __init__(self, problem: InputProblem):
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
  say where the entry came from. `identity`: the `file_identity` of its video file or frame
  folder when it was found, '' when not (then only its name makes it the same video).
  `read_from`: the `file_identity` of the folder its frames are read from when a frame or
  flow list's row names another than `identity` (`apply_folder_rule`), else ''.
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
  read_from: str = ''

  @property
  def key(self) -> str:
    return self.name.lower()

  @property
  def video(self) -> tuple[tuple[str, str], ...]:
    """What makes two entries the same video: any one of these keys in common, its name
    (`same_video`) and, when found, its file's identity (`file_identity`) and that of the
    folder its frames are read from (`read_from`)."""
    return (('name', same_video(self.name)),) + tuple(
        ('file', identity) for identity in (self.identity, self.read_from) if identity)


def same_video(name: str) -> str:
  """The rule of every train/test leakage check by name (prepare's split rule, training's
  check of prepared records): two videos are the same when their names are, case included,
  as file names on Linux are. Prepare's split rule also compares files (`file_identity`)."""
  return name


def file_identity(path: str) -> str:
  """'<st_dev>:<st_ino>' of the file or folder `path` resolves to (symlinks followed), so a
  symlink, a hard link and every spelling of one file are one identity; '' when there is
  none (no such file)."""
  try:
    found = os.stat(path)
  except OSError:
    return ''
  return f'{found.st_dev}:{found.st_ino}'


def trained_on(trained: Sequence[str], tests: Sequence[str]) -> list[str]:
  """The names of `tests` that are videos of `trained`, sorted: the one rule of every check
  of a model's training videos (its export's or model_dir's `train_video_names`) against test
  videos, which may come from another dataset's records. Names (canonical: no extension but
  where two files differ only by it) are compared in lower case, by path component: two are
  one video when the components of one end with all those of the other, so a list dataset's
  `MoveDownSpeed1/v_MoveDownSpeed1_g04_c01` is UCF101's `v_MoveDownSpeed1_g04_c01`, while
  `walking/001` and `running/001`, or `vids/a.avi` and `vids/a.mp4`, stay two."""
  def parts(name: str) -> tuple[str, ...]:
    return tuple(p for p in name.replace('\\', '/').lower().split('/') if p)
  by_last: dict[str, list[tuple[str, ...]]] = {}
  for name in trained:
    split = parts(name)
    if split:
      by_last.setdefault(split[-1], []).append(split)
  found = []
  for name in tests:
    split = parts(name)
    for other in by_last.get(split[-1] if split else '', ()):
      shorter, longer = sorted((split, other), key=len)
      if longer[len(longer) - len(shorter):] == shorter:
        found.append(name)
        break
  return sorted(found)


def read_lines(path: str, blank: bool = False) -> list[tuple[int, str]]:
  """The lines of a user's text file (split files, class lists, annotation lists, info
  lists) as (1-based line number, text), read by the one reader of users' text files
  (`command_line/text_files.py`: a UTF-8 byte-order mark, CRLF or CR line ends and trailing
  spaces or tabs read the same as without). The text keeps its leading whitespace; blank
  lines are left out unless `blank`. A file that is not UTF-8 raises `DatasetError` naming
  it (and the line): its lines would read as other names."""
  try:
    return text_files.read_lines(path, blank)
  except text_files.NotUtf8 as e:
    raise DatasetError(str(e), e.path, e.line) from None


def find_dir(root: str, names: Sequence[str], must_contain: str | None = None) -> str:
  """First `root/<name>` that exists (and holds `must_contain`, any case); else `root`."""
  for name in names:
    candidate = os.path.join(root, name) if name else root
    if os.path.isdir(candidate) and (must_contain is None or
                                     find_child(candidate, must_contain) is not None):
      return candidate
  return root


def find_child(directory: str, name: str,
               listings: dict[str, dict[str, str]] | None = None) -> str | None:
  """Path of the entry of `directory` called `name`, compared case-insensitively.
  `listings` ({folder: {lower-case name: name}}), when given, keeps each folder's listing
  for the next calls: one listing of a folder of thousands, not one per name."""
  exact = os.path.join(directory, name)
  if os.path.exists(exact):
    return exact
  if listings is None or directory not in listings:
    try:
      children = {child.lower(): child for child in reversed(os.listdir(directory))}
    except OSError:
      children = {}
    if listings is None:
      found = children.get(name.lower())
      return os.path.join(directory, found) if found else None
    listings[directory] = children
  found = listings[directory].get(name.lower())
  return os.path.join(directory, found) if found else None


@dataclasses.dataclass
class Split:
  """Train and test entries of one split, the class index, and list problems. `unused`:
  videos the split files name for neither subset (HMDB51's id 0); `frame_folders`: lower-case
  video name -> FrameInfo of a folder the lists name (MMAction2's rawframe lists)."""
  classes: ClassIndex
  train: list[VideoEntry]
  test: list[VideoEntry]
  problems: list[InputProblem]
  unused: int = 0
  frame_folders: dict = dataclasses.field(default_factory=dict)

  def subset(self, name: str) -> list[VideoEntry]:
    return {'train': self.train, 'test': self.test}[name]

  def problems_of(self, name: str) -> list[InputProblem]:
    """The problems of lines of subset `name`'s list: each a listed video kept out
    (`problem_subset`)."""
    return [p for p in self.problems if problem_subset(p) == name]

  def num_listed(self, name: str) -> int:
    """The lines of subset `name`'s list that name a video: its entries and the ones kept
    out (`problems_of`), a line repeating a video included (prepare's num_listed)."""
    return len(self.subset(name)) + len(self.problems_of(name))

  def num_videos(self, name: str) -> int:
    """The distinct videos subset `name`'s list names: `num_listed` less the lines that
    repeat one ('duplicate'); what an evaluation's "N of M listed videos" counts."""
    return self.num_listed(name) - sum(p.kind == 'duplicate' for p in self.problems_of(name))


def problem_subset(problem: InputProblem) -> str:
  """The subset whose list the problem's line is in ('' for none: class files, frame
  lists, lines that name no subset; a UCF101 `trainlist0N.txt`/`testlist0N.txt` line)."""
  if problem.subset:
    return problem.subset
  name = os.path.basename(problem.source).lower()
  return next((s for s in ('train', 'test') if name.startswith(s + 'list')), '')


def apply_split_rule(train_entries: list[VideoEntry], test_entries: list[VideoEntry],
                     problems: list[InputProblem]
                     ) -> tuple[list[VideoEntry], list[VideoEntry], list[InputProblem]]:
  """(train, test, `problems` plus one InputProblem per video removed): a video listed for
  testing is never trained on (compared by `VideoEntry.video`: the same name, or the same
  file under any name, a symlink or a hard link); one listed in both with two labels is a
  'conflicting label' (`conflicting_label`), kept out of both and counted in both (one
  problem at each list's line). Indices are renumbered 0..n-1."""
  tests: dict[tuple[str, str], VideoEntry] = {}
  for e in test_entries:
    for key in e.video:
      tests.setdefault(key, e)
  pairs = [(e, next((tests[key] for key in e.video if key in tests), None))
           for e in train_entries]
  conflicting = {id(other) for e, other in pairs if other is not None and other.label != e.label}
  train, test, problems = [], [], list(problems)
  for e, other in pairs:
    if other is not None and id(other) in conflicting:
      labels = ((os.path.basename(e.source), e.label),
                (os.path.basename(other.source), other.label))
      problems.append(conflicting_label(e.source, e.line, e.name, *labels, 'train'))
      problems.append(conflicting_label(other.source, other.line, other.name, *labels, 'test'))
    elif other is not None:
      also = '' if other.name == e.name else f' (as {other.name}, the same file)'
      problems.append(InputProblem(e.source, e.line, f'{e.name} is also in the test list{also}: '
                              'kept out of training', 'test video in training list', 'train'))
    else:
      train.append(dataclasses.replace(e, index=len(train)))
  for e in test_entries:
    if id(e) not in conflicting:
      test.append(dataclasses.replace(e, index=len(test)))
  return train, test, problems


def apply_copy_rule(train: list[VideoEntry], test: list[VideoEntry],
                    problems: list[InputProblem], root: str
                    ) -> tuple[list[VideoEntry], list[InputProblem]]:
  """(train, `problems` plus one 'test video in training list' per entry removed): a
  training video whose file under `root` (`locate`) holds the same bytes as a test video's
  (a copy under another name) is kept out of training (`keep_out_copies`). Frame folders
  are compared where the folders read are known (`apply_folder_rule`); entries without a
  file are left as they are; indices are renumbered 0..n-1."""
  if not root or not test:
    return train, problems
  listings: dict[str, dict[str, str]] = {}

  def file_of(entry: VideoEntry) -> list[str]:
    path = locate(root, entry, listings)
    return [path] if path and os.path.isfile(path) else []
  return keep_out_copies(train, test, problems, file_of)


def keep_out_copies(train: list[VideoEntry], test: list[VideoEntry],
                    problems: list[InputProblem],
                    files_of: Callable[[VideoEntry], list[str]], what: str = 'bytes'
                    ) -> tuple[list[VideoEntry], list[InputProblem]]:
  """(train, `problems` plus one 'test video in training list' per entry removed): a
  training entry whose content, `files_of(entry)` (its video file, or the frame files read
  from its folder, in order; [] for none), holds the same `what` (bytes, frames) as a test
  entry's under other paths is kept out of training, naming the test video. Cheap keys are
  compared first (the number of files, then `sample_sizes`); sha256 (`content_digest`) only
  where they are equal. Content with an empty sampled file is damaged, not a copy. Indices
  are renumbered 0..n-1."""
  digest = functools.lru_cache(maxsize=None)(content_digest)
  by_count: dict[int, list[tuple[VideoEntry, tuple[str, ...]]]] = {}
  for e in test:
    files = tuple(files_of(e))
    if files:
      by_count.setdefault(len(files), []).append((e, files))
  by_sizes: dict[int, dict[tuple[int, ...], list[tuple[VideoEntry, tuple[str, ...]]]]] = {}

  def twins(files: tuple[str, ...]) -> list[tuple[VideoEntry, tuple[str, ...]]]:
    """The test entries whose cheap keys equal those of `files` (sizes read only on equal
    counts)."""
    if len(files) not in by_count:
      return []
    if len(files) not in by_sizes:
      by_sizes[len(files)] = {}
      for t, other in by_count[len(files)]:
        by_sizes[len(files)].setdefault(sample_sizes(other), []).append((t, other))
    sizes = sample_sizes(files)
    return by_sizes[len(files)].get(sizes, []) if 0 not in sizes else []
  kept, problems = [], list(problems)
  for e in train:
    files = tuple(files_of(e))
    copy = next((t for t, other in (twins(files) if files else [])
                 if os.path.realpath(other[0]) != os.path.realpath(files[0])
                 and digest(other) == digest(files)), None)
    if copy is None:
      kept.append(dataclasses.replace(e, index=len(kept)))
      continue
    problems.append(InputProblem(e.source, e.line, f'{e.name} is a copy of the test video '
                                 f'{copy.name} (the same {what}): kept out of training',
                                 'test video in training list', 'train'))
  return kept, problems


def sample_sizes(files: Sequence[str]) -> tuple[int, ...]:
  """The sizes of the first, middle and last of `files` (a few stats per video however
  many frames it has: a cheap key; equal keys are then compared by `content_digest`)."""
  picked = sorted({0, len(files) // 2, len(files) - 1}) if files else []
  return tuple(os.path.getsize(files[i]) for i in picked)


def content_digest(files: Sequence[str]) -> str:
  """sha256 of the bytes of `files` (a video file, or a folder's frame files), in order."""
  hashed = hashlib.sha256()
  for name in files:
    with open(name, 'rb') as f:
      for block in iter(lambda: f.read(1 << 20), b''):
        hashed.update(block)
  return hashed.hexdigest()


def apply_folder_rule(split: Split, folder_of: Callable[[VideoEntry], str | None],
                      frames_in: Callable[[VideoEntry, str], list[str]]) -> Split:
  """`split` with the split rule (`apply_split_rule`) applied again with the folders its
  videos' frames are read from: `folder_of(entry)` (a frame or flow list's row may name
  another folder than the video's own; None: none found), kept as `read_from`. Two entries are
  one video when either's own file or folder is the other's, or the one the other is read
  from: a training video read from a test video's folder, or from whose folder a test video
  is read, is kept out of training ('test video in training list'; with two labels,
  'conflicting label' in both subsets), and so are such videos within one subset
  (`one_per_folder`). Then a training video whose folder holds the same frames as a test
  video's (a copy under another name, `keep_out_copies`) is kept out of training too: the
  frame files `frames_in(entry, folder)` reads, so other files beside the frames
  (Thumbs.db, another stream's) do not hide a copy."""
  folders = {(e.source, e.line): folder_of(e) for e in split.train + split.test}

  def read_from(entry: VideoEntry) -> VideoEntry:
    folder = folders[entry.source, entry.line]
    identity = file_identity(folder) if folder else ''
    return (dataclasses.replace(entry, read_from=identity)
            if identity and identity != entry.identity else entry)

  def frames_of(entry: VideoEntry) -> list[str]:
    folder = folders[entry.source, entry.line]
    if not folder or not os.path.isdir(folder):
      return []
    return frames_in(entry, folder)
  train, test, problems = apply_split_rule([read_from(e) for e in split.train],
                                           [read_from(e) for e in split.test], split.problems)
  train = one_per_folder(train, 'train', problems)
  test = one_per_folder(test, 'test', problems)
  train, problems = keep_out_copies(train, test, problems, frames_of, 'frames')
  return dataclasses.replace(split, train=train, test=test, problems=problems)


def one_per_folder(entries: list[VideoEntry], subset: str, problems: list[InputProblem]
                   ) -> list[VideoEntry]:
  """`entries` of `subset` but those sharing a file or folder (`identity` or `read_from`)
  with an earlier entry: a 'duplicate' when its label is the same; with another label, both
  are a 'conflicting label' (kept out). Problems are appended to `problems`; indices
  renumbered 0..n-1."""
  first: dict[str, VideoEntry] = {}
  for e in entries:
    for key in (e.identity, e.read_from):
      if key:
        first.setdefault(key, e)
  earlier = {id(e): next((first[k] for k in (e.identity, e.read_from)
                          if k and first[k] is not e), None) for e in entries}
  other_label: dict[int, VideoEntry] = {}
  for e in entries:
    other = earlier[id(e)]
    if other is not None and other.label != e.label:
      other_label.setdefault(id(e), other)
      other_label.setdefault(id(other), e)
  kept: list[VideoEntry] = []
  for e in entries:
    other = other_label.get(id(e)) or earlier[id(e)]
    if id(e) in other_label:
      where = [f'{os.path.basename(o.source)}:{o.line}' for o in (e, other)]
      problems.append(conflicting_label(e.source, e.line, e.name, (where[0], e.label),
                                        (f'{where[1]}, the same folder', other.label), subset))
    elif other is not None:
      problems.append(InputProblem(e.source, e.line, f'{e.name} and {other.name} '
                                   f'({os.path.basename(other.source)}:{other.line}) are read '
                                   'from one folder: counted once', 'duplicate', subset))
    else:
      kept.append(dataclasses.replace(e, index=len(kept)))
  return kept


def with_files(entries: list[VideoEntry], root: str) -> list[VideoEntry]:
  """`entries` whose `identity` was not known, given the `file_identity` of their video file
  or frame folder under `root` (`locate`); `entries` as they are without a `root`."""
  if not root:
    return entries
  listings: dict[str, dict[str, str]] = {}
  return [e if e.identity else dataclasses.replace(
      e, identity=file_identity(locate(root, e, listings) or '')) for e in entries]


def locate(root: str, entry: VideoEntry,
           listings: dict[str, dict[str, str]] | None = None) -> str | None:
  """Path of `entry`'s video under `root`: its file (`resolve_video`), else its frame folder
  `<root>/<class>/<video>/` or `<root>/<video>/` (names matched case-insensitively,
  `find_child` with `listings`); None when there is none."""
  found = resolve_video(root, entry, listings)
  if found:
    return found
  folder = find_child(root, entry.class_name, listings)
  for parent in ([folder] if folder else []) + [root]:
    video = find_child(parent, entry.name, listings)
    if video and os.path.isdir(video):
      return video
  return None


def conflicting_label(path: str, line: int, video: str, first: tuple[str, Any],
                      again: tuple[str, Any], subset: str | None) -> InputProblem:
  """The InputProblem of a video listed with two labels (`first` and `again`: (where, label)):
  kind 'conflicting label', one per video, which is kept out of both subsets (neither label
  can be trusted)."""
  return InputProblem(path, line, f'video {video!r} is listed with two labels ({first[1]} in '
                 f'{first[0]}, {again[1]} in {again[0]}): kept out; give it one label',
                 'conflicting label', subset or '')


def resolve_video(video_root: str, entry: VideoEntry,
                  listings: dict[str, dict[str, str]] | None = None) -> str | None:
  """Path of `entry`'s video file under `video_root` (`rel_path`, e.g. `<Class>/<file>`,
  each part matched case-insensitively, `find_child` with `listings`; an absolute
  `rel_path` as it is), else None."""
  if os.path.isabs(entry.rel_path):
    return entry.rel_path if os.path.isfile(entry.rel_path) else None
  path = video_root
  for part in entry.rel_path.split('/'):
    path = find_child(path, part, listings)
    if path is None:
      return None
  return path if os.path.isfile(path) else None


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


def check_counted_from_one(path: str, labels: dict[int, int], num_classes: int,
                           option: str | None) -> None:
  """Raises `DatasetError` naming `path`, its line and `option` when a labelled list counts
  from 1 (`labels`: each label -> its first line; no label 0 and label `num_classes` on some
  line): every label would be one class off, so the whole list is refused, not its lines."""
  if num_classes in labels and 0 not in labels:
    raise DatasetError(
        f'{path}:{labels[num_classes]}: labels run {min(labels)}..{max(labels)} and none is '
        f'0, but the class-names file names {num_classes} classes (labels 0..'
        f'{num_classes - 1}): this list counts from 1, as UCF101\'s own lists do; subtract 1 '
        'from every label', path, labels[num_classes], option)


def check_frame_list_classes(path: str, entries: Sequence[VideoEntry],
                             infos: Mapping[str, FrameInfo], option: str | None) -> None:
  """Raises `DatasetError` naming the frame list `path` (rgb.txt, flow.txt), its line and
  `option` when it labels every listed video of a class other than the split does (`infos`:
  its rows by lower-case name, `read_frame_list`): a list in another class order would drop
  the whole class as 'label mismatch'. A few mismatched rows are counted, not refused."""
  rows: dict[int, list[tuple[VideoEntry, FrameInfo]]] = {}
  for entry in entries:
    info = infos.get(entry.key)
    if info is not None:
      rows.setdefault(entry.label, []).append((entry, info))
  for label, pairs in sorted(rows.items()):
    if all(info.label != entry.label for entry, info in pairs):
      entry, info = min(pairs, key=lambda pair: pair[1].line)
      raise DatasetError(
          f'{path}:{info.line}: every listed video of class {entry.class_name!r} has label '
          f'{info.label} here, but the split gives it label {label}: the list follows another '
          'class order (or another release\'s class list); write it with the split\'s labels',
          path, info.line, option)


def read_frame_list(path: str, num_classes: int | None = None, option: str | None = None
                    ) -> tuple[dict[str, FrameInfo], list[InputProblem]]:
  """Parses rgb.txt rows `name path nframes label0` into {lower-case name: FrameInfo}.

  Relative paths are resolved against the list's directory. With `num_classes`, a row whose
  label is outside 0..num_classes-1 is an InputProblem, and a list counted from 1 raises
  `DatasetError` naming `option` (`check_counted_from_one`).
  """
  infos: dict[str, FrameInfo] = {}
  problems = []
  labels: dict[int, int] = {}  # label -> its first line
  base = os.path.dirname(path)
  for number, text in read_lines(path):
    parts = text.split()
    if len(parts) != 4:
      problems.append(InputProblem(path, number, f'malformed line {text!r} '
                              '(expected "<name> <path> <nframes> <label0>")', 'malformed line'))
      continue
    name, folder, nframes, label = parts
    try:
      nframes_i, label_i = int(nframes), int(label)
    except ValueError:
      problems.append(InputProblem(path, number, f'malformed numbers in {text!r}', 'malformed line'))
      continue
    labels.setdefault(label_i, number)
    if num_classes is not None and not 0 <= label_i < num_classes:
      problems.append(InputProblem(path, number, f'label {label_i} out of range 0..{num_classes - 1}',
                              'label out of range'))
      continue
    name = os.path.basename(name.rstrip('/'))
    if os.path.splitext(name)[1].lower() in VIDEO_EXTENSIONS:
      name = os.path.splitext(name)[0]  # HMDB51 names may hold other dots
    folder = folder if os.path.isabs(folder) else os.path.join(base, folder)
    infos[name.lower()] = FrameInfo(name, folder, nframes_i, label_i, number)
  if num_classes is not None:
    check_counted_from_one(path, labels, num_classes, option)
  return infos, problems

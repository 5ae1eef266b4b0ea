"""Folders of one video's frames as JPEG files, and TV-L1 flow as two such folders (u, v).

    count_frames(folder, claimed) -> (count, None) | (0, reason)   # frames 1..count, no gap
    read_frames(folder, indices) -> uint8 [T, H, W, 3] ([T, H, W] grayscale)
    frame_file(folder, index) -> the frame's file as named on disk (any case)
    flow_folders(flow_root, video) -> (u, v); count_flow_frames(flow_root, video)
    flow_channel_root(folder) -> (flow root, 'u' | 'v') | None  # a channel of a flow root

File names are 1-based `frame%06d.jpg` (this project's and the community UCF101 release's)
or another `FRAME_PATTERNS` entry, found per folder (`frame_pattern`); `pattern=` takes any
`%0Nd` name (`data_tools/layouts.py`). Frame indices given to the readers are 0-based.
Standard library only (and `video_lists.find_child`), plus numpy and OpenCV inside
`read_frames`.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Iterable

from input_fn import video_lists

if TYPE_CHECKING:
  import numpy as np

FRAME_PATTERN = 'frame%06d.jpg'
FRAME_RE = re.compile(r'^frame(\d{6})\.jpg$', re.IGNORECASE)
# File names of one video's frame folder that are read, in this order: this project's and
# the community release's, then TSN's and mmaction's (`data_tools/layouts.py`).
FRAME_PATTERNS = (FRAME_PATTERN, 'img_%05d.jpg')
# Real jpegs_256 folders sometimes hold this many frames fewer than rgb.txt says.
MISSING_TAIL_TOLERANCE = 3


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

  Frames must be 1..count without a gap (a frame 0 is a reason too: it would be left out).
  A folder holding files of `pattern` and of another `FRAME_PATTERNS` entry, or one frame
  under two spellings (`frame000001.jpg` and `frame000001.JPG`: two runs of frame
  extraction), gives a reason starting 'two frame patterns'. A folder holding up to
  `tolerance` frames fewer
  than `claimed` (the info list's count) is fine and `count` is what is on disk; a larger
  shortfall, a gap, an empty or missing folder give a reason instead, and with `exact` any
  count other than `claimed` does (reason starting 'the list says').
  """
  if not os.path.isdir(folder):
    return 0, f'missing frame folder {folder}'
  regex = FRAME_RE if pattern == FRAME_PATTERN else name_regex(pattern)
  others = {other: name_regex(other) for other in FRAME_PATTERNS
            if pattern in FRAME_PATTERNS and other != pattern}
  indices, named = set(), {}
  other_files = dict.fromkeys(others, 0)
  for child in os.listdir(folder):
    m = regex.match(child)
    if m:
      indices.add(int(m.group(1)))
      named.setdefault(int(m.group(1)), []).append(child)
    for other, other_regex in others.items():
      other_files[other] += bool(other_regex.match(child))
  if not indices:
    return 0, f'no {pattern} files in {folder}'
  mixed = next(((other, n) for other, n in other_files.items() if n), None)
  if mixed:
    return 0, (f'two frame patterns: {folder} holds {len(indices)} {pattern} and {mixed[1]} '
               f'{mixed[0]} files (two runs of frame extraction?): keep the frames of one')
  twice = next((sorted(names) for names in named.values() if len(names) > 1), None)
  if twice:
    return 0, (f'two frame patterns: {folder} holds {" and ".join(twice)}, one frame in two '
               'spellings (two runs of frame extraction?): keep the frames of one')
  if 0 in indices:
    return 0, (f'numbered from 0: {folder} holds {pattern % 0}, but frames are read from '
               f'{pattern % 1}, so its first frame would be left out; number them from 1')
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


def frame_files_in(folder: str, pattern: str | None = None) -> list[str]:
  """The files of `folder` read as its frames, by frame number: those named by `pattern`
  (any case; default the folder's `frame_pattern`), nothing else beside them."""
  pattern = pattern or frame_pattern(folder)
  regex = FRAME_RE if pattern == FRAME_PATTERN else name_regex(pattern)
  found = sorted((int(m.group(1)), name) for name in os.listdir(folder)
                 for m in [regex.match(name)] if m)
  return [os.path.join(folder, name) for _, name in found]


def frame_pattern(folder: str) -> str:
  """The `FRAME_PATTERNS` entry whose frame 1 is in `folder` (any case, `frame_file`; per
  folder, so a tree mixing them is read video by video); FRAME_PATTERN when none is."""
  return next((p for p in FRAME_PATTERNS if os.path.isfile(frame_file(folder, 0, p))),
              FRAME_PATTERN)


def frame_path(folder: str, index0: int, pattern: str = FRAME_PATTERN) -> str:
  """Path of the frame with 0-based index `index0` (file names are 1-based), as written."""
  return os.path.join(folder, pattern % (index0 + 1))


def frame_file(folder: str, index0: int, pattern: str = FRAME_PATTERN,
               listings: dict[str, dict[str, str]] | None = None) -> str:
  """Path of the frame with 0-based index `index0` as it is on disk: its file name matched
  case-insensitively, as `count_frames` counts it (`frame000001.JPG` for frame000001.jpg;
  `video_lists.find_child` with `listings`); `frame_path` when there is no such file."""
  return (video_lists.find_child(folder, pattern % (index0 + 1), listings) or
          frame_path(folder, index0, pattern))


def read_frames(folder: str, indices: Iterable[int], grayscale: bool = False,
                pattern: str = FRAME_PATTERN) -> np.ndarray:
  """Reads frames (0-based indices) of `pattern` files as uint8 RGB [T, H, W, 3]
  (grayscale: [T, H, W]).

  Raises `IOError` naming the file if one cannot be decoded.
  """
  import cv2  # pylint: disable=import-outside-toplevel
  import numpy as np  # pylint: disable=import-outside-toplevel,redefined-outer-name
  frames = []
  listings: dict[str, dict[str, str]] = {}
  for i in indices:
    path = frame_file(folder, int(i), pattern, listings)
    image = cv2.imread(path, cv2.IMREAD_GRAYSCALE if grayscale else cv2.IMREAD_COLOR)
    if image is None:
      raise IOError(f'cannot decode {path}')
    frames.append(image if grayscale else cv2.cvtColor(image, cv2.COLOR_BGR2RGB))
  return np.stack(frames)


def flow_folders(flow_root: str, video: str) -> tuple[str, str]:
  """(u, v) folders of a video's TV-L1 flow: `<flow_root>/u/<video>`, `<flow_root>/v/<video>`."""
  return os.path.join(flow_root, 'u', video), os.path.join(flow_root, 'v', video)


def flow_channel_root(folder: str) -> tuple[str, str] | None:
  """(flow root, 'u' or 'v' as spelled) when `folder` is one channel of a flow root: named
  u or v, in either case, with the other channel beside it (`<root>/u` and `<root>/v`);
  else None."""
  root, channel = os.path.split(os.path.normpath(os.path.abspath(folder)))
  other = {'u': 'v', 'v': 'u'}.get(channel.lower())
  if other and video_lists.find_child(root, other) is not None:
    return root, channel
  return None


def count_flow_frames(flow_root: str, video: str) -> tuple[int, str | None]:
  """Frames available in both u and v folders (see `count_frames`), or (0, reason)."""
  counts = []
  for folder in flow_folders(flow_root, video):
    count, reason = count_frames(folder)
    if reason:
      return 0, reason
    counts.append(count)
  return min(counts), None

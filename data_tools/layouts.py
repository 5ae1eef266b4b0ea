"""Where a video's frame (or flow) files are: the layouts this project and others write.

A layout is one pattern relative to the frames (or flow) folder: `{video}` stands for the
video's name (its folder is matched case-insensitively), a printf `%0Nd` for the 1-based frame
number, and for flow `{u,v}` or `{x,y}` for the two channels, horizontal first:

  frames  {video}/frame%06d.jpg          jpegs_256 (this project, the community release)
          {video}/img_%05d.jpg           TSN, mmaction's denseflow, I3D_Finetune
  flow    {u,v}/{video}/frame%06d.jpg    tvl1_flow (this project, the community release)
          {u,v}/{video}/img_%05d.jpg
          {video}/flow_{x,y}_%05d.jpg    TSN, mmaction's denseflow
          {video}/{u,v}/frame%06d.jpg    (and img_%05d.jpg)

`resolve` picks the layout whose frame 1 exists for the listed videos (up to `SAMPLE` videos
spread over the list are looked at); when none does it raises `LayoutError` naming the
layout found on disk and the ones expected, and when the videos are in two layouts (a tree
mixing `frame%06d` and `img_%05d` folders) one naming both. A row of an info
list (rgb.txt, flow.txt) names the video's folder itself: the part of the layout after
`{video}` is then looked up inside that folder (a flow row's `{:s}` is the channel folder).
No TensorFlow here.
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Iterable, Sequence

from input_fn import frame_folders, video_lists

FRAME_LAYOUTS = ('{video}/frame%06d.jpg', '{video}/img_%05d.jpg')
FLOW_LAYOUTS = ('{u,v}/{video}/frame%06d.jpg', '{u,v}/{video}/img_%05d.jpg',
                '{video}/flow_{x,y}_%05d.jpg', '{video}/{u,v}/frame%06d.jpg',
                '{video}/{u,v}/img_%05d.jpg')
AUTO = 'auto'
SAMPLE = 200  # listed videos looked at, spread over the list, to find the layout
_CHANNELS = re.compile(r'\{(\w+),(\w+)\}')
_NUMBER = re.compile(r'%(0\d+)?d')
_DIGITS = re.compile(r'\d+')


class LayoutError(ValueError):
  """A layout pattern that cannot be used, or files on disk in no known layout; the message
  names what was found and what is expected. `option`: the flag it concerns (layout,
  frames_dir or flow_dir); `found`: what the folder holds in layout terms ('' when not
  looked at); `expected`: the layouts looked for; `mixed`: for a folder in two layouts, the
  number of sampled videos in each; `example`: (a listed video, as `{video}` stands for it,
  and the folder the first expected layout looked in for it), () when none was looked for."""

  def __init__(self, message: str, option: str, found: str = '',
               expected: tuple[str, ...] = (), mixed: dict[str, int] | None = None,
               example: tuple[str, str] = ()) -> None:
    super().__init__(message)
    self.option = option
    self.found = found
    self.expected = expected
    self.mixed = mixed or {}
    self.example = example


@dataclasses.dataclass(frozen=True)
class FrameFiles:
  """One channel's frames of one video: `folder` holding files named `name % n`, n = 1.."""
  folder: str
  name: str

  def path(self, index0: int, listings: dict[str, dict[str, str]] | None = None) -> str:
    """The file of frame `index0` as named on disk (`frame_folders.frame_file`)."""
    return frame_folders.frame_file(self.folder, index0, self.name, listings)

  def count(self, info: dict | None = None) -> tuple[int, str | None]:
    """(frames 1..count on disk, None) or (0, reason): `frame_folders.count_frames` of the count an
    info-list row (`video_lists.FrameInfo` as a dict) claims, exactly when the row says so."""
    return frame_folders.count_frames(self.folder, info and info['num_frames'], pattern=self.name,
                               exact=bool(info and info.get('exact')))


@dataclasses.dataclass(frozen=True)
class Layout:
  """A checked layout pattern (see the module docstring)."""
  pattern: str

  @property
  def channels(self) -> tuple[str, ...]:
    """('u', 'v') or ('x', 'y') for flow; ('',) for frames."""
    m = _CHANNELS.search(self.pattern)
    return (m.group(1), m.group(2)) if m else ('',)

  def files(self, root: str, video: str, listed: str | None = None) -> list[FrameFiles]:
    """The frame files of `video` under `root`, one per channel. `listed` is a list row's
    folder of the video (a flow row's `{:s}` standing for the channel folder u or v)."""
    parts = self.pattern.split('/')
    at = next(i for i, p in enumerate(parts) if '{video}' in p)
    if listed and '{:s}' not in listed and _CHANNELS.search('/'.join(parts[:at + 1])):
      listed = None  # a row naming one folder for both channels: not this layout's shape
    found = []
    for number in range(len(self.channels)):
      pick = lambda text: _CHANNELS.sub(lambda m: m.group(1 + number), text)
      if listed and '{:s}' in listed:
        found.append(FrameFiles(listed.format('uv'[number]), pick(parts[-1])))
        continue
      if listed:
        folder, rest = listed, parts[at + 1:]
      else:
        folder, rest = root, parts
      for part in rest[:-1]:
        part = pick(part)
        if '{video}' in part:
          name = part.replace('{video}', video)
          folder = video_lists.find_child(folder, name) or os.path.join(folder, name)
        else:
          folder = os.path.join(folder, part)
      found.append(FrameFiles(folder, pick(rest[-1]).replace('{video}', video)))
    return found

  def has_first_frame(self, root: str, video: str, listed: str | None = None) -> bool:
    return all(os.path.isfile(f.path(0)) for f in self.files(root, video, listed))


def parse(pattern: str, flow: bool) -> Layout:
  """A `Layout` of a user's pattern; `LayoutError` saying what it lacks."""
  kind = 'flow' if flow else 'frames'
  example = FLOW_LAYOUTS[2] if flow else FRAME_LAYOUTS[1]
  parts = pattern.split('/')
  problems = []
  if pattern.startswith('/') or '' in parts or '..' in parts:
    problems.append('a path relative to the folder')
  if sum('{video}' in p for p in parts[:-1]) != 1:
    problems.append('{video} as one folder')
  if len(_NUMBER.findall(parts[-1])) != 1 or '%' in _NUMBER.sub('', parts[-1]):
    problems.append('one %0Nd frame number in the file name')
  if len(_CHANNELS.findall(pattern)) != (1 if flow else 0):
    problems.append('the two channels as {u,v} or {x,y}' if flow else 'no {u,v} channel part')
  if problems:
    raise LayoutError(f'--layout={pattern} is not a {kind} layout: it needs '
                      f'{", ".join(problems)} (e.g. --layout={example})', 'layout')
  return Layout(pattern)


def describe(root: str, videos: Sequence[str], listed: dict[str, str]) -> str:
  """What `root` holds, in layout terms: `{video}/image-%04d.png`, or why nothing fits."""
  if not os.path.isdir(root) and not listed:
    return 'nothing (it does not exist)'
  for video in videos:
    starts = [listed[video].replace('{:s}', 'u')] if video in listed else []
    starts += [p for p in (video_lists.find_child(root, video),
                           video_lists.find_child(os.path.join(root, 'u'), video)) if p]
    for start in starts:
      sample = _first_file(start)
      if sample is not None:
        inside = os.path.abspath(sample).startswith(os.path.abspath(root) + os.sep)
        shown = os.path.relpath(sample, root) if inside else sample
        return _generalize(shown.replace(os.sep, '/'), video)
      if os.path.isdir(start):
        return f'an empty folder for {video} ({start})'
  try:
    children = sorted(os.listdir(root))
  except OSError:
    children = []
  shown = ', '.join(children[:3]) + (', ...' if len(children) > 3 else '')
  return (f'{len(children)} entries, none a folder of a listed video'
          f'{f" ({shown})" if children else ""}')


def _first_file(folder: str, depth: int = 3) -> str | None:
  """The first file (sorted) at most `depth` folders down, else None."""
  try:
    children = sorted(os.listdir(folder))
  except OSError:
    return None
  for child in children:
    if os.path.isfile(os.path.join(folder, child)):
      return os.path.join(folder, child)
  for child in children if depth > 1 else ():
    found = _first_file(os.path.join(folder, child), depth - 1)
    if found:
      return found
  return None


def _generalize(path: str, video: str) -> str:
  """`v_A_g01_c01/img_00001.jpg` -> `{video}/img_%05d.jpg` (the last number of the name)."""
  path = re.sub(re.escape(video), '{video}', path, flags=re.IGNORECASE)
  head, name = path.rsplit('/', 1) if '/' in path else ('', path)
  numbers = list(_DIGITS.finditer(name))
  if numbers:
    m = numbers[-1]
    name = f'{name[:m.start()]}%0{len(m.group())}d{name[m.end():]}'
  return f'{head}/{name}' if head else name


def resolve(pattern: str, root: str, videos: Iterable[str], listed: dict[str, str],
            flow: bool, flag: str) -> Layout:
  """The layout of `root` (the folder given by `flag`): `pattern` checked (`parse`), or
  for `AUTO` the first known layout; either must find frame 1 of one of `videos` (in order;
  `listed` maps a video to its info-list folder). `LayoutError` naming what `root` holds
  and the layouts expected otherwise."""
  candidates = ([Layout(p) for p in (FLOW_LAYOUTS if flow else FRAME_LAYOUTS)]
                if pattern == AUTO else [parse(pattern, flow)])
  videos = list(videos)
  step = max(1, len(videos) // SAMPLE)
  sample = videos[::step]
  looked = (f'the {len(videos)} listed videos' if step == 1 else
            f'{len(sample)} of the {len(videos)} listed videos')
  found: dict[Layout, list[str]] = {}  # layout -> the sampled videos in it
  for video in sample:
    for layout in candidates:
      if layout.has_first_frame(root, video, listed.get(video)):
        found.setdefault(layout, []).append(video)
        break
    if found and pattern != AUTO:
      break
  if len(found) > 1:
    mixed = ' and '.join(f'{l.pattern} ({len(found[l])}, e.g. {found[l][0]})'
                         for l in candidates if l in found)
    raise LayoutError(f'{flag}={root} mixes file layouts: {mixed} among {looked}; one '
                      'preparation reads one layout: rename the files of one of them (or '
                      'name one with --layout, and the videos in the other are skipped)',
                      flag.lstrip('-'), expected=tuple(l.pattern for l in candidates),
                      mixed={l.pattern: len(found[l]) for l in candidates if l in found})
  if found:
    return next(iter(found))
  expected = ' or '.join(l.pattern for l in candidates)
  hint = ' (or name the file pattern with --layout)' if pattern == AUTO else ''
  if flow and not os.path.isdir(root) and not listed:
    hint += '; compute the flow with //data_tools:extract_flow'
  holds = describe(root, sample, listed)
  example: tuple[str, str] = ()
  if sample:
    example = (sample[0], candidates[0].files(root, sample[0], listed.get(sample[0]))[0].folder)
    looked += (f' ({{video}} is a video as its list names it, e.g. {example[0]}: looked in '
               f'{example[1]})')
  raise LayoutError(f'{flag}={root}: found {holds}; expected {expected} for {looked}{hint}',
                    flag.lstrip('-') if pattern == AUTO else 'layout', holds,
                    tuple(l.pattern for l in candidates), example=example)

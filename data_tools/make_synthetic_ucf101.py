"""A small synthetic UCF101 or HMDB51, as a library: `make_dataset(out, **settings)` writes real
.avi files whose class is their motion and the official split files, and returns
{'classes', 'videos', 'out'}; its options (`SyntheticOptions`, `check_options`).
The program and its whole description: data_tools/make_synthetic_ucf101_main.py.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from typing import Any, ClassVar

import numpy as np

from input_fn import dir_identity, frame_folders, ucf101, video_io
from command_line.options import Options, OptionsError, Problem, at_least, option

DIRECTIONS = (('Right', (1, 0)), ('Left', (-1, 0)), ('Down', (0, 1)), ('Up', (0, -1)),
              ('DownRight', (1, 1)), ('UpLeft', (-1, -1)), ('DownLeft', (-1, 1)),
              ('UpRight', (1, -1)))
GROUPS = 25
BASE_SPEED = 1.5  # pixels per frame
# extract_flow settings for these small frames: frames kept as written, a coarse TV-L1
# (3 scales, 3 warps, epsilon 0.05: about 10x faster than OpenCV's defaults).
SYNTHETIC_FLOW = {'short_side': 0, 'tvl1_scales': 3, 'tvl1_warps': 3, 'tvl1_epsilon': 0.05}
MARKER = '.make_synthetic_ucf101.json'
WRITTEN = ('UCF-101', 'ucfTrainTestlist', 'jpegs_256', ucf101.FRAME_LIST_NAME,
           ucf101.FLOW_DIR_NAME, ucf101.FLOW_LIST_NAME, MARKER, 'hmdb51_org',
           'testTrainMulti_7030_splits', 'rawframes')
# Real HMDB51 titles carry these characters (I3D_Finetune data/hmdb51/trainlist01.txt).
HMDB51_TITLES = ('#2_Gum', 'Goal_1_&_2', 'Ball_fangen_(Timo_3)', 'OhNOES!__those_knots!',
                 'Geena_und_die_Radschl_ge___;-)', "Rock'n'Roll_Move")
HMDB51_MOTION_ORDER = (2, 3, 0, 1, 4, 5, 6, 7)  # DIRECTIONS indices: Down, Up, Right, Left, ...
HMDB51_IDS_OF_TEN = '2221111110'  # id by (video + 3 * split) % 10: 30% test, 10% neither


class SyntheticError(OptionsError):
  """The options or --out cannot be used; the message says which and why; `option` names
  the option."""

  def __init__(self, message: str, option: str | None = None) -> None:
    super().__init__(message, option)


def _frame_counts_ordered(o: SyntheticOptions) -> Problem | None:
  return Problem('min_frames', f'need --min_frames <= --max_frames, got {o.min_frames} and '
                 f'{o.max_frames}') if o.min_frames > o.max_frames else None


def _object_inside_frame(o: SyntheticOptions) -> Problem | None:
  """A square as large as the frame shows no motion."""
  if o.object_size < min(o.width, o.height):
    return None
  return Problem('object_size', f'--object_size must be in 1..{min(o.width, o.height) - 1} '
                 f'(smaller than the frame, or nothing is seen to move), got {o.object_size}')


def _flow_needs_two_frames(o: SyntheticOptions) -> Problem | None:
  return Problem('min_frames', f'--write_flow needs --min_frames >= 2 (flow is between two '
                 f'frames), got {o.min_frames}') if o.write_flow and o.min_frames < 2 else None


@dataclasses.dataclass(frozen=True)
class SyntheticOptions(Options):
  """The options of //data_tools:make_synthetic_ucf101 (one flag per field)."""
  error: ClassVar[type[OptionsError]] = SyntheticError
  rules = (_frame_counts_ordered, _object_inside_frame, _flow_needs_two_frames)

  out: str = option('', 'Output directory (required): new, empty, or written by this tool.',
                    path=True)
  layout: str = option('ucf101', 'ucf101: UCF101\'s official layout; hmdb51: HMDB51\'s '
                       '(hmdb51_org/, testTrainMulti_7030_splits/, odd characters in names).',
                       choices=('ucf101', 'hmdb51'))
  classes: int = option(6, 'Number of classes (8 directions per speed level).',
                        valid=at_least(1))
  groups: int = option(GROUPS, 'Groups per class (UCF101 has 25; more than 7); hmdb51: videos '
                       'per class.', valid=at_least(ucf101.GROUPS_PER_SPLIT + 1))
  clips_per_group: int = option(1, 'Clips per group.', valid=at_least(1))
  width: int = option(64, 'Frame width in pixels.', valid=at_least(8))
  height: int = option(48, 'Frame height in pixels.', valid=at_least(8))
  min_frames: int = option(24, 'Fewest frames per video.', valid=at_least(1))
  max_frames: int = option(40, 'Most frames per video.', valid=at_least(1))
  object_size: int = option(16, 'Side of the moving square in pixels.', valid=at_least(1))
  seed: int = option(0, 'Random seed (same seed, same files).', valid=at_least(0))
  write_frames: bool = option(False, 'Also write jpegs_256/ frame folders and rgb.txt.')
  write_flow: bool = option(False, 'Also write tvl1_flow/ (TV-L1 of the videos, '
                            '//data_tools:extract_flow, with its flow.txt).')


def claim_out_dir(out: str) -> None:
  """Refuses a non-empty `out` without this tool's identity file (`SyntheticError` naming
  what is there); removes what it wrote before in one that has it (any settings: a
  generator's directory is written again)."""
  if os.path.exists(out) and not os.path.isdir(out):
    raise SyntheticError(f'--out={out} is a file', 'out')
  children = sorted(os.listdir(out)) if os.path.isdir(out) else []
  try:
    ours = dir_identity.read(os.path.join(out, MARKER)) is not None
  except dir_identity.IdentityDamaged:
    ours = True  # its own file, damaged: still a directory this tool wrote
  if children and not ours:
    raise SyntheticError(f'--out={out} is not empty ({len(children)} entries, e.g. '
                         f'{children[0]}) and was not written by make_synthetic_ucf101: '
                         'nothing is overwritten; choose a new or empty directory', 'out')
  for name in children:
    if name in WRITTEN:
      path = os.path.join(out, name)
      shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)


def check_options(options: SyntheticOptions) -> None:
  """Raises `SyntheticError` when --out is not given (before writing; the options' ranges
  and rules hold once they are made)."""
  if not options.out:
    raise SyntheticError('--out is required', 'out')


def class_motion(label: int) -> tuple[str, tuple[float, float]]:
  """Class name and velocity (dx, dy) in pixels per frame of 0-based class `label`."""
  name, (dx, dy) = DIRECTIONS[label % len(DIRECTIONS)]
  level = label // len(DIRECTIONS) + 1
  norm = BASE_SPEED * level / np.hypot(dx, dy)
  return f'Move{name}Speed{level}', (dx * norm, dy * norm)


def _texture(rng: np.random.Generator, height: int, width: int, cell: int) -> np.ndarray:
  coarse = rng.integers(0, 256, (height // cell + 2, width // cell + 2, 3), dtype=np.uint8)
  return np.kron(coarse, np.ones((cell, cell, 1), np.uint8))[:height, :width]


def render_video(rng: np.random.Generator, velocity: tuple[float, float], frames: int,
                 width: int, height: int, object_size: int) -> np.ndarray:
  """uint8 RGB [frames, height, width, 3]: a textured square moving by `velocity` per frame
  (wrapping around the edges) over a static textured background."""
  background = (_texture(rng, height, width, 8) // 2 + 64).astype(np.uint8)
  patch = _texture(rng, object_size, object_size, 4)
  patch[:2], patch[-2:], patch[:, :2], patch[:, -2:] = 255, 255, 255, 255
  x0, y0 = rng.uniform(0, width), rng.uniform(0, height)
  video = np.empty((frames, height, width, 3), np.uint8)
  for t in range(frames):
    x = int(round(x0 + velocity[0] * t)) % width
    y = int(round(y0 + velocity[1] * t)) % height
    frame = background.copy()
    ys = (np.arange(object_size) + y) % height
    xs = (np.arange(object_size) + x) % width
    frame[np.ix_(ys, xs)] = patch
    video[t] = frame
  return video


def _write_lines(path: str, lines: list[str]) -> None:
  with open(path, 'wb') as f:
    f.write(''.join(line + '\r\n' for line in lines).encode())


def make_dataset(out: str, **settings: Any) -> dict[str, Any]:
  """Writes the dataset under `out` (see the module docstring); `settings` are
  `SyntheticOptions` fields. Returns a summary dict with the class names and video count.
  Deterministic for a given seed. Raises `SyntheticError` (see `claim_out_dir`)."""
  options = SyntheticOptions(out=out, **settings)
  check_options(options)
  claim_out_dir(out)
  os.makedirs(out, exist_ok=True)
  dir_identity.claim(os.path.join(out, MARKER), dataclasses.asdict(options))
  rng = np.random.default_rng(options.seed)
  if options.layout == 'hmdb51':
    return _make_hmdb51(options, rng)
  split_dir = os.path.join(out, 'ucfTrainTestlist')
  os.makedirs(split_dir, exist_ok=True)
  names = [class_motion(c)[0] for c in range(options.classes)]
  _write_lines(os.path.join(split_dir, ucf101.CLASS_INDEX_FILE),
               [f'{c + 1} {name}' for c, name in enumerate(names)])
  videos = []  # (class label, group, rel path, stem, frames)
  frame_rows = []
  for label, name in enumerate(names):
    _, velocity = class_motion(label)
    os.makedirs(os.path.join(out, 'UCF-101', name), exist_ok=True)
    for group in range(1, options.groups + 1):
      for clip in range(1, options.clips_per_group + 1):
        stem = f'v_{name}_g{group:02d}_c{clip:02d}'
        count = int(rng.integers(options.min_frames, options.max_frames + 1))
        video = render_video(rng, velocity, count, options.width, options.height,
                             options.object_size)
        rel = f'{name}/{stem}.avi'
        video_io.write_video(os.path.join(out, 'UCF-101', rel), video)
        videos.append((label, group, rel))
        if options.write_frames:
          folder = os.path.join(out, 'jpegs_256', stem)
          os.makedirs(folder, exist_ok=True)
          for t, frame in enumerate(video):
            with open(frame_folders.frame_path(folder, t), 'wb') as f:
              f.write(video_io.encode_jpeg(frame))
          frame_rows.append(f'{stem} jpegs_256/{stem} {count} {label}')
  for split in (1, 2, 3):
    test = set(ucf101.test_groups(split))
    _write_lines(os.path.join(split_dir, f'trainlist{split:02d}.txt'),
                 [f'{rel} {label + 1}' for label, group, rel in videos if group not in test])
    _write_lines(os.path.join(split_dir, f'testlist{split:02d}.txt'),
                 [rel for label, group, rel in videos if group in test])
  if options.write_frames:
    _write_lines(os.path.join(out, ucf101.FRAME_LIST_NAME), frame_rows)
  if options.write_flow:
    from data_tools import extract_flow
    extract_flow.extract(extract_flow.ExtractFlowOptions(data_dir=out, **SYNTHETIC_FLOW))
  return {'classes': names, 'videos': len(videos), 'out': out}


def hmdb51_motion(label: int) -> int:
  """The `class_motion` of hmdb51 class `label`: vertical motions first (down, up, right,
  left, ...), so a few classes survive training's horizontal flip."""
  return label - label % 8 + HMDB51_MOTION_ORDER[label % 8]


def hmdb51_class(label: int) -> str:
  """HMDB51-style (lower-case) name of synthetic class `label`: move_down_speed1, ..."""
  name = class_motion(hmdb51_motion(label))[0]
  return ''.join(f'_{c.lower()}' if c.isupper() else c for c in name).strip('_')


def hmdb51_id(video: int, split: int) -> int:
  """The split-file id (1 train, 2 test, 0 neither) of a class's `video`-th video."""
  return int(HMDB51_IDS_OF_TEN[(video + 3 * split) % 10])


def _make_hmdb51(options: SyntheticOptions, rng: np.random.Generator) -> dict[str, Any]:
  """Writes the hmdb51 layout (module docstring) under options.out."""
  out = options.out
  split_dir = os.path.join(out, 'testTrainMulti_7030_splits')
  os.makedirs(split_dir, exist_ok=True)
  names = [hmdb51_class(c) for c in range(options.classes)]
  stems: dict[str, list[str]] = {}
  for label, name in enumerate(names):
    _, velocity = class_motion(hmdb51_motion(label))
    os.makedirs(os.path.join(out, 'hmdb51_org', name), exist_ok=True)
    stems[name] = []
    for i in range(options.groups * options.clips_per_group):
      stem = f'{HMDB51_TITLES[i % len(HMDB51_TITLES)]}_{name}_u_nm_np1_fr_goo_{i}'
      count = int(rng.integers(options.min_frames, options.max_frames + 1))
      video = render_video(rng, velocity, count, options.width, options.height,
                           options.object_size)
      video_io.write_video(os.path.join(out, 'hmdb51_org', name, stem + '.avi'), video)
      stems[name].append(stem)
      if options.write_frames:
        folder = os.path.join(out, 'rawframes', name, stem)
        os.makedirs(folder, exist_ok=True)
        for t, frame in enumerate(video):
          with open(os.path.join(folder, f'img_{t + 1:05d}.jpg'), 'wb') as f:
            f.write(video_io.encode_jpeg(frame))
  for name in names:
    for split in (1, 2, 3):
      with open(os.path.join(split_dir, f'{name}_test_split{split}.txt'), 'w') as f:
        f.write(''.join(f'{stem}.avi {hmdb51_id(i, split)} \n'
                        for i, stem in enumerate(stems[name])))
  if options.write_flow:
    from data_tools import extract_flow
    extract_flow.extract(extract_flow.ExtractFlowOptions(data_dir=out, dataset='hmdb51',
                                                         **SYNTHETIC_FLOW))
  return {'classes': names, 'videos': sum(len(v) for v in stems.values()), 'out': out}

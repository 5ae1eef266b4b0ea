"""Writes a small synthetic UCF101: real .avi files and the official split files.

  bazel run //input_fn:make_synthetic_ucf101 -- --out=/tmp/ucf_synth --classes=6

Layout (exactly the release's):
  <out>/UCF-101/<Class>/v_<Class>_gGG_cCC.avi     MJPG AVI (written and read by OpenCV)
  <out>/ucfTrainTestlist/classInd.txt             "1 MoveRightSpeed1" (CRLF)
  <out>/ucfTrainTestlist/trainlist0N.txt          "<Class>/v_..._g08_c01.avi 1" (CRLF)
  <out>/ucfTrainTestlist/testlist0N.txt           "<Class>/v_..._g01_c01.avi" (CRLF)
  with --write_frames also <out>/jpegs_256/<video>/frame%06d.jpg and <out>/rgb.txt
  ("<video> jpegs_256/<video> <nframes> <label0>").
  with --write_flow also <out>/tvl1_flow/{u,v}/<video>/frame%06d.jpg and <out>/flow.txt,
  computed from the .avi files by the TV-L1 extractor (//input_fn:extract_flow) with
  SYNTHETIC_FLOW settings.

25 groups per class; split N puts groups 7(N-1)+1 .. 7N in the test list (split 1: 01-07).
Classes differ only in motion: every video shows a random textured square on a random
textured background, starting at a random place and moving with wrap-around; the class sets
its direction (8 directions) and speed. Any single frame has the same distribution in every
class, so telling classes apart needs time.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np

if __package__ in (None, ''):
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from input_fn import ucf101, video_io  # noqa: E402

DIRECTIONS = (('Right', (1, 0)), ('Left', (-1, 0)), ('Down', (0, 1)), ('Up', (0, -1)),
              ('DownRight', (1, 1)), ('UpLeft', (-1, -1)), ('DownLeft', (-1, 1)),
              ('UpRight', (1, -1)))
GROUPS = 25
BASE_SPEED = 1.5  # pixels per frame
# extract_flow settings for these small frames: frames kept as written, a coarse TV-L1
# (3 scales, 3 warps, epsilon 0.05: about 10x faster than OpenCV's defaults).
SYNTHETIC_FLOW = {'short_side': 0, 'tvl1_scales': 3, 'tvl1_warps': 3, 'tvl1_epsilon': 0.05}


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


def make_dataset(out: str, classes: int = 6, groups: int = GROUPS, clips_per_group: int = 1,
                 width: int = 64, height: int = 48, min_frames: int = 24,
                 max_frames: int = 40, object_size: int = 16, seed: int = 0,
                 write_frames: bool = False, write_flow: bool = False) -> dict[str, Any]:
  """Writes the dataset under `out` (see the module docstring); returns a summary dict with
  the class names and video count. Deterministic for a given seed."""
  if groups < ucf101.GROUPS_PER_SPLIT + 1:
    raise ValueError(f'groups must be > {ucf101.GROUPS_PER_SPLIT} so split 1 has training data')
  rng = np.random.default_rng(seed)
  split_dir = os.path.join(out, 'ucfTrainTestlist')
  os.makedirs(split_dir, exist_ok=True)
  names = [class_motion(c)[0] for c in range(classes)]
  _write_lines(os.path.join(split_dir, ucf101.CLASS_INDEX_FILE),
               [f'{c + 1} {name}' for c, name in enumerate(names)])
  videos = []  # (class label, group, rel path, stem, frames)
  frame_rows = []
  for label, name in enumerate(names):
    _, velocity = class_motion(label)
    os.makedirs(os.path.join(out, 'UCF-101', name), exist_ok=True)
    for group in range(1, groups + 1):
      for clip in range(1, clips_per_group + 1):
        stem = f'v_{name}_g{group:02d}_c{clip:02d}'
        count = int(rng.integers(min_frames, max_frames + 1))
        video = render_video(rng, velocity, count, width, height, object_size)
        rel = f'{name}/{stem}.avi'
        video_io.write_video(os.path.join(out, 'UCF-101', rel), video)
        videos.append((label, group, rel))
        if write_frames:
          folder = os.path.join(out, 'jpegs_256', stem)
          os.makedirs(folder, exist_ok=True)
          for t, frame in enumerate(video):
            with open(ucf101.frame_path(folder, t), 'wb') as f:
              f.write(video_io.encode_jpeg(frame))
          frame_rows.append(f'{stem} jpegs_256/{stem} {count} {label}')
  for split in (1, 2, 3):
    test = set(ucf101.test_groups(split))
    _write_lines(os.path.join(split_dir, f'trainlist{split:02d}.txt'),
                 [f'{rel} {label + 1}' for label, group, rel in videos if group not in test])
    _write_lines(os.path.join(split_dir, f'testlist{split:02d}.txt'),
                 [rel for label, group, rel in videos if group in test])
  if write_frames:
    _write_lines(os.path.join(out, ucf101.FRAME_LIST_NAME), frame_rows)
  if write_flow:
    from input_fn import extract_flow
    extract_flow.extract(extract_flow.ExtractFlowOptions(data_dir=out, **SYNTHETIC_FLOW))
  return {'classes': names, 'videos': len(videos), 'out': out}


def main(argv: list[str]) -> None:
  del argv
  from absl import flags
  f = flags.FLAGS
  out = f.out
  if not os.path.isabs(out) and os.environ.get('BUILD_WORKING_DIRECTORY'):
    out = os.path.join(os.environ['BUILD_WORKING_DIRECTORY'], out)
  summary = make_dataset(out, f.classes, f.groups, f.clips_per_group, f.width, f.height,
                         f.min_frames, f.max_frames, f.object_size, f.seed, f.write_frames,
                         f.write_flow)
  print(f'make_synthetic_ucf101: wrote {summary["videos"]} videos of '
        f'{len(summary["classes"])} classes to {out}')


def _define_flags() -> None:
  from absl import flags
  flags.DEFINE_string('out', None, 'Output directory (relative: to the working directory).')
  flags.DEFINE_integer('classes', 6, 'Number of classes (8 directions per speed level).')
  flags.DEFINE_integer('groups', GROUPS, 'Groups per class (UCF101 has 25).')
  flags.DEFINE_integer('clips_per_group', 1, 'Clips per group.')
  flags.DEFINE_integer('width', 64, 'Frame width in pixels.')
  flags.DEFINE_integer('height', 48, 'Frame height in pixels.')
  flags.DEFINE_integer('min_frames', 24, 'Fewest frames per video.')
  flags.DEFINE_integer('max_frames', 40, 'Most frames per video.')
  flags.DEFINE_integer('object_size', 16, 'Side of the moving square in pixels.')
  flags.DEFINE_integer('seed', 0, 'Random seed (same seed, same files).')
  flags.DEFINE_bool('write_frames', False, 'Also write jpegs_256/ frame folders and rgb.txt.')
  flags.DEFINE_bool('write_flow', False, 'Also write tvl1_flow/ (TV-L1 of the videos, '
                    '//input_fn:extract_flow) and flow.txt.')
  flags.mark_flag_as_required('out')


if __name__ == '__main__':
  from absl import app
  _define_flags()
  app.run(main)

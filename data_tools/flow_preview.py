"""Color-coded previews of extracted optical flow (numpy and OpenCV only).

    preview(options) -> list[str]     # the PNG files written

For each video named in --videos, reads its flow frames `<flow_dir>/{u,v}/<video>/frame%06d.jpg`
(extract_flow's layout, `input_fn/flow.py`: 8-bit codes of displacements in pixels per frame),
picks --frames of them evenly spaced, and writes each as `<out>/<video>/flow_%06d.png` (the
flow frame's number) in the Middlebury colors (`input_fn/flow_colors.py`: hue the direction,
saturation the length). One scale per video: --max_pixels, or 0 for the largest displacement
of its picked frames, so the frames of a video compare. A video without flow stops the run
before anything is written (exit 2), naming how many and which.
"""

from __future__ import annotations

import dataclasses
import os
import re

import cv2
import numpy as np

from command_line import entry
from command_line.options import at_least, option, Options, OptionsError
from input_fn import flow, flow_colors, frame_folders, ucf101


_PREVIEW_FILE = re.compile(r'flow_\d{6}\.png')


@dataclasses.dataclass(frozen=True)
class FlowPreviewOptions(Options):
  """What to preview and where."""
  flow_dir: str = option('', 'The flow root extract_flow wrote (holding u/ and v/).', path=True,
                         key=True)
  videos: tuple[str, ...] = option((), 'Videos to preview, by name (v_CricketShot_g04_c01).',
                                   key=True)
  out: str = option('', 'Folder to write <video>/flow_NNNNNN.png into.', path=True, key=True)
  frames: int = option(8, 'Flow frames per video, evenly spaced.', valid=at_least(1))
  max_pixels: float = option(
      0.0, 'Displacement, in pixels per frame, drawn at full color; 0: the largest in the '
      "video's previewed frames.", valid=at_least(0))


def check_options(options: FlowPreviewOptions) -> None:
  """Before any work: the three paths and names are given and every video has flow."""
  for name in ('flow_dir', 'videos', 'out'):
    if not getattr(options, name):
      raise OptionsError(f'give --{name}', name)
  missing = [v for v in options.videos if not _has_flow(options.flow_dir, v)]
  if missing:
    bare = [os.path.splitext(v)[0] for v in missing]
    if all(b != v and _has_flow(options.flow_dir, b) for b, v in zip(bare, missing)):
      raise OptionsError(f'flow folders are named without the video\'s extension: give '
                         f'--videos={",".join(bare[:5])}', 'videos')
    inner = os.path.join(options.flow_dir, ucf101.FLOW_DIR_NAME)
    if all(os.path.isdir(f) for v in missing for f in flow.find_flow_folders(inner, v)):
      raise OptionsError(f'--flow_dir={options.flow_dir} holds the flow one level down: give '
                         f'--flow_dir={inner}', 'flow_dir')
    raise OptionsError(
        f'{len(missing)} of {len(options.videos)} videos have no flow in {options.flow_dir} '
        f'(u/<video>/ and v/<video>/): {", ".join(missing[:5])}; extract it first '
        '(bazel run //data_tools:extract_flow) or name videos it holds', 'videos')


def _has_flow(flow_dir: str, video: str) -> bool:
  return all(os.path.isdir(f) for f in flow.find_flow_folders(flow_dir, video))


def preview(options: FlowPreviewOptions) -> list[str]:
  """Writes the previews of every video (`check_options` passed), replacing the PNGs an
  earlier preview left in its folder (other frames or another scale would sit beside
  them); returns their paths."""
  written = []
  for video in dict.fromkeys(options.videos):  # a video named twice is previewed once
    u_dir, v_dir = flow.find_flow_folders(options.flow_dir, video)
    count = len([f for f in os.listdir(u_dir) if f.endswith('.jpg')])
    picked = sorted(set(np.round(np.linspace(0, count - 1, options.frames)).astype(int)))
    u = np.stack([_pixels(frame_folders.frame_path(u_dir, t)) for t in picked])
    v = np.stack([_pixels(frame_folders.frame_path(v_dir, t)) for t in picked])
    colors = flow_colors.flow_to_rgb(u, v, options.max_pixels or None)
    folder = os.path.join(options.out, video)
    os.makedirs(folder, exist_ok=True)
    for name in os.listdir(folder):
      if _PREVIEW_FILE.fullmatch(name):
        os.remove(os.path.join(folder, name))
    for t, rgb in zip(picked, colors):
      path = os.path.join(folder, f'flow_{t + 1:06d}.png')
      cv2.imwrite(path, cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
      written.append(path)
  return written


def _pixels(path: str) -> np.ndarray:
  """float32 [H, W] displacement in pixels per frame of one flow JPEG; `entry.Failed`
  (exit 1) when it is missing or cannot be decoded."""
  pixels = cv2.imread(path, cv2.IMREAD_GRAYSCALE) if os.path.isfile(path) else None
  if pixels is None:
    raise entry.Failed(f'{path} is missing or cannot be decoded: its flow is incomplete (a '
                       'frame missing or damaged); extract that video\'s flow again '
                       '(//data_tools:extract_flow) or preview another')
  return flow.from_uint8(pixels)

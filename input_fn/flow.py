"""TV-L1 optical flow of one video, in the community release's 8-bit layout (no TensorFlow).

Layout: `tvl1_flow/u/<video>/frame%06d.jpg` (horizontal displacement, x) and
`tvl1_flow/v/<video>/frame%06d.jpg` (vertical, y), one 8-bit grayscale JPEG each, 1-based.
Frame t holds the flow from frame t to frame t+1, so a video of N frames has N-1 flow frames.
A displacement d (pixels per frame, positive = right/down) is clipped to [-BOUND, BOUND] and
stored as round((d + BOUND) * 255 / (2 * BOUND)): 0 is -20 px, 255 is +20 px, and no motion
is 127.5 (stored as 128). The pipelines read it back as x / 127.5 - 1, i.e. d / BOUND.

Frames are converted to grayscale before the flow is computed (OpenCV's
`cv2.optflow.DualTVL1OpticalFlow`, from opencv-contrib-python-headless).
"""

from __future__ import annotations

import dataclasses
import os
import shutil

import cv2
import numpy as np

from input_fn import frame_folders, json_files, video_io, video_lists

BOUND = 20.0  # pixels per frame mapped to 0 and 255
JPEG_QUALITY = 95
CHANNELS = ('u', 'v')
# What //data_tools:extract_flow records in its flow root: {settings: {short_side, bound,
# tvl1: {scales, warps, epsilon}}, videos ...}.
EXTRACTION_MANIFEST = 'flow.manifest.json'


@dataclasses.dataclass(frozen=True)
class Tvl1Settings:
  """The TV-L1 solver's accuracy/speed knobs. The defaults are OpenCV's (5 pyramid scales,
  5 warps, stopping threshold 0.01), i.e. the community release's; fewer scales and warps
  and a larger epsilon are several times faster and coarser (the demo's small frames)."""
  scales: int = 5
  warps: int = 5
  epsilon: float = 0.01


def tvl1(settings: Tvl1Settings = Tvl1Settings()) -> 'cv2.optflow.DualTVL1OpticalFlow':
  """A TV-L1 solver (`cv2.optflow.DualTVL1OpticalFlow`) with `settings`."""
  if not hasattr(cv2, 'optflow'):
    raise ImportError('cv2.optflow is missing: TV-L1 needs opencv-contrib-python-headless '
                      '(run `bash tools/setup.sh`; opencv-python-headless must not be installed '
                      'beside it)')
  return cv2.optflow.DualTVL1OpticalFlow_create(
      nscales=settings.scales, warps=settings.warps, epsilon=settings.epsilon)


def to_uint8(displacement: np.ndarray) -> np.ndarray:
  """float displacement in pixels (any shape) -> uint8 codes, clipped to +-BOUND."""
  clipped = np.clip(displacement, -BOUND, BOUND)
  return np.round((clipped + BOUND) * (255.0 / (2 * BOUND))).astype(np.uint8)


def from_uint8(codes: np.ndarray) -> np.ndarray:
  """uint8 codes -> float32 displacement in pixels (inverse of `to_uint8` up to rounding)."""
  return codes.astype(np.float32) * (2 * BOUND / 255.0) - BOUND


def grayscale(frames_rgb: np.ndarray) -> np.ndarray:
  """uint8 RGB [T, H, W, 3] -> uint8 [T, H, W]."""
  return np.stack([cv2.cvtColor(f, cv2.COLOR_RGB2GRAY) for f in frames_rgb])


def video_flow(frames_gray: np.ndarray, solver=None) -> np.ndarray:
  """uint8 grayscale [T, H, W] -> uint8 flow codes [T-1, H, W, 2] (channel 0 u, 1 v).

  Needs T >= 2. `solver` defaults to a fresh `tvl1()`."""
  if len(frames_gray) < 2:
    raise ValueError(f'flow needs at least 2 frames, got {len(frames_gray)}')
  solver = solver or tvl1()
  return np.stack([to_uint8(solver.calc(previous, current, None))
                   for previous, current in zip(frames_gray[:-1], frames_gray[1:])])


def write_flow(codes: np.ndarray, flow_root: str, video: str) -> None:
  """Writes uint8 [N, H, W, 2] as `flow_root/{u,v}/<video>/frame%06d.jpg`, atomically per
  video: both folders are written under temporary names and renamed when complete, so a
  folder that exists is whole (an interrupted run leaves only `.tmp-*` folders)."""
  finals = frame_folders.flow_folders(flow_root, video)
  temporaries = [os.path.join(os.path.dirname(f), f'.tmp-{video}') for f in finals]
  for channel, temporary in enumerate(temporaries):
    shutil.rmtree(temporary, ignore_errors=True)
    os.makedirs(temporary)
    for t in range(len(codes)):
      with open(frame_folders.frame_path(temporary, t), 'wb') as f:
        f.write(video_io.encode_jpeg(codes[t, :, :, channel], JPEG_QUALITY))
  for temporary, final in zip(temporaries, finals):
    shutil.rmtree(final, ignore_errors=True)
    os.replace(temporary, final)


def has_flow(flow_root: str, video: str) -> bool:
  """True when both u and v folders of `video` exist (written whole by `write_flow`)."""
  return all(os.path.isdir(f) for f in frame_folders.flow_folders(flow_root, video))


def written(flow_root: str, video: str) -> list[int]:
  """[files in u, files in v, bytes of them all] of `video`'s flow folders as they are now
  (a folder that is missing counts 0): a frame lost, emptied or cut short since its flow
  was written changes it."""
  found = [0, 0, 0]
  for channel, folder in enumerate(frame_folders.flow_folders(flow_root, video)):
    try:
      entries = [e for e in os.scandir(folder) if e.is_file()]
    except OSError:
      continue
    found[channel] = len(entries)
    found[2] += sum(e.stat().st_size for e in entries)
  return found


def find_flow_folders(flow_root: str, video: str, listed_path: str | None = None
                      ) -> tuple[str, str]:
  """(u folder, v folder) of `video`: `listed_path.format('u')` / `('v')` when a flow-list row
  gives a path with `{:s}`, else `<flow_root>/{u,v}/<video>` matched case-insensitively."""
  if listed_path and '{:s}' in listed_path:
    return listed_path.format('u'), listed_path.format('v')
  folders = []
  for channel in CHANNELS:
    root = os.path.join(flow_root, channel)
    folders.append(video_lists.find_child(root, video) or os.path.join(root, video))
  return folders[0], folders[1]


def resize_codes(codes: np.ndarray, short_side: int) -> np.ndarray:
  """uint8 flow codes [H, W] resized so min(H, W) == short_side, displacements scaled with
  the image (a d-pixel motion becomes d * scale pixels, around the zero code 127.5)."""
  resized = video_io.resize_short_side(codes, short_side)
  if resized is codes:
    return codes
  scale = short_side / min(codes.shape[:2])
  return np.clip(np.round((resized.astype(np.float32) - 127.5) * scale + 127.5),
                 0, 255).astype(np.uint8)


def extraction_settings(flow_root: str) -> dict | None:
  """The settings //data_tools:extract_flow computed the flow in `flow_root` with
  ({short_side, bound, tvl1}, from EXTRACTION_MANIFEST); None when it records none."""
  if not flow_root:
    return None
  found = json_files.load_object(os.path.join(flow_root, EXTRACTION_MANIFEST)) or {}
  settings = found.get('settings')
  return settings if isinstance(settings, dict) else None


def records_extraction_settings(prepared: dict) -> dict | None:
  """The extraction settings of the flow records a manifest (`prepared`) describes: those
  prepare kept in it ('flow_extraction'), else (records prepared before it kept them) those
  of the flow folder they were prepared from, if it is still there; None when they say
  none (flow another tool computed)."""
  if 'flow_extraction' in prepared:
    kept = prepared['flow_extraction']
    return kept if isinstance(kept, dict) else None
  return extraction_settings((prepared.get('source_paths') or {}).get('flow_dir', ''))


def settings_differences(first: dict, other: dict, prefix: str = '') -> list[str]:
  """The names (dotted: 'tvl1.scales') of the extraction settings whose values differ."""
  found = []
  for key in sorted(set(first) | set(other)):
    a, b = first.get(key), other.get(key)
    if isinstance(a, dict) and isinstance(b, dict):
      found += settings_differences(a, b, f'{prefix}{key}.')
    elif a != b:
      found.append(f'{prefix}{key}')
  return found

"""Decoding and encoding of video frames with OpenCV (no TensorFlow).

Arrays are uint8 RGB `[frames, height, width, 3]` unless a function says otherwise.
"""

from __future__ import annotations

import os
from typing import Iterable

import cv2
import numpy as np


class VideoError(IOError):
  """A video that cannot be used; the message is the reason (the caller adds the path).
  `kind` names the reason for counting: 'empty file', 'undecodable video', 'no readable
  frame' or 'truncated video' (the `kind` of a skipped input in the manifests)."""

  def __init__(self, message: str, kind: str = 'undecodable video') -> None:
    super().__init__(message)
    self.kind = kind


def is_jpeg(data: bytes) -> bool:
  """Whether `data` starts as a JPEG file does (SOI marker FF D8 FF): the only image
  format records hold; a PNG or BMP frame file is decoded and encoded again."""
  return data[:3] == b'\xff\xd8\xff'


def resize_short_side(frame: np.ndarray, short_side: int) -> np.ndarray:
  """Resizes so that min(height, width) == short_side (aspect kept); 0 keeps the frame."""
  h, w = frame.shape[:2]
  if not short_side or min(h, w) == short_side:
    return frame
  scale = short_side / min(h, w)
  size = (max(short_side, round(w * scale)), max(short_side, round(h * scale)))
  interpolation = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
  return cv2.resize(frame, size, interpolation=interpolation)


def decode_video(path: str, short_side: int = 0, keep: Iterable[int] | None = None,
                 truncation_tolerance: int = 3) -> np.ndarray:
  """Decodes a video file to uint8 RGB [T, H, W, 3], resized to `short_side` (0: as is).

  `keep` (0-based frame numbers) keeps only those frames, in that order (repeats allowed);
  decoding still runs from the start up to the last one needed. Raises `VideoError` for an
  empty file, a file OpenCV cannot open, a video without a readable frame, or one that
  decodes more than `truncation_tolerance` (or 5 %) frames fewer than its header announces
  (truncated or corrupt).
  """
  if os.path.getsize(path) == 0:
    raise VideoError('empty file (0 bytes)', 'empty file')
  capture = cv2.VideoCapture(path)
  try:
    if not capture.isOpened():
      raise VideoError('OpenCV cannot open it (not a readable video container)')
    announced = int(capture.get(cv2.CAP_PROP_FRAME_COUNT) or 0)
    wanted = None if keep is None else list(keep)
    wanted_set = set(wanted or ())
    last_needed = max(wanted) if wanted else None
    frames: dict[int, np.ndarray] | list[np.ndarray] = {} if wanted is not None else []
    decoded = 0
    while last_needed is None or decoded <= last_needed:
      ok, bgr = capture.read()
      if not ok or bgr is None:
        break
      if wanted is None or decoded in wanted_set:
        rgb = resize_short_side(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB), short_side)
        if wanted is None:
          frames.append(rgb)
        else:
          frames[decoded] = rgb
      decoded += 1
  finally:
    capture.release()
  if decoded == 0:
    raise VideoError('no readable frame', 'no readable frame')
  complete = last_needed is None or decoded <= last_needed
  if complete and announced and decoded < announced - max(truncation_tolerance,
                                                          announced // 20):
    raise VideoError(f'decoded {decoded} of the {announced} frames its header announces '
                     '(truncated or corrupt)', 'truncated video')
  if wanted is None:
    return np.stack(frames)
  missing = [i for i in wanted if i not in frames]
  if missing:
    raise VideoError(f'frame {missing[0]} not decodable ({decoded} frames decoded)')
  return np.stack([frames[i] for i in wanted])


def video_frame_count(path: str) -> int:
  """Frame count from the container header (0 if unknown); cheap, does not decode."""
  capture = cv2.VideoCapture(path)
  try:
    return int(capture.get(cv2.CAP_PROP_FRAME_COUNT) or 0) if capture.isOpened() else 0
  finally:
    capture.release()


def encode_jpeg(rgb: np.ndarray, quality: int = 90) -> bytes:
  """JPEG bytes of a uint8 RGB [H, W, 3] or grayscale [H, W] image."""
  image = rgb if rgb.ndim == 2 else cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR)
  ok, data = cv2.imencode('.jpg', image, [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
  if not ok:
    raise ValueError('JPEG encoding failed')
  return data.tobytes()


def decode_jpeg(data: bytes) -> np.ndarray:
  """uint8 RGB [H, W, 3] from JPEG bytes; raises `ValueError` if undecodable (an empty file
  too: OpenCV would raise its own error)."""
  bgr = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR) if data else None
  if bgr is None:
    raise ValueError('undecodable JPEG')
  return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


def write_video(path: str, frames_rgb: np.ndarray, fps: float = 25.0,
                fourcc: str = 'MJPG') -> None:
  """Writes uint8 RGB [T, H, W, 3] as an AVI with `fourcc` (MJPG: writable and readable by
  the opencv-python-headless wheel). Raises `IOError` if OpenCV cannot write it."""
  height, width = frames_rgb.shape[1:3]
  writer = cv2.VideoWriter(path, cv2.VideoWriter_fourcc(*fourcc), fps, (width, height))
  if not writer.isOpened():
    raise IOError(f'OpenCV cannot write {fourcc} video {path}')
  try:
    for frame in frames_rgb:
      writer.write(cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
  finally:
    writer.release()

"""What the flow specs share: a small synthetic UCF101 with one broken video, and a
directory tree's bytes for byte-for-byte comparisons of extract_flow's outputs."""

from __future__ import annotations

import os

from data_tools import make_synthetic_ucf101

BROKEN_VIDEO = 'v_MoveLeftSpeed1_g09_c01.avi'  # in UCF-101/MoveLeftSpeed1/


def dataset_with_a_broken_video(data: str, **sizes) -> str:
  """Writes a synthetic UCF101 of 2 classes x 8 groups at `data` (`sizes`: width, height,
  min_frames, max_frames, object_size of `make_synthetic_ucf101.make_dataset`) and
  overwrites `BROKEN_VIDEO` with bytes no decoder reads; returns its class folder."""
  make_synthetic_ucf101.make_dataset(data, classes=2, groups=8, **sizes)
  videos = os.path.join(data, 'UCF-101', 'MoveLeftSpeed1')
  with open(os.path.join(videos, BROKEN_VIDEO), 'wb') as f:
    f.write(b'not a video')
  return videos


def tree_bytes(root: str) -> dict[str, bytes]:
  """{path relative to root: bytes} of every file under root."""
  found = {}
  for folder, _, files in os.walk(root):
    for name in files:
      with open(os.path.join(folder, name), 'rb') as f:
        found[os.path.relpath(os.path.join(folder, name), root)] = f.read()
  return found

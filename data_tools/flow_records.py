"""`prepare --source=flow`: one video's TV-L1 flow folders -> one flow record (no TensorFlow
until the record is serialized).

Input per video, in this order of preference: its row of I3D_Finetune's `flow.txt`
(`<video> <path with {:s}> <nframes> <label0>`, the `{:s}` standing for u or v), else its
files under `<flow_dir>` in the task's layout (`data_tools/layouts.py`; this project's
`<flow_dir>/{u,v}/<video>/`, names matched case-insensitively, so the HandStand/Handstand
spellings meet). u and v must hold the same number of frames: a video whose channels differ
is skipped (`u/v length mismatch`), never cut to the shorter one. The u and v JPEGs are
stored as they are; when their short side differs from `short_side` (non-zero) both are
resized and their codes rescaled by the same factor, so a displacement stays measured in
pixels of the stored frame.
"""

from __future__ import annotations

import os
from typing import Any

import cv2
import numpy as np

from data_tools import layouts

from input_fn import flow, frame_folders, video_io, video_lists
from input_fn.video_lists import InputProblem


def _flow_fix(channel: layouts.FrameFiles, info: dict | None) -> str:
  """What to do about a flow folder that lacks frames: a list row counting exactly one
  frame more than the folder holds counts the video's frames, not its flow's (flow of N
  frames is N - 1 frames: give the flow annotation list); else extract the flow again."""
  if info and info.get('num_frames'):
    held, _ = frame_folders.count_frames(channel.folder, pattern=channel.name)
    if held == info['num_frames'] - 1:
      return ('the list counts the video\'s frames, one more than its flow has: give the '
              'list of flow frame counts (MMAction2\'s flow annotation file)')
  return 'run //data_tools:extract_flow, or give a flow folder that holds them'


def convert_flow_video(task: dict[str, Any]) -> tuple[bytes | None, InputProblem | None]:
  """One flow task -> (serialized flow record, None) or (None, InputProblem saying why not)."""
  from input_fn import records
  entry = video_lists.VideoEntry(**task['entry'])
  where = f'listed at {os.path.basename(entry.source)}:{entry.line}'
  info = task['frame_info']
  if info and info['label'] != entry.label:
    return None, InputProblem(task['frame_list'], info['line'], f'label {info["label"]} differs '
                         f'from the split\'s {entry.label} for {entry.name}', 'label mismatch')
  channels: list[list[bytes]] = []
  counts = []
  files = layouts.Layout(task['layout']).files(task['flow_dir'], entry.name,
                                               info and info['path'])
  for channel in files:
    count, reason = channel.count(info)
    if reason:
      kind = 'missing flow folder' if reason.startswith('missing frame folder') else (
          'missing flow frames')
      return None, InputProblem(channel.folder, 0, f'{reason} ({where}): '
                                f'{_flow_fix(channel, info)}', kind)
    counts.append(count)
  if counts[0] != counts[1]:
    where_u, where_v = (os.path.join(f.folder, f.name) for f in files)
    return None, InputProblem(files[0].folder, 0, f'u and v of different lengths: {counts[0]} '
                         f'frames of {where_u}, {counts[1]} of {where_v} ({where}): '
                         'extract its flow again',
                         'u/v length mismatch')
  count = counts[0]
  height = width = 0
  for channel in files:
    jpegs, listings = [], {}
    for i in range(count):
      path = channel.path(i, listings)
      with open(path, 'rb') as f:
        data = f.read()
      codes = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_GRAYSCALE) if data else None
      if codes is None:
        return None, InputProblem(path, 0, f'undecodable flow frame ({where})', 'undecodable frame')
      resized = flow.resize_codes(codes, task['short_side'])
      if resized is not codes or not video_io.is_jpeg(data):  # records hold JPEGs only
        data = video_io.encode_jpeg(resized, task['jpeg_quality'])
      if height and resized.shape != (height, width):
        return None, InputProblem(path, 0, f'flow frame of {resized.shape[1]}x{resized.shape[0]} '
                             f'pixels, others are {width}x{height} ({where})', 'size mismatch')
      height, width = resized.shape
      jpegs.append(data)
    channels.append(jpegs)
  return records.make_flow_example(entry.name, entry.label, channels[0], channels[1],
                                   entry.index, entry.class_name, height, width), None

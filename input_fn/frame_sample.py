"""A few videos' frame sizes and counts, as the input gives them to the crops.

    frame_sample(params, 'test') -> [(video, frames, height, width), ...]

Read by the data checks (`input_fn/data_checks.py`: crops that fit the frames) and by the
record of a run's learning settings (what the training videos hold).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import tensorflow as tf

from input_fn import direct, manifest, records

SAMPLED_VIDEOS = 8  # videos `frame_sample` looks at


def frame_sample(params: Any, subset: str, count: int = SAMPLED_VIDEOS, decoded: bool = False
                 ) -> list[tuple[str, int, int, int]]:
  """(video, frames, height, width) of up to `count` videos of `subset` ('train' or
  'test'), spread evenly over it, with frames as the input gives them to the crops
  (tfrecord: as prepared; videos and frames: resized to frame_short_side, or with
  `decoded` as the files hold them). Reads one record, or one frame, per video; videos
  that cannot be read are left out; [] for the synthetic source or unreadable data."""
  if params.data_source == 'tfrecord':
    return records_frame_sample(params.data_dir, subset, count)
  if params.data_source not in ('videos', 'frames'):
    return []
  if decoded:
    params = dataclasses.replace(params, frame_short_side=0)
  try:
    source = direct.VideoSource(params)
    entries = sorted(source.entries(subset), key=lambda e: e.name)
  except (OSError, ValueError):
    return []
  found = []
  for entry in entries[::max(1, -(-len(entries) // count))][:count]:
    try:
      found.append((entry.name, *source.frame_shape(entry)))
    except (OSError, ValueError):
      continue
  return found


def records_frame_sample(data_dir: str, subset: str, count: int = SAMPLED_VIDEOS
                         ) -> list[tuple[str, int, int, int]]:
  """`frame_sample` of the records in `data_dir`: the first records of up to `count` of
  the subset's shards, spread evenly over them, `count` records in all (fewer if the
  subset has fewer)."""
  try:
    shards = manifest.shard_paths(data_dir, subset)
  except manifest.ManifestError:
    return []
  chosen = shards[::max(1, -(-len(shards) // count))][:count]
  per_shard = -(-count // len(chosen))
  found = []
  for path, _ in chosen:
    try:
      found += [records.frame_shape(r) for r in records.first_records(path, per_shard)]
    except (tf.errors.OpError, OSError, ValueError, IndexError):
      continue
  return found[:count]

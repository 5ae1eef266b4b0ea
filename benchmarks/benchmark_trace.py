"""One traced training step: a Chrome trace file and a text summary of where time went.

`trace_step` runs the step with FULL_TRACE; `write_chrome_trace` turns its RunMetadata
into a `chrome://tracing` / Perfetto JSON (tensorflow.python.client.timeline), one
process row per device, so each tower's ops appear on their own CPU/GPU; `summarize`
prints per-device busy time and the synchronization point (the `sum_tower_gradients` ops,
see `model_fn/gradients.py`) relative to the step's start.
"""

from __future__ import annotations

import collections
import os
from typing import Iterable

import tensorflow as tf
from tensorflow.python.client import timeline

from model_fn.gradients import SYNC_SCOPE

tf1 = tf.compat.v1



def trace_step(session: tf1.Session, train_op: tf.Operation) -> tf1.RunMetadata:
  """Runs `train_op` once with a full trace and returns the step's RunMetadata."""
  metadata = tf1.RunMetadata()
  session.run(train_op, options=tf1.RunOptions(trace_level=tf1.RunOptions.FULL_TRACE),
              run_metadata=metadata)
  return metadata


def write_chrome_trace(metadata: tf1.RunMetadata, path: str) -> None:
  """Writes the step as a Chrome trace (JSON) to `path`, creating its directory."""
  trace = timeline.Timeline(metadata.step_stats)
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  with open(path, 'w') as f:
    f.write(trace.generate_chrome_trace_format(show_memory=False))


def _busy_micros(intervals: Iterable[tuple[int, int]]) -> int:
  """Length of the union of [start, end) intervals."""
  total, current_start, current_end = 0, None, None
  for start, end in sorted(intervals):
    if current_end is None or start > current_end:
      if current_end is not None:
        total += current_end - current_start
      current_start, current_end = start, end
    else:
      current_end = max(current_end, end)
  if current_end is not None:
    total += current_end - current_start
  return total


def summarize(metadata: tf1.RunMetadata) -> str:
  """Per device: ops, busy ms (union of op intervals), first start and last end; then the
  window of the sync ops and where each tower's gradient ops ended. Times in ms from the
  step's first op."""
  ops = []  # (device, node name, start, end) in micros
  for device_stats in metadata.step_stats.dev_stats:
    spec = tf.DeviceSpec.from_string(device_stats.device)
    device = f'{spec.device_type}:{spec.device_index}'
    for node in device_stats.node_stats:
      start = node.all_start_micros
      ops.append((device, node.node_name, start, start + max(node.all_end_rel_micros, 1)))
  if not ops:
    return 'trace: no ops recorded'
  origin = min(start for _, _, start, _ in ops)
  wall = max(end for _, _, _, end in ops) - origin
  by_device = collections.defaultdict(list)
  for device, _, start, end in ops:
    by_device[device].append((start, end))
  lines = [f'step wall time {wall / 1e3:.1f} ms, all devices busy (union) '
           f'{_busy_micros((s, e) for _, _, s, e in ops) / 1e3:.1f} ms']
  for device in sorted(by_device):
    spans = by_device[device]
    lines.append(f'  {device}: {len(spans)} ops, busy {_busy_micros(spans) / 1e3:.1f} ms, '
                 f'from {(min(s for s, _ in spans) - origin) / 1e3:.1f} '
                 f'to {(max(e for _, e in spans) - origin) / 1e3:.1f} ms')
  sync = [(s, e) for _, name, s, e in ops if SYNC_SCOPE in name]
  if sync:
    lines.append(f'  sync point ({SYNC_SCOPE}, {len(sync)} ops): '
                 f'{(min(s for s, _ in sync) - origin) / 1e3:.1f} to '
                 f'{(max(e for _, e in sync) - origin) / 1e3:.1f} ms, '
                 f'busy {_busy_micros(sync) / 1e3:.1f} ms')
  towers = collections.defaultdict(list)
  for _, name, start, end in ops:
    if name.startswith('tower_') and '/gradients/' in name:
      towers[name.split('/')[0]].append(end)
  for tower in sorted(towers):
    lines.append(f'  {tower} backward ends at {(max(towers[tower]) - origin) / 1e3:.1f} ms')
  return '\n'.join(lines)

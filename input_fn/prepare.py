"""Converts a UCF101 split (raw videos or frame folders) into sharded TFRecords.

  bazel run //input_fn:prepare -- --source=videos --data_dir=/data/UCF101 --out=/data/ucf101_tfr
  bazel run //input_fn:prepare -- --source=flow --data_dir=/data/UCF101 --out=/data/ucf101_flow

--source=flow converts the TV-L1 flow of //input_fn:extract_flow (`tvl1_flow/{u,v}/<video>/`,
or the rows of I3D_Finetune's `flow.txt`) into flow records (u and v JPEGs per frame,
`input_fn/flow_records.py`); same split rules, shards, manifest and resumption.

One record per video (schema: `input_fn/records.py`): its frames as JPEG bytes (videos are
decoded with OpenCV and resized so the short side is --short_side, default 256; frame
folders are copied, re-encoded only if they need resizing), label, name, frame count and its
index in the split list. Writes `<out>/{train,test}-SSSSS-of-NNNNN.tfrecord` and
`<out>/{train,test}.manifest.json` (counts per class and per shard, every skipped input
with its reason), and prints a summary line per subset.

* All cores: shards are converted by a process pool (--workers, default all CPUs).
* Progress: videos done, rate and ETA on stderr.
* Resumable and idempotent: a shard is written to a temporary file and renamed when
  complete, then described in `<out>/.shards/<shard>.json` with a fingerprint of its inputs
  and settings. A rerun keeps every finished shard whose fingerprint matches and converts only
  the rest, so an interrupted run resumed gives the same files as an uninterrupted one, and
  a rerun of a finished preparation changes nothing.
* Bad input (unreadable, truncated or empty video, missing file/folder/frames, malformed
  list line, unknown class, label out of range) is skipped and reported; --strict stops at
  the first one with an error naming the file and line.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import json
import math
import multiprocessing
import os
import sys
import time
from typing import Any, Callable

if __package__ in (None, ''):
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from input_fn import flow_records, ucf101, video_io  # noqa: E402
from input_fn.ucf101 import InputError, Problem  # noqa: E402

FORMAT_VERSION = 1
SHARD_STATE_DIR = '.shards'


@dataclasses.dataclass(frozen=True)
class PrepareConfig:
  """What to convert and how. Empty directory fields are found under `data_dir`:
  split files in ucfTrainTestlist/ (else data_dir), videos in UCF-101/, frame folders in
  jpegs_256/, the frame info list at data_dir/rgb.txt (optional); flow in tvl1_flow/ with
  its list at data_dir/flow.txt (optional)."""
  source: str  # 'videos', 'frames' or 'flow'
  data_dir: str
  out: str
  split: int = 1
  subsets: tuple[str, ...] = ('train', 'test')
  split_dir: str = ''
  videos_dir: str = ''
  frames_dir: str = ''
  frame_list: str = ''
  flow_dir: str = ''
  flow_list: str = ''
  short_side: int = 256
  jpeg_quality: int = 90
  videos_per_shard: int = 64
  workers: int = 0  # 0: os.cpu_count(); 1: in this process
  strict: bool = False
  stop_after_shards: int = 0  # for tests: stop (as if interrupted) after this many shards


class PrepareInterrupted(RuntimeError):
  """Raised when `stop_after_shards` shards are done (simulated interruption)."""


# --- One video -----------------------------------------------------------------------------


def _frames_problem_kind(reason: str) -> str:
  if reason.startswith('missing frame folder'):
    return 'missing frame folder'
  if reason.startswith('no frame'):
    return 'no readable frame'
  return 'missing frames'


def convert_video(task: dict[str, Any]) -> tuple[bytes | None, Problem | None]:
  """One video task -> (serialized record, None) or (None, Problem saying why it is skipped)."""
  from input_fn import records
  if task['source'] == 'flow':
    return flow_records.convert_flow_video(task)
  entry = ucf101.VideoEntry(**task['entry'])
  where = f'listed at {os.path.basename(entry.source)}:{entry.line}'
  if task['source'] == 'videos':
    path = ucf101.resolve_video(task['videos_dir'], entry)
    if path is None:
      return None, Problem(entry.source, entry.line, f'{entry.rel_path} not found under '
                           f'{task["videos_dir"]}', 'missing file')
    try:
      frames = video_io.decode_video(path, task['short_side'])
    except video_io.VideoError as e:
      kind = ('empty file' if 'empty file' in str(e) else
              'no readable frame' if 'no readable frame' in str(e) else
              'truncated video' if 'truncated' in str(e) else 'undecodable video')
      return None, Problem(path, 0, f'{e} ({where})', kind)
    jpegs = [video_io.encode_jpeg(f, task['jpeg_quality']) for f in frames]
    height, width = frames.shape[1:3]
  else:
    info = task['frame_info']
    folder = info['path'] if info and os.path.isdir(info['path']) else os.path.join(
        task['frames_dir'], entry.name)
    if not os.path.isdir(folder):
      folder = ucf101.find_child(task['frames_dir'], entry.name) or folder
    if info and info['label'] != entry.label:
      return None, Problem(task['frame_list'], info['line'], f'label {info["label"]} '
                           f'differs from the split\'s {entry.label} for {entry.name}',
                           'label mismatch')
    count, reason = ucf101.count_frames(folder, info['num_frames'] if info else None)
    if reason:
      return None, Problem(folder, 0, f'{reason} ({where})', _frames_problem_kind(reason))
    jpegs = []
    height = width = 0
    for i in range(count):
      path = ucf101.frame_path(folder, i)
      with open(path, 'rb') as f:
        data = f.read()
      try:
        image = video_io.decode_jpeg(data)
      except ValueError:
        return None, Problem(path, 0, f'undecodable frame ({where})', 'undecodable frame')
      resized = video_io.resize_short_side(image, task['short_side'])
      if resized is not image:
        data = video_io.encode_jpeg(resized, task['jpeg_quality'])
      height, width = resized.shape[:2]
      jpegs.append(data)
  return records.make_example(entry.name, entry.label, jpegs, entry.index,
                              entry.class_name, height, width), None


# --- One shard -----------------------------------------------------------------------------

_progress_queue = None


def _init_worker(queue: Any) -> None:
  global _progress_queue
  _progress_queue = queue


def convert_shard(shard: dict[str, Any],
                  progress: Callable[[int], None] | None = None) -> dict[str, Any]:
  """Writes one shard file atomically and its state file; returns the state (records,
  counts per class, skipped inputs). Raises `InputError` on bad input when strict."""
  import tensorflow as tf
  report = progress or (lambda n: _progress_queue.put(n) if _progress_queue else None)
  final = os.path.join(shard['out'], shard['file'])
  temporary = final + '.tmp'
  skipped, counts, videos = [], collections.Counter(), []
  with tf.io.TFRecordWriter(temporary) as writer:
    for task in shard['tasks']:
      record, problem = convert_video(task)
      if problem is not None:
        if shard['strict']:
          raise InputError(problem)
        skipped.append(problem.to_json())
      else:
        writer.write(record)
        counts[task['entry']['class_name']] += 1
        videos.append(task['entry']['name'])
      report(1)
  os.replace(temporary, final)
  state = {'file': shard['file'], 'fingerprint': shard['fingerprint'], 'records': len(videos),
           'counts_per_class': dict(sorted(counts.items())), 'videos': videos,
           'skipped': skipped}
  state_path = _state_path(shard['out'], shard['file'])
  with open(state_path + '.tmp', 'w') as f:
    json.dump(state, f, indent=1, sort_keys=True)
  os.replace(state_path + '.tmp', state_path)
  return state


def _state_path(out: str, file: str) -> str:
  return os.path.join(out, SHARD_STATE_DIR, file + '.json')


def _finished_state(out: str, file: str, fingerprint: str) -> dict[str, Any] | None:
  """The state of a shard finished with the same fingerprint, else None."""
  try:
    with open(_state_path(out, file)) as f:
      state = json.load(f)
  except (OSError, ValueError):
    return None
  if state.get('fingerprint') != fingerprint or not os.path.exists(os.path.join(out, file)):
    return None
  return state


# --- Whole preparation ---------------------------------------------------------------------


def _resolve(path: str) -> str:
  base = os.environ.get('BUILD_WORKING_DIRECTORY')
  if path and base and not os.path.isabs(path):
    return os.path.join(base, path)
  return path


def _format_seconds(seconds: float) -> str:
  seconds = int(max(seconds, 0))
  return f'{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}'


class _Progress:
  """Prints `videos done/total, rate, ETA` at most every second (every 10 s if not a tty)."""

  def __init__(self, label: str, total: int, stream=sys.stderr):
    self.label, self.total, self.stream = label, total, stream
    self.done, self.start, self.last = 0, time.time(), 0.0
    self.tty = hasattr(stream, 'isatty') and stream.isatty()

  def add(self, n: int) -> None:
    now = time.time()
    if self.done == 0:  # rate from the first finished video on (workers start slowly)
      self.start, self.last = now, now
    self.done += n
    if now - self.last >= (1 if self.tty else 10) or self.done >= self.total:
      self.last = now
      rate = (self.done - 1) / max(now - self.start, 1e-6)
      eta = (self.total - self.done) / rate if rate > 0 else 0
      pct = 100.0 * self.done / max(self.total, 1)
      line = (f'prepare: {self.label}: {self.done}/{self.total} videos ({pct:.0f}%), '
              f'{rate:.1f} videos/s, ETA {_format_seconds(eta)}')
      self.stream.write(('\r' + line + ('\n' if self.done >= self.total else ''))
                        if self.tty else line + '\n')
      self.stream.flush()


def plan(config: PrepareConfig) -> tuple[ucf101.Split, dict[str, list[dict[str, Any]]]]:
  """Reads the split and returns it with the shard plan per subset (no video is opened)."""
  data_dir = _resolve(config.data_dir)
  split_dir = _resolve(config.split_dir) or ucf101.find_dir(
      data_dir, ucf101.SPLIT_DIR_NAMES, ucf101.CLASS_INDEX_FILE)
  split = ucf101.read_split(split_dir, config.split)
  videos_dir = _resolve(config.videos_dir) or ucf101.find_dir(data_dir, ucf101.VIDEO_DIR_NAMES)
  frames_dir = _resolve(config.frames_dir) or ucf101.find_dir(data_dir, ucf101.FRAMES_DIR_NAMES)
  frame_list = _resolve(config.frame_list) or (
      ucf101.find_child(data_dir, ucf101.FRAME_LIST_NAME) or '')
  flow_dir = _resolve(config.flow_dir) or os.path.join(data_dir, ucf101.FLOW_DIR_NAME)
  if config.source == 'flow':
    frame_list = _resolve(config.flow_list) or (
        ucf101.find_child(data_dir, ucf101.FLOW_LIST_NAME) or '')
  infos: dict[str, ucf101.FrameInfo] = {}
  if config.source in ('frames', 'flow') and frame_list:
    infos, list_problems = ucf101.read_frame_list(frame_list, len(split.classes))
    split.problems.extend(list_problems)
  out = _resolve(config.out)
  plans = {}
  for subset in config.subsets:
    entries = split.subset(subset)
    num_shards = max(1, math.ceil(len(entries) / config.videos_per_shard))
    shards = []
    for s in range(num_shards):
      tasks = []
      for entry in entries[s::num_shards]:
        info = infos.get(entry.key)
        tasks.append({
            'entry': dataclasses.asdict(entry), 'source': config.source,
            'videos_dir': videos_dir, 'frames_dir': frames_dir, 'frame_list': frame_list,
            'flow_dir': flow_dir,
            'frame_info': dataclasses.asdict(info) if info else None,
            'short_side': config.short_side, 'jpeg_quality': config.jpeg_quality})
      fingerprint = hashlib.sha256(json.dumps(
          [FORMAT_VERSION, config.source, config.short_side, config.jpeg_quality,
           [(t['entry']['name'], t['entry']['label'], t['entry']['index'],
             t['frame_info']) for t in tasks]], sort_keys=True).encode()).hexdigest()
      from input_fn import records
      shards.append({'file': records.SHARD_PATTERN.format(subset=subset, shard=s,
                                                          num_shards=num_shards),
                     'out': out, 'tasks': tasks, 'fingerprint': fingerprint,
                     'strict': config.strict})
    plans[subset] = shards
  return split, plans


def _list_problems(split: ucf101.Split, subset: str) -> list[Problem]:
  other = 'test' if subset == 'train' else 'train'
  return [p for p in split.problems
          if not os.path.basename(p.source).lower().startswith(other + 'list')]


def prepare(config: PrepareConfig, log: Callable[[str], None] = print) -> dict[str, Any]:
  """Runs the preparation; returns {subset: manifest}. See the module docstring."""
  split, plans = plan(config)
  if config.strict and split.problems:
    raise InputError(split.problems[0])
  out = _resolve(config.out)
  os.makedirs(os.path.join(out, SHARD_STATE_DIR), exist_ok=True)
  workers = config.workers or os.cpu_count() or 1
  states: dict[str, dict[str, Any]] = {}
  todo = []
  for subset, shards in plans.items():
    for shard in shards:
      state = _finished_state(out, shard['file'], shard['fingerprint'])
      if state is not None:
        states[shard['file']] = state
      else:
        todo.append(shard)
    log(f'prepare: {subset}: {len(shards)} shards, '
        f'{sum(s["file"] in states for s in shards)} already done')
  total = sum(len(s['tasks']) for s in todo)
  workers = min(workers, max(len(todo), 1))
  log(f'prepare: {total} videos in {len(todo)} shards to convert with {workers} worker(s)')
  progress = _Progress(','.join(plans), total)
  completed_this_run = 0

  def finished(state: dict[str, Any]) -> None:
    nonlocal completed_this_run
    states[state['file']] = state
    completed_this_run += 1
    if config.stop_after_shards and completed_this_run >= config.stop_after_shards:
      raise PrepareInterrupted(f'stopped after {completed_this_run} shard(s)')

  if todo and workers <= 1:
    for shard in todo:
      finished(convert_shard(shard, progress.add))
  elif todo:
    context = multiprocessing.get_context('spawn')
    queue = context.Queue()
    with context.Pool(workers, initializer=_init_worker, initargs=(queue,)) as pool:
      results = pool.imap_unordered(convert_shard, todo)
      remaining = len(todo)
      while remaining:
        try:
          state = results.next(timeout=0.2)
        except multiprocessing.TimeoutError:
          state = None
        while not queue.empty():
          progress.add(queue.get())
        if state is not None:
          remaining -= 1
          finished(state)
      while not queue.empty():
        progress.add(queue.get())
  manifests = {}
  for subset, shards in plans.items():
    manifests[subset] = _write_manifest(config, split, subset, shards, states, out)
    log(summary_line(manifests[subset]))
  return manifests


def _write_manifest(config: PrepareConfig, split: ucf101.Split, subset: str,
                    shards: list[dict[str, Any]], states: dict[str, dict[str, Any]],
                    out: str) -> dict[str, Any]:
  from input_fn import records
  counts = collections.Counter()
  skipped = [p.to_json() for p in _list_problems(split, subset)]
  shard_rows = []
  for shard in shards:
    state = states[shard['file']]
    counts.update(state['counts_per_class'])
    skipped.extend(state['skipped'])
    shard_rows.append({'file': shard['file'], 'records': state['records'],
                       'counts_per_class': state['counts_per_class']})
  manifest = {
      'subset': subset, 'split': config.split, 'source': config.source,
      'short_side': config.short_side, 'jpeg_quality': config.jpeg_quality,
      'num_listed': len(split.subset(subset)),
      'num_records': sum(r['records'] for r in shard_rows),
      'num_skipped': len(skipped),
      'num_classes': len(split.classes), 'classes': list(split.classes.names),
      'counts_per_class': {name: counts.get(name, 0) for name in split.classes.names},
      'shards': shard_rows,
      'skipped_by_kind': dict(sorted(collections.Counter(s['kind'] for s in skipped).items())),
      'skipped': skipped,
  }
  path = os.path.join(out, records.MANIFEST.format(subset=subset))
  with open(path + '.tmp', 'w') as f:
    json.dump(manifest, f, indent=1)
  os.replace(path + '.tmp', path)
  return manifest


def summary_line(manifest: dict[str, Any]) -> str:
  """`prepare: train: 9537 records in 150 shards (101 classes); skipped 2: 1 missing file, ...`"""
  kinds = ', '.join(f'{n} {k}' for k, n in manifest['skipped_by_kind'].items())
  return (f'prepare: {manifest["subset"]}: {manifest["num_records"]} records in '
          f'{len(manifest["shards"])} shards ({manifest["num_classes"]} classes) of '
          f'{manifest["num_listed"]} listed videos; skipped {manifest["num_skipped"]}'
          f'{": " + kinds if kinds else ""}')


def main(argv: list[str]) -> None:
  del argv
  from absl import flags
  f = flags.FLAGS
  config = PrepareConfig(
      source=f.source, data_dir=f.data_dir, out=f.out, split=f.split,
      subsets=tuple(s for s in f.subsets if s), split_dir=f.split_dir,
      videos_dir=f.videos_dir, frames_dir=f.frames_dir, frame_list=f.frame_list,
      flow_dir=f.flow_dir, flow_list=f.flow_list,
      short_side=f.short_side, jpeg_quality=f.jpeg_quality,
      videos_per_shard=f.videos_per_shard, workers=f.workers, strict=f.strict)
  try:
    prepare(config)
  except InputError as e:
    sys.exit(f'prepare: --strict: {e}')
  except FileNotFoundError as e:
    sys.exit(f'prepare: {e}')


def _define_flags() -> None:
  from absl import flags
  flags.DEFINE_enum('source', 'videos', ['videos', 'frames', 'flow'],
                    'videos: UCF-101/<Class>/*.avi; frames: jpegs_256/<video>/frame%06d.jpg; '
                    'flow: tvl1_flow/{u,v}/<video>/frame%06d.jpg (//input_fn:extract_flow).')
  flags.DEFINE_string('data_dir', None, 'UCF101 root (relative: to the working directory).')
  flags.DEFINE_string('out', None, 'Output directory for shards and manifests.')
  flags.DEFINE_integer('split', 1, 'Official split: 1, 2 or 3.')
  flags.DEFINE_list('subsets', ['train', 'test'], 'Subsets to convert.')
  flags.DEFINE_string('split_dir', '', 'Directory of classInd.txt and the lists '
                      '(default: data_dir/ucfTrainTestlist or data_dir).')
  flags.DEFINE_string('videos_dir', '', 'Directory of the class folders of .avi files '
                      '(default: data_dir/UCF-101 or data_dir).')
  flags.DEFINE_string('frames_dir', '', 'Directory of the frame folders '
                      '(default: data_dir/jpegs_256 or data_dir).')
  flags.DEFINE_string('frame_list', '', 'Frame info list "name path nframes label0" '
                      '(default: data_dir/rgb.txt if present).')
  flags.DEFINE_string('flow_dir', '', 'source=flow: folder holding u/ and v/ '
                      '(default: data_dir/tvl1_flow).')
  flags.DEFINE_string('flow_list', '', 'source=flow: I3D_Finetune\'s list "name path nframes '
                      'label0", path holding {:s} for u/v (default: data_dir/flow.txt if present).')
  flags.DEFINE_integer('short_side', 256, 'Resize frames so the short side is this; 0 keeps.')
  flags.DEFINE_integer('jpeg_quality', 90, 'JPEG quality of re-encoded frames.')
  flags.DEFINE_integer('videos_per_shard', 64, 'Videos per shard (sets the shard count).')
  flags.DEFINE_integer('workers', 0, 'Worker processes; 0: all CPUs; 1: no pool.')
  flags.DEFINE_bool('strict', False, 'Fail on the first bad input instead of skipping it.')
  flags.mark_flags_as_required(['data_dir', 'out'])


if __name__ == '__main__':
  from absl import app
  _define_flags()
  app.run(main)

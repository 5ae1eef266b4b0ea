"""A split (raw videos, frame folders or flow) into sharded TFRecords, as a library: its options
(`PrepareOptions`, `check_options`), one video's record (`convert_video`), one shard
(`convert_shard`) and `prepare(config)`: resumable, bad videos counted in the manifest.
The program and its whole description: data_tools/prepare_main.py.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import fcntl
import hashlib
import json
import math
import multiprocessing
import os
import queue as queue_module
import time
from typing import Any, Callable, ClassVar, Iterator, Sequence

from data_tools import flow_records, layouts
from input_fn import flow_shards
from input_fn import manifest as manifest_lib
from input_fn import datasets, flow, frame_folders, ucf101, video_io, video_lists
from input_fn.video_lists import InputError, InputProblem
from input_fn import dir_identity, json_files
from command_line import entry, signals, status_file
from command_line.options import Options, OptionsError, Range, at_least, option
from command_line.options import Problem as OptionProblem  # input_fn: InputProblem
from command_line.progress import Progress

FORMAT_VERSION = 2
SHARD_STATE_DIR = manifest_lib.STATE_DIR
OUT_LOCK_FILE = 'prepare.lock'  # held (flock) while a preparation writes --out


class PrepareError(OptionsError):
  """The options or --out cannot be used; the message names the flag and the fix.
  `option`: the option it concerns (None for none); `differences`: for --out holding
  another dataset, the identity fields that differ (`manifest.IDENTITY_FIELDS`, or a
  `source_paths` entry)."""

  def __init__(self, message: str, option: str | None = None,
               differences: tuple[str, ...] = ()) -> None:
    super().__init__(message, option)
    self.differences = differences


class UnfinishedFlow(PrepareError):
  """--flow_dir holds an extract_flow that is not finished (a run stopped midway) or a
  split over shards not merged yet; `shards`: those that have not finished ('1 of 3';
  '0 of 1' for a run without a split; () when only the merge is left)."""

  def __init__(self, flow_dir: str, shards: list[str]) -> None:
    super().__init__(f'--flow_dir={flow_dir} holds an unfinished extraction: '
                     f'{flow_shards.unfinished_text(flow_dir, shards)}, then prepare again',
                     'flow_dir')
    self.shards = tuple(shards)


class StaleFlow(PrepareError):
  """--flow_dir holds flow whose source record (extract_flow's) names another size or mtime
  than the video file under --data_dir has now: flow of an older file, or, when the flow's
  manifest records another videos folder (`extracted_from`), of another dataset's videos
  under the same names. `videos`: their names."""

  def __init__(self, flow_dir: str, videos: list[str], example: str,
               extracted_from: str = '') -> None:
    if extracted_from:
      text = (f'flow of {len(videos)} videos does not match their video file (e.g. '
              f'{example}): --flow_dir={flow_dir} was extracted from the videos of '
              f'{extracted_from} (its {flow.EXTRACTION_MANIFEST}), not from these; extract '
              'theirs (//data_tools:extract_flow with this --data_dir and a new --out, which '
              'leaves that flow as it is) and pass it as --flow_dir')
    else:
      text = (f'flow of {len(videos)} videos is older than their video (e.g. {example}): '
              f'rerun //data_tools:extract_flow --out={flow_dir}, then prepare again')
    super().__init__(text, 'flow_dir')
    self.videos = tuple(videos)


LIST_FLAGS = ('train_list', 'test_list', 'class_names')


def _list_files_given(c: PrepareOptions) -> OptionProblem | None:
  """--dataset=list takes its split from the three annotation files, others never do."""
  if c.dataset != 'list':
    given = [f'--{name}' for name in LIST_FLAGS if getattr(c, name)]
    return OptionProblem(given[0][2:], f'{", ".join(given)} '
                         f'{"applies" if len(given) == 1 else "apply"} to --dataset=list, not '
                         f'--dataset={c.dataset}') if given else None
  missing = [f'--{name}' for name in LIST_FLAGS if not getattr(c, name)]
  if missing:
    return OptionProblem(missing[0][2:], f'--dataset=list needs {", ".join(missing)}: the '
                         'annotation files (see docs/datasets.md)')
  if c.split != 1:
    return OptionProblem('split', f'--split={c.split} picks an official split of ucf101 or '
                         'hmdb51; a list dataset is its --train_list and --test_list: leave '
                         '--split out')
  return OptionProblem('split_dir', '--split_dir applies to ucf101 and hmdb51; a list dataset '
                       'is its --train_list and --test_list') if c.split_dir else None


def _some_subset(c: PrepareOptions) -> OptionProblem | None:
  return None if c.subsets else OptionProblem('subsets', '--subsets must name train and/or '
                                              'test')


def _layout_reads_frames(c: PrepareOptions) -> OptionProblem | None:
  """--layout applies to frame files, and must be a layout `layouts.parse` reads."""
  if c.layout == layouts.AUTO:
    return None
  if c.source == 'videos':
    return OptionProblem('layout', f'--layout={c.layout} applies to --source=frames or flow, '
                         'not videos')
  try:
    layouts.parse(c.layout, c.source == 'flow')
  except layouts.LayoutError as e:
    return OptionProblem(e.option, str(e))
  return None


# The folder and list flags each --source reads (the others would be left unread).
_SOURCE_FLAGS = {'videos_dir': ('videos', 'flow'), 'frames_dir': ('frames',),
                 'frame_list': ('frames',), 'flow_dir': ('flow',), 'flow_list': ('flow',)}


def _folders_fit_source(c: PrepareOptions) -> OptionProblem | None:
  """A folder or list flag of another --source is refused: it would be left unread."""
  for name, sources in _SOURCE_FLAGS.items():
    if getattr(c, name) and c.source not in sources:
      return OptionProblem(name, f'--{name} applies to --source={" or ".join(sources)}, not '
                           f'{c.source}: give --source={sources[-1]} to read it, or leave '
                           f'--{name} out')
  return None


@dataclasses.dataclass(frozen=True)
class PrepareOptions(Options):
  """What to convert and how: the options of //data_tools:prepare (one flag per field).
  Empty directory fields are found under `data_dir`."""
  error: ClassVar[type[OptionsError]] = PrepareError
  rules = (_list_files_given, _some_subset, _layout_reads_frames, _folders_fit_source)

  data_dir: str = option('', 'Dataset root (required): the UCF101 or HMDB51 root; for '
                         '--dataset=list the folder the lists\' relative paths start from.',
                         path=True)
  dataset: str = option(datasets.DEFAULT, datasets.HELP, choices=datasets.NAMES)
  train_list: str = option('', '--dataset=list: the training annotation file, lines "<path> '
                           '<label>" (MMAction2 VideoDataset) or "<frame_dir> <total_frames> '
                           '<label>" (RawframeDataset), labels from 0.', path=True)
  test_list: str = option('', '--dataset=list: the test annotation file (same formats).',
                          path=True)
  class_names: str = option('', '--dataset=list: class names, one per line in label order.',
                            path=True)
  out: str = option('', 'Output directory for shards and manifests (required); holds one '
                    'dataset.', path=True)
  source: str = option('videos', 'videos: UCF-101/<Class>/*.avi; frames: '
                       'jpegs_256/<video>/frame%06d.jpg or img_%05d.jpg; flow: tvl1_flow/'
                       '{u,v}/<video>/frame%06d.jpg (//data_tools:extract_flow), or '
                       '<video>/flow_{x,y}_%05d.jpg (see --layout).',
                       choices=('videos', 'frames', 'flow'))
  split: int = option(1, 'Official split of ucf101 and hmdb51: 1, 2 or 3.',
                      choices=datasets.SPLITS)
  subsets: tuple[str, ...] = option(('train', 'test'), 'Subsets to convert.',
                                    choices=manifest_lib.SUBSETS)
  split_dir: str = option('', 'Directory of the split files (default: ucf101: '
                          'data_dir/ucfTrainTestlist or data_dir; hmdb51: '
                          'data_dir/testTrainMulti_7030_splits, data_dir/annotations or '
                          'data_dir).', path=True)
  videos_dir: str = option('', 'Directory of the class folders of .avi files (default: '
                           'data_dir/UCF-101, data_dir/hmdb51_org, data_dir/videos, or '
                           'data_dir).', path=True)
  frames_dir: str = option('', 'Directory of the frame folders, <video>/ or <class>/<video>/ '
                           '(default: data_dir/jpegs_256, data_dir/rawframes, or data_dir).',
                           path=True)
  frame_list: str = option('', 'Frame info list "name path nframes label0" (default: '
                           'data_dir/rgb.txt if present and --frames_dir is not given).',
                           path=True)
  flow_dir: str = option('', 'source=flow: the flow folder (default: data_dir/tvl1_flow).',
                         path=True)
  flow_list: str = option('', 'source=flow: I3D_Finetune\'s list "name path nframes label0", '
                          'path holding {:s} for u/v (default: flow_dir/flow.txt if present, '
                          'else data_dir/flow.txt if present and --flow_dir is not given).',
                          path=True)
  layout: str = option(layouts.AUTO, 'source=frames/flow: where a video\'s frame files are, '
                       'relative to --frames_dir/--flow_dir: auto (detected among the known '
                       'layouts), or a pattern with {video}, a %0Nd frame number and for flow '
                       '{u,v} or {x,y}, e.g. {video}/img_%05d.jpg, {video}/flow_{x,y}_%05d.jpg, '
                       '{u,v}/{video}/frame%06d.jpg.')
  short_side: int = option(256, 'Resize frames so the short side is this; 0 keeps.',
                           valid=at_least(0))
  jpeg_quality: int = option(90, 'JPEG quality of re-encoded frames.', valid=Range(1, 100))
  videos_per_shard: int = option(64, 'Videos per shard (sets the shard count).',
                                 valid=at_least(1))
  workers: int = option(0, 'Worker processes; 0: all CPUs; 1: no pool.', valid=at_least(0))
  strict: bool = option(False, 'Fail on the first bad input instead of skipping it.')
  overwrite: bool = option(False, 'Replace the dataset --out holds, whatever it is: its '
                           'shards, manifests and resume state are removed first (other '
                           'files stay).')


class PrepareInterrupted(RuntimeError):
  """Raised by `prepare(..., stop_after_shards=N)` once N shards are done (an interruption,
  simulated for tests)."""


class EmptySubset(PrepareError):
  """A subset ended with no record (its manifest is written, saying why)."""


def check_options(config: PrepareOptions) -> None:
  """Raises `PrepareError` naming the first option that cannot work with the files: the
  required ones given, each named file or folder there (the config's ranges, choices and
  rules hold once it is made)."""
  if not config.data_dir:
    raise PrepareError('--data_dir is required: the UCF101 root', 'data_dir')
  if not config.out:
    raise PrepareError('--out is required: the directory for the shards and manifests', 'out')
  if os.path.exists(config.out) and not os.path.isdir(config.out):
    raise PrepareError(f'--out={config.out} is a file, not a directory', 'out')
  named = {'data_dir': os.path.isdir, 'split_dir': os.path.isdir, 'videos_dir': os.path.isdir,
           'frames_dir': os.path.isdir, 'frame_list': os.path.isfile,
           'flow_dir': os.path.isdir, 'flow_list': os.path.isfile,
           'train_list': os.path.isfile, 'test_list': os.path.isfile,
           'class_names': os.path.isfile}
  for name, exists in named.items():
    value = getattr(config, name)
    if value and not exists(value):
      kind = 'folder' if exists is os.path.isdir else 'file'
      raise PrepareError(f'--{name}={value} is not a {kind}'
                         f'{"" if os.path.exists(value) else " (it does not exist)"}', name)
  channel = frame_folders.flow_channel_root(config.frames_dir) if config.frames_dir else None
  if channel:
    raise PrepareError(f'--frames_dir={config.frames_dir} is the {channel[1]}/ folder of optical '
                       f'flow in {channel[0]}: its frames are one flow channel, not RGB; for flow '
                       f'records give --source=flow --flow_dir={channel[0]}', 'frames_dir')


# --- One video -----------------------------------------------------------------------------


def _frames_problem_kind(reason: str) -> str:
  if reason.startswith('missing frame folder'):
    return 'missing frame folder'
  if reason.startswith('no '):
    return 'no readable frame'
  if reason.startswith('the list says'):
    return 'frame count mismatch'
  if reason.startswith('numbered from 0'):
    return 'numbered from 0'
  if reason.startswith('two frame patterns'):
    return 'two frame patterns'
  return 'missing frames'


def listed_folder(source: str, info: dict[str, Any] | None) -> str | None:
  """The video's folder named by its info-list row: a flow row's path (holding `{:s}` for
  the channel, or the video's folder), a frame row's path when it exists; else None."""
  if not info:
    return None
  if source == 'flow' or os.path.isdir(info['path']):
    return info['path']
  return None


def read_channel(source: str, layout: str, root: str, entry: video_lists.VideoEntry,
                 info: video_lists.FrameInfo | None) -> layouts.FrameFiles:
  """The first channel's frame files a frames or flow task of `entry` reads (flow: its u
  frames), by the `layout` pattern under `root` and its info-list row `info`, as
  `frame_files` finds them."""
  listed = listed_folder(source, dataclasses.asdict(info) if info else None)
  return layouts.Layout(layout).files(root, entry.name, listed)[0]


def frame_files(task: dict[str, Any]) -> list[layouts.FrameFiles]:
  """The frame (flow: u and v) files of a frames or flow task, by its layout."""
  root = task['flow_dir'] if task['source'] == 'flow' else task['frames_dir']
  return layouts.Layout(task['layout']).files(
      root, task['entry']['name'], listed_folder(task['source'], task['frame_info']))


def source_identity(task: dict[str, Any]) -> dict[str, int] | None:
  """{'size', 'mtime_ns'} of the task's video file, or of its frame folder (flow: its u and
  v folders): bytes of all their files, the latest mtime of the folders and files; None when
  one is missing. Any edit, repair or replacement of the source changes it."""
  entry = video_lists.VideoEntry(**task['entry'])
  if task['source'] == 'videos':
    path = video_lists.resolve_video(task['videos_dir'], entry)
    if path is None:
      return None
    stat = os.stat(path)
    return {'size': stat.st_size, 'mtime_ns': stat.st_mtime_ns}
  folders = sorted({f.folder for f in frame_files(task)})
  if not all(os.path.isdir(f) for f in folders):
    return None
  size, mtime = 0, 0
  for folder in folders:
    mtime = max(mtime, os.stat(folder).st_mtime_ns)
    with os.scandir(folder) as children:
      for child in children:
        stat = child.stat()
        size, mtime = size + stat.st_size, max(mtime, stat.st_mtime_ns)
  return {'size': size, 'mtime_ns': mtime}


def convert_video(task: dict[str, Any]) -> tuple[bytes | None, InputProblem | None]:
  """One video task -> (serialized record, None) or (None, InputProblem saying why it is
  skipped)."""
  from input_fn import records
  if task['source'] == 'flow':
    return flow_records.convert_flow_video(task)
  entry = video_lists.VideoEntry(**task['entry'])
  where = f'listed at {os.path.basename(entry.source)}:{entry.line}'
  if task['source'] == 'videos':
    path = video_lists.resolve_video(task['videos_dir'], entry)
    if path is None:
      return None, InputProblem(entry.source, entry.line, f'{entry.rel_path} not found under '
                           f'{task["videos_dir"]}', 'missing file')
    try:
      frames = video_io.decode_video(path, task['short_side'])
    except video_io.VideoError as e:
      return None, InputProblem(path, 0, f'{e} ({where})', e.kind)
    jpegs = [video_io.encode_jpeg(f, task['jpeg_quality']) for f in frames]
    height, width = frames.shape[1:3]
  else:
    info = task['frame_info']
    files = frame_files(task)[0]
    folder = files.folder
    if info and info['label'] != entry.label:
      return None, InputProblem(task['frame_list'], info['line'], f'label {info["label"]} '
                           f'differs from the split\'s {entry.label} for {entry.name}',
                           'label mismatch')
    count, reason = files.count(info)
    if reason:
      return None, InputProblem(folder, 0, f'{reason} ({where})', _frames_problem_kind(reason))
    jpegs, listings = [], {}
    height = width = 0
    for i in range(count):
      path = files.path(i, listings)
      with open(path, 'rb') as f:
        data = f.read()
      try:
        image = video_io.decode_jpeg(data)
      except ValueError:
        return None, InputProblem(path, 0, f'undecodable frame ({where})', 'undecodable frame')
      resized = video_io.resize_short_side(image, task['short_side'])
      if resized is not image or not video_io.is_jpeg(data):  # records hold JPEGs only
        data = video_io.encode_jpeg(resized, task['jpeg_quality'])
      height, width = resized.shape[:2]
      jpegs.append(data)
  return records.make_example(entry.name, entry.label, jpegs, entry.index,
                              entry.class_name, height, width), None


# --- One shard -----------------------------------------------------------------------------

_progress_queue = None


STARTED = 0  # a worker's first message: it has started (ignores the signals from now on)
START_SECS = 120.0  # the longest the parent waits for its workers to start


def _init_worker(queue: Any) -> None:
  global _progress_queue
  signals.ignored_in_worker()  # the parent alone answers SIGINT and SIGUSR1
  _progress_queue = queue
  queue.put(STARTED)


def _wait_started(queue: Any, workers: int) -> None:
  """Takes each worker's STARTED off `queue` (for at most START_SECS): ended while still
  starting, a spawned worker would print a traceback of its own."""
  deadline = time.monotonic() + START_SECS
  for _ in range(workers):
    try:
      queue.get(timeout=max(deadline - time.monotonic(), 0.01))
    except queue_module.Empty:
      return


def convert_shard(shard: dict[str, Any],
                  progress: Callable[[int], None] | None = None) -> dict[str, Any]:
  """Writes one shard file atomically and its state file; returns the state (records,
  counts per class, skipped inputs). Raises `InputError` on bad input when strict."""
  import tensorflow as tf
  from input_fn import records
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
        _, _, height, width = records.frame_shape(record)
        videos.append({'name': task['entry']['name'], 'label': task['entry']['label'],
                       **(task['identity'] or {}), 'frame_size': [height, width],
                       **({'video_size': task['video_size']} if task.get('video_size')
                          else {})})
      report(1)
  os.replace(temporary, final)
  state = {'file': shard['file'], 'fingerprint': shard['fingerprint'], 'records': len(videos),
           'file_identity': _file_identity(final),
           'counts_per_class': dict(sorted(counts.items())), 'videos': videos,
           'skipped': skipped}
  state_path = _state_path(shard['out'], shard['file'])
  json_files.write_json(state_path, state, sort_keys=True)
  return state


def _state_path(out: str, file: str) -> str:
  return os.path.join(out, SHARD_STATE_DIR, file + '.json')


def _finished_state(out: str, file: str, fingerprint: str) -> dict[str, Any] | None:
  """The state of a shard finished with the same fingerprint, else None."""
  state = json_files.load_object(_state_path(out, file))
  path = os.path.join(out, file)
  if state is None or state.get('fingerprint') != fingerprint or not os.path.exists(path) or \
      state.get('file_identity') != _file_identity(path):
    return None
  return state


def _file_identity(path: str) -> list[int]:
  """[size, mtime_ns] of a written shard: a shard changed after it was written (edited,
  truncated, replaced) no longer matches its state and is converted again."""
  stat = os.stat(path)
  return [stat.st_size, stat.st_mtime_ns]


# --- Whole preparation ---------------------------------------------------------------------


def _source_paths(config: PrepareOptions) -> dict[str, str]:
  """The source's resolved directories and files (empty ones found under data_dir). A
  folder given explicitly wins over a list found under data_dir: that list's rows point
  elsewhere, so it is read only when its folder was not named (or named explicitly too)."""
  data_dir = os.path.realpath(config.data_dir)
  found = {'data_dir': data_dir}
  if config.dataset == 'list':
    found.update(train_list=config.train_list, test_list=config.test_list,
                 class_names=config.class_names)
  else:
    found['split_dir'] = config.split_dir or datasets.split_dir(config.dataset, data_dir)
  if config.source == 'videos':
    found['videos_dir'] = config.videos_dir or datasets.videos_dir(config.dataset, data_dir)
  elif config.source == 'frames':
    found['frames_dir'] = config.frames_dir or datasets.frames_dir(config.dataset, data_dir)
    found['frame_list'] = config.frame_list or ('' if config.frames_dir else (
        video_lists.find_child(data_dir, ucf101.FRAME_LIST_NAME) or ''))
  else:
    found['flow_dir'] = config.flow_dir or os.path.join(data_dir, ucf101.FLOW_DIR_NAME)
    # extract_flow writes flow.txt inside its --out; I3D_Finetune keeps it in the root.
    found['flow_list'] = config.flow_list or (
        video_lists.find_child(found['flow_dir'], ucf101.FLOW_LIST_NAME) or
        ('' if config.flow_dir else video_lists.find_child(data_dir, ucf101.FLOW_LIST_NAME)) or '')
  return {k: os.path.realpath(v) if v else v for k, v in found.items()}


def record_kind(source: str) -> str:
  """What the records of `source` hold (manifest `kind`): 'flow' or 'rgb'."""
  return 'flow' if source == 'flow' else 'rgb'


def dataset_identity(config: PrepareOptions,
                     classes: Sequence[str] | None = None) -> dict[str, Any]:
  """What makes --out the same dataset (see `input_fn/manifest.py`); `classes`: the split's
  class names in label order (None before the split is read: not compared)."""
  return manifest_lib.identity(record_kind(config.source), config.source,
                               _source_paths(config), config.split, config.short_side,
                               config.jpeg_quality, config.videos_per_shard, config.dataset,
                               _class_names_digest(config), classes)


def _class_names_digest(config: PrepareOptions) -> str:
  """'sha256 <16 hex>' of the bytes of a list dataset's --class_names file ('' for other
  datasets, and when it cannot be read: reading the split names that)."""
  if config.dataset != 'list':
    return ''
  try:
    with open(config.class_names, 'rb') as f:
      return f'sha256 {hashlib.sha256(f.read()).hexdigest()[:16]}'
  except OSError:
    return ''


def plan(config: PrepareOptions) -> tuple[video_lists.Split, dict[str, list[dict[str, Any]]]]:
  """Reads the split and returns it with the shard plan per subset (no video is opened;
  each source file or frame folder is stat'ed for its identity)."""
  source = _source_paths(config)
  if config.source == 'flow':
    unfinished = flow_shards.unfinished(source['flow_dir'])
    if unfinished is not None:
      raise UnfinishedFlow(source['flow_dir'], unfinished)
  split = read_split(config, source)
  if config.source == 'flow':
    check_flow_sources(config, source, split)
  videos_dir, frames_dir = source.get('videos_dir', ''), source.get('frames_dir', '')
  flow_dir = source.get('flow_dir', '')
  frame_list = source.get('frame_list') or source.get('flow_list', '')
  infos: dict[str, video_lists.FrameInfo] = {}
  if config.source in ('frames', 'flow') and frame_list:
    option = 'frame_list' if config.source == 'frames' else 'flow_list'
    infos, list_problems = video_lists.read_frame_list(frame_list, len(split.classes), option)
    video_lists.check_frame_list_classes(frame_list, split.train + split.test, infos, option)
    split.problems.extend(list_problems)
  if config.source in ('frames', 'flow'):
    # Folders a rawframe list names, then <class>/<video>/ folders (TSN, MMAction2).
    root = flow_dir if config.source == 'flow' else frames_dir
    infos = {**datasets.class_folder_frames(root, split.train + split.test),
             **split.frame_folders, **infos}
  layout = ''
  if config.source in ('frames', 'flow'):
    listed = {e.name: folder for subset in config.subsets for e in split.subset(subset)
              for folder in [listed_folder(config.source, dataclasses.asdict(infos[e.key])
                                           if e.key in infos else None)] if folder}
    root, flag = ((flow_dir, '--flow_dir') if config.source == 'flow' else
                  (frames_dir, '--frames_dir'))
    try:
      layout = layouts.resolve(
          config.layout, root, [e.name for s in config.subsets for e in split.subset(s)],
          listed, config.source == 'flow', flag).pattern
    except layouts.LayoutError as e:
      raise PrepareError(str(e), e.option) from None
    split = video_lists.apply_folder_rule(
        split, lambda e: read_channel(config.source, layout, root, e, infos.get(e.key)).folder,
        lambda e, folder: frame_folders.frame_files_in(
            folder, read_channel(config.source, layout, root, e, infos.get(e.key)).name))
  from input_fn import records
  plans = {}
  flow_sources = flow_shards.read_sources(flow_dir) if config.source == 'flow' else {}
  for subset in config.subsets:
    entries = split.subset(subset)
    num_shards = max(1, math.ceil(len(entries) / config.videos_per_shard))
    shards = []
    for s in range(num_shards):
      tasks = []
      for entry in entries[s::num_shards]:
        info = infos.get(entry.key)
        task = {
            'entry': dataclasses.asdict(entry), 'source': config.source,
            'videos_dir': videos_dir, 'frames_dir': frames_dir, 'frame_list': frame_list,
            'flow_dir': flow_dir, 'layout': layout,
            'frame_info': dataclasses.asdict(info) if info else None,
            'short_side': config.short_side, 'jpeg_quality': config.jpeg_quality,
            # flow: the size of the video extract_flow computed it from (not fingerprinted)
            'video_size': (flow_sources.get(entry.name) or {}).get('size')}
        task['identity'] = source_identity(task)
        tasks.append(task)
      fingerprint = hashlib.sha256(json.dumps(
          [FORMAT_VERSION, config.source, source, config.short_side, config.jpeg_quality,
           [(t['entry']['name'], t['entry']['label'], t['entry']['index'],
             t['frame_info'], t['identity']) for t in tasks]], sort_keys=True).encode()
      ).hexdigest()
      shards.append({'file': records.SHARD_PATTERN.format(subset=subset, shard=s,
                                                          num_shards=num_shards),
                     'out': config.out, 'tasks': tasks, 'fingerprint': fingerprint,
                     'strict': config.strict})
    plans[subset] = shards
  return split, plans


def check_flow_sources(config: PrepareOptions, source: dict[str, str],
                       split: video_lists.Split) -> None:
  """Raises `StaleFlow` when the flow of a video of the prepared subsets is older than its
  video file under --data_dir (--videos_dir): its source record in --flow_dir names another
  size or mtime (`flow_shards.changed_videos`). Flow without source records (another
  tool's) passes."""
  videos_dir = config.videos_dir or datasets.videos_dir(config.dataset, source['data_dir'])
  changed, example = flow_shards.changed_videos(
      source['flow_dir'], [e for subset in config.subsets for e in split.subset(subset)],
      videos_dir)
  if changed:
    held = (json_files.load_object(os.path.join(source['flow_dir'], flow.EXTRACTION_MANIFEST))
            or {}).get('videos_dir')
    other = (held if isinstance(held, str) and held and
             os.path.realpath(held) != os.path.realpath(videos_dir) else '')
    raise StaleFlow(source['flow_dir'], changed, example, other)


def read_split(config: PrepareOptions, source: dict[str, str]) -> video_lists.Split:
  """The split of `config.dataset` from the resolved `source` paths."""
  lists = (datasets.ListFiles(source['train_list'], source['test_list'],
                              source['class_names'],
                              manifest_lib.names_root(source))
           if config.dataset == 'list' else None)
  try:
    return datasets.read_split(config.dataset, source.get('split_dir', ''), config.split,
                               lists, source.get('videos_dir') or source.get('frames_dir', ''))
  except FileNotFoundError:
    likely = (datasets.other_dataset(config.dataset, source['data_dir'])
              if source.get('data_dir') else None)
    if likely is None:
      raise
    raise video_lists.DatasetError(
        f'--data_dir={source["data_dir"]} holds {likely}, not {config.dataset}: add '
        f'--dataset={likely}', source['data_dir'], option='dataset') from None


def _other_problems(split: video_lists.Split) -> list[InputProblem]:
  """Problems of lines that list no video of a subset (classInd.txt, the frame list,
  HMDB51 lines that cannot be read as train or test)."""
  return [p for p in split.problems if not video_lists.problem_subset(p)]


def check_out_dir(config: PrepareOptions, classes: Sequence[str] | None = None) -> None:
  """Raises `PrepareError` naming the differences when --out holds another dataset (or
  data without identity) and --overwrite is not given; `classes` as in
  `dataset_identity`. Writes nothing."""
  here = manifest_lib.read_identity(config.out) if os.path.isdir(config.out) else None
  existing = manifest_lib.dataset_files(config.out) if os.path.isdir(config.out) else []
  if here is None and existing:
    found = ['it holds prepared files without a dataset identity (an older prepare, or '
             'another tool)']
  else:
    found = (manifest_lib.identity_differences(here, dataset_identity(config, classes))
             if here is not None else [])
  if found and not config.overwrite:
    raise PrepareError(dir_identity.refusal(f'--out={config.out}', 'another dataset', found,
                                            'use another --out, or --overwrite to replace it'),
                       'out', tuple(f.option for f in found if getattr(f, 'option', None)))


def claim_out_dir(config: PrepareOptions, classes: Sequence[str],
                  log: Callable[[str], None]) -> None:
  """Makes --out hold this dataset of `classes` (names in label order): stops naming the
  differences when it holds another one (or data without identity). --overwrite removes
  whatever dataset it holds first."""
  check_out_dir(config, classes)
  asked = dataset_identity(config, classes)
  existing = manifest_lib.dataset_files(config.out) if os.path.isdir(config.out) else []
  if config.overwrite and existing:
    removed = manifest_lib.remove_dataset(config.out)
    log(f'prepare: --overwrite: removed the dataset in {config.out} ({removed} shard files)')
  manifest_lib.write_identity(config.out, asked)


def check_kept_subsets(config: PrepareOptions, split: video_lists.Split) -> None:
  """Raises `PrepareError` (option 'subsets') when --out holds records of a subset not
  prepared now that the split, as read now, no longer gives that subset: its lists changed
  since (a test video, or a clip of a test video's UCF101 group, added; a video moved),
  so the two subsets would not come from one split and training could hold a test video.
  So it does when the subset's list now gives videos its records lack: more than the
  lines it had (`num_listed`), or more unrecorded videos than it skipped (`num_skipped`);
  the kept records would be tested as if they were the whole list."""
  for subset in manifest_lib.SUBSETS:
    if subset in config.subsets or not os.path.exists(manifest_lib.manifest_path(config.out,
                                                                                 subset)):
      continue
    try:
      manifest = manifest_lib.read(config.out, subset)
    except manifest_lib.ManifestError:
      continue  # damaged: training names it
    kept = manifest_lib.video_names(manifest)
    listed = {video_lists.same_video(e.name) for e in split.subset(subset)}
    gone = [name for name in kept if video_lists.same_video(name) not in listed]
    if gone:
      why = next((f' ({p.kind})' for p in split.problems
                  if p.subset == subset and gone[0] in p.reason), '')
      raise PrepareError(
          f'--out={config.out} holds {len(gone)} {subset} records that the split, as its '
          f'lists read now, does not give the {subset} subset (e.g. {gone[0]}{why}): the lists '
          f'changed since they were prepared; add {subset} to --subsets '
          f'(--subsets=train,test) so both come from one split', 'subsets')
    held = {video_lists.same_video(name) for name in kept}
    lacked = [e.name for e in split.subset(subset) if video_lists.same_video(e.name) not in held]
    added = max(split.num_listed(subset) - manifest.get('num_listed', 0),
                len(lacked) - manifest.get('num_skipped', 0))
    if lacked and added > 0:
      skipped = json.dumps(manifest.get('skipped', []), ensure_ascii=False)
      example = next((name for name in reversed(lacked) if name not in skipped), lacked[-1])
      raise PrepareError(
          f'--out={config.out} holds {subset} records of {manifest.get("num_listed", 0)} '
          f'listed videos, but the {subset} list now gives {added} more it lacks (e.g. '
          f'{example}): the lists changed since they were prepared; prepare it again with '
          f'--subsets={subset} (or --subsets=train,test)', 'subsets')


def prepare(config: PrepareOptions, log: Callable[[str], None] = print,
            stop_after_shards: int = 0) -> dict[str, Any]:
  """Runs the preparation; returns {subset: manifest}. See the module docstring.
  Raises `PrepareError` (bad options, --out holding another dataset, frames or flow in no
  known layout), `EmptySubset` (a subset without any record, after its manifest is
  written), `InputError` (--strict) or FileNotFoundError (split files).
  `stop_after_shards` > 0 (tests of resumption): raises `PrepareInterrupted` once that many
  shards are written in this run, as if the run had been interrupted there."""
  check_options(config)
  check_out_dir(config)
  split, plans = plan(config)
  if config.strict and split.problems:
    raise InputError(split.problems[0])
  with writing_out_dir(config.out):
    return _write(config, split, plans, log, stop_after_shards)


@contextlib.contextmanager
def writing_out_dir(out: str) -> Iterator[None]:
  """Holds `<out>/prepare.lock` (an flock on an empty file, released when this process
  ends, however it ends) while a preparation writes --out: `PrepareError` (option out)
  when another prepare writes the same folder, under any spelling."""
  os.makedirs(out, exist_ok=True)
  path = os.path.join(out, OUT_LOCK_FILE)
  with open(path, 'a', encoding='utf-8') as lock:
    try:
      fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
      raise PrepareError(f'--out={out} is being written by another prepare (it holds {path}): '
                         'wait for it to end (a rerun then goes on from what it wrote), or '
                         'use another --out', 'out') from None
    yield


def _write(config: PrepareOptions, split: video_lists.Split,
           plans: dict[str, list[dict[str, Any]]], log: Callable[[str], None],
           stop_after_shards: int) -> dict[str, Any]:
  """The writing part of `prepare`, while it holds --out (`writing_out_dir`)."""
  claim_out_dir(config, split.classes.names, log)
  check_kept_subsets(config, split)
  out = config.out
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
  status_file.record('prepare_plan', subsets={
      subset: {'shards': len(shards), 'already_done': sum(s['file'] in states for s in shards)}
      for subset, shards in plans.items()}, videos=total, shards=len(todo), workers=workers)
  progress = Progress(f'prepare: {",".join(plans)}:', total, 'videos')
  completed_this_run = 0

  def finished(state: dict[str, Any]) -> None:
    nonlocal completed_this_run
    states[state['file']] = state
    completed_this_run += 1
    if stop_after_shards and completed_this_run >= stop_after_shards:
      raise PrepareInterrupted(f'stopped after {completed_this_run} shard(s)')

  if todo and workers <= 1:
    for shard in todo:
      finished(convert_shard(shard, progress.add))
  elif todo:
    context = multiprocessing.get_context('spawn')
    with contextlib.ExitStack() as stack:
      with signals.blocked():  # multiprocessing's resource tracker starts with them blocked
        queue = context.Queue()
      with signals.blocked():  # and the workers (starting the tracker unblocked SIGINT here);
        pool = stack.enter_context(  # a signal meanwhile is acted on once all have started
            context.Pool(workers, initializer=_init_worker, initargs=(queue,)))
        _wait_started(queue, workers)
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
    manifests[subset] = make_manifest(config, split, subset, shards, states,
                                      shards[0]['tasks'][0]['layout'] if shards and
                                      shards[0]['tasks'] else '')
    manifest_lib.write(out, manifests[subset])
    stale = manifest_lib.stale_shards(out, subset, [s['file'] for s in shards])
    for file in stale:
      os.remove(os.path.join(out, file))
      if os.path.exists(_state_path(out, file)):
        os.remove(_state_path(out, file))
    log(summary_line(manifests[subset]) +
        (f'; removed {len(stale)} stale shard(s) of an earlier shard plan' if stale else ''))
  empty = [m for m in manifests.values() if not m['num_records']]
  if empty:
    raise EmptySubset(empty_subset_line(empty[0]))
  return manifests


def empty_subset_line(manifest: dict[str, Any]) -> str:
  """Why a subset ended with no record: its list's count and the skip kinds."""
  subset = manifest['subset']
  if not manifest['num_listed']:
    return (f'{subset}: the {subset} list of split {manifest["split"]} names no video '
            f'(in {manifest["source_paths"].get("split_dir") or manifest["source_paths"].get("test_list" if subset == "test" else "train_list")}): '
            'nothing to prepare')
  kinds = ', '.join(f'{n} {k}' for k, n in manifest['skipped_by_kind'].items())
  first = (f"{manifest['skipped'][0]['input']}: {manifest['skipped'][0]['reason']}"
           if manifest['skipped'] else '')
  return (f'{subset}: 0 records of {manifest["num_listed"]} listed videos (skipped {kinds}; '
          f'first: {first}): no usable {subset} video, see {subset}.manifest.json')


def make_manifest(config: PrepareOptions, split: video_lists.Split, subset: str,
                  shards: list[dict[str, Any]], states: dict[str, dict[str, Any]],
                  layout: str = '') -> dict[str, Any]:
  """The manifest of one subset (fields: `input_fn/manifest.py`). Its counts add up:
  num_records + num_skipped == num_listed (every line of the subset's list)."""
  counts = collections.Counter()
  skipped = [p.to_json() for p in split.problems_of(subset)]
  shard_rows = []
  for shard in shards:
    state = states[shard['file']]
    counts.update(state['counts_per_class'])
    skipped.extend(state['skipped'])
    shard_rows.append({'file': shard['file'], 'records': state['records'],
                       'bytes': state['file_identity'][0],
                       'counts_per_class': state['counts_per_class'],
                       'videos': [dict(sorted(v.items())) for v in state['videos']]})
  other = [p.to_json() for p in _other_problems(split)]
  identity = dataset_identity(config, split.classes.names)
  return {
      'format_version': manifest_lib.FORMAT_VERSION, **identity, 'subset': subset,
      'layout': layout,
      'num_listed': split.num_listed(subset),
      'num_unused': split.unused,
      'num_records': sum(r['records'] for r in shard_rows),
      'num_skipped': len(skipped),
      'num_classes': len(split.classes),
      'counts_per_class': {name: counts.get(name, 0) for name in split.classes.names},
      'shards': shard_rows,
      'skipped_by_kind': dict(sorted(collections.Counter(s['kind'] for s in skipped).items())),
      'skipped': skipped,
      'unread_lines': other,
      # How the flow was computed (extract_flow's record), kept with the records: the flow
      # folders may be deleted or computed again once the records are made.
      'flow_extraction': (flow.extraction_settings(identity['source_paths'].get('flow_dir', ''))
                          if config.source == 'flow' else None),
  }


def summary_line(manifest: dict[str, Any]) -> str:
  """`prepare: train: 9537 of 9537 listed videos -> records in 150 shards (101 classes);
  skipped 2: 1 missing file, ...` (records + skipped = listed)."""
  kinds = ', '.join(f'{n} {k}' for k, n in manifest['skipped_by_kind'].items())
  unread = manifest.get('unread_lines', [])
  files = ', '.join(sorted({os.path.basename(p['input']) for p in unread}))
  unused = manifest.get('num_unused', 0)
  return (f'prepare: {manifest["subset"]}: {manifest["num_records"]} records of '
          f'{manifest["num_listed"]} listed videos in {len(manifest["shards"])} shards '
          f'({manifest["num_classes"]} classes); skipped {manifest["num_skipped"]}'
          f'{": " + kinds if kinds else ""}'
          f'{f"; {len(unread)} unusable line(s) in {files}" if unread else ""}'
          f'{f"; {unused} videos of the split files in neither subset (id 0)" if unused else ""}')

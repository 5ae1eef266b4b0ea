"""TV-L1 optical flow of a UCF101 or HMDB51 tree, as a library: its options
(`ExtractFlowOptions`, `check_options`), the videos to do, one video's flow (`extract_video`:
u and v JPEG frames) and `extract(options)`, resumable, recording its settings and sources.
The program and its whole description: data_tools/extract_flow_main.py.
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import json
import multiprocessing
import shutil
import os
import time
from typing import Any, Callable, Iterator

import numpy as np

from input_fn import flow_shards
from input_fn import datasets, flow, frame_folders, ucf101, video_io, video_lists
from input_fn import dir_identity, json_files
from input_fn.video_lists import InputError, InputProblem
from command_line import disk_space, signals, status_file
from command_line.options import Options, OptionsError, above, at_least, option
from command_line.progress import Progress

MANIFEST = flow.EXTRACTION_MANIFEST
BACKENDS = ('tensorflow', 'opencv')


@dataclasses.dataclass(frozen=True)
class ExtractFlowOptions(Options):
  """What to extract and how; empty directories are found under data_dir."""
  data_dir: str = option('', 'UCF101 root: UCF-101/ (the .avi class folders) and '
                         'ucfTrainTestlist/classInd.txt (for the labels of flow.txt).', path=True)
  dataset: str = option(datasets.DEFAULT, 'Which videos: ucf101 (<Class>/v_<Class>_gGG_cCC.avi) '
                        'or hmdb51 (<class>/<video>.avi, labels from its split files).',
                        choices=datasets.NAMES[:2])
  videos_dir: str = option('', 'Folder of the class folders of .avi files '
                           '(default: data_dir/UCF-101, data_dir/hmdb51_org, data_dir/videos '
                           'or data_dir).', path=True)
  out: str = option('', 'Flow root to write u/ and v/ into (default: data_dir/tvl1_flow).',
                    path=True)
  short_side: int = option(256, 'Resize frames so the short side is this before computing '
                           'the flow (0 keeps the decoded size).', valid=at_least(0))
  workers: int = option(0, 'Worker processes; 0: all CPUs; 1: in this process.',
                        valid=at_least(0))
  tvl1_scales: int = option(5, 'TV-L1 pyramid scales (OpenCV default 5).', valid=at_least(1))
  tvl1_warps: int = option(5, 'TV-L1 warps per scale (OpenCV default 5; 0 would compute no '
                           'flow at all).', valid=at_least(1))
  tvl1_epsilon: float = option(0.01, 'TV-L1 stopping threshold (OpenCV default 0.01; '
                               'larger is faster and coarser).', valid=above(0.0))
  strict: bool = option(False, 'Stop at the first bad video instead of skipping it.')
  backend: str = option('', 'TV-L1 implementation: tensorflow (data_tools/tvl1.py, batched, '
                        'on the GPU) or opencv (one process per core); default: tensorflow '
                        'when TensorFlow sees a GPU, else opencv (faster per CPU core).',
                        choices=('',) + BACKENDS)
  tvl1_batch: int = option(16, 'Frame pairs per TensorFlow batch (--backend=tensorflow).',
                           valid=at_least(1))
  tvl1_xla: str = option('auto', 'Compile the TensorFlow TV-L1 with XLA (--backend=tensorflow):'
                         ' auto = on a GPU (where fusing its elementwise steps cuts the memory '
                         'traffic ~13x), not on CPU (slower there); tools/gpu_check.sh '
                         'measures both on a GPU.', choices=('auto', 'on', 'off'))
  shard: int = option(-1, 'This process computes share number --shard (0-based) of '
                      '--num_shards; -1 (default): a Slurm array task\'s SLURM_ARRAY_TASK_ID, '
                      'else 0.', valid=at_least(-1))
  num_shards: int = option(0, 'Split the videos into this many shares balanced by frames '
                           '(one per node); 0 (default): SLURM_ARRAY_TASK_COUNT, else 1.',
                           valid=at_least(0))

  @property
  def settings(self) -> dict[str, Any]:
    """What decides the flow's values: a reused `out` must have been written with these."""
    return {'short_side': self.short_side, 'bound': flow.BOUND,
            'tvl1': dataclasses.asdict(self.tvl1)}

  @property
  def tvl1(self) -> flow.Tvl1Settings:
    return flow.Tvl1Settings(self.tvl1_scales, self.tvl1_warps, self.tvl1_epsilon)


@dataclasses.dataclass(frozen=True)
class VideoTask:
  path: str
  name: str           # canonical
  label: int          # 0-based, -1 when no classInd.txt was found


class NoFlow(RuntimeError):
  """The extraction ended with no video having flow (every one skipped: undecodable,
  too short); the message names the first and the manifest."""


class SettingsMismatch(ValueError):
  """`out` holds flow extracted with other settings, or a damaged manifest. `option` is
  'out'; `differences`: the settings that differ, named as their flags (e.g. 'tvl1_epsilon',
  'short_side', 'backend');
  `shards`: the other shards of a split extraction that differ ('shard 1 of 2'), else ();
  `damaged`: what a damaged manifest holds ('not JSON', 'no settings in it', ...), else ''."""

  def __init__(self, message: str, differences: tuple[str, ...] = (),
               damaged: str = '', shards: tuple[str, ...] = ()) -> None:
    super().__init__(message)
    self.option = 'out'
    self.differences = differences
    self.damaged = damaged
    self.shards = shards


def check_options(options: ExtractFlowOptions) -> None:
  """Raises `OptionsError` naming the first option that cannot work with the files (each
  option's range and choices are checked when the options are made)."""
  if not options.data_dir and not options.videos_dir:
    raise OptionsError('give --data_dir (the UCF101 root holding UCF-101/) or --videos_dir',
                       'data_dir')
  try:
    flow_shards.from_environment(options.shard, options.num_shards)
  except ValueError as e:
    raise OptionsError(str(e), 'shard') from None
  if options.out and os.path.exists(options.out) and not os.path.isdir(options.out):
    raise OptionsError(f'--out={options.out} is a file, not a directory', 'out')


def list_videos(videos_dir: str, classes: video_lists.ClassIndex | None
                ) -> tuple[list[VideoTask], list[InputProblem]]:
  """Every `<Class>/v_<Class>_gGG_cCC.avi` under `videos_dir`, sorted by canonical name."""
  tasks, problems = [], []
  for class_folder in sorted(os.listdir(videos_dir)):
    folder = os.path.join(videos_dir, class_folder)
    if not os.path.isdir(folder):
      continue
    label = classes.label(class_folder) if classes else -1
    if classes and label is None:
      problems.append(InputProblem(folder, 0, f'class folder {class_folder!r} is not in '
                              'classInd.txt', 'unknown class'))
      continue
    class_name = classes.names[label] if classes else class_folder
    for file in sorted(os.listdir(folder)):
      stem, ext = os.path.splitext(file)
      if ext.lower() != '.avi':
        continue
      parsed = ucf101.parse_video_name(stem)
      if parsed is None or parsed[0].lower() != class_folder.lower():
        problems.append(InputProblem(os.path.join(folder, file), 0, 'not named '
                                f'v_{class_folder}_gGG_cCC.avi', 'malformed file name'))
        continue
      tasks.append(VideoTask(os.path.join(folder, file),
                             ucf101.canonical_name(stem, class_name), label))
  return sorted(tasks, key=lambda t: t.name), problems


def dataset_videos(dataset: str, videos_dir: str, classes: video_lists.ClassIndex | None
                   ) -> tuple[list[VideoTask], list[InputProblem]]:
  """The videos of `dataset` under `videos_dir` (ucf101: `list_videos`; hmdb51: every
  `<class>/<video>.avi`, `datasets.class_folder_videos`), sorted by name."""
  if dataset == 'ucf101':
    return list_videos(videos_dir, classes)
  found, problems = datasets.class_folder_videos(videos_dir, classes)
  tasks = [VideoTask(path, name, label) for path, name, label in found]
  # Flow folders are named by video: two files of one name (in two class folders) would
  # share one, and flow.txt would list it twice. Neither is extracted; each is named.
  paths: dict[str, list[str]] = {}
  for task in tasks:
    paths.setdefault(task.name.lower(), []).append(task.path)
  clashes = {name for name, found_at in paths.items() if len(found_at) > 1}
  problems += [InputProblem(task.path, 0, f'another video is named {task.name} too ('
                            f'{" and ".join(p for p in paths[task.name.lower()] if p != task.path)}'
                            '): flow folders are named by video; rename one', 'duplicate name')
               for task in tasks if task.name.lower() in clashes]
  return [t for t in tasks if t.name.lower() not in clashes], problems


def _init_worker() -> None:
  import cv2
  cv2.setNumThreads(1)  # one process per core


def _init_pool_worker() -> None:
  signals.die_with_parent()  # a SIGTERM to extract_flow ends its workers too
  _init_worker()


def resolve_backend(backend: str) -> str:
  """`backend`, or the default: tensorflow when TensorFlow sees a GPU, else opencv.
  TensorFlow is imported only where an NVIDIA device exists."""
  if backend:
    return backend
  if not (os.path.exists('/dev/nvidia0') or os.path.isdir('/proc/driver/nvidia/gpus')):
    return 'opencv'
  from data_tools import tensorflow_flow
  return 'tensorflow' if tensorflow_flow.gpu_visible() else 'opencv'


def decode_gray(task: VideoTask, settings: dict[str, Any]) -> np.ndarray | InputProblem:
  """The video's grayscale frames uint8 [T, H, W] (T >= 2), or the InputProblem skipping it."""
  try:
    frames = video_io.decode_video(task.path, settings['short_side'])
  except video_io.VideoError as e:
    return InputProblem(task.path, 0, str(e), e.kind)
  if len(frames) < 2:
    return InputProblem(task.path, 0, 'one frame only: flow needs 2', 'too few frames')
  return flow.grayscale(frames)


def extract_video(job: tuple[VideoTask, str, dict[str, Any]]
                  ) -> tuple[VideoTask, int, InputProblem | None]:
  """Computes (OpenCV) and writes one video's flow: (task, flow frames written, None) or
  (task, 0, InputProblem saying why it was skipped)."""
  task, out, settings = job
  gray = decode_gray(task, settings)
  if isinstance(gray, InputProblem):
    return task, 0, gray
  codes = flow.video_flow(gray, flow.tvl1(flow.Tvl1Settings(**settings['tvl1'])))
  flow.write_flow(codes, out, task.name)
  return task, len(codes), None


def _tensorflow_results(jobs: list[tuple[VideoTask, str, dict[str, Any]]], batch: int,
                        xla: bool | None) -> Iterator[tuple[VideoTask, int, InputProblem | None]]:
  """`extract_video`'s results with the TensorFlow backend, in this process: the next
  video is decoded in a thread while the current one's flow is computed."""
  if not jobs:
    return
  from data_tools import tensorflow_flow  # pylint: disable=import-outside-toplevel
  engine = tensorflow_flow.TensorflowFlow(flow.Tvl1Settings(**jobs[0][2]['tvl1']), batch, xla)
  with concurrent.futures.ThreadPoolExecutor(1) as decoder:
    upcoming = decoder.submit(decode_gray, jobs[0][0], jobs[0][2])
    for i, (task, out, settings) in enumerate(jobs):
      gray = upcoming.result()
      if i + 1 < len(jobs):
        upcoming = decoder.submit(decode_gray, jobs[i + 1][0], jobs[i + 1][2])
      if isinstance(gray, InputProblem):
        yield task, 0, gray
        continue
      codes = engine.video_flow(gray)
      flow.write_flow(codes, out, task.name)
      yield task, len(codes), None


def _check_settings(out: str, settings: dict[str, Any]) -> None:
  """Refuses an `out` whose manifest records other settings, or is damaged
  (`SettingsMismatch` naming the difference and the fix)."""
  path = os.path.join(out, MANIFEST)
  try:
    previous = dir_identity.read(path, key='settings')
  except dir_identity.IdentityDamaged as e:
    raise SettingsMismatch(
        f'{path} is damaged ({e}): delete it to extract into {out} again (flow whose '
        f'source and settings are recorded in {flow_shards.SOURCES} is kept), or use another --out',
        damaged=str(e)) from None
  found = (dir_identity.differences(dir_identity.flattened(previous),
                                    dir_identity.flattened(settings))
           if previous is not None else [])
  if found:
    raise SettingsMismatch(dir_identity.refusal(
        f'--out={out}', 'flow extracted with other settings', found,
        'use another --out (and give it to prepare as --flow_dir), or delete it to extract '
        'again'), tuple(f.option for f in found))


def _check_videos_dir(out: str, videos_dir: str, tasks: list[VideoTask]) -> None:
  """Refuses an `out` whose manifest records another videos folder, still there, and that
  holds the flow of videos that folder has and `tasks` do not (`SettingsMismatch`,
  difference 'videos_dir'): two datasets' flow in one root would be listed as one. A copy
  of the same videos, or a recorded folder that is gone (moved), passes."""
  held = (json_files.load_object(os.path.join(out, MANIFEST)) or {}).get('videos_dir')
  if not (isinstance(held, str) and held and os.path.isdir(held) and
          os.path.realpath(held) != os.path.realpath(videos_dir)):
    return
  foreign = sorted(set(flow_shards.read_sources(out)) - {t.name for t in tasks})
  if foreign:
    raise SettingsMismatch(
        f'--out={out} holds the flow of {len(foreign)} videos of {held} (e.g. {foreign[0]}) '
        f'that {videos_dir} does not have: use another --out for these videos (and give it '
        'to prepare as --flow_dir)', ('videos_dir',))


def _check_shard_settings(out: str, settings: dict[str, Any]) -> None:
  """Refuses to go on beside shards of a split recorded in `out` with other settings
  (`flow_shards.other_settings`; `settings` includes the backend), naming them."""
  found = flow_shards.other_settings(out, settings)
  if found:
    described = '; '.join(f'{name}: {", ".join(d)}' for name, d in found.items())
    raise SettingsMismatch(
        f'--out={out} holds shards extracted with other settings ({described}): extract '
        'every shard with the same --backend and settings (these into another --out)',
        tuple(sorted({d.option for ds in found.values() for d in ds})), shards=tuple(found))


def source_identity(task: VideoTask, settings: dict[str, Any]) -> dict[str, Any]:
  """What a video's flow was computed from: the .avi's size and mtime, and the settings
  (read back by `flow_shards.read_sources` and `flow_shards.changed_videos`)."""
  stat = os.stat(task.path)
  return {'size': stat.st_size, 'mtime_ns': stat.st_mtime_ns, 'settings': settings}


def _flow_is_newer(out: str, task: VideoTask) -> bool:
  """True when both flow folders of `task` were last written after its .avi was."""
  video_mtime = os.stat(task.path).st_mtime_ns
  return all(os.stat(f).st_mtime_ns > video_mtime
             for f in frame_folders.flow_folders(out, task.name))


def _record_source(out: str, video: str, identity: dict[str, Any] | None,
                   shard: tuple[int, int] = (0, 1), written: list[int] | None = None) -> None:
  """Appends a video's record (`written`: `flow.written` of its folders, when just computed)
  to flow_shards.SOURCES, or to the shard's own file when split, on a line of its own
  (after a line a failed write left unfinished, which `flow_shards.read_sources` ignores)."""
  path = (os.path.join(out, flow_shards.SOURCES) if shard[1] == 1 else
          flow_shards.sources_path(out, *shard))
  row = {'video': video, 'source': identity, **({'written': written} if written else {})}
  line = json.dumps(row, sort_keys=True).encode() + b'\n'
  with open(path, 'a+b') as f:  # writes go to the end whatever the read position
    size = f.seek(0, os.SEEK_END)
    if size:
      f.seek(size - 1)
      if f.read(1) != b'\n':
        line = b'\n' + line
    f.write(line)


def _damaged(out: str, tasks: list[VideoTask]) -> list[VideoTask]:
  """Those of `tasks` (flow present and current) whose folders are not as written: their
  `flow.written` differs from the record's, or, recorded without it, u and v hold other
  numbers of files."""
  recorded = flow_shards.read_written(out)
  found = []
  for task in tasks:
    now = flow.written(out, task.name)
    if (now != recorded[task.name] if task.name in recorded else now[0] != now[1]):
      found.append(task)
  return found


def _remove_flow(out: str, video: str) -> None:
  for folder in frame_folders.flow_folders(out, video):
    shutil.rmtree(folder, ignore_errors=True)


def extract(options: ExtractFlowOptions, log: Callable[[str], None] = print
            ) -> dict[str, Any]:
  """Runs the extraction (see the module docstring); returns the manifest (for a shard
  that is not the last to finish: its part, with 'merged': False). Raises `OptionsError`,
  `SettingsMismatch`, `FileNotFoundError` (no videos folder), `InputError` (--strict),
  `disk_space.FullDisk` (naming `out`, or the file written)."""
  check_options(options)
  videos_dir = options.videos_dir or datasets.videos_dir(options.dataset, options.data_dir)
  if not videos_dir or not os.path.isdir(videos_dir):
    raise video_lists.not_found(f'no videos folder: --videos_dir={videos_dir or "(empty)"} '
                           '(or --data_dir holding UCF-101/)', videos_dir,
                           'videos_dir' if options.videos_dir else 'data_dir')
  out = options.out or os.path.join(options.data_dir or videos_dir, ucf101.FLOW_DIR_NAME)
  with disk_space.writing(out):  # a full disk: FullDisk naming out (a rerun resumes)
    return _extract_into(out, videos_dir, options, log)


def _refuse_all_skipped(dataset: str, videos_dir: str, skipped: list[InputProblem]) -> None:
  """Raises `DatasetError` (option 'dataset' when every video's name is not UCF101's,
  else 'videos_dir') naming how many videos under `videos_dir` were found and why the first
  cannot be used: flow of none of them would be an empty, exit-0 extraction."""
  names = dataset == 'ucf101' and all(p.kind == 'malformed file name' for p in skipped)
  fix = ('; for HMDB51 add --dataset=hmdb51' if names else
         '; give the videos of the dataset, or --dataset of these')
  raise video_lists.DatasetError(
      f'none of the {len(skipped)} videos under {videos_dir} can be used ({skipped[0]})'
      f'{fix}', videos_dir, option='dataset' if names else 'videos_dir')


def _extract_into(out: str, videos_dir: str, options: ExtractFlowOptions,
                  log: Callable[[str], None]) -> dict[str, Any]:
  """`extract` once its folders are found."""
  shard = flow_shards.from_environment(options.shard, options.num_shards)
  classes = (datasets.read_classes(options.dataset, options.data_dir)[0]
             if options.data_dir else None)
  tasks, skipped = dataset_videos(options.dataset, videos_dir, classes)
  if not tasks and not skipped:
    likely = (datasets.other_dataset(options.dataset, options.data_dir)
              if options.data_dir else None)
    if likely:
      raise video_lists.DatasetError(f'--data_dir={options.data_dir} holds {likely}, not '
                                     f'{options.dataset}: add --dataset={likely}',
                                     options.data_dir, option='dataset')
    raise video_lists.not_found(f'no <Class>/v_<Class>_gGG_cCC.avi under {videos_dir}: pass the '
                           'UCF101 root (holding UCF-101/) as --data_dir, or --videos_dir',
                           videos_dir, 'videos_dir' if options.videos_dir else 'data_dir')
  if not tasks:
    _refuse_all_skipped(options.dataset, videos_dir, skipped)
  if options.strict and skipped:
    raise InputError(skipped[0])
  settings = options.settings
  _check_settings(out, settings)
  _check_videos_dir(out, videos_dir, tasks)
  backend = resolve_backend(options.backend)
  shard_settings = dict(settings, backend=backend)
  _check_shard_settings(out, shard_settings)
  for channel in flow.CHANNELS:
    os.makedirs(os.path.join(out, channel), exist_ok=True)
  manifest_path = os.path.join(out, MANIFEST)
  dir_identity.claim(manifest_path, {'settings': settings})  # before any frame
  split = shard[1] > 1
  mine = tasks
  flow_shards.write_started(out, *shard, shard_settings)  # unfinished until the merge
  if split:
    mine = flow_shards.share(tasks, [video_io.video_frame_count(t.path) for t in tasks],
                             [t.name for t in tasks], *shard)
    if shard[0] != 0:
      skipped = []  # listing problems are reported by shard 0 only
  recorded = flow_shards.read_sources(out)
  identities = {t.name: source_identity(t, settings) for t in tasks}
  adopted = [t for t in mine if t.name not in recorded and flow.has_flow(out, t.name) and
             _flow_is_newer(out, t)]
  for task in adopted:  # flow of an earlier extract_flow that kept no source records
    _record_source(out, task.name, identities[task.name], shard)
    recorded[task.name] = identities[task.name]
  changed = [t for t in mine if flow.has_flow(out, t.name) and
             recorded.get(t.name) != identities[t.name]]
  damaged = _damaged(out, [t for t in mine if flow.has_flow(out, t.name) and t not in changed])
  todo = [t for t in mine if not flow.has_flow(out, t.name)] + changed + damaged
  workers = (1 if backend == 'tensorflow' else
             min(options.workers or os.cpu_count() or 1, max(len(todo), 1)))
  again = (f' ({len(changed)} whose video changed since its flow was computed: computed '
           'again)' if changed else '') + (
               f' ({len(damaged)} whose flow folders lost, emptied or cut frames since: '
               'computed again)' if damaged else '')
  kept = (f' ({len(adopted)} without a source record but newer than their video: kept)'
          if adopted else '')
  share = f', shard {shard[0]} of {shard[1]}: {len(mine)} of them' if split else ''
  how = ('with tensorflow' if backend == 'tensorflow' else
         f'with {workers} process(es)')
  log(f'extract_flow: {len(tasks)} videos in {videos_dir}{share}, {len(mine) - len(todo)} '
      f'already done{kept}; {len(todo)} to compute{again} {how} into {out}')
  status_file.record('flow_plan', videos=len(tasks), mine=len(mine),
                     already_done=len(mine) - len(todo), adopted=len(adopted),
                     to_compute=len(todo), changed=len(changed), backend=backend,
                     workers=workers, shard=shard[0], num_shards=shard[1])
  progress = Progress('extract_flow:', len(todo), 'videos', amount_unit='flow frames')
  start = time.time()
  jobs = [(t, out, settings) for t in todo]
  pool = None
  if backend == 'tensorflow':
    results = _tensorflow_results(jobs, options.tvl1_batch,
                                  {'auto': None, 'on': True, 'off': False}[options.tvl1_xla])
  elif workers <= 1:
    _init_worker()
    results = map(extract_video, jobs)
  else:
    # fork: the workers need only OpenCV and numpy and start before this process has run
    # any of it; spawn would re-import the caller's main module (TensorFlow) in every one.
    pool = multiprocessing.get_context('fork').Pool(workers, initializer=_init_pool_worker)
    results = pool.imap_unordered(extract_video, jobs)
  try:
    for task, frames, problem in results:
      if problem is not None:
        _remove_flow(out, task.name)  # the flow of a video replaced by a bad one is stale
        _record_source(out, task.name, None, shard)
        if options.strict:
          raise InputError(problem)
        skipped.append(problem)
      else:
        _record_source(out, task.name, identities[task.name], shard, flow.written(out, task.name))
      progress.add(1, frames)
  finally:
    if pool is not None:
      pool.terminate()
      pool.join()
  elapsed = time.time() - start
  rate = progress.amount / max(elapsed, 1e-6)
  speed = (f'{rate:.1f} flow frames/s (tensorflow)' if backend == 'tensorflow' else
           f'{rate / workers:.1f} flow frames/s per core ({workers} process(es))')
  status_file.record('flow_computed', videos=progress.done, flow_frames=int(progress.amount),
                     seconds=elapsed, backend=backend, workers=workers)
  if split:
    flow_shards.write_part(out, *shard, {'settings': shard_settings,
                                         'skipped': [p.to_json() for p in skipped]})
    parts = flow_shards.read_parts(out, shard[1])
    if parts is not None and not flow_shards.claim_merge(out, shard[1]):
      parts = None  # another shard that finished at the same moment merges
    if parts is not None:
      _check_shard_settings(out, shard_settings)  # shards that started at once
    log(f'extract_flow: shard {shard[0]} of {shard[1]} computed {progress.amount:.0f} flow '
        f'frames of {progress.done} videos in {elapsed:.1f} s = {speed}')
    if parts is None:
      log(f'extract_flow: other shards still running; the last to finish (or a rerun '
          f'without --shard) writes {MANIFEST} and {ucf101.FLOW_LIST_NAME}')
      return {'merged': False, 'shard': shard[0], 'num_shards': shard[1],
              'skipped': [p.to_json() for p in skipped]}
    skipped = [InputProblem(p['input'], p['line'], p['reason'], p['kind'])
               for part in parts for p in part['skipped']]
  manifest = _merge(out, tasks, skipped, settings, videos_dir, classes, options, log)
  if not split:
    kinds = ', '.join(f'{n} {k}' for k, n in manifest['skipped_by_kind'].items())
    log(f'extract_flow: {manifest["num_with_flow"]} of {manifest["num_found"]} videos have '
        f'flow in {out}; computed {progress.amount:.0f} flow frames of {progress.done} videos '
        f'in {elapsed:.1f} s = {speed}; skipped {manifest["num_skipped"]}'
        f'{": " + kinds if kinds else ""}')
  else:
    log(f'extract_flow: all {shard[1]} shards done: {manifest["num_with_flow"]} of '
        f'{manifest["num_found"]} videos have flow in {out}; skipped {manifest["num_skipped"]}')
  if not manifest['num_with_flow']:
    first = manifest['skipped'][0] if manifest['skipped'] else None
    raise NoFlow(f'none of the {manifest["num_found"]} videos has flow in {out}'
                 + (f' (first: {first["input"]}: {first["reason"]})' if first else '')
                 + f': see {os.path.join(out, MANIFEST)}')
  if not options.data_dir or os.path.realpath(out) != os.path.realpath(
      os.path.join(options.data_dir, ucf101.FLOW_DIR_NAME)):
    dataset = f' --dataset={options.dataset}' if options.dataset != 'ucf101' else ''
    data_dir = options.data_dir or '<the root holding the split files>'
    log(f'extract_flow: to make flow records of it: bazel run //data_tools:prepare -- '
        f'--source=flow{dataset} --data_dir={data_dir} --flow_dir={out} '
        '--out=<a new directory>')
  return manifest


def _merge(out: str, tasks: list[VideoTask], skipped: list[InputProblem], settings: dict[str, Any],
           videos_dir: str, classes: video_lists.ClassIndex | None, options: ExtractFlowOptions,
           log: Callable[[str], None]) -> dict[str, Any]:
  """Writes the manifest, flow.txt and flow_shards.SOURCES whole from what `out` holds (every shard's
  records folded in), removes the shard records; returns the manifest."""
  recorded = flow_shards.read_sources(out)
  identities = {t.name: source_identity(t, settings) for t in tasks}
  current = [t for t in tasks if flow.has_flow(out, t.name) and
             recorded.get(t.name) == identities[t.name]]
  _write_sources(out, {t.name: recorded[t.name] for t in current}, flow_shards.read_written(out))
  flow_shards.remove_records(out)
  manifest = _manifest(out, tasks, current, skipped, settings, videos_dir)
  json_files.write_json(os.path.join(out, MANIFEST), manifest)
  if classes is not None:
    _write_flow_list(out, current)
  else:
    if os.path.exists(os.path.join(out, ucf101.FLOW_LIST_NAME)):
      os.remove(os.path.join(out, ucf101.FLOW_LIST_NAME))  # an earlier run's: not current
    log(f'extract_flow: no {ucf101.CLASS_INDEX_FILE} under {options.data_dir or "(no --data_dir)"}'
        f': {ucf101.FLOW_LIST_NAME} (needs the labels) not written')
  return manifest


def _write_sources(out: str, recorded: dict[str, dict[str, Any]],
                   written: dict[str, list[int]]) -> None:
  """Rewrites the source records with one line per video that has current flow (with what
  was `written` of it, when recorded)."""
  json_files.write_text(os.path.join(out, flow_shards.SOURCES), ''.join(
      json.dumps({'video': name, 'source': identity,
                  **({'written': written[name]} if name in written else {})},
                 sort_keys=True) + '\n'
      for name, identity in sorted(recorded.items())))


def _manifest(out: str, tasks: list[VideoTask], current: list[VideoTask],
              skipped: list[InputProblem], settings: dict[str, Any], videos_dir: str
              ) -> dict[str, Any]:
  with_flow = [t.name for t in current]
  return {
      'settings': settings, 'videos_dir': videos_dir,
      'num_found': len(tasks) + sum(p.kind in ('malformed file name', 'unknown class',
                                               'duplicate name')
                                    for p in skipped),
      'num_with_flow': len(with_flow), 'num_skipped': len(skipped),
      'skipped_by_kind': dict(sorted(collections.Counter(p.kind for p in skipped).items())),
      'skipped': sorted((p.to_json() for p in skipped),
                        key=lambda p: (p['input'], p['line'])),
  }


def _write_flow_list(out: str, tasks: list[VideoTask]) -> None:
  """`<out>/flow.txt`: `<video> {:s}/<video> <frames> <label0>` per video of `tasks`."""
  rows = []
  for task in tasks:
    count, reason = frame_folders.count_flow_frames(out, task.name)
    if not reason:
      rows.append(f'{task.name} {{:s}}/{task.name} {count} {task.label}')
  json_files.write_text(os.path.join(out, ucf101.FLOW_LIST_NAME),
                        ''.join(row + '\n' for row in rows))

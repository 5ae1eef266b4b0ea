"""Classify videos with a trained model: `classify(videos, model)`, the library behind
//serving:classify.

`model` is an exported SavedModel directory or a model_dir (its newest `export/best/`), or a
loaded `Classifier` (one stream, or an RGB and a Flow model fused as two-stream evaluation
fuses them: `(1 - flow_weight) * rgb + flow_weight * flow`). What the export says
(`serving/export_info.py`: class names, stream, clip length, crop, the frames' short side, the
flow extraction settings) decides the sampling, so a video is read as evaluation reads it:
frames resized to the training data's short side, `clips` clips with starts spread evenly
(`input_fn.direct.eval_clip_indices`) x `crops` crops (`input_fn.pipeline.eval_views`: 1
centre, 3 along the long side), scaled to [-1, 1]; the video's probabilities are the mean
softmax of its views. An RGB model trained on records gets exactly the views evaluation
cuts from a record: the video is stored as //data_tools:prepare stores it (frames JPEG-encoded
at the records' quality, `records_jpeg_quality` in the export) and cut by the pipeline's own
ops (`pipeline.eval_video`). The flow stream computes TV-L1 flow (`input_fn/flow.py`) of the
frames it needs, with the settings its training flow was extracted with.

A video is a video file, a folder of frame images (`frame%06d.jpg` or `img_%05d.jpg`), a
list file (`.txt`/`.list`: one video per line, its first field, relative to the list's
folder, to the video folder beside the list or, as UCF101's split lists, to the video folder
beside the list's folder; a line found nowhere fails naming every place looked in) or a
directory searched for both. A file or folder given more than once (by any spelling of its
path) is one video. A video that cannot be read, or has fewer than 2 frames, is a
`VideoResult` with `error` set; the others go on.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import time
from typing import Callable, Iterable, Sequence

import cv2
import numpy as np
import tensorflow as tf
from absl import logging

from command_line.progress import progress_line
from input_fn import (datasets, direct, flow, frame_folders, manifest, pipeline, records, ucf101,
                      video_io, video_lists)
from serving import export_info, saved_model, two_stream
from serving.classify_options import ClassifyError

VIDEO_EXTENSIONS = ('.avi', '.mp4', '.mkv', '.mov', '.webm', '.mpg', '.mpeg', '.gif', '.m4v')
LIST_EXTENSIONS = ('.txt', '.list', '.lst')
FRAME_EXTENSIONS = ('.jpg', '.jpeg')
MIN_FRAMES = 2


@dataclasses.dataclass(frozen=True)
class Stream:
  """One loaded stream and what its export says about its input."""
  model: saved_model.StreamModel
  class_names: tuple[str, ...]
  frame_short_side: int                       # 0: frames as decoded
  records_jpeg_quality: int | None            # rgb trained on records: their JPEG quality
  flow_extraction: dict | None                # flow: {short_side, bound, tvl1 {...}}
  described: bool                             # the export carries video_model.json
  dataset: str | None = None                  # the training data's (None: not recorded)
  short_side_range: tuple[int, int] | None = None  # training frames' short sides, pixels

  @property
  def stream(self) -> str:
    return self.model.stream

  def short_side_for(self, height: int, width: int) -> int:
    """The short side to resize frames of `height` x `width` to (0: keep them): the
    export's frame_short_side; for a model trained on frames as decoded, the nearest end of
    its training frames' short sides when this video's lies outside them, so it is read at
    a scale the model learnt (0 when inside, or when they are not recorded)."""
    if self.frame_short_side or not self.short_side_range:
      return self.frame_short_side
    low, high = self.short_side_range
    side = min(height, width)
    return low if side < low else high if side > high else 0


def load_stream(model: str | saved_model.StreamModel, expect: str | None = None,
                option: str = 'model') -> Stream:
  """A model_dir or export (or that model loaded) of `expect` stream ('rgb', 'flow' or
  None: either). Its class names are those its graph returns (`class_names` output) when it
  has them, else those of its class_names.txt. Raises `ClassifyError` naming `option`, the
  option that gave `model`, also when its class_names.txt is not its graph's class list."""
  try:
    loaded = model if isinstance(model, saved_model.StreamModel) else \
        saved_model.load_model(model, expect)
  except saved_model.ModelError as e:
    raise ClassifyError(str(e), e.reason, e.path, option) from e
  try:
    info, names = export_info.read(loaded.export)
    graph_names = saved_model.signature_class_names(loaded)
    export_info.check_graph_names(loaded.export, names, graph_names)
    names = graph_names or names
  except export_info.ExportInfoError as e:
    raise ClassifyError(str(e), e.reason, e.path, option) from e
  num_classes = int(loaded.serving.structured_outputs['probabilities'].shape[-1])
  if info is None and 'class_names' in loaded.serving.structured_outputs:
    # Exports that answer class names were always made with assets.extra beside them.
    raise ClassifyError(f'{loaded.export} has no {export_info.ASSETS_DIR}/ (its class names, '
                        'frame size and training videos), which //towers:train wrote with '
                        f'it: copy {export_info.ASSETS_DIR}/ with saved_model.pb and variables/, '
                        'or give the export where training wrote it', 'assets_missing',
                        loaded.export, option)
  if info is None:
    names = [f'class_{i}' for i in range(num_classes)]
    settings = None
  else:
    settings = info.get('flow_extraction')
    said = {'stream': info['stream'], 'num_classes': info['num_classes'],
            'clip_frames': info['clip_frames'], 'crop_size': info['crop_size']}
    has = {'stream': loaded.stream, 'num_classes': num_classes, 'clip_frames': loaded.frames,
           'crop_size': loaded.size}
    fields = tuple(name for name in said if said[name] != has[name])
    differ = [f'{name} {said[name]} (the model: {has[name]})' for name in fields]
    if differ:
      path = os.path.join(loaded.export, export_info.ASSETS_DIR, export_info.INFO_FILE)
      raise ClassifyError(f'{path} does not describe the model beside it: it says '
                          f'{", ".join(differ)}; it belongs to another export',
                          'not_described', path, option, fields)
  if loaded.stream == 'flow' and info is None:
    raise ClassifyError(f'{loaded.export} is a flow model whose export does not say how its '
                        'training flow was extracted (assets.extra/video_model.json, written '
                        'by //towers:train since class names are exported): train it again '
                        'or classify with the RGB stream only', 'no_flow_extraction',
                        loaded.export, option)
  if loaded.stream == 'flow' and not settings:
    where = _training_flow(info)
    raise ClassifyError(f'{loaded.export} is a flow model trained on flow not written by '
                        f'//data_tools:extract_flow{where}, so the TV-L1 settings of its '
                        'training flow are unknown and classify cannot compute flow like it: '
                        + ('classify with the RGB stream only (extract_flow reads UCF101 and '
                           'HMDB51 trees, not a list dataset)' if info.get('dataset') == 'list'
                           else 'extract the training flow with //data_tools:extract_flow, '
                           'prepare it and train again, or classify with the RGB stream only'),
                        'flow_not_extracted', loaded.export, option)
  sides = (info or {}).get(export_info.SHORT_SIDE_RANGE)
  return Stream(loaded, tuple(names), int(info['frame_short_side']) if info else 0,
                (info or {}).get('records_jpeg_quality'), settings, info is not None,
                (info or {}).get('dataset'), tuple(sides) if sides else None)


def _training_flow(info: dict) -> str:
  """' (<the flow folder>)' a flow export's training records were prepared from, when its
  data_dir can still be read; else ''."""
  data_dir = (info.get('data') or {}).get('dir') or ''
  prepared = manifest.read_identity(data_dir) if data_dir else None
  flow_dir = ((prepared or {}).get('source_paths') or {}).get('flow_dir')
  return f' ({flow_dir})' if flow_dir else ''


@dataclasses.dataclass(frozen=True)
class Classifier:
  """One stream, or RGB + Flow fused with `flow_weight`."""
  streams: tuple[Stream, ...]
  flow_weight: float = 0.5

  @property
  def class_names(self) -> tuple[str, ...]:
    return self.streams[0].class_names


def load(model: str, flow_model: str = '', flow_weight: float = 0.5,
         dataset: str = '') -> Classifier:
  """`model` alone (either stream), or with `flow_model` the RGB `model` and the Flow
  `flow_model` fused: the two of one class list, name for name in label order. `dataset`
  (when given) must be the one each model trained on (its export's video_model.json).
  Raises `ClassifyError`."""
  if flow_model and not 0.0 <= flow_weight <= 1.0:
    raise ClassifyError(f'flow_weight must be in [0, 1], got {flow_weight}', 'flow_weight',
                        option='flow_weight')
  if flow_model:
    try:
      pair = saved_model.load_pair(model, flow_model)
    except saved_model.ModelError as e:
      raise ClassifyError(str(e), e.reason, e.path,
                          'flow_model' if e.stream == 'flow' else 'model') from e
    streams = (load_stream(pair['rgb']), load_stream(pair['flow'], option='flow_model'))
  else:
    streams = (load_stream(model),)
  differ = two_stream.class_list_difference([(s.model.export, s.class_names) for s in streams])
  if differ:
    raise ClassifyError(f'{differ}: they were not trained on the same class list', 'classes',
                        streams[1].model.export, 'flow_model')
  for stream, option in zip(streams, ('model', 'flow_model')):
    if dataset and stream.dataset != dataset:
      held, fix = ((f'was trained on {stream.dataset}', f'set --dataset={stream.dataset}')
                   if stream.dataset else
                   ('does not record its dataset (exported before it was)', 'leave it out'))
      raise ClassifyError(f'--dataset={dataset} but the {stream.stream} model '
                          f'{stream.model.export} {held}: {fix}, or pass a model trained on '
                          f'{dataset} as --{option}', 'dataset', stream.model.export, 'dataset')
  return Classifier(streams, flow_weight)


# --- Finding the videos ----------------------------------------------------------------------


def _is_frame_folder(path: str) -> bool:
  return os.path.isdir(path) and any(f.lower().endswith(FRAME_EXTENSIONS)
                                     for f in os.listdir(path))


def _is_flow_folder(path: str) -> bool:
  """A folder of optical flow frames: a video's folder in one channel of a flow root
  (`<root>/u/<video>`, `frame_folders.flow_channel_root`), or flow frames only (MMAction2's
  `flow_x_00001.jpg`, `flow_y_...`)."""
  if frame_folders.flow_channel_root(os.path.dirname(os.path.normpath(path))):
    return True
  names = [f.lower() for f in os.listdir(path) if f.lower().endswith(FRAME_EXTENSIONS)]
  return bool(names) and all(n.startswith(('flow_x_', 'flow_y_')) for n in names)


def _from_directory(directory: str) -> tuple[list[str], int]:
  """(videos and RGB frame folders under `directory`, sorted; how many flow folders were
  passed over: the `u/` and `v/` folders of a flow root (`frame_folders.flow_folders`) and
  folders of flow frames only, which are no RGB video)."""
  if _is_frame_folder(directory):
    return ([], 1) if _is_flow_folder(directory) else ([directory], 0)
  found, flow_folders = [], 0
  for root, folders, files in os.walk(directory):
    folders.sort()
    if {'u', 'v'} <= set(folders):  # a TV-L1 flow root: <root>/u/<video>, <root>/v/<video>
      for channel in ('u', 'v'):
        flow_folders += len(os.listdir(os.path.join(root, channel)))
        folders.remove(channel)
    for folder in list(folders):
      path = os.path.join(root, folder)
      if _is_frame_folder(path):
        if _is_flow_folder(path):
          flow_folders += 1
        else:
          found.append(path)
        folders.remove(folder)
    found += [os.path.join(root, f) for f in sorted(files)
              if f.lower().endswith(VIDEO_EXTENSIONS)]
  return sorted(found), flow_folders


def _from_list(path: str) -> tuple[list[str], dict[str, str]]:
  """The first field of every line but comments, and for each that names no existing file
  or folder, why (the list's line and every place looked in). A relative one is found beside
  the list, else under the video folder beside the list (`UCF-101/`), else (UCF101's split
  lists in ucfTrainTestlist/) under the video folder beside the list's folder, or that
  folder itself. A line starting with '#' is a comment unless it names a video that exists
  (HMDB51's names often start with '#')."""
  base = os.path.dirname(os.path.abspath(path))
  roots = [base] + [os.path.join(base, name) for name in ucf101.VIDEO_DIR_NAMES if name] + [
      os.path.join(os.path.dirname(base), name) for name in ucf101.VIDEO_DIR_NAMES]
  found, unfound = [], {}
  for number, line in video_lists.read_lines(path):
    first = line.split()[0]
    candidates = [first] if os.path.isabs(first) else [os.path.join(r, first) for r in roots]
    existing = next((c for c in candidates if os.path.exists(c)), None)
    if existing is None and first.startswith('#'):
      continue  # a comment line
    found.append(existing or candidates[0])
    if existing is None:
      unfound[candidates[0]] = (f'no such file or folder: {path}:{number} names {first}, '
                                f'looked for as {", ".join(candidates)}')
  return found, unfound


def find_videos(inputs: Iterable[str]) -> list[str]:
  """The videos of `inputs` in order (`find_inputs`)."""
  return find_inputs(inputs)[0]


def find_inputs(inputs: Iterable[str]) -> tuple[list[str], dict[str, str]]:
  """The videos of `inputs` in order: video files and frame folders as given, list files
  expanded, directories searched (sorted; the optical flow folders in them are passed over,
  with one warning saying how many); one file or folder given more than once (by other
  spellings of its path too) is kept once, with a warning. A path that does not exist is
  kept: classifying it reports it; so is a directory holding no video nor flow folder when
  another input holds videos ([] when none does). Second: for each video a list names but
  that exists nowhere, why (`_from_list`)."""
  found, flow_folders, empty, unfound = [], 0, 0, {}
  for path in inputs:
    if os.path.isdir(path):
      videos, passed_over = _from_directory(path)
      if not videos and not passed_over:
        videos, empty = [path], empty + 1  # classifying it says it holds no video
      found += videos
      flow_folders += passed_over
    elif path.lower().endswith(LIST_EXTENSIONS) and os.path.isfile(path):
      listed, missing = _from_list(path)
      found += listed
      unfound.update(missing)
    else:
      found.append(path)
  if empty and empty == len(found):
    return [], {}  # only directories without videos: nothing to classify
  if flow_folders:
    logging.warning('passed over %d folders of optical flow frames (u/ and v/ of a flow root, '
                    'flow_x_/flow_y_ files): classify reads RGB videos and frame folders and '
                    'computes the flow a flow model needs', flow_folders)
  return _once_each(found), unfound


def _file_key(path: str) -> str:
  """What `path` is, whatever its spelling: `video_lists.file_identity` (symlinks and hard
  links are one file), else (no such file) the path resolved."""
  return video_lists.file_identity(path) or os.path.realpath(path)


def _once_each(found: list[str]) -> list[str]:
  """`found` with each file or folder once (by `_file_key`; the first spelling of its path),
  warning when one was given more than once, and when videos of one name remain at other
  paths."""
  first: dict[str, str] = {}
  given = collections.Counter(_file_key(p) for p in found)
  for path in found:
    first.setdefault(_file_key(path), path)
  repeated = [key for key, count in given.items() if count > 1]
  if repeated:
    logging.warning('%s given more than once (e.g. %s, %d times, as other spellings of its '
                    'path): each is classified once',
                    '1 video is' if len(repeated) == 1 else f'{len(repeated)} videos are',
                    first[repeated[0]], given[repeated[0]])
  kept = list(first.values())
  stems = collections.defaultdict(list)
  for path in kept:
    stems[os.path.splitext(os.path.basename(os.path.normpath(path)))[0].lower()].append(path)
  twice = sorted(paths for paths in stems.values() if len(paths) > 1)
  if twice:
    logging.warning('%s found more than once under other paths (e.g. %s and %s); each is '
                    'classified once per path',
                    '1 video is' if len(twice) == 1 else f'{len(twice)} videos are',
                    twice[0][0], twice[0][1])
  return kept


# --- Reading and sampling one video ----------------------------------------------------------


def read_frames(path: str) -> np.ndarray:
  """uint8 RGB [T, H, W, 3] of a video file or a frame folder, as decoded. Raises
  `video_io.VideoError` (the reason) for anything unusable or shorter than MIN_FRAMES."""
  if os.path.isdir(path):
    pattern = frame_folders.frame_pattern(path)
    count, reason = frame_folders.count_frames(path, pattern=pattern)
    if reason:
      raise video_io.VideoError(reason)
    frames = frame_folders.read_frames(path, range(count), pattern=pattern)
  elif not os.path.exists(path):
    raise video_io.VideoError('no such file or folder')
  else:
    frames = video_io.decode_video(path)
  if len(frames) < MIN_FRAMES:
    raise video_io.VideoError(f'too short: {len(frames)} frame(s), a video needs '
                              f'{MIN_FRAMES}')
  return frames


def frame_files(path: str) -> list[bytes] | None:
  """The JPEG files of a frame folder as stored (`read_frames` decodes the same ones); None
  for a video file."""
  if not os.path.isdir(path):
    return None
  pattern = frame_folders.frame_pattern(path)
  count, _ = frame_folders.count_frames(path, pattern=pattern)
  found, listings = [], {}
  for i in range(count):
    with open(frame_folders.frame_file(path, i, pattern, listings), 'rb') as f:
      found.append(f.read())
  return found


def as_record(frames: np.ndarray, jpegs: Sequence[bytes] | None, quality: int,
              short_side: int, needed: Iterable[int] | None = None) -> tuple[bytes, int, int]:
  """(serialized record, height, width) of the video as //data_tools:prepare writes it:
  each frame resized to `short_side` and JPEG-encoded at `quality`; a frame folder's file
  kept as it is when no resize changes it (`jpegs`: its files, in frame order). Only the
  `needed` frames (None: all) are stored; the others are empty strings that evaluation's
  clips of the same frame numbers never decode."""
  needed = set(range(len(frames)) if needed is None else needed)
  stored = [b''] * len(frames)
  for i in sorted(needed):
    frame = frames[i]
    resized = video_io.resize_short_side(frame, short_side)
    keep = jpegs is not None and resized is frame  # not resized: the file as it is
    stored[i] = jpegs[i] if keep else video_io.encode_jpeg(resized, quality)
  height, width = resized.shape[:2]
  return records.make_example('', 0, stored, 0, '', height, width), height, width


def _resized(frames: np.ndarray, short_side: int) -> np.ndarray:
  return np.stack([video_io.resize_short_side(f, short_side) for f in frames])


def rgb_clips(frames: np.ndarray, stream: Stream, clips: int) -> np.ndarray:
  """uint8 [clips, T, H, W, 3]: evaluation's clips of the frames resized to the stream's
  short side (`Stream.short_side_for`)."""
  frames = _resized(frames, stream.short_side_for(*frames.shape[1:3]))
  return frames[direct.eval_clip_indices(len(frames), stream.model.frames, clips)]


def flow_clips(frames: np.ndarray, stream: Stream, clips: int) -> np.ndarray:
  """uint8 flow codes [clips, T, H, W, 2]: TV-L1 flow (the export's extraction settings) of
  the frame pairs evaluation's clips use, of the N - 1 flow frames of N frames, resized
  to the short side of the training records (`Stream.short_side_for`; displacements scaled
  with them)."""
  settings = stream.flow_extraction
  gray = flow.grayscale(_resized(frames, int(settings.get('short_side', 0))))
  indices = direct.eval_clip_indices(len(gray) - 1, stream.model.frames, clips)
  solver = flow.tvl1(flow.Tvl1Settings(**settings['tvl1']))
  codes = {}
  for i in np.unique(indices):
    pair = flow.to_uint8(solver.calc(gray[i], gray[i + 1], None))
    side = stream.short_side_for(*pair.shape[:2])
    codes[i] = np.stack([flow.resize_codes(pair[..., c], side) for c in range(2)], axis=-1)
  return np.stack([np.stack([codes[i] for i in row]) for row in indices])


def views(frames: np.ndarray, stream: Stream, clips: int, crops: int,
          jpegs: Sequence[bytes] | None = None) -> np.ndarray:
  """uint8 [clips * crops, T, S, S, C]: the stream's input views of a video's RGB frames,
  clip k's crop m at row k * crops + m (evaluation's layout, `pipeline.eval_video`). An RGB
  model trained on records gets the views evaluation cuts from the record of the video
  (`as_record`; `jpegs`: a frame folder's files), through the same TensorFlow ops."""
  if stream.stream == 'rgb' and stream.records_jpeg_quality:
    needed = direct.eval_clip_indices(len(frames), stream.model.frames, clips).reshape(-1)
    record, height, width = as_record(frames, jpegs, stream.records_jpeg_quality,
                                      stream.short_side_for(*frames.shape[1:3]), needed)
    _check_crops(height, width, stream, crops)
    return pipeline.eval_video(tf.constant(record), stream.model.frames, stream.model.size,
                               clips, 1, 'rgb', crops)[0].numpy()
  sampled = (flow_clips if stream.stream == 'flow' else rgb_clips)(frames, stream, clips)
  _check_crops(sampled.shape[2], sampled.shape[3], stream, crops)
  return pipeline.eval_views(tf.constant(sampled), stream.model.size, crops).numpy()


def _check_crops(height: int, width: int, stream: Stream, crops: int) -> None:
  problem = pipeline.eval_crops_problem(height, width, stream.model.size, crops)
  if problem:
    raise video_io.VideoError(f'{crops} crops: {problem}; classify it with 1 crop')


def stream_probabilities(frames: np.ndarray, stream: Stream, clips: int, crops: int,
                         batch_size: int, jpegs: Sequence[bytes] | None = None) -> np.ndarray:
  """float32 [num_classes]: the mean softmax of the stream's clips x crops views;
  ValueError when it is not finite (a model whose weights diverged)."""
  scaled = pipeline.to_unit_range(views(frames, stream, clips, crops, jpegs))
  outputs = [stream.model.serving(clips=scaled[i:i + batch_size])['probabilities'].numpy()
             for i in range(0, int(scaled.shape[0]), batch_size)]
  probabilities = np.concatenate(outputs).mean(axis=0)
  if not np.all(np.isfinite(probabilities)):
    raise ValueError(two_stream.nonfinite_message(stream.model.stream, stream.model.export))
  return probabilities


# --- Classifying -----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class VideoResult:
  """One video: its `top` (class name, probability) pairs, highest first, or its `error`."""
  video: str
  top: tuple[tuple[str, float], ...] = ()
  error: str = ''
  probabilities: np.ndarray | None = None   # float32 [num_classes]

  @property
  def ok(self) -> bool:
    return not self.error


def classify_one(path: str, classifier: Classifier, clips: int, crops: int, top_k: int,
                 batch_size: int) -> VideoResult:
  """The result of one video (errors in reading it become `VideoResult.error`)."""
  try:
    frames = read_frames(path)
    jpegs = frame_files(path) if any(s.records_jpeg_quality for s in classifier.streams) \
        else None
    per_stream = [stream_probabilities(frames, s, clips, crops, batch_size, jpegs)
                  for s in classifier.streams]
  except (video_io.VideoError, IOError, ValueError, cv2.error) as e:
    return VideoResult(path, error=str(e) or type(e).__name__)
  except tf.errors.InvalidArgumentError as e:  # a frame file TensorFlow cannot decode
    first = e.message.strip().splitlines()[0] if e.message.strip() else 'InvalidArgumentError'
    return VideoResult(path, error=f'cannot decode a frame of {path}: {first}')
  if len(per_stream) == 2:
    probabilities = two_stream.fuse(per_stream[0], per_stream[1], classifier.flow_weight)
  else:
    probabilities = per_stream[0]
  order = np.argsort(-probabilities, kind='stable')[:top_k]
  return VideoResult(path, tuple((classifier.class_names[i], float(probabilities[i]))
                                 for i in order), probabilities=probabilities.astype(np.float32))


ProgressFn = Callable[[int, int, int, float], None]  # (done, total, failed, seconds)


def classify(videos: str | Sequence[str], model: str | Classifier, clips: int | None = None,
             crops: int = 1, top_k: int = 5, flow_model: str = '', flow_weight: float = 0.5,
             batch_size: int = 16, progress: ProgressFn | None = None) -> list[VideoResult]:
  """One `VideoResult` per video of `videos` (paths, expanded by `find_videos`), in order.

  `model`: a model_dir or export (with `flow_model`, the RGB one of a two-stream pair) or a
  loaded `Classifier`. `clips`: clips per video (None: the export's eval_clips, else 5);
  `crops`: 1 or 3. `progress(done, total, failed, seconds)` is called after each video.
  Raises `ClassifyError` for a model or option that cannot work; a bad video is a result
  with `error`, never an exception."""
  classifier = model if isinstance(model, Classifier) else load(model, flow_model, flow_weight)
  if crops not in datasets.EVAL_CROPS:
    raise ClassifyError(f'crops={crops}: must be one of '
                        f'{", ".join(map(str, datasets.EVAL_CROPS))}',
                        'crops', option='crops')
  for stream in classifier.streams:
    if crops > 1 and 0 < stream.frame_short_side < stream.model.size:
      raise ClassifyError(f'crops={crops}: {stream.model.export} reads frames resized to a '
                          f'short side of {stream.frame_short_side}, smaller than its crop '
                          f'{stream.model.size}: the {crops} crops would be windows stretched '
                          'to a square; use 1 crop', 'crops_stretched', stream.model.export,
                          'crops')
  if clips is None:
    clips = default_clips(classifier)
  if clips < 1 or top_k < 1 or batch_size < 1:
    raise ClassifyError(f'clips, top_k and batch_size must be positive, got {clips}, {top_k} '
                        f'and {batch_size}', 'not_positive')
  paths, unfound = find_inputs([videos] if isinstance(videos, str) else videos)
  results, failed, started = [], 0, time.monotonic()
  for path in paths:
    results.append(VideoResult(path, error=unfound[path]) if path in unfound else
                   classify_one(path, classifier, clips, crops, top_k, batch_size))
    failed += not results[-1].ok
    if progress:
      progress(len(results), len(paths), failed, time.monotonic() - started)
  return results


def default_clips(classifier: Classifier) -> int:
  """The eval_clips the first stream was evaluated with in training (5 when not exported)."""
  info, _ = export_info.read(classifier.streams[0].model.export)
  return int(info.get('eval_clips', 5)) if info else 5


def progress_text(done: int, total: int, failed: int, seconds: float) -> str:
  """`classify: 12/40 videos (30%)  1 failed  2.1 videos/s  ETA 13s`."""
  return progress_line('classify:', done, total, done / seconds if seconds > 0 else 0.0,
                       [f'{failed} failed', f'{done / max(seconds, 1e-9):.1f} videos/s'],
                       unit='videos')


def result_line(result: VideoResult) -> str:
  """`path: ClassA 0.912  ClassB 0.050` or `path: FAILED: reason`."""
  if not result.ok:
    return f'{result.video}: FAILED: {result.error}'
  return f'{result.video}: ' + '  '.join(f'{name} {p:.3f}' for name, p in result.top)


def to_json(results: Sequence[VideoResult]) -> list[dict]:
  """[{video, top: [{class, probability}], error}] in order."""
  return [{'video': r.video, 'top': [{'class': n, 'probability': p} for n, p in r.top],
           'error': r.error or None} for r in results]


def csv_rows(results: Sequence[VideoResult], top_k: int) -> list[list[str]]:
  """Header `video, status, class_1, probability_1, ..., error` and one row per video."""
  header = ['video', 'status']
  for k in range(1, top_k + 1):
    header += [f'class_{k}', f'probability_{k}']
  rows = [header + ['error']]
  for r in results:
    cells = [r.video, 'ok' if r.ok else 'failed']
    for k in range(top_k):
      cells += [r.top[k][0], f'{r.top[k][1]:.6f}'] if k < len(r.top) else ['', '']
    rows.append(cells + [r.error])
  return rows

"""The table of contents of a prepared directory: exactly one dataset per directory.

`//data_tools:prepare --out=DIR` writes, per subset (train, test), `DIR/<subset>.manifest.json`:

  format_version  2 (version 1 manifests, without identity, still read by the pipeline)
  dataset         ucf101, hmdb51 or list (`input_fn/datasets.py`); absent: ucf101
  kind            what the records hold: 'rgb' (JPEG frames) or 'flow' (u and v JPEGs)
  source          what they were made from: 'videos', 'frames' or 'flow'
  source_paths    {'data_dir', 'split_dir', and 'videos_dir' | 'frames_dir', 'frame_list' |
                   'flow_dir', 'flow_list'}: the resolved paths they were read from
  class_names     list datasets: 'sha256 <16 hex>' of the --class_names file; else ''
  classes         the class names in label order (every dataset): one list per directory
  split, short_side, jpeg_quality, videos_per_shard   the settings
  layout          frames/flow: the file layout read (`data_tools/layouts.py`); '' for videos
  subset, num_listed (lines of the subset's split list: every video it names, whatever
  became of it), num_unused (videos the split files put in neither subset: HMDB51's
  id 0), num_records, num_skipped,
  num_classes, classes, counts_per_class, skipped_by_kind, skipped
  shards          [{'file', 'records', 'bytes', 'counts_per_class',
                    'videos': [{'name', 'label', 'size', 'mtime_ns', 'frame_size',
                                'video_size'}, ...]}]
                  every shard file, its size as written (absent in manifests written
                  before) and the videos in it; size/mtime_ns identify the source
                  file (or frame folder) the record was made from; frame_size is the
                  [height, width] of its stored frames (absent in shards written before);
                  video_size (flow records) the byte size of the video extract_flow
                  computed the flow from, when it recorded it (`flow_shards.read_sources`).

The dataset's identity (kind, source and its paths, classes, split and settings; `identity()`) is also written to
`DIR/.shards/dataset.json` before the first shard, so an interrupted preparation is
recognised too (`input_fn/dir_identity.py`: the directory's identity file, compared
field by field in IDENTITY_FIELDS order; `identity_differences`). An identity written before
`classes` was part of it takes the class list of the directory's manifests.

Readers use `shard_paths()`: exactly the files the manifest lists, all checked to exist.
`training_data_problems()` checks a directory before training: labels below num_classes,
train and test of one class list, disjoint by video.
"""

from __future__ import annotations

import glob
import os
import shutil
from typing import Any, Sequence

from command_line.options import Problem
from input_fn import dir_identity, json_files, ucf101, video_lists

# File names in a prepared directory (`input_fn/records.py` writes the shards).
SHARD_GLOB = '{subset}-*-of-*.tfrecord'
MANIFEST = '{subset}.manifest.json'

FORMAT_VERSION = 2
STATE_DIR = '.shards'
IDENTITY_FILE = 'dataset.json'
SUBSETS = ('train', 'test')
# Identity fields, in the order differences are reported.
IDENTITY_FIELDS = ('dataset', 'kind', 'source', 'source_paths', 'class_names', 'classes',
                   'split', 'short_side', 'jpeg_quality', 'videos_per_shard')
# What an identity written before a field existed holds in its stead (classes: None, not
# known, when no manifest records them either).
IDENTITY_DEFAULTS = {'dataset': 'ucf101', 'class_names': '', 'classes': None}
DEFAULT_DATASET = IDENTITY_DEFAULTS['dataset']  # of directories prepared before datasets were named


class SharedVideos(Problem):
  """Train and test records share videos (option data_dir): `videos`, their names sorted;
  `lists`, the train and the test list files that named them (`list_file`)."""
  videos: list[str]
  lists: tuple[str, str]

  def __new__(cls, text: str, videos: list[str], lists: tuple[str, str]) -> 'SharedVideos':
    made = super().__new__(cls, 'data_dir', text)
    made.videos = list(videos)
    made.lists = lists
    return made


class ManifestError(ValueError):
  """A prepared directory is missing, incomplete or holds other data. The message names the
  file and the fix; `path` is the manifest concerned ('' when not one file) and `damaged`
  is True when it exists but cannot be read as a manifest."""

  def __init__(self, message: str, path: str = '', damaged: bool = False) -> None:
    super().__init__(message)
    self.path = path
    self.damaged = damaged


def identity(kind: str, source: str, source_paths: dict[str, str], split: int,
             short_side: int, jpeg_quality: int, videos_per_shard: int,
             dataset: str = DEFAULT_DATASET, class_names: str = '',
             classes: Sequence[str] | None = None) -> dict[str, Any]:
  """The fields that make two preparations the same dataset (the subsets may differ).
  `class_names`: what the --class_names file of a list dataset holds ('sha256 <16 hex>' of
  its bytes: the same path edited in place is another dataset), '' for other datasets.
  `classes`: the class names in label order (None: not read yet, compared with nothing)."""
  return {'dataset': dataset, 'kind': kind, 'source': source, 'source_paths': dict(source_paths),
          'class_names': class_names, 'classes': None if classes is None else list(classes),
          'split': split, 'short_side': short_side, 'jpeg_quality': jpeg_quality,
          'videos_per_shard': videos_per_shard}


def identity_differences(here: dict[str, Any], asked: dict[str, Any]) -> list[Problem]:
  """`dir_identity.differences` in IDENTITY_FIELDS order, the class lists as their first
  label that differs (`class_difference`; not compared when either is None). Each is a
  `Problem` naming the field (a `source_paths` entry by its key)."""
  found = []
  for name in IDENTITY_FIELDS:
    if name != 'classes':
      found += dir_identity.differences(here, asked, (name,))
    elif here.get(name) is not None and asked.get(name) is not None:
      differs = class_difference(here[name], asked[name], 'here', 'asked')
      found += [Problem(name, f'classes: {differs}')] if differs else []
  return found


def class_difference(first: Sequence[str], second: Sequence[str], first_name: str,
                     second_name: str) -> str:
  """'' when the two class lists are equal, else their first label that differs:
  'label 0 is MoveRightSpeed1 <first_name>, MoveLeftSpeed1 <second_name> (of 3 and 3 classes)'
  ('(none)' past the end of the shorter list)."""
  first, second = list(first), list(second)
  if first == second:
    return ''
  label = next(i for i in range(max(len(first), len(second)))
               if first[i:i + 1] != second[i:i + 1])
  one, other = (names[label] if label < len(names) else '(none)' for names in (first, second))
  return (f'label {label} is {one} {first_name}, {other} {second_name} '
          f'(of {len(first)} and {len(second)} classes)')


def manifest_path(directory: str, subset: str) -> str:
  return os.path.join(directory, MANIFEST.format(subset=subset))


def read_identity(directory: str) -> dict[str, Any] | None:
  """The identity of the dataset prepared (or being prepared) in `directory`, else None.
  Falls back to a version-2 manifest when the state directory was removed or its identity
  file is damaged (not a JSON object with every identity field)."""
  try:
    found = dir_identity.read(identity_path(directory))
  except dir_identity.IdentityDamaged:
    found = None
  manifests = [m for subset in SUBSETS
               for m in [json_files.load_object(manifest_path(directory, subset))]
               if m and m.get('format_version') == FORMAT_VERSION]
  if found is not None:
    found = {**IDENTITY_DEFAULTS, **found}
    if found['classes'] is None and manifests:  # written before classes were part of it
      found['classes'] = manifests[0].get('classes')
  if found is not None and all(name in found for name in IDENTITY_FIELDS):
    return found
  if manifests:
    return {name: manifests[0].get(name, IDENTITY_DEFAULTS.get(name)) for name in IDENTITY_FIELDS}
  return None


def identity_path(directory: str) -> str:
  return os.path.join(directory, STATE_DIR, IDENTITY_FILE)


def write_identity(directory: str, value: dict[str, Any]) -> None:
  dir_identity.claim(identity_path(directory), value)


def dataset_files(directory: str) -> list[str]:
  """Every file and folder a preparation writes in `directory` (shards of any shard count,
  unfinished .tmp shards, manifests, the state directory); nothing else."""
  found = []
  for subset in SUBSETS:
    pattern = os.path.join(directory, SHARD_GLOB.format(subset=subset))
    found += glob.glob(pattern) + glob.glob(pattern + '.tmp')
    found += [p for p in [manifest_path(directory, subset)] if os.path.exists(p)]
  state = os.path.join(directory, STATE_DIR)
  return sorted(found) + ([state] if os.path.isdir(state) else [])


def remove_dataset(directory: str) -> int:
  """Removes `dataset_files(directory)`; returns how many shard files were removed."""
  shards = 0
  for path in dataset_files(directory):
    if os.path.isdir(path):
      shutil.rmtree(path)
    else:
      shards += path.endswith('.tfrecord')
      os.remove(path)
  return shards


def stale_shards(directory: str, subset: str, listed: Sequence[str]) -> list[str]:
  """Shard files of `subset` in `directory` that the manifest does not list (file names)."""
  pattern = os.path.join(directory, SHARD_GLOB.format(subset=subset))
  return sorted(os.path.basename(p) for p in glob.glob(pattern)
                if os.path.basename(p) not in set(listed))


def write(directory: str, manifest: dict[str, Any]) -> None:
  json_files.write_json(manifest_path(directory, manifest['subset']), manifest)


def read(directory: str, subset: str) -> dict[str, Any]:
  """The manifest of `subset`; `ManifestError` naming the file and the fix if it is absent."""
  path = manifest_path(directory, subset)
  manifest = json_files.load_object(path)
  if manifest is None and os.path.exists(path):
    raise ManifestError(f'{path} is damaged (not a JSON object): rerun //data_tools:prepare '
                        f'with --out={directory} to write it again', path, damaged=True)
  if manifest is None:
    raise ManifestError(f'{path} is missing or unreadable: {directory} holds no prepared '
                        f'{subset} data; run //data_tools:prepare with --out={directory}', path)
  if not isinstance(manifest.get('shards'), list):
    raise ManifestError(f'{path} is damaged (no list of shards): rerun //data_tools:prepare '
                        f'with --out={directory} to write it again', path, damaged=True)
  return manifest


def shard_paths(directory: str, subset: str) -> list[tuple[str, int]]:
  """(path, number of records) of every shard the manifest of `subset` lists, in the
  manifest's order. `ManifestError` if any listed file is missing (count and first one)."""
  manifest = read(directory, subset)
  rows = [(os.path.join(directory, s['file']), int(s['records'])) for s in manifest['shards']]
  missing = [p for p, _ in rows if not os.path.exists(p)]
  if missing:
    raise ManifestError(f'{len(missing)} of the {len(rows)} {subset} shards listed in '
                        f'{manifest_path(directory, subset)} are missing (first: {missing[0]}); '
                        f'rerun //data_tools:prepare with --out={directory} to rewrite them',
                        manifest_path(directory, subset))
  if not rows:
    raise ManifestError(f'{manifest_path(directory, subset)} lists no shard: rerun '
                        f'//data_tools:prepare with --out={directory}',
                        manifest_path(directory, subset))
  return rows


def videos_listed(manifest: dict[str, Any]) -> int:
  """The distinct videos the subset's list names: num_listed less the lines that repeat a
  video (skipped as 'duplicate'; `video_lists.Split.num_videos`). 0 when not recorded."""
  return int(manifest.get('num_listed', 0)) - int(
      manifest.get('skipped_by_kind', {}).get('duplicate', 0))


def video_names(manifest: dict[str, Any]) -> list[str]:
  """Names of the videos in the records (version 2 manifests; [] for version 1)."""
  names = []
  for shard in manifest.get('shards', ()):
    names += [v['name'] if isinstance(v, dict) else v for v in shard.get('videos', ())]
  return names


def short_side_range(manifest: dict[str, Any]) -> tuple[int, int] | None:
  """(smallest, largest) short side, in pixels, of the frames the records store (each
  video's min(height, width)); None when a video's size is not recorded or there is none."""
  sides = []
  for shard in manifest.get('shards', ()):
    for video in shard.get('videos', ()):
      size = video.get('frame_size') if isinstance(video, dict) else None
      if not size:
        return None
      sides.append(min(size))
  return (min(sides), max(sides)) if sides else None


def classes_in_records(manifest: dict[str, Any]) -> int:
  """1 + the largest label that has records (0 when there is none): the smallest
  num_classes that fits the data."""
  counts = manifest.get('counts_per_class', {})
  present = [i for i, name in enumerate(manifest.get('classes', ())) if counts.get(name)]
  return max(present) + 1 if present else 0


def training_data_problems(directory: str, num_classes: int,
                           subsets: Sequence[str] = SUBSETS,
                           dataset: str | None = None,
                           split: int | None = None) -> list[Problem]:
  """Why the prepared data in `directory` cannot train a `num_classes`-way model: records
  of another dataset than `dataset` or another split than `split` (when given and the
  manifest records one; names both), train and test prepared with other settings
  (`setting_difference`) or of other class lists (the first label that differs; then
  nothing else is reported),
  another number of classes than num_classes (a manifest that does not record it: a label
  >= num_classes; names --num_classes and the data's class count), or a video in
  both train and test (`shared_videos`: by name or by source file; count, an example and
  the list files that name it: `SharedVideos`). Missing manifests are problems too (of
  data_dir). Each is a `Problem` naming the option to change."""
  found, manifests = [], {}
  for subset in subsets:
    try:
      manifests[subset] = read(directory, subset)
    except ManifestError as e:
      found.append(Problem('data_dir', str(e)))
  if len(manifests) == 2:
    differs = setting_difference(manifests['train'], manifests['test'])
    if differs:
      found.append(Problem('data_dir', f'the train and test records of {directory} were '
                           f'prepared with other settings ({differs}): the model would be '
                           'evaluated on other frames than it learnt; prepare both subsets '
                           'into one --out with the same flags (or --overwrite)'))
      return found
  if len(manifests) == 2 and all(m.get('classes') for m in manifests.values()):
    differs = class_difference(manifests['train']['classes'], manifests['test']['classes'],
                               'in train', 'in test')
    if differs:
      found.append(Problem('data_dir', f'the train and test records of {directory} have other '
                           f'classes ({differs}): their labels do not match; prepare them '
                           'again into a fresh --out (or with --overwrite)'))
      return found
  for subset, manifest in manifests.items():
    held = manifest.get('dataset', DEFAULT_DATASET)
    if dataset is not None and held != dataset:
      found.append(Problem('dataset', f'--dataset={dataset} but '
                           f'{manifest_path(directory, subset)} holds {held} records: set '
                           f'--dataset={held}, or pass the --out of a {dataset} preparation '
                           'as --data_dir'))
      return found
    if split is not None and manifest.get('split', split) != split:  # none: not recorded
      found.append(Problem('split', f'--split={split} but {manifest_path(directory, subset)} '
                           f'holds records of split {manifest.get("split")}: set '
                           f'--split={manifest.get("split")}, or pass the --out of a split '
                           f'{split} preparation as --data_dir'))
      return found
    held_classes = manifest.get('num_classes')
    needed = held_classes if isinstance(held_classes, int) else classes_in_records(manifest)
    if held_classes != num_classes if isinstance(held_classes, int) else needed > num_classes:
      found.append(Problem('num_classes', f'--num_classes={num_classes} but the {subset} '
                           f'records of {directory} are of {needed} classes '
                           f'({os.path.basename(manifest_path(directory, subset))}): set '
                           f'--num_classes={needed}, or leave it out to take the records\''))
  if len(manifests) == 2:
    shared = shared_videos(manifests['train'], manifests['test'])
    lists = (list_file(manifests['train'], 'train'), list_file(manifests['test'], 'test'))
    if shared:
      test_name, train_name = shared[0]
      example = test_name if test_name == train_name else (
          f'{test_name} in {manifest_path(directory, "test")} is {train_name} in '
          f'{manifest_path(directory, "train")}, one file: '
          f'{source_files(manifests["test"])[test_name]}')
      found.append(SharedVideos(
          f'{len(shared)} videos of {directory} are in both the train and the test records '
          f'(e.g. {example}; listed in {lists[0]} and in {lists[1]}): train and test '
          'overlap; remove each from one of the two lists (or prepare both subsets from one '
          'split into one --out) and prepare again with --overwrite',
          [name for name, _ in shared], lists))
      return found
    grouped = shared_groups(manifests['train'], manifests['test'])
    if grouped:
      found.append(SharedVideos(
          f'{len(grouped)} train records of {directory} are UCF101 clips of a group with a '
          f'clip in the test records (e.g. {grouped[0]}; {lists[0]} and {lists[1]}): a '
          "group's clips are cut from one video, so the test would score training footage; "
          'keep each group in one list and prepare again with --overwrite', grouped, lists))
  return found


# What makes a subset's frames what they are: records of one --out share them.
SUBSET_SETTINGS = ('kind', 'short_side', 'jpeg_quality', 'flow_extraction')


def setting_difference(train: dict[str, Any], test: dict[str, Any]) -> str:
  """'name: <train value> in train, <test value> in test' for each of SUBSET_SETTINGS both
  manifests record with other values ('' when none: one preparation's subsets)."""
  return '; '.join(f'{name}: {train[name]} in train, {test[name]} in test'
                   for name in SUBSET_SETTINGS
                   if name in train and name in test and train[name] != test[name])


def shared_videos(train: dict[str, Any], test: dict[str, Any]) -> list[tuple[str, str]]:
  """(test name, train name) of each video of the `test` manifest that the `train` manifest
  holds too, sorted: by name (`video_lists.same_video`, prepare's split rule: case-sensitive)
  or, when both record where they were prepared from, by source (`source_files`: one file
  under two names, as two preparations of other --data_dir name it), by the file a source
  still there is (`source_identities`: symlinks and hard links), or by a copy of it that
  kept its name, size and modification time (`source_stamps`)."""
  held = {video_lists.same_video(n): n for n in video_names(train)}
  files = {path: name for name, path in source_files(train).items()}
  tested = source_files(test) if files else {}
  copies = {stamp: name for name, stamp in source_stamps(train).items()}
  stamped = source_stamps(test)
  linked = {identity: name for name, identity in source_identities(train).items()}
  links = source_identities(test) if linked else {}
  found = []
  for name in video_names(test):
    other = (held.get(video_lists.same_video(name)) or files.get(tested.get(name, '')) or
             copies.get(stamped.get(name)) or linked.get(links.get(name, '')))
    if other:
      found.append((name, other))
  return sorted(found)


def source_identities(manifest: dict[str, Any]) -> dict[str, str]:
  """{name: `video_lists.file_identity`} of the manifest's videos whose source is still where
  `source_files` says (a frame folder, or a video file of one of VIDEO_EXTENSIONS, or named
  with its extension): a symlink or hard link to a video is that video."""
  found = {}
  for name, path in source_files(manifest).items():
    candidates = [path] + [path + ext for ext in video_lists.VIDEO_EXTENSIONS]
    identity = next((i for i in map(video_lists.file_identity, candidates) if i), '')
    if identity:
      found[name] = identity
  return found


def source_stamps(manifest: dict[str, Any]) -> dict[str, tuple[str, int, int]]:
  """{name: (file name, size, mtime_ns)} of the manifest's videos whose source's size and
  modification time it records: a copy of a tree that keeps them (`cp -a`, rsync -a) is
  the same video in either preparation, whatever folder it was prepared from."""
  return {v['name']: (os.path.basename(v['name']), v['size'], v['mtime_ns'])
          for shard in manifest.get('shards', ()) for v in shard.get('videos', ())
          if isinstance(v, dict) and isinstance(v.get('name'), str) and
          isinstance(v.get('size'), int) and v['size'] > 0 and
          isinstance(v.get('mtime_ns'), int)}


def source_files(manifest: dict[str, Any]) -> dict[str, str]:
  """{name: resolved path of its source} of the manifest's videos: `names_root` of its
  `source_paths` joined with the name (the file without its extension, or the frame folder),
  folders resolved (symlinks followed); {} when the manifest records no source paths."""
  root = names_root(manifest.get('source_paths') or {})
  if not root:
    return {}
  folders: dict[str, str] = {}
  found = {}
  for name in video_names(manifest):
    path = os.path.join(root, name)
    parent = os.path.dirname(path)
    if parent not in folders:
      folders[parent] = os.path.realpath(parent)
    found[name] = os.path.join(folders[parent], os.path.basename(path))
  return found


def names_root(source_paths: dict[str, str]) -> str:
  """The folder a list's video names are paths below (prepare reads the lists against it):
  videos_dir, else frames_dir, else data_dir; '' when none is recorded."""
  return (source_paths.get('videos_dir') or source_paths.get('frames_dir') or
          source_paths.get('data_dir') or '')


def shared_groups(train: dict[str, Any], test: dict[str, Any]) -> list[str]:
  """Names of the `train` manifest's UCF101 clips whose group has a clip in the `test`
  manifest (`ucf101.apply_group_rule`, prepare's rule), sorted."""
  entries = {subset: [video_lists.VideoEntry(name, '', 0, 0, 0, '', i, '', 0)
                      for i, name in enumerate(video_names(manifest))]
             for subset, manifest in (('train', train), ('test', test))}
  kept, _ = ucf101.apply_group_rule(entries['train'], entries['test'], [])
  held = {e.name for e in kept}
  return sorted(e.name for e in entries['train'] if e.name not in held)


def list_file(manifest: dict[str, Any], subset: str) -> str:
  """The file that listed the videos of `manifest`'s `subset`: a list dataset's
  --train_list/--test_list, UCF101's <subset>list0<split>.txt, else (HMDB51: one file per
  class) the split files' directory."""
  paths = manifest.get('source_paths') or {}
  if paths.get(f'{subset}_list'):
    return paths[f'{subset}_list']
  if manifest.get('dataset', DEFAULT_DATASET) == 'ucf101' and paths.get('split_dir') and \
      manifest.get('split'):
    return os.path.join(paths['split_dir'], f'{subset}list{int(manifest["split"]):02d}.txt')
  return paths.get('split_dir') or '(unknown)'

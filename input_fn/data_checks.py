"""Every rule the data of a run must meet, each declared once, each problem naming its option.

    problems(params, subsets=('train', 'test')) -> list[Problem]   # [] when the data fits
    check(params, subsets) -> None                                 # raises DataError (first)

`params` is a validated TrainParams (its values are in range). The preflight
(`towers/preflight.py`) lists every problem; `input_fn/factory.py` raises on the first, for
library users who build an input_fn without the preflight. `subsets` are the subsets the
run reads ('train' to train, 'test' to evaluate). The rules: a file source needs a
`--data_dir` holding that source (data_dir); its files must give clips of `--stream`
(stream); prepared records must be of `--dataset` (dataset), be of `--num_classes` classes
(num_classes), and, to train, train and test disjoint by video (data_dir); a subset read
must hold at least one record or readable video (data_dir); each shard of the subsets
checked must be the file prepare wrote: starting with the video its manifest lists first,
of the size written unless cut short (data_dir; `pipeline.foreign_shard`: a shard whose
first record is damaged, or that is cut short, is left to the reader, which skips and
counts its bad records); the direct route's class list
must be of `--num_classes` classes and its `--split` files must be readable (split); the eval split
must fit `--max_eval_videos` (max_eval_videos); `--eval_crops=3` needs frames with room for
3 distinct crops (eval_crops). The synthetic source reads no file and meets them all. A
subset with nothing to read is an `EmptySubset` (its subset and listed count).
"""

from __future__ import annotations

import json
import os
from typing import Any, Sequence

from command_line.options import Problem
from input_fn import datasets, direct, flow_shards, manifest, pipeline, ucf101, video_lists
from input_fn.frame_sample import frame_sample

SUBSETS = manifest.SUBSETS
FILE_SOURCES = ('tfrecord', 'videos', 'frames')
_DATA_DIR_CONTENTS = {
    'tfrecord': 'the TFRecord shards made once with `bazel run //data_tools:prepare '
                '-- --source=videos --data_dir=<dataset root> --out=<this data_dir>`',
    'videos': 'the dataset root: the .avi class folders (UCF-101/, hmdb51_org/) and the split '
              'files (ucfTrainTestlist/, testTrainMulti_7030_splits/)',
    'frames': 'the frame folders (jpegs_256/, rawframes/) and the split files',
}
_USE = {'train': 'train on', 'test': 'evaluate'}


class EmptySubset(Problem):
  """A subset the run reads holds nothing to read (option data_dir): `subset` ('train' or
  'test') and `listed`, the videos its split list names (records: prepare's num_listed)."""
  subset: str
  listed: int

  def __new__(cls, text: str, subset: str, listed: int) -> 'EmptySubset':
    made = super().__new__(cls, 'data_dir', text)
    made.subset, made.listed = subset, listed
    return made


class DataError(ValueError):
  """The data cannot serve the run; the message is the first problem, `problems` all of them
  (each a `Problem` naming its option)."""

  def __init__(self, found: list[Problem]) -> None:
    super().__init__(found[0])
    self.problems = found


def check(params: Any, subsets: Sequence[str] = SUBSETS) -> None:
  """Raises `DataError` when `problems(params, subsets)` finds any."""
  found = problems(params, subsets)
  if found:
    raise DataError(found)


def problems(params: Any, subsets: Sequence[str] = SUBSETS) -> list[Problem]:
  """Every problem of the data `params` reads for `subsets`; [] when it can serve them.
  The eval checks (max_eval_videos, eval_crops) run when 'test' is read and the data has no
  other problem."""
  source, data_dir = params.data_source, params.data_dir
  if source == 'synthetic':
    return []
  if source not in FILE_SOURCES:
    return [Problem('data_source', f'data_source={source!r} reads no known files (the file '
                                   f'sources are {", ".join(FILE_SOURCES)})')]
  if not (data_dir and os.path.isdir(data_dir)):
    return [Problem('data_dir', f'data_source={source} reads from --data_dir, but '
                                f'data_dir={data_dir or "(empty)"} is not a directory: it must '
                                f'hold {_DATA_DIR_CONTENTS[source]}')]
  found = (_record_problems(params, subsets) if source == 'tfrecord' else
           _direct_problems(params, subsets))
  stream = _stream_problem(params)
  found += [stream] if stream else []
  if not found and 'test' in subsets:
    found += _max_eval_videos_problems(params) + _eval_crops_problems(params)
  return found


def _record_problems(params: Any, subsets: Sequence[str]) -> list[Problem]:
  """Prepared records must fit the model (`manifest.training_data_problems`: both subsets
  when training, for their overlap) and each subset read must hold a record."""
  needed = SUBSETS if 'train' in subsets else tuple(subsets)
  if manifest.read_identity(params.data_dir) is None:
    held = [name for name in datasets.NAMES
            if _class_list_found(name, params.data_dir)]
    if held:
      return [Problem('data_source', f'data_dir={params.data_dir} holds no prepared records '
                                     f'but the {held[0]} dataset itself, which '
                                     '--data_source=videos (or frames) reads; or prepare its '
                                     'records into another folder (//data_tools:prepare '
                                     '--out) and train on those')]
  return (manifest.training_data_problems(params.data_dir, params.num_classes, needed,
                                          params.dataset, params.split) or
          _empty_subset_problems(params.data_dir, subsets) or
          _foreign_shard_problems(params.data_dir, needed))


def _class_list_found(dataset: str, data_dir: str) -> bool:
  """Whether `data_dir` holds the class files of `dataset` (readable or not)."""
  try:
    return datasets.read_classes(dataset, data_dir)[0] is not None
  except datasets.DatasetError:
    return True


def _foreign_shard_problems(data_dir: str, subsets: Sequence[str]) -> list[Problem]:
  """A listed shard that is not the file prepare wrote (`pipeline.foreign_shards`): a test
  shard copied over the train shard would train on the test videos, a train shard over the
  test shard would score the training videos."""
  found = (pipeline.foreign_shards(data_dir, subset) for subset in subsets)
  return [Problem('data_dir', text) for text in found if text]


def _empty_subset_problems(data_dir: str, subsets: Sequence[str]) -> list[Problem]:
  """A prepared subset without a single record: training would wait for data forever, an
  evaluation would report metrics of nothing."""
  found = []
  for subset in subsets:
    prepared = manifest.read(data_dir, subset)
    if prepared.get('num_records', 1) == 0:
      kinds = ', '.join(f'{n} {k}' for k, n in prepared.get('skipped_by_kind', {}).items())
      example = next(iter(prepared.get('skipped', ())), None)
      found.append(EmptySubset(
          f'{manifest.manifest_path(data_dir, subset)}: 0 {subset} records of '
          f'{prepared.get("num_listed", 0)} listed videos'
          f'{" (skipped: " + kinds + ")" if kinds else ""}'
          f'{"; e.g. " + _describe(example) if example else ""}: nothing to {_USE[subset]}; '
          'fix the source (see the prepare summary) and prepare again',
          subset, prepared.get('num_listed', 0)))
  return found


def _describe(skipped: dict) -> str:
  return ': '.join(str(skipped[k]) for k in ('input', 'reason') if skipped.get(k)) or \
      str(skipped)


def _direct_problems(params: Any, subsets: Sequence[str]) -> list[Problem]:
  """The direct route (videos, frames): the dataset's class list in data_dir, as many
  classes as --num_classes, readable split files, and a readable video in each subset."""
  data_dir, what = params.data_dir, _DATA_DIR_CONTENTS[params.data_source]
  try:
    class_index, where = datasets.read_classes(params.dataset, data_dir)
  except datasets.DatasetError as e:  # a class list that cannot be read as one
    return [Problem('data_dir', str(e))]
  if class_index is None:
    likely = datasets.other_dataset(params.dataset, data_dir)
    if likely:
      return [Problem('dataset', f'data_dir={data_dir} holds {likely}, not {params.dataset} '
                                 f'({where} not found): set --dataset={likely}')]
    if manifest.read_identity(data_dir) is not None:
      return [Problem('data_source', f'data_dir={data_dir} holds prepared records, which '
                                     '--data_source=tfrecord reads, not '
                                     f'{params.data_source}')]
    return [Problem('data_dir', f'data_dir={data_dir} holds no {os.path.basename(where)} of '
                                f'dataset={params.dataset} ({where} not found): it must hold '
                                f'{what}')]
  classes = len(class_index)
  if classes != params.num_classes:
    return [Problem('num_classes', f'--num_classes={params.num_classes} but {where} lists '
                                   f'{classes} classes: set --num_classes={classes}, or leave '
                                   'it out to take the class list\'s')]
  try:
    return _unreadable_subset_problems(params, subsets)
  except (datasets.DatasetError, FileNotFoundError) as e:  # the split's own files
    return [Problem('split', f'data_dir={data_dir}, split {params.split}: {e}')]


def _unreadable_subset_problems(params: Any, subsets: Sequence[str]) -> list[Problem]:
  """No readable video in a subset's list, from the files on disk."""
  found = []
  for subset in subsets:
    readable, listed, unreadable = direct.readable_videos(params, subset)
    if readable == 0:
      example = f'; e.g. {unreadable[0]}' if unreadable else ''
      found.append(EmptySubset(
          f'data_source={params.data_source}: 0 of the {listed} {subset} videos of split '
          f'{params.split} in {params.data_dir} can be read{example}: nothing to '
          f'{_USE[subset]}; it must hold {_DATA_DIR_CONTENTS[params.data_source]}',
          subset, listed))
  return found


def _manifest_source(data_dir: str) -> str | None:
  """The `source` (videos, frames or flow) the records of `data_dir` were prepared from,
  from its manifests; None when there is none or it is damaged (`manifest.read` names a
  damaged one when the data is read)."""
  for subset in SUBSETS:
    path = manifest.manifest_path(data_dir, subset)
    if os.path.exists(path):
      try:
        with open(path) as f:
          found = json.load(f)
      except (OSError, ValueError):
        return None
      return found.get('source') if isinstance(found, dict) else None
  return None


def _stale_flow(params: Any, flow_dir: str) -> str | None:
  """'<n> videos is older than their video (e.g. <file>)' when extract_flow's source records
  in `flow_dir` name another size or mtime than the split's video files have now
  (`flow_shards.changed_videos`, as prepare checks); None when none does or the split
  cannot be read (other checks name that)."""
  try:
    split = datasets.params_split(params)
  except (OSError, ValueError):
    return None
  changed, example = flow_shards.changed_videos(
      flow_dir, split.train + split.test, datasets.videos_dir(params.dataset, params.data_dir))
  if not changed:
    return None
  return f'{len(changed)} videos is older than their video (e.g. {example})'


def _stream_problem(params: Any) -> Problem | None:
  """Why the files in data_dir cannot give clips of --stream (a source that cannot give
  flow at all is refused when the TrainParams is made), saying what to run; None when they
  can."""
  stream, source, data_dir = params.stream, params.data_source, params.data_dir
  extract = 'bazel run //data_tools:extract_flow -- --data_dir=<UCF101 root holding UCF-101/>'
  prepare = ('bazel run //data_tools:prepare -- --source=flow --data_dir=<UCF101 root holding '
             'tvl1_flow/> --out=<new directory>')
  if stream == 'flow' and source == 'frames':
    flow_dir = os.path.join(data_dir, ucf101.FLOW_DIR_NAME)
    if not all(os.path.isdir(os.path.join(flow_dir, c)) for c in ('u', 'v')):
      return Problem('stream', f'stream=flow with data_source=frames reads {flow_dir}/u and '
                               f'/v, which are not there: run `bazel run '
                               f'//data_tools:extract_flow -- --data_dir={data_dir}`')
    shards = flow_shards.unfinished(flow_dir)
    if shards is not None:  # videos without flow would go untrained and unevaluated
      return Problem('data_dir', f'stream=flow with data_source=frames reads {flow_dir}, '
                                 'which holds an unfinished extraction: '
                                 f'{flow_shards.unfinished_text(flow_dir, shards)}')
    stale = _stale_flow(params, flow_dir)
    if stale:
      return Problem('data_dir', f'stream=flow with data_source=frames reads {flow_dir}, '
                                 f'whose flow of {stale}: rerun //data_tools:extract_flow '
                                 f'--data_dir={data_dir}')
  if source == 'tfrecord':
    prepared = _manifest_source(data_dir)
    if stream == 'flow' and prepared not in (None, 'flow'):
      return Problem('stream', f'stream=flow, but data_dir={data_dir} holds RGB records '
                               f'(prepared with --source={prepared}): prepare flow records '
                               f'({prepare}; after {extract}) and pass that --out as '
                               '--data_dir')
    if stream == 'rgb' and prepared == 'flow':
      return Problem('stream', f'stream=rgb, but data_dir={data_dir} holds flow records '
                               '(prepared with --source=flow): pass the RGB records\' '
                               'directory, or --stream=flow')
  return None


def _max_eval_videos_problems(params: Any) -> list[Problem]:
  """The video-level accumulators hold --max_eval_videos videos, so the eval split (the
  records' test manifest, or the direct route's test list) must not list more."""
  if params.data_source == 'tfrecord':
    listed = manifest.videos_listed(manifest.read(params.data_dir, 'test'))
    where = manifest.manifest_path(params.data_dir, 'test')
  elif params.data_source in ('videos', 'frames'):
    listed, where = len(datasets.params_split(params).test), f'split {params.split}'
  else:
    return []
  if listed > params.max_eval_videos:
    return [Problem('max_eval_videos',
                    f'max_eval_videos={params.max_eval_videos} is smaller than the {listed} '
                    f'videos of the eval split ({where}): set --max_eval_videos={listed} or '
                    'more')]
  return []


def _eval_crops_problems(params: Any) -> list[Problem]:
  """--eval_crops=3 on frames too small for 3 distinct crops (`pipeline.eval_crops_problem`,
  on a sample of the test videos as the input gives them): the views would be stretched
  copies of each other, and the table would still say 3 crops."""
  if params.eval_crops == 1:
    return []
  for video, _, height, width in frame_sample(params, 'test'):
    problem = height and width and pipeline.eval_crops_problem(
        height, width, params.crop_size, params.eval_crops)
    if problem:
      bigger = ('prepare the records again with --short_side' if params.data_source == 'tfrecord'
                else 'set --frame_short_side')
      return [Problem('eval_crops',
          f'--eval_crops={params.eval_crops} with --crop_size={params.crop_size}: in the '
          f'{params.data_source} data of {params.data_dir} (test video {video}), {problem}; '
          f'use --eval_crops=1, or {bigger} to at least {params.crop_size + 2}')]
  return []

"""Two-stream evaluation per video: an RGB model and a Flow model, each on its own eval data.

The streams train separately (`--stream=rgb` and `--stream=flow`, each with its own
model_dir, any network). Each is read back as the SavedModel its training exported
(`<model_dir>/export/best/<newest>`, or an export directory given directly;
`serving/saved_model.py`): its serving input `clips` float32 [None, T, S, S, C] says the clip
shape and the stream (C = 3 rgb, C = 2 flow); its output `probabilities` [None, num_classes]
is the softmax.

For each stream, every record of its eval data (the `test` shards of `//data_tools:prepare`)
gives `clips_per_video` clips x `crops_per_video` crops sampled as in training's evaluation
(starts spread evenly; centre crop, or three along the long side; no flip); the video's
probabilities are the mean of its views' softmax.
Videos are matched across streams by their canonical name (compared in lower case); the
fused probabilities are `(1 - flow_weight) * rgb + flow_weight * flow` (0.5: equal weights).

Before any inference the four inputs are checked to agree (`check_agreement`): both eval
data of one dataset and split (--dataset, the split of --splits, when given), and one class
list, name for name in label order, in both exports and both manifests. Each stream is checked
against its eval data (`check_stream`): the same stream, test shards that are the files
prepare wrote (`pipeline.foreign_shards`), the same number of classes, the dataset
and the frames' scale its export records (`dataset` against the manifest's; the eval frames'
short sides within `frame_short_side_range`, or else `frame_short_side` equal to the
manifest's `short_side`), flow extracted with its training flow's TV-L1
settings, and no test video among those its export lists as trained on (`train_video_names`
in assets.extra/video_model.json, `serving/export_info.py`, compared by
`video_lists.trained_on`, so a list dataset's names meet UCF101's). A check one side cannot
make (an export made before the list existed, flow not written by
//data_tools:extract_flow) is skipped with a warning saying so. Then both eval data are
checked to be made from the same videos (`check_same_videos`): a video whose source size
the RGB records' manifest and the flow's `.flow_sources.jsonl` (extract_flow) both record,
with two sizes, is another video under that name (records that do not record it are not
compared).

Every metric is over videos: top-1, top-5, and mean per-class accuracy (the mean over the
classes present among the evaluated videos of each class's top-1); per class, each stream's
top-1 and what fusion gains over the better stream (`per_class_rows`), from the streams'
confusion matrices (`confusion_matrices`). The three rows (RGB, Flow,
Fusion) are computed on the videos both streams have, so they compare like with like; a
video that only one stream has is reported, counted and listed, never silently dropped.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

import numpy as np
import tensorflow as tf

from command_line.console import protocol
from input_fn import flow, flow_shards
from input_fn import manifest as manifest_lib
from input_fn import pipeline, ucf101, video_lists
from model_fn import confusion
from serving import export_info, saved_model
from serving.saved_model import StreamModel

class TwoStreamError(ValueError):
  """The two streams cannot be evaluated together; the message says what to fix.

  `reason`: what is wrong, one short key ('flow_weight', 'classes', 'class_names', 'dataset',
  'split', 'labels', 'no_shared_video', 'no_manifest', 'damaged_manifest', 'wrong_stream',
  'trained_on', 'short_side', 'flow_extraction', 'foreign_shard', 'other_videos',
  'no_readable_video', 'nonfinite', or that of the `ExportInfoError` or
  `saved_model.ModelError` behind it);
  `path`: the model or data directory at fault (None: neither); `count`: the count the
  message names (classes, videos), else None; `option`: the option to change, else None;
  `label`: the first label at which two class lists differ ('class_names'), else None.
  """

  def __init__(self, message: str, reason: str, path: str | None = None,
               count: int | None = None, option: str | None = None,
               label: int | None = None) -> None:
    super().__init__(message)
    self.reason = reason
    self.path = path
    self.count = count
    self.option = option or ('flow_weight' if reason == 'flow_weight' else None)
    self.label = label


@dataclasses.dataclass(frozen=True)
class StreamPredictions:
  """One stream's per-video predictions, in the order of its eval records."""
  stream: str                 # 'rgb' or 'flow'
  model: str                  # the SavedModel directory used
  names: tuple[str, ...]      # canonical video names
  labels: np.ndarray          # int64 [videos]
  probabilities: np.ndarray   # float32 [videos, classes], mean softmax over the views
  clips_per_video: int
  skipped_records: int        # bad records of the eval data, skipped and counted
  crops_per_video: int = 1    # views per video: clips_per_video x crops_per_video


# --- Arithmetic ------------------------------------------------------------------------------


def fuse(rgb: np.ndarray, flow: np.ndarray, flow_weight: float = 0.5) -> np.ndarray:
  """Fused per-video probabilities: `(1 - flow_weight) * rgb + flow_weight * flow`, both
  [videos, classes] and aligned row by row."""
  if not 0.0 <= flow_weight <= 1.0:
    raise TwoStreamError(f'flow_weight must be in [0, 1], got {flow_weight}', 'flow_weight')
  return (1.0 - flow_weight) * rgb + flow_weight * flow


def video_metrics(probabilities: np.ndarray, labels: np.ndarray) -> dict[str, float]:
  """top_1, top_5 (fraction of videos whose label is among the 5 highest probabilities; all
  of them with fewer than 5 classes) and mean_per_class (mean over the classes present in
  `labels` of their top-1 accuracy) of [videos, classes] probabilities."""
  ranked = np.argsort(-probabilities, axis=1, kind='stable')
  top_1 = ranked[:, 0] == labels
  top_5 = np.any(ranked[:, :5] == labels[:, None], axis=1)
  per_class = [float(np.mean(top_1[labels == c])) for c in np.unique(labels)]
  return {'top_1': float(np.mean(top_1)), 'top_5': float(np.mean(top_5)),
          'mean_per_class': float(np.mean(per_class))}


@dataclasses.dataclass(frozen=True)
class Matched:
  """The two streams aligned on the videos both have."""
  names: tuple[str, ...]
  labels: np.ndarray
  rgb: np.ndarray
  flow: np.ndarray
  only_rgb: tuple[str, ...]
  only_flow: tuple[str, ...]


def match(rgb: StreamPredictions, flow: StreamPredictions) -> Matched:
  """Aligns the streams by canonical name (lower case). Raises `TwoStreamError` when they
  disagree on the classes or on a shared video's label."""
  if rgb.probabilities.shape[1] != flow.probabilities.shape[1]:
    raise TwoStreamError(f'the RGB model has {rgb.probabilities.shape[1]} classes and the Flow '
                         f'model {flow.probabilities.shape[1]}: they were not trained on the '
                         'same class list', 'classes', count=flow.probabilities.shape[1])
  flow_rows = {name.lower(): i for i, name in enumerate(flow.names)}
  rgb_keys = {name.lower() for name in rgb.names}
  rows = [(i, flow_rows[name.lower()]) for i, name in enumerate(rgb.names)
          if name.lower() in flow_rows]
  mismatched = [rgb.names[i] for i, j in rows if rgb.labels[i] != flow.labels[j]]
  if mismatched:
    raise TwoStreamError(f'{len(mismatched)} videos have different labels in the RGB and Flow '
                         f'eval data (e.g. {mismatched[0]}): prepare both from the same split '
                         'files', 'labels', count=len(mismatched))
  r = np.array([i for i, _ in rows], np.int64)
  f = np.array([j for _, j in rows], np.int64)
  return Matched(
      names=tuple(rgb.names[i] for i in r), labels=rgb.labels[r],
      rgb=rgb.probabilities[r], flow=flow.probabilities[f],
      only_rgb=tuple(n for n in rgb.names if n.lower() not in flow_rows),
      only_flow=tuple(n for n in flow.names if n.lower() not in rgb_keys))


def _shared(rgb: StreamPredictions, flow: StreamPredictions,
            flow_weight: float) -> tuple[Matched, np.ndarray]:
  """The matched streams and their fused probabilities; raises when they share no video."""
  matched = match(rgb, flow)
  if not matched.names:
    raise TwoStreamError(f'the RGB eval data ({len(rgb.names)} videos) and the Flow eval data '
                         f'({len(flow.names)} videos) share no video name: were they prepared '
                         'from the same split?', 'no_shared_video')
  return matched, fuse(matched.rgb, matched.flow, flow_weight)


def confusion_matrices(rgb: StreamPredictions, flow: StreamPredictions,
                       flow_weight: float = 0.5) -> dict[str, np.ndarray]:
  """'rgb', 'flow', 'fusion' -> int64 [classes, classes] counts of videos (row = label,
  column = top-1 prediction) over the videos both streams have."""
  return _matrices(*_shared(rgb, flow, flow_weight))


def _matrices(matched: Matched, fused: np.ndarray) -> dict[str, np.ndarray]:
  classes = fused.shape[1]
  return {stream: confusion.counts(matched.labels, np.argmax(p, axis=1), classes)
          for stream, p in (('rgb', matched.rgb), ('flow', matched.flow), ('fusion', fused))}


def per_class_rows(matrices: dict[str, np.ndarray],
                   class_names: Sequence[str] | None) -> list[dict[str, Any]]:
  """One row per class with videos, in label order: class (name, else label), label, videos,
  each stream's video top-1 of the class (rgb, flow, fusion) and fusion_gain = fusion minus
  the better of rgb and flow (> 0: fusion helps the class, < 0: it hurts)."""
  names = confusion.class_labels(len(matrices['rgb']), class_names)
  accuracy = {s: confusion.per_class_accuracy(m) for s, m in matrices.items()}
  videos = matrices['rgb'].sum(axis=1)
  return [{'class': names[c], 'label': int(c), 'videos': int(videos[c]),
           **{s: float(accuracy[s][c]) for s in ('rgb', 'flow', 'fusion')},
           'fusion_gain': float(accuracy['fusion'][c] - max(accuracy['rgb'][c],
                                                            accuracy['flow'][c]))}
          for c in np.flatnonzero(videos)]


def report(rgb: StreamPredictions, flow: StreamPredictions, flow_weight: float = 0.5,
           class_names: Sequence[str] | None = None) -> dict[str, Any]:
  """The evaluation as a JSON-able dict: rows rgb/flow/fusion with their video metrics on the
  shared videos, per_class (`per_class_rows`, labelled with `class_names` when given), the
  counts (`videos` evaluated by both streams, of `videos_in_records`: the larger stream's
  records, damaged ones included), and the videos only one stream has."""
  matched, fused = _shared(rgb, flow, flow_weight)
  return {
      'videos': len(matched.names), 'flow_weight': flow_weight,
      'videos_in_records': max(len(p.names) + p.skipped_records for p in (rgb, flow)),
      'rows': {'rgb': video_metrics(matched.rgb, matched.labels),
               'flow': video_metrics(matched.flow, matched.labels),
               'fusion': video_metrics(fused, matched.labels)},
      'per_class': per_class_rows(_matrices(matched, fused), class_names),
      'streams': {p.stream: {'model': p.model, 'videos': len(p.names),
                             'clips_per_video': p.clips_per_video,
                             'crops_per_video': p.crops_per_video,
                             'skipped_records': p.skipped_records} for p in (rgb, flow)},
      'only_rgb': list(matched.only_rgb), 'only_flow': list(matched.only_flow),
  }


def format_table(result: dict[str, Any]) -> str:
  """The three-row table, with the counts the rows rest on."""
  rgb = result['streams']['rgb']
  held = result.get('videos_in_records', result['videos'])
  videos = (f'{result["videos"]} videos' if held == result['videos'] else
            f'{result["videos"]} of {held} test videos')
  lines = [f'two-stream evaluation on {videos} (flow_weight '
           f'{result["flow_weight"]:g}; video = mean softmax of '
           f'{protocol(rgb["clips_per_video"], rgb.get("crops_per_video", 1))})',
           '| stream | video top-1 | video top-5 | mean per-class |',
           '|---|---|---|---|']
  for key, title in (('rgb', 'RGB'), ('flow', 'Flow'), ('fusion', 'Fusion')):
    row = result['rows'][key]
    lines.append(f'| {title} | {row["top_1"]:.4f} | {row["top_5"]:.4f} | '
                 f'{row["mean_per_class"]:.4f} |')
  for stream in ('rgb', 'flow'):
    only = result[f'only_{stream}']
    skipped = result['streams'][stream]['skipped_records']
    if only or skipped:
      lines.append(f'{stream}: {len(only)} video(s) not in the other stream, left out of every '
                   f'row{" (e.g. " + only[0] + ")" if only else ""}; {skipped} bad record(s) '
                   'skipped' + (' (damaged shards: run prepare again with the same flags; it '
                                'rewrites a shard changed since it wrote it)' if skipped else ''))
  return '\n'.join(lines)


def mean_over_splits(results: dict[int, dict[str, Any]]) -> dict[str, Any]:
  """The standard protocol's figure: each row's metrics (rgb, flow, fusion) averaged over
  the splits' reports (`report`), each split weighing the same whatever its video count."""
  splits = sorted(results)
  return {'splits': splits,
          'rows': {row: {metric: float(np.mean([results[k]['rows'][row][metric]
                                                 for k in splits]))
                         for metric in results[splits[0]]['rows'][row]}
                   for row in ('rgb', 'flow', 'fusion')}}


def format_splits_table(results: dict[int, dict[str, Any]], mean: dict[str, Any]) -> str:
  """Video top-1 per split and their mean, one row per stream."""
  splits = mean['splits']
  lines = [f'video top-1 over splits {", ".join(map(str, splits))} (mean: each split '
           'weighs the same)',
           '| stream | ' + ' | '.join(f'split {k}' for k in splits) + ' | mean |',
           '|---|' + '---|' * (len(splits) + 1)]
  for key, title in (('rgb', 'RGB'), ('flow', 'Flow'), ('fusion', 'Fusion')):
    cells = [f'{results[k]["rows"][key]["top_1"]:.4f}' for k in splits]
    lines.append(f'| {title} | ' + ' | '.join(cells) +
                 f' | {mean["rows"][key]["top_1"]:.4f} |')
  return '\n'.join(lines)


# --- Running a stream's model on its eval data ---------------------------------------------


def class_names(data_dir: str) -> list[str] | None:
  """The class names, in label order, of the eval records in `data_dir` (None: not listed)."""
  return _manifest(data_dir).get('classes') or None


def _manifest(data_dir: str, option: str | None = None) -> dict[str, Any]:
  """The test manifest of `data_dir` (`manifest_lib.read`), given as --`option`;
  `TwoStreamError` ('no_manifest', or 'damaged_manifest' naming the file and the fix: run
  prepare again) when it is missing or damaged, or a shard it lists is missing."""
  path = manifest_lib.manifest_path(data_dir, 'test')
  if not tf.io.gfile.exists(path):
    raise TwoStreamError(f'{path} not found: the eval data of a stream is the --out directory '
                         'of //data_tools:prepare (its test shards)', 'no_manifest', data_dir,
                         option=option)
  try:
    manifest_lib.shard_paths(data_dir, 'test')  # every shard it lists is there
    return manifest_lib.read(data_dir, 'test')
  except manifest_lib.ManifestError as e:
    raise TwoStreamError(str(e), 'damaged_manifest', data_dir, option=option) from e


@dataclasses.dataclass(frozen=True)
class ClassListDifference:
  """Two class lists that disagree: `first` and `other` say where each came from, `label` is
  the first label where they differ, `names` their names there (None: that list ended) and
  `sizes` their numbers of classes."""
  first: str
  other: str
  label: int
  names: tuple[str | None, str | None]
  sizes: tuple[int, int]

  def __str__(self) -> str:
    if None in self.names:
      return (f'{self.first} has {self.sizes[0]} classes and {self.other} has '
              f'{self.sizes[1]} (the first {self.label} agree)')
    return (f'the class names of {self.first} and of {self.other} differ from label '
            f'{self.label} on ({self.names[0]!r} and {self.names[1]!r})')


def class_list_difference(lists: Sequence[tuple[str, Sequence[str] | None]]
                          ) -> ClassListDifference | None:
  """The first class list of `lists` ((where it came from, names in label order; None:
  unknown, not compared), ...) that is not the first known one, name for name in order, and
  where; None when they all agree."""
  known = [(where, list(names)) for where, names in lists if names is not None]
  for where, names in known[1:]:
    first, reference = known[0]
    if names != reference:
      label = next(i for i in range(max(len(names), len(reference)))
                   if i >= min(len(names), len(reference)) or names[i] != reference[i])
      return ClassListDifference(first, where, label, tuple(
          listed[label] if label < len(listed) else None for listed in (reference, names)),
          (len(reference), len(names)))
  return None


def _most_held_first(lists: list[tuple[str, Sequence[str] | None]]
                     ) -> list[tuple[str, Sequence[str] | None]]:
  """`lists` with one of the class lists most of them hold first, so that the odd one out is
  the one named at fault (the first list is the reference); as they are on a tie."""
  held = [tuple(names) for _, names in lists if names is not None]
  counts = {names: held.count(names) for names in held}
  most = max(counts.values(), default=0)
  if list(counts.values()).count(most) != 1:
    return lists
  first = next(i for i, (_, names) in enumerate(lists)
               if names is not None and counts[tuple(names)] == most)
  return [lists[first]] + lists[:first] + lists[first + 1:]


def check_agreement(paths: dict[str, str], split: int | None = None, dataset: str = '') -> None:
  """Before any model runs, for the four `paths` (rgb_model, flow_model, rgb_data,
  flow_data): both eval data hold records of `dataset` and of `split` (each when given, else
  the same as each other's), and the class names, in label order, of both exports (those that
  carry them, `serving/export_info.py`) and of both eval data's manifests are the same.
  Raises `TwoStreamError` naming the option, what disagrees and, for class names, the first
  label where they do."""
  manifests = {s: _manifest(paths[f'{s}_data'], f'{s}_data') for s in ('rgb', 'flow')}
  held = {s: {'dataset': m.get('dataset', manifest_lib.DEFAULT_DATASET), 'split': m.get('split')}
          for s, m in manifests.items()}
  for field, wanted, option in (('dataset', dataset, 'dataset'), ('split', split, 'splits')):
    for stream in ('rgb', 'flow'):
      data, found = paths[f'{stream}_data'], held[stream][field]
      if found is None or held['rgb'][field] is None:  # a manifest that does not record it
        continue
      if wanted and found != wanted:
        raise TwoStreamError(f'--{option}={wanted} but --{stream}_data={data} holds {field} '
                             f'{found} records: pass {field} {wanted} records'
                             f'{"" if field == "split" else f" or set --dataset={found}"}',
                             field, data, option=f'{stream}_data' if field == 'split' else option)
      if not wanted and found != held['rgb'][field]:
        raise TwoStreamError(f'--rgb_data holds {field} {held["rgb"][field]} records but '
                             f'--flow_data={data} holds {field} {found}: pass the RGB and the '
                             f'Flow records of one {field}', field, data, option='flow_data')
  lists = []
  for stream in ('rgb', 'flow'):
    try:
      export = saved_model.saved_model_dir(paths[f'{stream}_model'])
      lists.append((f'the {stream} model {export}', export_info.read(export)[1]))
    except (saved_model.ModelError, export_info.ExportInfoError) as e:
      raise TwoStreamError(str(e), e.reason, e.path, option=f'{stream}_model') from e
  for stream, manifest in manifests.items():
    lists.append((manifest_lib.manifest_path(paths[f'{stream}_data'], 'test'),
                  manifest.get('classes')))
  options = [f'{s}_{kind}' for kind in ('model', 'data') for s in ('rgb', 'flow')]
  differ = class_list_difference(_most_held_first(lists))
  if differ:
    at_fault = options[[where for where, _ in lists].index(differ.other)]
    raise TwoStreamError(f'{differ}: the models and the eval data must have one class list; '
                         f'pass a --{at_fault} of the same classes', 'class_names',
                         paths[at_fault], option=at_fault, label=differ.label)


def _source_video_sizes(held: dict[str, Any]) -> dict[str, int]:
  """{video: byte size of the video file it was made from} of the eval records whose test
  manifest is `held`: records prepared from videos (the manifest's per-video sizes) or from
  extract_flow's flow (the .avi sizes the manifest recorded from its flow_dir at
  preparation, else those that flow_dir records now, `flow_shards.read_sources`); {} when
  not recorded (frames, another tool's flow, manifests or flow of before)."""
  flow_dir = (held.get('source_paths') or {}).get('flow_dir')
  recorded = [v for shard in held.get('shards', ()) for v in shard.get('videos', ())
              if isinstance(v, dict)]
  if held.get('source') == 'videos':
    sizes = {v.get('name'): v.get('size') for v in recorded}
  elif held.get('source') == 'flow' and any('video_size' in v for v in recorded):
    sizes = {v.get('name'): v.get('video_size') for v in recorded}
  elif held.get('source') == 'flow' and flow_dir:
    sizes = {name: source.get('size') for name, source in
             flow_shards.read_sources(flow_dir).items() if isinstance(source, dict)}
  else:
    return {}
  return {name: size for name, size in sizes.items() if isinstance(size, int)}


def check_same_videos(paths: dict[str, str]) -> None:
  """Raises `TwoStreamError` (option flow_data) when the RGB and the Flow eval records of
  `paths` (rgb_data, flow_data) were made from other videos under the same names: a video
  both record the source size of (`_source_video_sizes`) with two sizes. Records that do
  not record it pass."""
  manifests = {s: _manifest(paths[f'{s}_data']) for s in ('rgb', 'flow')}
  rgb, flow_sizes = (_source_video_sizes(manifests[s]) for s in ('rgb', 'flow'))
  differ = sorted(name for name in rgb.keys() & flow_sizes.keys()
                  if rgb[name] != flow_sizes[name])
  if differ:
    name, count = differ[0], f'{len(differ)} video{"s" if len(differ) > 1 else ""}'
    raise TwoStreamError(
        f'--rgb_data={paths["rgb_data"]} and --flow_data={paths["flow_data"]} were made from '
        f'other videos under the same names ({count}, e.g. {name}: its RGB records from a '
        f'{rgb[name]}-byte video, its flow from a {flow_sizes[name]}-byte one, as '
        f'{manifests["flow"]["source_paths"]["flow_dir"]} records): pass the RGB and the Flow '
        'records of one set of videos', 'other_videos', paths['flow_data'], count=len(differ),
        option='flow_data')


def _export_info(model: StreamModel) -> dict[str, Any]:
  """The model's video_model.json ({}: exported without one); `TwoStreamError` when damaged
  or when its class_names.txt is not the class list of its graph
  (`export_info.check_graph_names`)."""
  try:
    info, names = export_info.read(model.export)
    export_info.check_graph_names(model.export, names, saved_model.signature_class_names(model))
  except export_info.ExportInfoError as e:
    raise TwoStreamError(str(e), e.reason, e.path) from e
  return info or {}


def _check_dataset(model: StreamModel, info: dict[str, Any], data_dir: str,
                   manifest: dict[str, Any]) -> None:
  """Raises `TwoStreamError` naming both datasets when the export records the dataset it
  trained on and `data_dir`'s records are of another (its videos would be named, split and
  labelled by another dataset's rules)."""
  trained = info.get('dataset')
  held = manifest.get('dataset', manifest_lib.DEFAULT_DATASET)
  if trained and trained != held:
    raise TwoStreamError(f'the {model.stream} model {model.export} was trained on {trained} '
                         f'records but {data_dir} holds {held} records: evaluate it on test '
                         f'records prepared with --dataset={trained}, or pass a {model.stream} '
                         f'model trained on {held}', 'dataset', data_dir,
                         option=f'{model.stream}_data')


def _short_side_text(short_side: int) -> str:
  return f'{short_side} (frames as decoded)' if short_side == 0 else str(short_side)


def _sides_text(sides: Sequence[int]) -> str:
  return f'{sides[0]} pixels' if sides[0] == sides[1] else f'{sides[0]} to {sides[1]} pixels'


def _check_short_side(model: StreamModel, info: dict[str, Any], data_dir: str,
                      manifest: dict[str, Any]) -> str | None:
  """Raises `TwoStreamError` naming both sides when the frames (or flow) of `data_dir` are at
  another scale than the model's training frames: when both record their frames' sizes
  (the export's frame_short_side_range, `manifest_lib.short_side_range`), every eval short
  side must lie in the training range; else prepare's --short_side (manifest) must equal
  the export's frame_short_side (what classify resizes to). Returns a warning when neither
  can be compared (frames as decoded on both sides, a side's sizes unknown); None when
  checked or nothing is recorded (older exports, a model trained on synthetic clips)."""
  if (info.get('data') or {}).get('source') == 'synthetic':
    return None
  trained_sides, held_sides = info.get(export_info.SHORT_SIDE_RANGE), \
      manifest_lib.short_side_range(manifest)
  if trained_sides and held_sides:
    low, high = trained_sides
    if held_sides[0] < low or held_sides[1] > high:
      fix = (f'--short_side={low}' if low == high else
             f'a --short_side from {low} to {high}')
      raise TwoStreamError(f'the {model.stream} model {model.export} was trained on frames '
                           f'of short side {_sides_text(trained_sides)} but the records of '
                           f'{data_dir} hold frames of short side {_sides_text(held_sides)}: '
                           'it would be scored on frames of another scale than it learnt; '
                           f'prepare the eval data with {fix}', 'short_side', data_dir,
                           option=f'{model.stream}_data')
    return None
  trained, held = info.get('frame_short_side'), manifest.get('short_side')
  if trained is None or held is None:
    return None
  if int(trained) != int(held):
    raise TwoStreamError(f'the {model.stream} model {model.export} was trained on frames '
                         f'resized to a short side of {_short_side_text(int(trained))} but the '
                         f'records of {data_dir} were prepared with --short_side='
                         f'{_short_side_text(int(held))}: it would be scored on frames of '
                         'another scale than it learnt (classify reads them at its own); '
                         f'prepare the eval data with --short_side={trained}',
                         'short_side', data_dir, option=f'{model.stream}_data')
  if int(trained) == 0:
    unknown = (f'the export of {model.export} records none' if not trained_sides else
               f'the records of {data_dir} record none (prepared before sizes were kept)')
    return (f'cannot check that the {model.stream} frames of {data_dir} have the size of '
            f'the model\'s training frames (both kept as decoded, and {unknown}); prepare '
            'both with one --short_side to be sure')
  return None


def _check_flow_extraction(model: StreamModel, info: dict[str, Any], data_dir: str,
                           manifest: dict[str, Any]) -> str | None:
  """A flow model scores flow computed as its training flow was: raises `TwoStreamError`
  naming the settings (`flow.settings_differences`) when its export's `flow_extraction` and
  the extraction settings of the records (`flow.records_extraction_settings`: kept in their
  manifest, else the flow folder's) both exist and differ.
  Returns a warning saying which side is unknown when either is (not compared); else None."""
  if model.stream != 'flow':
    return None
  trained_with = info.get('flow_extraction')
  flow_dir = (manifest.get('source_paths') or {}).get('flow_dir', '')
  data_with = flow.records_extraction_settings(manifest)  # kept in the records since made
  if not trained_with or not data_with:
    unknown = [f'the export of {model.export} records none (its training flow was not written '
               'by //data_tools:extract_flow)'] if not trained_with else []
    if not data_with:
      where = flow_dir or f'the flow of {data_dir}'
      unknown.append(f'the records of {data_dir} and {where} record none (not written by '
                     '//data_tools:extract_flow)')
    return ('cannot check that the flow of the flow test records was extracted with the TV-L1 '
            f'settings of the model\'s training flow: {"; ".join(unknown)}')
  differ = flow.settings_differences(trained_with, data_with)
  if differ:
    shown = ', '.join(f'{name} {_dotted(trained_with, name)} vs {_dotted(data_with, name)}'
                      for name in differ)
    raise TwoStreamError(f'the flow model {model.export} was trained on flow extracted with '
                         f'other settings than the flow of {data_dir} ({flow_dir}): {shown}; '
                         'extract the eval flow with the settings of the training flow '
                         '(//data_tools:extract_flow flags)', 'flow_extraction', data_dir,
                         option='flow_data')
  return None


def _dotted(settings: dict[str, Any], name: str) -> Any:
  for key in name.split('.'):
    settings = settings.get(key) if isinstance(settings, dict) else None
  return settings


def check_stream(model: StreamModel, model_path: str, data_dir: str) -> dict[str, str]:
  """Before inference: `data_dir` must hold records of the model's stream whose test shards
  are the files prepare wrote (`pipeline.foreign_shards`), of as many
  classes, of the dataset its export records, at the short side of its training frames,
  flow extracted with its training flow's settings, and none of their videos may be one the
  model trained on (`video_lists.trained_on`: it would score them too high); raises
  `TwoStreamError` naming both sides. Returns the checks that could not be made, each with
  its warning: 'training_videos' (the export lists none), 'flow_extraction' (either side's
  settings unknown), 'short_side' (frames as decoded, either side's sizes unknown),
  'jpeg_quality' (RGB frames stored at another JPEG quality than the training records');
  {} when every check was made."""
  manifest = _manifest(data_dir, f'{model.stream}_data')
  data_stream = 'flow' if manifest.get('source') == 'flow' else 'rgb'
  if data_stream != model.stream:
    raise TwoStreamError(f'--{model.stream}_data={data_dir} holds {data_stream} records but '
                         f'{model.export} is a {model.stream} model: give it the '
                         f'{model.stream} records (swapped --rgb_data and --flow_data?)',
                         'wrong_stream', data_dir, option=f'{model.stream}_data')
  foreign = pipeline.foreign_shards(data_dir, 'test')
  if foreign:
    raise TwoStreamError(foreign, 'foreign_shard', data_dir, option=f'{model.stream}_data')
  classes, data_classes = saved_model.model_classes(model), int(manifest['num_classes'])
  if classes is not None and classes != data_classes:
    raise TwoStreamError(f'the {model.stream} model {model.export} has {classes} classes but '
                         f'{data_dir} holds {data_classes}: evaluate it on test records '
                         'prepared from the class list it was trained with', 'classes',
                         data_dir, data_classes)
  info = _export_info(model)
  _check_dataset(model, info, data_dir, manifest)
  unchecked = {}
  sizes = _check_short_side(model, info, data_dir, manifest)
  if sizes:
    unchecked['short_side'] = sizes
  trained_quality, held_quality = info.get('records_jpeg_quality'), manifest.get('jpeg_quality')
  if model.stream == 'rgb' and trained_quality and held_quality and \
      int(trained_quality) != int(held_quality):
    unchecked['jpeg_quality'] = (
        f'the rgb model {model.export} was trained on frames stored at JPEG quality '
        f'{trained_quality} but the records of {data_dir} store theirs at {held_quality}: '
        'its figures may shift a little; prepare the eval data with '
        f'--jpeg_quality={trained_quality} to measure it as trained')
  extraction = _check_flow_extraction(model, info, data_dir, manifest)
  if extraction:
    unchecked['flow_extraction'] = extraction
  trained = info.get(export_info.TRAIN_VIDEO_NAMES)
  if trained is None:
    why = (f'assets.extra/{export_info.INFO_FILE}: trained on synthetic data, or exported '
           'before exports listed them' if info else f'it has no assets.extra/ (exported '
           'before exports described themselves, or copied without it)')
    unchecked['training_videos'] = (
        f'{model.export} lists no training videos ({why}): cannot check that the '
        f'{model.stream} test videos of {data_dir} were not trained on')
    return unchecked
  tests = manifest_lib.video_names(manifest)
  seen = video_lists.trained_on(trained, tests)
  if seen:
    raise TwoStreamError(f'{len(seen)} of the {len(tests)} test videos of {data_dir} are '
                         f'training videos of the {model.stream} model {model_path} (e.g. '
                         f'{seen[0]}): its accuracy on them says nothing; evaluate on the test '
                         'records of the split it was trained on', 'trained_on', data_dir,
                         len(seen))
  grouped = ucf101.groups_learnt(trained, tests)
  if grouped:
    raise TwoStreamError(f'{len(grouped)} of the {len(tests)} test videos of {data_dir} are '
                         f'UCF101 clips of groups the {model.stream} model {model_path} trained '
                         f'on other clips of (e.g. {grouped[0][0]}: {grouped[0][1]}, cut from '
                         'the same video): its accuracy on them says nothing; evaluate on the '
                         'test records of the split it was trained on', 'trained_on', data_dir,
                         len(grouped))
  return unchecked


def nonfinite_message(stream: str, export: str) -> str:
  """Why the `stream` model at `export` gives no scores: its outputs are NaN or infinite."""
  return (f'the {stream} model {export} outputs NaN or infinite probabilities: its weights or '
          'batch-norm statistics diverged (or came so from its warm-start checkpoint); its '
          'scores mean nothing: train it again')


def predict_stream(model: StreamModel, data_dir: str, clips_per_video: int,
                   clips_per_batch: int = 16,
                   log: Callable[[str], None] = print,
                   crops_per_video: int = 1) -> StreamPredictions:
  """Runs `model` over every video of the eval records in `data_dir` (checked to be of the
  model's stream), `clips_per_video` x `crops_per_video` (1 or 3) views each."""
  export, serving, stream = model.export, model.serving, model.stream
  frames, height, width, channels = model.frames, model.size, model.size, model.channels
  manifest = _manifest(data_dir)
  data_stream = 'flow' if manifest.get('source') == 'flow' else 'rgb'
  if data_stream != stream:
    raise TwoStreamError(f'{data_dir} holds {data_stream} records but {export} is a {stream} '
                         'model', 'wrong_stream', data_dir)
  num_classes = int(manifest['num_classes'])
  dataset = tf.data.TFRecordDataset(pipeline.record_files(data_dir, 'test')).enumerate()
  dataset = dataset.map(lambda i, record: (i,) + pipeline.eval_video(
      record, frames, height, clips_per_video, num_classes, stream, crops_per_video))
  dataset = pipeline.skip_and_count(dataset, f'{stream} evaluation data')
  views = clips_per_video * crops_per_video
  videos_per_batch = max(1, clips_per_batch // views)
  dataset = dataset.batch(videos_per_batch).prefetch(1)
  names, labels, probabilities = [], [], []
  for _, clips, label, _, name in dataset:
    batch = clips.shape[0]
    flat = tf.reshape(pipeline.to_unit_range(clips), [-1, frames, height, width, channels])
    clip_probabilities = serving(clips=flat)['probabilities'].numpy()
    if not np.all(np.isfinite(clip_probabilities)):
      raise TwoStreamError(nonfinite_message(stream, export), 'nonfinite', export)
    probabilities.append(clip_probabilities.reshape(batch, views, -1).mean(axis=1))
    labels.extend(label.numpy().tolist())
    names.extend(n.decode() for n in name.numpy())
  if not names:
    raise TwoStreamError(f'{data_dir} gave no readable eval video', 'no_readable_video',
                         data_dir)
  log(f'evaluate_two_stream: {stream}: {len(names)} videos x '
      f'{protocol(clips_per_video, crops_per_video)} of {frames}x{height}x{width} through '
      f'{export}')
  skipped = int(manifest['num_records']) - len(names)  # records that failed to decode
  return StreamPredictions(stream, export, tuple(names), np.array(labels, np.int64),
                           np.concatenate(probabilities).astype(np.float32),
                           clips_per_video, skipped, crops_per_video)

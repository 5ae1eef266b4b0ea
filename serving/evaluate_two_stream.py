"""The two-stream evaluation's options (`EvaluateTwoStreamOptions`), their checks
(`check_options`, before any model loads; --eval_crops against the records' frames in
`evaluate`) and
`evaluate(paths, options)` -> the table of `two_stream.report` for one split: both streams'
models on their eval data, fused per video (method: serving/two_stream.py).
The program and its whole description: serving/evaluate_two_stream_main.py.
"""

from __future__ import annotations

import dataclasses
import sys

from command_line import console

console.quiet_native_logs()  # before TensorFlow is imported: it reads the level once

# pylint: disable=wrong-import-position
from command_line import entry, working_dir
from input_fn import datasets, frame_sample, pipeline
from serving import saved_model, two_stream, two_stream_outputs
from command_line.options import Options, Problem, Range, at_least, option


@dataclasses.dataclass(frozen=True)
class EvaluateTwoStreamOptions(Options):
  rgb_model: str = option('', 'RGB stream: its model_dir (the newest export/best/ is used) or '
                          'an exported SavedModel directory.', path=True)
  flow_model: str = option('', 'Flow stream: its model_dir or an exported SavedModel.',
                           path=True)
  rgb_data: str = option('', 'RGB eval data: the --out of //data_tools:prepare (test shards).',
                         path=True)
  flow_data: str = option('', 'Flow eval data: the --out of //data_tools:prepare '
                          '--source=flow.', path=True)
  flow_weight: float = option(0.5, 'Weight of the Flow stream in the fusion; RGB gets '
                              '1 - flow_weight. 0.5: equal weights.',
                              valid=Range(low=0.0, high=1.0))
  eval_clips: int = option(5, 'Clips per video, starts spread evenly over the video; a '
                           'video\'s prediction is the mean softmax of its clips.',
                           valid=at_least(1))
  eval_crops: int = option(1, 'Crops per clip: 1 (centre) or 3 (start, centre and end of the '
                           'long side); a video averages eval_clips x eval_crops views.',
                           choices=datasets.EVAL_CROPS)
  eval_batch_size: int = option(16, 'Clips per model call.', valid=at_least(1))
  json_out: str = option('two_stream_eval.json', 'Where to write the table as JSON.',
                         path=True)
  splits: tuple[int, ...] = option((), 'Evaluate each of these splits (e.g. 1,2,3), `{split}` '
                                   'in --rgb_model, --flow_model, --rgb_data and --flow_data '
                                   'standing for the split, and print the mean video top-1 '
                                   'over them (the standard protocol). Empty: the paths as '
                                   'given.', choices=datasets.SPLITS)
  dataset: str = option('', 'The dataset of both eval data (ucf101, hmdb51 or list); empty: '
                        'the one their records hold. Another than theirs stops the run.',
                        choices=('',) + datasets.NAMES)

PATHS = ('rgb_model', 'flow_model', 'rgb_data', 'flow_data')


def check_options(options: EvaluateTwoStreamOptions) -> None:
  """Raises `entry.Refused` naming the first option that cannot work (before any model
  is loaded)."""
  missing = [f'--{name}' for name in PATHS if not getattr(options, name)]
  if missing:
    raise entry.Refused(Problem(missing[0][2:], f'give {", ".join(missing)}'))
  problem = working_dir.unwritable(options.json_out)
  if problem:
    raise entry.Refused(Problem('json_out', f'--json_out={options.json_out}: {problem}'))
  placeholders = [f'--{name}' for name in PATHS if '{split}' in getattr(options, name)]
  if options.splits and len(placeholders) != len(PATHS):
    lacking = [f'--{name}' for name in PATHS if f'--{name}' not in placeholders]
    raise entry.Refused(Problem(lacking[0][2:], f'--splits needs {{split}} in '
                                f'{", ".join(lacking)} (one model and one eval directory per '
                                'split, e.g. --rgb_model=runs/rgb_split{split})'))
  if placeholders and not options.splits:
    raise entry.Refused(Problem('splits', f'{", ".join(placeholders)} hold {{split}}: give '
                                '--splits (e.g. --splits=1,2,3)'))


def _check_crops(data_dir: str, crop_size: int, crops: int) -> None:
  """Raises `entry.Refused` when `crops` evaluation crops of the records' frames would not
  be that many distinct views (`pipeline.eval_crops_problem`, on a sample of the records)."""
  if crops == 1:
    return
  for video, _, height, width in frame_sample.records_frame_sample(data_dir, 'test'):
    problem = height and width and pipeline.eval_crops_problem(height, width, crop_size, crops)
    if problem:
      raise entry.Refused(Problem(
          'eval_crops', f'--eval_crops={crops} with the model\'s crop {crop_size}: in the '
          f'records of {data_dir} (test video {video}), {problem}; use --eval_crops=1, or '
          'records prepared with a larger --short_side'))


def evaluate(paths: dict[str, str], options: EvaluateTwoStreamOptions,
             path_prefix: str, split: int | None = None) -> dict:
  """Checks that the four `paths` agree (`two_stream.check_agreement`: --dataset, `split`
  when given, class names), loads both models of `paths`, predicts every test video of each
  stream, writes the confusion PNGs and per-class CSV (`two_stream_outputs`, paths starting
  with `path_prefix`) and returns the table (`two_stream.report`, classes named by the RGB
  records) with `training_videos_checked`: stream -> whether its model_dir listed its
  training videos, so none of them could be among the test videos (False: evaluated with a
  warning, unchecked), and `files`: the paths written."""
  two_stream.check_agreement(paths, split, options.dataset)
  models = {stream: saved_model.load_model(paths[f'{stream}_model'], stream)
            for stream in ('rgb', 'flow')}
  checked = {}
  for stream, model in models.items():
    warning = two_stream.check_stream(model, paths[f'{stream}_model'], paths[f'{stream}_data'])
    checked[stream] = warning is None
    if warning:
      print(f'evaluate_two_stream: warning: {warning}', file=sys.stderr)
  for stream, model in models.items():
    _check_crops(paths[f'{stream}_data'], model.size, options.eval_crops)
  rgb, flow = (two_stream.predict_stream(models[stream], paths[f'{stream}_data'],
                                         options.eval_clips, options.eval_batch_size,
                                         crops_per_video=options.eval_crops)
               for stream in ('rgb', 'flow'))
  names = two_stream.class_names(paths['rgb_data'])
  result = two_stream.report(rgb, flow, options.flow_weight, names)
  files = two_stream_outputs.write(
      result, two_stream.confusion_matrices(rgb, flow, options.flow_weight), names, path_prefix)
  return dict(result, training_videos_checked=checked, files=files)

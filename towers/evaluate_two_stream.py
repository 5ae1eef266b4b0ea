"""Fuses a trained RGB model and a trained Flow model per video and prints one table.

  bazel run //towers:evaluate_two_stream -- \\
    --rgb_model=runs/ucf101_i3d_rgb --rgb_data=data/ucf101/tfrecord \\
    --flow_model=runs/ucf101_i3d_flow --flow_data=data/ucf101/flow_tfrecord

Prints RGB, Flow and Fusion with video-level top-1, top-5 and mean per-class accuracy and
writes the same as JSON (--json_out). Method: `towers/two_stream.py`.

The standard protocol of UCF101 and HMDB51 (the mean over the three official splits), in
one run: --splits=1,2,3 with `{split}` in the four paths, e.g.
  --rgb_model=runs/hmdb51_rgb_split{split} --rgb_data=data/hmdb51/tfrecord_split{split} ...
prints each split's table, then video top-1 per split and the mean; the JSON holds
{'splits': {k: table}, 'mean': rows}.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys

from command_line import console

console.quiet_native_logs()  # before TensorFlow is imported: it reads the level once

# pylint: disable=wrong-import-position
from command_line import entry, working_dir
from input_fn import frame_sample, pipeline
from towers import two_stream
from command_line.options import Range, option


@dataclasses.dataclass(frozen=True)
class EvaluateTwoStreamOptions:
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
                           'video\'s prediction is the mean softmax of its clips.')
  eval_crops: int = option(1, 'Crops per clip: 1 (centre) or 3 (start, centre and end of the '
                           'long side); a video averages eval_clips x eval_crops views.')
  eval_batch_size: int = option(16, 'Clips per model call.')
  json_out: str = option('two_stream_eval.json', 'Where to write the table as JSON.',
                         path=True)
  splits: tuple[int, ...] = option((), 'Evaluate each of these splits (e.g. 1,2,3), `{split}` '
                                   'in --rgb_model, --flow_model, --rgb_data and --flow_data '
                                   'standing for the split, and print the mean video top-1 '
                                   'over them (the standard protocol). Empty: the paths as '
                                   'given.')

PATHS = ('rgb_model', 'flow_model', 'rgb_data', 'flow_data')


def check_options(options: EvaluateTwoStreamOptions) -> None:
  """Raises `entry.Refused` naming the first option that cannot work (before any model
  is loaded)."""
  missing = [f'--{name}' for name in ('rgb_model', 'flow_model', 'rgb_data', 'flow_data')
             if not getattr(options, name)]
  if missing:
    raise entry.Refused(f'give {", ".join(missing)}')
  if options.eval_clips < 1 or options.eval_batch_size < 1:
    raise entry.Refused('eval_clips and eval_batch_size must be positive')
  if options.eval_crops not in (1, 3):
    raise entry.Refused(f'--eval_crops={options.eval_crops}: must be 1 or 3')
  problem = working_dir.unwritable(options.json_out)
  if problem:
    raise entry.Refused(f'--json_out={options.json_out}: {problem}')
  if len(set(options.splits)) != len(options.splits) or \
      any(k not in (1, 2, 3) for k in options.splits):
    raise entry.Refused(f'--splits={",".join(map(str, options.splits))}: each of 1, 2, 3 at '
                        'most once')
  placeholders = [f'--{name}' for name in PATHS if '{split}' in getattr(options, name)]
  if options.splits and len(placeholders) != len(PATHS):
    lacking = [f'--{name}' for name in PATHS if f'--{name}' not in placeholders]
    raise entry.Refused(f'--splits needs {{split}} in {", ".join(lacking)} (one model and one '
                        'eval directory per split, e.g. --rgb_model=runs/rgb_split{split})')
  if placeholders and not options.splits:
    raise entry.Refused(f'{", ".join(placeholders)} hold {{split}}: give --splits (e.g. '
                        '--splits=1,2,3)')


def _check_crops(data_dir: str, crop_size: int, crops: int) -> None:
  """Raises `entry.Refused` when `crops` evaluation crops of the records' frames would not
  be that many distinct views (`pipeline.eval_crops_problem`, on a sample of the records)."""
  if crops == 1:
    return
  for video, _, height, width in frame_sample.records_frame_sample(data_dir, 'test'):
    problem = height and width and pipeline.eval_crops_problem(height, width, crop_size, crops)
    if problem:
      raise entry.Refused(f'--eval_crops={crops} with the model\'s crop {crop_size}: in the '
                          f'records of {data_dir} (test video {video}), {problem}; use '
                          '--eval_crops=1, or records prepared with a larger --short_side')


def evaluate(paths: dict[str, str], options: EvaluateTwoStreamOptions) -> dict:
  """Loads both models of `paths`, predicts every test video of each stream and returns
  the table (`two_stream.report`)."""
  models = {stream: two_stream.load_model(paths[f'{stream}_model'], stream)
            for stream in ('rgb', 'flow')}
  for stream, model in models.items():
    warning = two_stream.check_stream(model, paths[f'{stream}_model'], paths[f'{stream}_data'])
    if warning:
      print(f'evaluate_two_stream: warning: {warning}', file=sys.stderr)
  for stream, model in models.items():
    _check_crops(paths[f'{stream}_data'], model.size, options.eval_crops)
  rgb, flow = (two_stream.predict_stream(models[stream], paths[f'{stream}_data'],
                                         options.eval_clips, options.eval_batch_size,
                                         crops_per_video=options.eval_crops)
               for stream in ('rgb', 'flow'))
  return two_stream.report(rgb, flow, options.flow_weight)


def run(options: EvaluateTwoStreamOptions) -> None:
  """Evaluates the two streams (each split of --splits), prints and writes the tables."""
  if not options.splits:
    output = evaluate({name: getattr(options, name) for name in PATHS}, options)
    print(two_stream.format_table(output))
  else:
    results = {}
    for split in options.splits:
      paths = {name: getattr(options, name).replace('{split}', str(split)) for name in PATHS}
      results[split] = evaluate(paths, options)
      print(f'split {split}: ' + two_stream.format_table(results[split]))
    mean = two_stream.mean_over_splits(results)
    print(two_stream.format_splits_table(results, mean))
    output = {'splits': {str(k): v for k, v in results.items()}, 'mean': mean}
  os.makedirs(os.path.dirname(options.json_out) or '.', exist_ok=True)
  with open(options.json_out, 'w') as f:
    json.dump(output, f, indent=1)
  print(f'written to {options.json_out}')


PROGRAM = entry.Program('evaluate_two_stream', run, EvaluateTwoStreamOptions,
                        check=check_options,
                        refused=(two_stream.TwoStreamError, FileNotFoundError), verbose=True)


if __name__ == '__main__':
  PROGRAM.start()

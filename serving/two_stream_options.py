"""The options of //serving:evaluate_two_stream (`EvaluateTwoStreamOptions`) and their checks
(`check_options`, before any model loads). No TensorFlow here: the program refuses options
that cannot work before TensorFlow loads (serving/evaluate_two_stream_main.py); the
evaluation is serving/evaluate_two_stream.py.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from command_line import entry, working_dir
from command_line.options import Options, Problem, Range, at_least, option
from input_fn import datasets
from serving import output_paths, two_stream_outputs


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
  json_out: str = option('two_stream_eval.json', 'Where to write the table as JSON (a .json '
                         'path; the per-class CSV and confusion PNGs go beside it).',
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
  if not options.json_out.lower().endswith('.json'):
    raise entry.Refused(Problem('json_out', f'--json_out={options.json_out}: must end in .json '
                                '(the table is JSON; its per-class CSV and confusion PNGs are '
                                'named after it)'))
  for split in options.splits or (None,):
    problem = _output_problem(options, split)
    if problem:
      raise entry.Refused(problem)
  placeholders = [f'--{name}' for name in PATHS if '{split}' in getattr(options, name)]
  if options.splits and len(placeholders) != len(PATHS):
    lacking = [f'--{name}' for name in PATHS if f'--{name}' not in placeholders]
    raise entry.Refused(Problem(lacking[0][2:], f'--splits needs {{split}} in '
                                f'{", ".join(lacking)} (one model and one eval directory per '
                                'split, e.g. --rgb_model=runs/rgb_split{split})'))
  if placeholders and not options.splits:
    raise entry.Refused(Problem('splits', f'{", ".join(placeholders)} hold {{split}}: give '
                                '--splits (e.g. --splits=1,2,3)'))


def _is_table(value: Any) -> bool:
  """Whether `value` (`output_paths.content`) is a file evaluate_two_stream writes: its
  JSON table (one split or --splits) or its per-class CSV."""
  if isinstance(value, dict):
    return {'rows', 'per_class'} <= set(value) or {'splits', 'mean'} <= set(value)
  return value == list(two_stream_outputs.CSV_COLUMNS)


def _output_problem(options: EvaluateTwoStreamOptions, split: int | None) -> Problem | None:
  """Why --json_out, or the per-class CSV beside it, of `split` (None: no --splits) must not
  be written (`output_paths.overwrite_problem`: inside a model or data directory of the
  run, or over a file evaluate_two_stream did not write)."""
  read_dirs = {name: getattr(options, name).replace('{split}', str(split)) for name in PATHS}
  csv_path = two_stream_outputs.prefix(options.json_out, split) + '_per_class.csv'
  for path in (options.json_out, csv_path):
    problem = output_paths.overwrite_problem('json_out', path, 'evaluate_two_stream',
                                             _is_table, read_dirs, options.json_out)
    if problem:
      return problem
  return None

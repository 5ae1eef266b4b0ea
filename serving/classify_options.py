"""The options of //serving:classify (`ClassifyOptions`), their checks (`check_options`) and
the error that refuses a model or an option (`ClassifyError`). No TensorFlow here: the
program refuses options that cannot work before TensorFlow loads (serving/classify_main.py);
the method is serving/classifier.py.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from command_line import entry, working_dir
from command_line.options import Options, Problem, Range, at_least, option
from input_fn import datasets
from serving import output_paths


class ClassifyError(ValueError):
  """The model or the options cannot classify; the message says what to fix.

  `reason`: what is wrong, one short key (that of the `saved_model.ModelError` or
  `ExportInfoError` behind it, else 'assets_missing', 'not_described', 'no_flow_extraction',
  'flow_not_extracted', 'classes', 'dataset', 'crops', 'crops_stretched', 'not_positive' or
  'flow_weight'); `path`: the model or file at fault,
  else None; `option`: the option at fault, else None; `fields`: the video_model.json fields
  that contradict the model ('not_described').
  """

  def __init__(self, message: str, reason: str, path: str | None = None,
               option: str | None = None, fields: tuple[str, ...] = ()) -> None:
    super().__init__(message)
    self.reason = reason
    self.path = path
    self.option = option
    self.fields = fields


@dataclasses.dataclass(frozen=True)
class ClassifyOptions(Options):
  model: str = option('', 'Exported SavedModel directory, a model_dir or its export/best/ '
                      '(the newest export there is used). With --flow_model: the RGB '
                      'stream.', path=True)
  flow_model: str = option('', 'Two-stream: the Flow model (model_dir or export); its TV-L1 '
                           'flow is computed from the videos with the settings its training '
                           'flow was extracted with.', path=True)
  flow_weight: float = option(0.5, 'Two-stream: weight of the Flow stream in the fusion; RGB '
                              'gets 1 - flow_weight.', valid=Range(low=0.0, high=1.0))
  clips: int = option(0, 'Clips per video, starts spread evenly over the video; 0: the '
                      'eval_clips the model was evaluated with in training.', valid=at_least(0))
  crops: int = option(1, 'Crops per clip: 1 (centre) or 3 (start, centre and end of the '
                      'long side). A video\'s prediction averages its clips x crops views.',
                      choices=datasets.EVAL_CROPS)
  top_k: int = option(5, 'Classes shown per video.', valid=at_least(1))
  batch_size: int = option(16, 'Views per model call.', valid=at_least(1))
  output: str = option('', 'Also write the results here: .json or .csv.', path=True)
  dataset: str = option('', 'The dataset the models trained on (ucf101, hmdb51 or list); '
                        'empty: not checked. Another than their exports say stops the run.',
                        choices=('',) + datasets.NAMES)


def check_options(options: ClassifyOptions) -> None:
  """Raises `entry.Refused` naming the first option that cannot work."""
  if not options.model:
    raise entry.Refused(Problem('model', 'give --model (an export directory or a model_dir)'))
  if options.output and not options.output.lower().endswith(('.json', '.csv')):
    raise entry.Refused(Problem('output',
                                f'--output={options.output}: must end in .json or .csv'))
  if not options.output:
    return
  problem = working_dir.unwritable(options.output)
  if problem:
    raise entry.Refused(Problem('output', f'--output={options.output}: {problem}'))
  read_dirs = {name: path for name, path in (('model', options.model),
                                             ('flow_model', options.flow_model)) if path}
  overwrite = output_paths.overwrite_problem('output', options.output, 'classify',
                                             _is_result, read_dirs)
  if overwrite:
    raise entry.Refused(overwrite)


def _is_result(value: Any) -> bool:
  """Whether `value` (`output_paths.content`) is a file classify writes: its JSON list of
  videos or its CSV (header `video, status, ..., error`)."""
  if isinstance(value, list) and value and isinstance(value[0], str):
    return value[:2] == ['video', 'status'] and value[-1] == 'error'
  return isinstance(value, list) and all(isinstance(v, dict) and 'video' in v for v in value)

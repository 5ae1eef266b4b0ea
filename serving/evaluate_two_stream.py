"""`check(paths, options)` then `evaluate(paths, options, prefix, checked)` -> the table of
`two_stream.report` for one split: both streams' models on their eval data, fused per video
(method: serving/two_stream.py), once every check (of every split: the program checks them
all before the first inference) has passed, --eval_crops against the records' frames too. The options and the checks made before
TensorFlow loads: serving/two_stream_options.py. The program and its whole description:
serving/evaluate_two_stream_main.py.
"""

from __future__ import annotations

import dataclasses
import sys

from command_line import entry
from command_line.options import Problem
from input_fn import frame_sample, pipeline
from serving import saved_model, two_stream, two_stream_outputs
from serving.two_stream_options import EvaluateTwoStreamOptions


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


@dataclasses.dataclass(frozen=True)
class Checked:
  """Both streams' models of one evaluation, loaded and checked against their eval data;
  `training_videos_checked`: stream -> whether its export listed its training videos."""
  models: dict[str, saved_model.StreamModel]
  training_videos_checked: dict[str, bool]


def check(paths: dict[str, str], options: EvaluateTwoStreamOptions,
          split: int | None = None) -> Checked:
  """Before any inference: the four `paths` agree (`two_stream.check_agreement`: --dataset,
  `split` when given, class names), both models load and each agrees with its eval data
  (`two_stream.check_stream`: a check it cannot make is one warning line each; the crops
  fit its frames), and both eval data were made from the same videos
  (`two_stream.check_same_videos`). Raises what those checks raise."""
  two_stream.check_agreement(paths, split, options.dataset)
  models = saved_model.load_pair(paths['rgb_model'], paths['flow_model'])
  checked = {}
  for stream, model in models.items():
    unchecked = two_stream.check_stream(model, paths[f'{stream}_model'],
                                        paths[f'{stream}_data'])
    checked[stream] = 'training_videos' not in unchecked
    for warning in unchecked.values():
      print(f'evaluate_two_stream: warning: {warning}', file=sys.stderr)
  for stream, model in models.items():
    _check_crops(paths[f'{stream}_data'], model.size, options.eval_crops)
  two_stream.check_same_videos(paths)
  return Checked(models, checked)


def evaluate(paths: dict[str, str], options: EvaluateTwoStreamOptions,
             path_prefix: str, checked: Checked) -> dict:
  """Predicts every test video of each stream with the `checked` models of `paths`
  (`check`), writes the confusion PNGs and per-class CSV (`two_stream_outputs`, paths
  starting with `path_prefix`) and returns the table (`two_stream.report`, classes named by
  the RGB records) with `training_videos_checked`: stream -> whether its model_dir listed
  its training videos, so none of them could be among the test videos (False: evaluated
  with a warning, unchecked), and `files`: the paths written."""
  models = checked.models
  rgb, flow = (two_stream.predict_stream(models[stream], paths[f'{stream}_data'],
                                         options.eval_clips, options.eval_batch_size,
                                         crops_per_video=options.eval_crops)
               for stream in ('rgb', 'flow'))
  names = two_stream.class_names(paths['rgb_data'])
  result = two_stream.report(rgb, flow, options.flow_weight, names)
  files = two_stream_outputs.write(
      result, two_stream.confusion_matrices(rgb, flow, options.flow_weight), names, path_prefix)
  return dict(result, training_videos_checked=checked.training_videos_checked, files=files)

"""The Estimator's train-and-evaluate loop for checked params: evaluation lines, the best export.

    run(params, network=None) -> dict   # final evaluation metrics

Callers check first: `towers.training.train_and_evaluate` (the public call, on one
machine); the cluster's runners get `make_exporters` through `towers.training.cluster_recipe`.
What one machine and the cluster's roles share comes from `towers.cluster`: a rerun's
decision (`final_evaluation.already_trained`), what follows each evaluation
(`exports.export_all`) and the time-limit stop (`time_limit`).
"""

from __future__ import annotations

import os
from typing import Any, Iterator

import numpy as np
import tensorflow as tf
from absl import logging

from command_line import status_file
from command_line.console import protocol
from model_fn.networks import Network, caller_network_name
from input_fn import factory
from model_fn.eval_spec import CLIP_LOSS, PER_CLASS, TOP_1
from towers import export_info
from towers.checkpoints import checkpoint_step
from towers.cluster import exports, final_evaluation, lineage, time_limit
from towers.cluster.evaluator import step_of
from towers.cluster.final_evaluation import scalars
from towers.estimator import build_estimator, serving_input_receiver_fn
from towers.params import TrainParams


def _higher_top_1(best_eval_result: dict, current_eval_result: dict) -> bool:
  return current_eval_result[TOP_1] > best_eval_result[TOP_1]


class EvaluationLine(tf.estimator.Exporter):
  """Logs one line per evaluation (`evaluation_line`) and records it as an `evaluation`
  status event {step, checkpoint_step, metrics: {name: float}, per_class: [float | None]}
  (`command_line/status_file.py`); exports nothing."""

  @property
  def name(self) -> str:
    return 'evaluation_line'

  def export(self, estimator, export_path, checkpoint_path, eval_result,
             is_the_final_export) -> None:
    del export_path, is_the_final_export
    params = estimator.params
    logging.info('%s', evaluation_line(eval_result, protocol(params.eval_clips,
                                                             params.eval_crops)))
    status_file.record('evaluation', step=int(eval_result.get('global_step', -1)),
                       checkpoint_step=step_of(checkpoint_path),
                       metrics={k: v for k, v in scalars(eval_result).items()
                                if k != 'global_step'},
                       per_class=[None if np.isnan(a) else float(a)
                                  for a in eval_result.get(PER_CLASS, ())])


def evaluation_line(metrics: dict[str, Any], views: str = '') -> str:
  """'evaluation at step N: top-1 0.8500  top-5 1.0000  ...  loss 0.4123' (the metrics
  present, in that order); with `views` (`protocol`) '... video 0.9000 (3 clips x 1 crop)'.
  top-1, top-5 and mean per class are per view, video per video; loss is the mean over the
  evaluated clips (CLIP_LOSS; the Estimator's `loss` for evaluations made without it)."""
  names = [('accuracy/top_1', 'top-1'), ('accuracy/top_5', 'top-5'),
           ('accuracy/mean_per_class', 'mean per class'), ('accuracy/video', 'video'),
           (CLIP_LOSS if CLIP_LOSS in metrics else 'loss', 'loss')]
  parts = [f'{label} {float(metrics[key]):.4f}' + (f' ({views})' if views and label == 'video'
                                                    else '')
           for key, label in names if key in metrics]
  return f'evaluation at step {int(metrics.get("global_step", -1))}: ' + '  '.join(parts)


class CleanBestExporter(tf.estimator.BestExporter):
  """BestExporter that keeps a better earlier export, says which step it exported, and
  leaves nothing behind when an export fails (a full disk).

  Each export's video_model.json records its `step`, `top_1`, `evaluation` (the test
  videos and evaluation flags that measured it: `export_info.evaluation_settings`) and
  `lineage` (the model_dir's model it exported: `towers/cluster/lineage.py`). The best
  rule: until it has exported once in this process (a resumed run, a rerun that finishes
  the final evaluation, a restarted evaluator), an evaluation is exported only when
  `<export_path>` holds no export, or one of another lineage or none recorded (another
  run's model, or one exported before lineages were recorded), or one measured otherwise
  (other test videos, by name or content, or evaluation flags), whose top-1 is no measure
  of this one (a warning says so), or its top-1 beats the held export's; after that,
  BestExporter's own (higher top-1 than the best so far). The SavedModel is written to
  `<export_path>/temp-<timestamp>` and renamed when complete; a failure or an interrupt
  (Ctrl-C) removes that partial directory, then raises."""

  def __init__(self, info: dict[str, Any], class_names: list[str], assets_dir: str,
               **kwargs) -> None:
    self._info, self._class_names, self._assets_dir = info, class_names, assets_dir
    # The files are written at each export, not before: a run refused at its start leaves
    # those of the last export as they were.
    super().__init__(assets_extra=export_info.assets_extra(assets_dir), **kwargs)
    self._exported = False

  def export(self, estimator, export_path, checkpoint_path, eval_result,
             is_the_final_export):
    if not self._exported and self._outdone(estimator.model_dir, export_path, eval_result):
      return None
    step, top_1 = int(eval_result['global_step']), float(eval_result[TOP_1])
    export_info.write_assets({**self._info, 'step': step, 'top_1': top_1,
                              lineage.KEY: lineage.of_model_dir(estimator.model_dir)},
                             self._class_names, self._assets_dir)
    before = set(tf.io.gfile.listdir(export_path)) if tf.io.gfile.isdir(export_path) else set()
    try:
      result = super().export(estimator, export_path, checkpoint_path, eval_result,
                              is_the_final_export)
    except BaseException:  # pylint: disable=broad-except  (re-raised)
      if tf.io.gfile.isdir(export_path):
        for name in set(tf.io.gfile.listdir(export_path)) - before:
          if name.rstrip('/').startswith('temp-'):
            tf.io.gfile.rmtree(os.path.join(export_path, name.rstrip('/')))
      raise
    if result is not None:
      logging.info('best model exported: step %d, top-1 %.4f, under %s', step, top_1,
                   export_path)
    self._exported = self._exported or result is not None
    return result

  def _get_best_eval_result(self, event_files):
    """BestExporter's best evaluation of the event files `event_files` matches, each read up
    to a damaged record (`evaluation_results`): one cut short by a full disk or a kill no
    longer fails every later export."""
    best = None
    for path in tf.io.gfile.glob(event_files) if event_files else ():
      for result in evaluation_results(path):
        if best is None or self._compare_fn(best, result):
          best = result
    return best

  def _outdone(self, model_dir: str, export_path: str, eval_result: dict[str, Any]) -> bool:
    """Whether the export held in `export_path` is kept (see the class docstring)."""
    if not tf.io.gfile.glob(os.path.join(export_path, '*', 'saved_model.pb')):
      return False
    held = export_info.newest_export_record(export_path) or {}
    current = lineage.of_model_dir(model_dir)
    if current is None or held.get(lineage.KEY) != current:
      logging.warning('%s holds a model of another training run (or one exported before runs '
                      'were told apart): its top-1 is no measure of this run\'s, whose best '
                      'replaces it', export_path)
      return False
    if held.get('evaluation') != self._info.get('evaluation'):
      logging.warning('%s holds the model of step %s, measured on other test videos or with '
                      'other evaluation flags: its top-1 is no measure of this run\'s, whose '
                      'best replaces it', export_path, held.get('step'))
      return False
    return eval_result[TOP_1] <= held['top_1']


def evaluation_results(path: str) -> Iterator[dict[str, float]]:
  """{tag: value} of each summary of the event file at `path`, up to its end or a damaged
  record (a write cut short), which is logged, not raised."""
  try:
    for event in tf.compat.v1.train.summary_iterator(path):
      values = {v.tag: v.simple_value for v in event.summary.value if v.HasField('simple_value')}
      if values:
        yield values
  except tf.errors.DataLossError:
    logging.warning('%s is cut short (a full disk or a kill while it was written): the '
                    'evaluations before that point are compared', path)


def make_exporters(params: TrainParams, network: Network | None = None
                   ) -> list[tf.estimator.Exporter]:
  """What follows each evaluation: its one-line summary, and with `export_savedmodel` the
  best top-1 model exported to model_dir/export/best (with class names and input settings
  in its assets.extra/; `network`: the caller's own, which they name)."""
  exporters = [EvaluationLine()]
  if params.export_savedmodel:
    info, class_names = export_info.describe(
        params, network and caller_network_name(network))
    exporters.append(CleanBestExporter(
        info, class_names, os.path.join(params.model_dir, 'export_assets'),
        name='best', serving_input_receiver_fn=serving_input_receiver_fn(params, class_names),
        compare_fn=_higher_top_1, exports_to_keep=1))
  return exporters


def trained_step(params: TrainParams) -> int | None:
  """The step of the latest checkpoint in model_dir if it is >= max_steps, else None."""
  step = checkpoint_step(params.model_dir)
  return step if step is not None and step >= params.max_steps else None


def finish(params: TrainParams, network: Network | None, step: int,
           evaluation: dict[str, Any], lacking: str = 'its final evaluation') -> dict[str, Any]:
  """The final evaluation of checkpoint `step` (>= max_steps) and its export
  (`towers/cluster/exports.py`), recorded as measured as `evaluation` says
  (`export_info.evaluation_settings`), for a run interrupted after its last checkpoint, or
  one trained without the export now asked for (`lacking` says which); returns the metrics."""
  logging.info('%s holds a checkpoint at step %d >= max_steps=%d without %s: evaluating '
               'and exporting it', params.model_dir, step, params.max_steps, lacking)
  return exports.evaluate_and_export(
      build_estimator(params, network, flags_describe_run=True),
      factory.make_input_fn(params, tf.estimator.ModeKeys.EVAL),
      params.eval_steps or None, tf.train.latest_checkpoint(params.model_dir),
      make_exporters(params, network), params.max_steps, evaluation)


def run(params: TrainParams, network: Network | None = None) -> dict[str, Any]:
  """Trains to `max_steps` with periodic evaluation, without the checks of
  `towers.training.train_and_evaluate` (which calls it after them); exports the best top-1
  model to `model_dir/export/best` (with class names and input settings,
  `towers/export_info.py`); returns the final evaluation metrics. `network` is the user's
  own `network(clips, ctx) -> logits` (see `build_estimator`); None trains `params.model`.
  A finished model_dir returns at once the one-number metrics its final evaluation recorded
  (`final_evaluation.already_trained`, as a cluster's tasks decide); one trained to max_steps without its final evaluation, or
  without an export while `export_savedmodel` asks for one, does that evaluation and export
  (`finish`). Every evaluation's exports: `towers/cluster/exports.py`.
  After the time-limit signal (`towers/cluster/time_limit.py`) it writes a checkpoint and
  raises `StoppedBeforeTheEnd`."""
  trained = trained_step(params)
  evaluation = export_info.evaluation_settings(params)
  if trained is not None and params.export_savedmodel and not tf.io.gfile.glob(
      os.path.join(params.model_dir, 'export', 'best', '*', 'saved_model.pb')):
    return finish(params, network, trained, evaluation, 'an export')
  if final_evaluation.already_trained(params.model_dir, params.max_steps, trained, evaluation):
    return final_evaluation.recorded_metrics(params.model_dir)
  if trained is not None:
    return finish(params, network, trained, evaluation)
  estimator = build_estimator(params, network, flags_describe_run=True)
  # The time-limit signal (towers/cluster/time_limit.py): a checkpoint, then
  # StoppedBeforeTheEnd, without the evaluation that would follow it.
  train_spec = tf.estimator.TrainSpec(
      factory.make_input_fn(params, tf.estimator.ModeKeys.TRAIN), max_steps=params.max_steps,
      hooks=[time_limit.stop_hook(time_limit.STOP, params.model_dir, params.max_steps)])
  eval_spec = tf.estimator.EvalSpec(factory.make_input_fn(params, tf.estimator.ModeKeys.EVAL),
                                    steps=params.eval_steps or None,
                                    exporters=[exports.Exports(make_exporters(params, network),
                                                               evaluation)],
                                    throttle_secs=params.throttle_secs, start_delay_secs=0)
  result = tf.estimator.train_and_evaluate(estimator, train_spec, eval_spec)
  return result[0] if result and result[0] else {}

"""The Estimator's train-and-evaluate loop for checked params: evaluation lines, the best export.

    run(params, network=None) -> dict   # final evaluation metrics

Callers check first: `towers.training.train_and_evaluate` (the public call, on one
machine); the cluster's runners get `make_exporters` through `towers.training.cluster_recipe`.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import tensorflow as tf
from absl import logging

from command_line import status_file
from command_line.console import protocol
from model_fn.networks import Network
from input_fn import factory
from model_fn.eval_spec import PER_CLASS, TOP_1
from towers import export_info
from towers.checkpoints import checkpoint_step
from towers.cluster import time_limit
from towers.cluster.evaluator import step_of
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


def scalars(metrics: dict[str, Any]) -> dict[str, float]:
  """The metrics that are one number, as floats: not the per-class vector, not the image
  summaries (serialized bytes)."""
  return {k: float(v) for k, v in metrics.items()
          if not isinstance(v, bytes) and getattr(v, 'size', 1) == 1}


def evaluation_line(metrics: dict[str, Any], views: str = '') -> str:
  """'evaluation at step N: top-1 0.8500  top-5 1.0000  ...  loss 0.4123' (the metrics
  present, in that order); with `views` (`protocol`) '... video 0.9000 (3 clips x 1 crop)'.
  top-1, top-5 and mean per class are per view, video per video."""
  names = [('accuracy/top_1', 'top-1'), ('accuracy/top_5', 'top-5'),
           ('accuracy/mean_per_class', 'mean per class'), ('accuracy/video', 'video'),
           ('loss', 'loss')]
  parts = [f'{label} {float(metrics[key]):.4f}' + (f' ({views})' if views and label == 'video'
                                                    else '')
           for key, label in names if key in metrics]
  return f'evaluation at step {int(metrics.get("global_step", -1))}: ' + '  '.join(parts)


class CleanBestExporter(tf.estimator.BestExporter):
  """BestExporter that leaves nothing behind when an export fails (a full disk): the
  SavedModel is written to `<export_path>/temp-<timestamp>` and renamed when complete;
  a failure removes that partial directory, then raises."""

  def export(self, estimator, export_path, checkpoint_path, eval_result,
             is_the_final_export):
    before = set(tf.io.gfile.listdir(export_path)) if tf.io.gfile.isdir(export_path) else set()
    try:
      return super().export(estimator, export_path, checkpoint_path, eval_result,
                            is_the_final_export)
    except Exception:
      if tf.io.gfile.isdir(export_path):
        for name in set(tf.io.gfile.listdir(export_path)) - before:
          if name.rstrip('/').startswith('temp-'):
            tf.io.gfile.rmtree(os.path.join(export_path, name.rstrip('/')))
      raise


def make_exporters(params: TrainParams) -> list[tf.estimator.Exporter]:
  """What follows each evaluation: its one-line summary, and with `export_savedmodel` the
  best top-1 model exported to model_dir/export/best (with class names and input settings
  in its assets.extra/)."""
  exporters = [EvaluationLine()]
  if params.export_savedmodel:
    info, class_names = export_info.describe(params)
    assets = export_info.write_assets(info, class_names,
                                      os.path.join(params.model_dir, 'export_assets'))
    exporters.append(CleanBestExporter(
        name='best', serving_input_receiver_fn=serving_input_receiver_fn(params, class_names),
        compare_fn=_higher_top_1, assets_extra=assets, exports_to_keep=1))
  return exporters


def finished_step(params: TrainParams) -> int | None:
  """The step of the latest checkpoint in model_dir if it is >= max_steps, else None."""
  step = checkpoint_step(params.model_dir)
  return step if step is not None and step >= params.max_steps else None


def run(params: TrainParams, network: Network | None = None) -> dict[str, Any]:
  """Trains to `max_steps` with periodic evaluation, without the checks of
  `towers.training.train_and_evaluate` (which calls it after them); exports the best top-1
  model to `model_dir/export/best` (with class names and input settings,
  `towers/export_info.py`); returns the final evaluation metrics. `network` is the user's
  own `network(clips, ctx) -> logits` (see `build_estimator`); None trains `params.model`.
  A model_dir already trained to max_steps returns {} at once. After the time-limit signal
  (`towers/cluster/time_limit.py`) it writes a checkpoint and raises `StoppedBeforeTheEnd`."""
  finished = finished_step(params)
  if finished is not None:
    logging.info('%s already holds a checkpoint at step %d >= max_steps=%d: nothing to do',
                 params.model_dir, finished, params.max_steps)
    status_file.record('already_trained', step=finished, max_steps=params.max_steps)
    return {}
  estimator = build_estimator(params, network)
  exporters = make_exporters(params)
  # The time-limit signal (towers/cluster/time_limit.py): a checkpoint, then
  # StoppedBeforeTheEnd, without the evaluation that would follow it.
  train_spec = tf.estimator.TrainSpec(
      factory.make_input_fn(params, tf.estimator.ModeKeys.TRAIN), max_steps=params.max_steps,
      hooks=[time_limit.stop_hook(time_limit.STOP, params.model_dir, params.max_steps)])
  eval_spec = tf.estimator.EvalSpec(factory.make_input_fn(params, tf.estimator.ModeKeys.EVAL),
                                    steps=params.eval_steps or None, exporters=exporters,
                                    throttle_secs=params.throttle_secs, start_delay_secs=0)
  result = tf.estimator.train_and_evaluate(estimator, train_spec, eval_spec)
  metrics = result[0] if result and result[0] else {}
  if metrics and params.export_savedmodel:
    logging.info('best model exported under %s', os.path.join(params.model_dir, 'export', 'best'))
  return metrics

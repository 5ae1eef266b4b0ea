"""What follows the evaluation of a checkpoint, on one machine and on a cluster alike.

    evaluate_and_export(estimator, input_fn, steps, checkpoint_path, exporters, max_steps,
                        evaluation)
    export_all(estimator, checkpoint_path, metrics, exporters, is_final, evaluation)
    Exports(exporters, evaluation)   # the same, as the one exporter of an EvalSpec

`evaluation` is what measures the run (`towers/export_info.evaluation_settings`), kept in
`final_evaluation.json`.

Every evaluation goes through `export_all`: the Estimator's own loop on one machine (its
EvalSpec holds `Exports`), the one machine's rerun that finishes an interrupted final
evaluation and the cluster's evaluator (both through `evaluate_and_export`). The
exporters come from the layer above (`Recipe.exporters`); after those of the final
checkpoint (at or past max_steps) the run is recorded as finished
(`towers/cluster/final_evaluation.py`), never before.
"""

from __future__ import annotations

import os
from typing import Any, Callable

import tensorflow as tf

from towers.cluster import final_evaluation


def export_all(estimator: tf.estimator.Estimator, checkpoint_path: str,
               metrics: dict[str, Any], exporters: list[tf.estimator.Exporter],
               is_final: bool, evaluation: dict[str, Any] | None = None) -> None:
  """Runs each exporter, in order, on the evaluated checkpoint into
  `<model_dir>/export/<exporter.name>`; when `is_final`, then writes
  `final_evaluation.json` for `metrics['global_step']`. An exporter's error is raised
  (the run is then not finished)."""
  export_base = os.path.join(estimator.model_dir, 'export')
  for exporter in exporters:
    exporter.export(estimator, os.path.join(export_base, exporter.name), checkpoint_path,
                    metrics, is_final)
  if is_final:
    final_evaluation.write(estimator.model_dir, int(metrics['global_step']),
                           final_evaluation.scalars(metrics), evaluation)


def evaluate_and_export(estimator: tf.estimator.Estimator, input_fn: Callable[..., Any],
                        steps: int | None, checkpoint_path: str,
                        exporters: list[tf.estimator.Exporter],
                        max_steps: int, evaluation: dict[str, Any] | None = None
                        ) -> dict[str, Any]:
  """Evaluates `checkpoint_path` (`steps` batches, None: the whole input) and passes its
  metrics to `export_all`, final when its global step is at or past `max_steps`; returns
  the metrics."""
  metrics = estimator.evaluate(input_fn, steps=steps, checkpoint_path=checkpoint_path)
  export_all(estimator, checkpoint_path, metrics, exporters,
             int(metrics['global_step']) >= max_steps, evaluation)
  return metrics


class Exports(tf.estimator.Exporter):
  """`exporters` as the one exporter of a `tf.estimator.EvalSpec`: the Estimator's loop
  calls `export_all` after each evaluation (final: its global step reached max_steps)."""

  def __init__(self, exporters: list[tf.estimator.Exporter],
               evaluation: dict[str, Any] | None = None) -> None:
    self._exporters, self._evaluation = exporters, evaluation

  @property
  def name(self) -> str:
    return 'exports'

  def export(self, estimator, export_path, checkpoint_path, eval_result,
             is_the_final_export) -> None:
    del export_path  # each exporter has its own
    export_all(estimator, checkpoint_path, eval_result, self._exporters, is_the_final_export,
               self._evaluation)

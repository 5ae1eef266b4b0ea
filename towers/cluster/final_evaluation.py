"""The file that says a run is finished: `<model_dir>/final_evaluation.json`.

    already_trained(model_dir, max_steps, trained) -> bool   a rerun's one decision
    write(model_dir, step, metrics)           once the final evaluation and export are done
    evaluated_step(model_dir) -> int | None   the checkpoint step that file is about
    best_top_1_before(model_dir, step)        the best top-1 of the evaluations before `step`

A checkpoint at max_steps alone does not finish a run, on one machine or on a cluster: the
final evaluation and the best export follow it (`towers/cluster/exports.py` writes this
file after them), and a run interrupted during them (Ctrl-C) does them on its next start.
The file is written last and atomically: {step: the checkpoint's global step, metrics:
{name: float}} (the final evaluation's one-number metrics).
"""

from __future__ import annotations

import glob
import os
from typing import Any, Iterator

import tensorflow as tf

from absl import logging

from command_line import status_file
from input_fn import json_files
from model_fn.eval_spec import TOP_1

FILE_NAME = 'final_evaluation.json'


def already_trained(model_dir: str, max_steps: int, trained: int | None) -> bool:
  """Whether the run in `model_dir` is finished: its latest checkpoint (step `trained`,
  None when none) is at or past `max_steps` and this file names it. Then one line says
  there is nothing to do and the `already_trained` event is recorded; a rerun of a finished
  run (one machine, or any cluster task but the ps) does nothing more."""
  if trained is None or trained < max_steps or evaluated_step(model_dir) != trained:
    return False
  logging.info('%s already holds a checkpoint at step %d >= max_steps=%d and its final '
               'evaluation: nothing to do', model_dir, trained, max_steps)
  status_file.record('already_trained', step=trained, max_steps=max_steps)
  return True


def scalars(metrics: dict[str, Any]) -> dict[str, float]:
  """The metrics that are one number, as floats: not the per-class vector, not the image
  summaries (serialized bytes)."""
  return {k: float(v) for k, v in metrics.items()
          if not isinstance(v, bytes) and getattr(v, 'size', 1) == 1}


def write(model_dir: str, step: int, metrics: dict[str, float]) -> None:
  """Records that checkpoint `step` was evaluated (and exported) as the run's last."""
  json_files.write_json(os.path.join(model_dir, FILE_NAME), {'step': step, 'metrics': metrics})


def evaluated_step(model_dir: str) -> int | None:
  """The step `write` recorded; None when the file is absent or unreadable."""
  record: dict[str, Any] | None = json_files.load_object(os.path.join(model_dir, FILE_NAME))
  step = record.get('step') if record else None
  return step if isinstance(step, int) else None


def best_top_1_before(model_dir: str, step: int) -> float | None:
  """The highest top-1 the evaluations of checkpoints before `step` wrote to
  `<model_dir>/eval` (the Estimator's event files); None when there was none."""
  found = [top_1 for path in glob.glob(os.path.join(model_dir, 'eval', 'events.out.tfevents.*'))
           for at, top_1 in _top_1s(path) if at < step]
  return max(found) if found else None


def _top_1s(path: str) -> Iterator[tuple[int, float]]:
  """(step, top-1) of each evaluation in one event file, up to a record cut short."""
  try:
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        if value.tag == TOP_1:
          yield event.step, value.simple_value
  except tf.errors.DataLossError:  # the writer was interrupted: what came before counts
    return

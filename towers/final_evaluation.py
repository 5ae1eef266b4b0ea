"""The file that says a one-machine run is finished: `<model_dir>/final_evaluation.json`.

    write(model_dir, step, metrics)           once the final evaluation and export are done
    evaluated_step(model_dir) -> int | None   the checkpoint step that file is about
    best_top_1_before(model_dir, step)        the best top-1 of the evaluations before `step`

A checkpoint at max_steps alone does not finish a run: the final evaluation and the best
export follow it, and a run interrupted during them (Ctrl-C) does them on its next start.
The file is written last and atomically: {step: the checkpoint's global step, metrics:
{name: float}} (the final evaluation's one-number metrics).
"""

from __future__ import annotations

import glob
import os
from typing import Any, Iterator

import tensorflow as tf

from input_fn import json_files
from model_fn.eval_spec import TOP_1

FILE_NAME = 'final_evaluation.json'


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

"""The file that says a run is finished: `<model_dir>/final_evaluation.json`.

    already_trained(model_dir, max_steps, trained, evaluation) -> bool   a rerun's one decision
    write(model_dir, step, metrics, evaluation)  once the final evaluation and export are done
    evaluated_step(model_dir, evaluation) -> int | None   the checkpoint step that file is about
    recorded_metrics(model_dir) -> {name: float}   what a finished run's rerun returns

A checkpoint at max_steps alone does not finish a run, on one machine or on a cluster: the
final evaluation and the best export follow it (`towers/cluster/exports.py` writes this
file after them), and a run interrupted during them (Ctrl-C) does them on its next start.
The file is written last and atomically: {step: the checkpoint's global step, metrics:
{name: float} (the final evaluation's one-number metrics), lineage: the model's
(`towers/cluster/lineage.py`), evaluation: what measured it (the test videos and the
evaluation flags, `towers/export_info.evaluation_settings`: the test videos' names and
content)}. It counts only for the model
of its lineage: the file of another run (a model_dir whose checkpoints were deleted and
trained again from step 0), or one written before lineages were recorded, finishes
nothing; the final checkpoint is then evaluated and exported again. So does a file whose
evaluation differs from the one asked (other --eval_clips, --eval_crops, --eval_steps,
--max_eval_videos or test videos, by name or content; a file written before the content was
recorded is evaluated again once): a partial `--eval_steps` evaluation does not stand for
the full one a later rerun asks for. Nor does one that read fewer videos than its test data
lists with no --eval_steps to cut it (records damaged then, perhaps restored since): each
rerun evaluates it again, and --strict_eval then fails on the shortfall.
"""

from __future__ import annotations

import os
from typing import Any

import tensorflow as tf

from absl import logging

from command_line import status_file
from input_fn import json_files
from towers.cluster import lineage

FILE_NAME = 'final_evaluation.json'
# The final evaluation's video coverage (`model_fn/eval_spec.py`).
VIDEOS_EVALUATED, VIDEOS_LISTED = 'eval/videos_evaluated', 'eval/videos_listed'


def already_trained(model_dir: str, max_steps: int, trained: int | None,
                    evaluation: dict[str, Any] | None = None) -> bool:
  """Whether the run in `model_dir` is finished: its latest checkpoint (step `trained`,
  None when none) is at or past `max_steps` and this file names it, measured as
  `evaluation` asks (None: however it was). Then one line says there is nothing to do and
  the `already_trained` event is recorded; a rerun of a finished run (one machine, or any
  cluster task but the ps) does nothing more."""
  if trained is None or trained < max_steps:
    return False
  step, measured = _recorded(model_dir)
  if step != trained:
    return False
  if not _measured_as(measured, evaluation):
    logging.info('%s holds the final evaluation of step %d, measured with other evaluation '
                 'flags or test videos: evaluating it again as asked', model_dir, trained)
    return False
  short = _shortfall(model_dir, measured)
  if short:
    logging.warning('%s holds the final evaluation of step %d on %s: evaluating it again '
                    '(damaged records may have been restored since)', model_dir, trained, short)
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


def write(model_dir: str, step: int, metrics: dict[str, float],
          evaluation: dict[str, Any] | None = None) -> None:
  """Records that checkpoint `step` of model_dir's model (its lineage) was evaluated (and
  exported) as the run's last, as `evaluation` says it was measured."""
  json_files.write_json(os.path.join(model_dir, FILE_NAME),
                        {'step': step, 'metrics': metrics,
                         lineage.KEY: lineage.of_model_dir(model_dir),
                         'evaluation': evaluation})


def evaluated_step(model_dir: str, evaluation: dict[str, Any] | None = None) -> int | None:
  """The step `write` recorded for model_dir's model; None when the file is absent or
  unreadable, or measured a model of another lineage (or of none recorded), or, given
  `evaluation`, was measured otherwise (a file that records none is taken as measured so)."""
  step, measured = _recorded(model_dir)
  return step if _measured_as(measured, evaluation) else None


def recorded_metrics(model_dir: str) -> dict[str, float]:
  """The one-number metrics of model_dir's final evaluation as `write` recorded them (no
  per-class vector, no images); {} when the file is absent, unreadable or of another
  lineage."""
  record = json_files.load_object(os.path.join(model_dir, FILE_NAME))
  if record is None or record.get(lineage.KEY) != lineage.of_model_dir(model_dir):
    return {}
  metrics = record.get('metrics')
  return {k: float(v) for k, v in metrics.items() if isinstance(v, (int, float))} \
      if isinstance(metrics, dict) else {}


def _recorded(model_dir: str) -> tuple[int | None, dict[str, Any] | None]:
  """(step, evaluation) the file records for model_dir's model, read once; (None, None)
  when it is absent or unreadable, or about a model of another lineage (or of none)."""
  record: dict[str, Any] | None = json_files.load_object(os.path.join(model_dir, FILE_NAME))
  current = lineage.of_model_dir(model_dir)
  if record is None or current is None or record.get(lineage.KEY) != current:
    return None, None
  step = record.get('step')
  return (step if isinstance(step, int) else None), record.get('evaluation')


def _shortfall(model_dir: str, measured: dict[str, Any] | None) -> str | None:
  """'<n> of <listed> listed videos' when the recorded final evaluation read fewer videos
  than its test data lists though no --eval_steps cut it (records damaged or unreadable
  then); None when it read them all, or cannot tell."""
  metrics = recorded_metrics(model_dir)
  evaluated, listed = metrics.get(VIDEOS_EVALUATED), metrics.get(VIDEOS_LISTED)
  if evaluated is None or listed is None or (measured or {}).get('eval_steps'):
    return None
  if round(evaluated) < round(listed):
    return f'{round(evaluated)} of {round(listed)} listed videos'
  return None


def _measured_as(measured: dict[str, Any] | None, asked: dict[str, Any] | None) -> bool:
  """Whether an evaluation recorded as `measured` (None: not recorded) stands for the one
  `asked` (None: any)."""
  return asked is None or measured in (None, asked)

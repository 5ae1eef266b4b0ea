"""The cluster's evaluator: evaluates each new checkpoint the chief writes, and the final
one, without ever reading a checkpoint that can vanish under it.

The chief keeps only `--keep_checkpoint_max` checkpoints; an evaluation of a big network
can outlast several checkpoint intervals, so the one being evaluated may be deleted while
it is read. Here the evaluator first *pins* the newest checkpoint: it hard-links its
files (a copy where links are not possible) into `model_dir/eval_pinned/`, evaluates
that, and removes the pin. When the checkpoint is gone before it could be pinned it moves
on to the newest. When it skips checkpoints it says how many on one line.

It ends once it has evaluated the newest checkpoint, at or past `max_steps`, after the
chief has exited (the chief's final checkpoint comes after every worker's last step).
The time-limit signal stops it at once, except when that final checkpoint is there: then
it finishes its evaluation (`towers/cluster/time_limit.py`). Each evaluation is followed
by its exports, and the final one by the record that the run is finished, as on one
machine (`towers/cluster/exports.py`); a rerun of a finished run evaluates nothing.
An evaluation that fails is reported on one line and the evaluator goes on with the next
checkpoint; a failed final evaluation raises `EvaluationFailed`. A chief unreachable for
`--chief_lost_secs` before training reached max_steps raises `ChiefLost`.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import time
from typing import Any

import tensorflow as tf
from absl import logging

from command_line import status_file
from towers.cluster import exports, final_evaluation, time_limit
from towers.cluster.base_runner import Recipe
from towers.cluster.shutdown import reachable
from towers.cluster.spec import ClusterTask
from towers.cluster.watchdog import chief_lost_message

PIN_DIR = 'eval_pinned'
POLL_SECS = 5.0  # how often the evaluator looks for a new checkpoint when idle


class EvaluationFailed(RuntimeError):
  """The evaluation of the final checkpoint failed; the message says why."""


class ChiefLost(RuntimeError):
  """The chief stopped answering for good before training reached max_steps."""


@dataclasses.dataclass(frozen=True)
class Checkpoint:
  prefix: str  # e.g. model_dir/model.ckpt-1200
  step: int


def step_of(prefix: str) -> int | None:
  """The step a checkpoint prefix is named with (model.ckpt-1200 -> 1200), None if none."""
  match = re.search(r'-(\d+)$', prefix)
  return int(match.group(1)) if match else None


def listed_checkpoints(model_dir: str) -> list[Checkpoint]:
  """The checkpoints model_dir's `checkpoint` file lists, oldest first ([] when none)."""
  state = tf.train.get_checkpoint_state(model_dir)
  if state is None:
    return []
  prefixes = list(state.all_model_checkpoint_paths)
  if state.model_checkpoint_path and state.model_checkpoint_path not in prefixes:
    prefixes.append(state.model_checkpoint_path)
  found = []
  for prefix in prefixes:
    if not os.path.isabs(prefix):
      prefix = os.path.join(model_dir, prefix)
    step = step_of(prefix)
    if step is not None:
      found.append(Checkpoint(prefix, step))
  return sorted(found, key=lambda c: c.step)


def candidates(model_dir: str) -> list[Checkpoint]:
  """The listed checkpoints the evaluator evaluates, oldest first: all but the chief's
  step-0 one (the initial weights), as on one machine, where evaluations follow training
  steps; evaluated, the untrained model could be exported as the best."""
  return [c for c in listed_checkpoints(model_dir) if c.step > 0]


def pin(checkpoint: Checkpoint, pin_dir: str) -> str | None:
  """Hard-links (or copies) the checkpoint's `.index` and `.data-*` files into `pin_dir`;
  returns the pinned prefix, or None (and nothing left in pin_dir) when a file of it was
  deleted first. A pinned checkpoint stays readable whatever the chief deletes."""
  directory, name = os.path.split(checkpoint.prefix)
  try:
    files = [f for f in os.listdir(directory)
             if f == name + '.index' or f.startswith(name + '.data-')]
  except FileNotFoundError:
    return None
  if not any(f.endswith('.index') for f in files) or len(files) < 2:
    return None
  shutil.rmtree(pin_dir, ignore_errors=True)
  os.makedirs(pin_dir)
  try:
    for f in files:
      source, target = os.path.join(directory, f), os.path.join(pin_dir, f)
      try:
        os.link(source, target)
      except FileNotFoundError:
        raise
      except OSError:  # another file system, or links not permitted: copy
        shutil.copyfile(source, target)
  except FileNotFoundError:
    shutil.rmtree(pin_dir, ignore_errors=True)
    return None
  return os.path.join(pin_dir, name)


def behind(listed: list[Checkpoint], last_step: int | None, newest: Checkpoint,
           save_steps: int) -> int:
  """How many checkpoints were written after `last_step` and before `newest`: those still
  listed, plus those already deleted (counted by the checkpoint interval)."""
  if last_step is None:
    return 0
  between = [c for c in listed if last_step < c.step < newest.step]
  first_listed = min([c.step for c in between] + [newest.step])
  deleted = max(0, (first_listed - last_step - 1) // save_steps) if save_steps else 0
  return len(between) + deleted


class Evaluator:
  """Evaluates model_dir's checkpoints as they come (see the module docstring)."""

  def __init__(self, recipe: Recipe, task: ClusterTask, poll_secs: float = POLL_SECS) -> None:
    params = self._params = recipe.params
    self._chief = task.cluster['chief'][0]
    self._poll_secs = poll_secs
    self._estimator = recipe.estimator(task)
    self._input_fn = recipe.input_fn(tf.estimator.ModeKeys.EVAL, None)
    self._exporters = recipe.exporters()
    self._evaluation = recipe.evaluation
    self._pin_dir = os.path.join(params.model_dir, PIN_DIR)
    self.last_step: int | None = None
    self.last_failure: str | None = None

  def final_due(self) -> bool:
    """Whether the final checkpoint (at or past max_steps) is there: its evaluation is due
    (the trainers are done), so the time-limit signal does not stop this evaluator."""
    listed = listed_checkpoints(self._params.model_dir)
    return bool(listed) and listed[-1].step >= self._params.max_steps

  def run(self) -> dict[str, Any]:
    """Evaluates until the final checkpoint is evaluated; returns its metrics."""
    metrics: dict[str, Any] = {}
    chief_down_since: float | None = None
    while True:
      newest = self._newest()
      if newest is not None:
        pinned = pin(newest, self._pin_dir)
        if pinned is None:
          logging.warning('evaluator: the checkpoint at step %d was deleted before it could '
                          'be pinned; moving on to the newest', newest.step)
          time.sleep(1.0)  # the chief lists its next checkpoint before deleting old ones
          continue
        metrics = self._evaluate(newest, pinned)
        continue
      if reachable(self._chief):
        chief_down_since = None
      else:
        chief_down_since = chief_down_since or time.time()
        if self.last_step is not None and self.last_step >= self._params.max_steps:
          break  # the chief has exited after its final checkpoint, which is evaluated
        down = time.time() - chief_down_since
        if down >= self._params.chief_lost_secs:
          raise ChiefLost('evaluator: ' + chief_lost_message(self._chief, down,
                                                             self._params.chief_lost_secs))
      done_soon = self.last_step is not None and self.last_step >= self._params.max_steps
      time.sleep(min(self._poll_secs, 1.0) if done_soon else self._poll_secs)
    if self.last_failure:
      raise EvaluationFailed(self.last_failure)
    logging.info('evaluator: evaluated the final checkpoint (step %d); exiting', self.last_step)
    return metrics

  def _newest(self) -> Checkpoint | None:
    """The newest of the `candidates` if it is newer than the last one evaluated, else
    None."""
    listed = candidates(self._params.model_dir)
    if not listed or (self.last_step is not None and listed[-1].step <= self.last_step):
      return None
    newest = listed[-1]
    skipped = behind(listed, self.last_step, newest, self._params.save_checkpoints_steps)
    if skipped:
      logging.warning('evaluator: %d checkpoint(s) behind: evaluating step %d next (last '
                      'evaluated step %d); the ones between are not evaluated', skipped,
                      newest.step, self.last_step)
      status_file.record('checkpoints_skipped', skipped=skipped, step=newest.step,
                         last_step=self.last_step)
    return newest

  def _evaluate(self, checkpoint: Checkpoint, pinned: str) -> dict[str, Any]:
    """Evaluates and exports the pinned checkpoint, then unpins it. A failure is logged on
    one line and remembered; {} then."""
    self.last_step = checkpoint.step
    try:
      metrics = exports.evaluate_and_export(self._estimator, self._input_fn,
                                            self._params.eval_steps or None, pinned,
                                            self._exporters, self._params.max_steps,
                                            self._evaluation)
      self.last_failure = None
      return metrics
    except Exception as e:  # pylint: disable=broad-except
      first = str(e).strip().splitlines()[0] if str(e).strip() else ''
      self.last_failure = (f'evaluation of the checkpoint at step {checkpoint.step} failed: '
                           f'{type(e).__name__}: {first}')
      logging.error('evaluator: %s; training goes on, the next checkpoint will be evaluated',
                    self.last_failure)
      return {}
    finally:
      shutil.rmtree(self._pin_dir, ignore_errors=True)


def evaluate_until_final(recipe: Recipe, task: ClusterTask) -> dict[str, Any]:
  """The evaluator task's life: see the module docstring. A finished run
  (`final_evaluation.already_trained`) returns {} at once."""
  params = recipe.params
  if final_evaluation.already_trained(params.model_dir, params.max_steps, recipe.trained_step(),
                                     recipe.evaluation):
    return {}
  evaluator = Evaluator(recipe, task)
  time_limit.exit_on_signal('evaluator', evaluator.final_due)
  return evaluator.run()

"""Helpers for tests that run real cluster processes on loopback."""

from __future__ import annotations

import os
import time
from typing import Any

from absl import flags

from command_line import status_file
from towers import flags as towers_flags
from towers.cluster.local_cluster import LocalCluster

# A tiny, fast training job: 2 towers per worker on virtual CPUs, synthetic clips. The
# console as a user sees it (no --verbose); specs read each task's status events
# (`LocalCluster.events`), exit codes and files, not its lines.
TRAIN_ARGS = ['--model=c3d_small', '--data_source=synthetic', '--num_classes=3',
              '--clip_frames=4', '--crop_size=16', '--batch_size=8', '--num_towers=2',
              '--lr_schedule=constant', '--lr_values=0.02', '--save_checkpoints_steps=40',
              '--log_every_steps=10', '--synthetic_eval_examples=32', '--data_dir=']


def make_cluster(model_dir: str, num_ps: int, num_workers: int, max_steps: int,
                 evaluator: bool = False, extra_args: tuple[str, ...] = ()) -> LocalCluster:
  args = TRAIN_ARGS + [f'--model_dir={model_dir}', f'--max_steps={max_steps}', *extra_args]
  return LocalCluster(num_ps, num_workers, args, evaluator=evaluator,
                      log_dir=os.path.join(model_dir, 'logs'), echo=None)


def params_from_argv(argv: list[str]) -> Any:
  """The TrainParams the train binary makes of the flags `argv` (a cluster role's, say)."""
  flag_values = flags.FlagValues()
  towers_flags.define_flags(flag_values)
  flag_values(['train'] + list(argv))
  return towers_flags.params_from_flags(flag_values, '/')


def progress_steps(events: list[dict[str, Any]]) -> list[int]:
  """Global steps of the progress events (one per progress line) in `events`."""
  return status_file.values(events, 'progress', 'step')


def session_steps(events: list[dict[str, Any]]) -> list[int]:
  """The global step each training session started from (its session_ready events) in
  `events`: 0 for fresh variables, the checkpoint's step after a restore."""
  return status_file.values(events, 'session_ready', 'step')


def wait_until(condition, timeout: float, what: str, period: float = 0.5) -> None:
  deadline = time.time() + timeout
  while time.time() < deadline:
    if condition():
      return
    time.sleep(period)
  raise AssertionError(f'timed out after {timeout:.0f} s waiting for {what}')

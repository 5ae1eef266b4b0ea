"""Checks to run before training starts, with messages that say what to fix.

    preflight.check(params)   # raises PreflightError listing every problem

The checks here read files or devices; the checks of the parameters alone run whenever a
`TrainParams` is made (`towers/params.py`). The `--warm_start_from` checkpoint must be
there (index and weights; the message says what to download from DeepMind's kinetics-i3d
repository and where to put it); the data must serve the run (`input_fn/data_checks.py`,
the one home of the data rules: data_dir, stream, labels vs num_classes, empty subsets,
max_eval_videos, eval_crops); `--model_dir` must not lie under a file; a model_dir with a
checkpoint must have room for more of its size (`command_line/disk_space.py`) and fit the
graph (`towers/checkpoint_shapes.py`: the one check that builds the graph, without weights).
Whether a resume keeps the model_dir's learning settings is decided once, by the training
model_fn before anything is restored (`towers/estimator.py`, `recording_settings`). Whether
a warm-start checkpoint's names and shapes fit the graph is checked when the graph exists
(`warm_start.make_warm_start_init_fn`). Every problem is a `Problem` naming its option.
"""

from __future__ import annotations

import os

import tensorflow as tf

from command_line import disk_space, working_dir
from command_line.options import Problem
from input_fn import data_checks
from model_fn import warm_start
from model_fn.networks import Network
from towers import checkpoint_shapes, earlier_run, run_flags
from towers.cluster import spec


class PreflightError(ValueError):
  """One or more things needed by the run are missing or inconsistent: the message says
  'cannot start:' and one '- ' line per problem; `problems` holds them (each a `Problem`
  naming its option)."""

  def __init__(self, found: list[Problem]) -> None:
    super().__init__('cannot start:\n- ' + '\n- '.join(found))
    self.problems = list(found)


def problems(params, num_workers: int = 1, trains: bool = True,
             network: Network | None = None) -> list[Problem]:
  """Every problem found, each naming its option; empty when the run can start.
  `num_workers`: the cluster's training workers, chief included (sync_replicas aggregates
  them). `trains`: False for a cluster's evaluator, which never warm-starts, so
  `--warm_start_from` (e.g. inherited from a shared flagfile) is not checked."""
  found = []
  if trains and params.warm_start_from and not _has_checkpoint(params.model_dir):
    try:
      warm_start.resolve_checkpoint(params.warm_start_from, params.stream)
    except warm_start.WarmStartError as e:
      found.append(Problem(e.option, str(e)))
  found += data_checks.problems(params)
  found += _model_dir_problems(params.model_dir)
  if params.data_source != 'synthetic' and params.data_dir and \
      os.path.realpath(params.model_dir) == os.path.realpath(params.data_dir):
    found.append(Problem('model_dir', f'model_dir={params.model_dir} is the data_dir: '
                         'checkpoints, events and exports would be written among the data; '
                         'choose another --model_dir'))
  found += _device_problems(params)
  backup = spec.backup_workers_problem(params.sync_replicas, params.backup_workers,
                                       num_workers)
  found += [backup] if backup else []
  if not found and _has_checkpoint(params.model_dir):
    found += checkpoint_shapes.problems(params, network)
    space = disk_space.free_space_problem(params.model_dir,
                                          tf.train.latest_checkpoint(params.model_dir))
    found += [Problem('model_dir', space)] if space else []
  return found


def _model_dir_problems(model_dir: str) -> list[Problem]:
  """model_dir must be (or be creatable as) a writable directory
  (`working_dir.unwritable_dir`) outside another run's model_dir (`_enclosing_run`) and
  holding none (`_enclosed_run`), and the checkpoint its `checkpoint` file names must be
  there (else training would start over from step 0 beside the checkpoints it holds)."""
  problem = working_dir.unwritable_dir(model_dir)
  if problem:
    return [Problem('model_dir', f'model_dir={model_dir} {problem}: checkpoints are written '
                    'there; choose another --model_dir')]
  outer = _enclosing_run(model_dir)
  if outer:
    return [Problem('model_dir', f'model_dir={model_dir} lies inside the model_dir {outer} '
                    'of another run (its checkpoints, evaluations and exports): the two runs\' '
                    'events would mix; choose a directory outside it')]
  inner = _enclosed_run(model_dir)
  if inner:
    return [Problem('model_dir', f'model_dir={model_dir} holds the model_dir {inner} of '
                    'another run: the two runs\' events would mix and that run could not be '
                    'continued; choose a directory of its own (e.g. beside it)')]
  missing = _missing_latest_checkpoint(model_dir)
  return [Problem('model_dir', missing)] if missing else []


def _enclosing_run(model_dir: str) -> str | None:
  """The nearest directory above `model_dir` (resolved) that is a run's model_dir (holds
  a `checkpoint` file or `run.flags`), else None."""
  folder = os.path.realpath(model_dir)
  while os.path.dirname(folder) != folder:
    folder = os.path.dirname(folder)
    if any(os.path.isfile(os.path.join(folder, name)) for name in ('checkpoint', run_flags.FILE)):
      return folder
  return None


def _enclosed_run(model_dir: str, depth: int = 3) -> str | None:
  """A folder up to `depth` levels below `model_dir` that is a run's model_dir (holds a
  `checkpoint` file or `run.flags`), else None; an earlier run set aside
  (`earlier_run.PREFIX`) is model_dir's own, and a run's folders are not searched."""
  if depth == 0 or not os.path.isdir(model_dir):
    return None
  try:
    children = sorted(e.path for e in os.scandir(model_dir) if e.is_dir())
  except OSError:
    return None
  for folder in children:
    if os.path.basename(folder).startswith(earlier_run.PREFIX):
      continue
    if any(os.path.isfile(os.path.join(folder, f)) for f in ('checkpoint', run_flags.FILE)):
      return folder
    inner = _enclosed_run(folder, depth - 1)
    if inner:
      return inner
  return None


def _missing_latest_checkpoint(model_dir: str) -> str | None:
  """The problem when model_dir's `checkpoint` file is damaged, names a checkpoint whose
  files are gone, or is gone itself while checkpoints are there (training would start over
  from step 0 and overwrite them); None otherwise."""
  held = sorted(tf.io.gfile.glob(f'{model_dir}/model.ckpt-*.index'),
                key=lambda p: int(p.rsplit('-', 1)[1][:-len('.index')]))
  newest = held[-1][:-len('.index')] if held else None
  restore = (f'write model_checkpoint_path: "{os.path.basename(newest)}" into it (the newest '
             'checkpoint there)' if newest else 'delete it to start over')
  if not tf.io.gfile.exists(f'{model_dir}/checkpoint'):
    if newest is None:
      return None
    return (f'{model_dir} holds checkpoints (the newest {newest}) but no `checkpoint` file '
            f'naming them, so training would start over from step 0 and overwrite them: '
            f'restore that file (a line model_checkpoint_path: "{os.path.basename(newest)}"), '
            'or train in a new --model_dir')
  try:
    state = tf.train.get_checkpoint_state(model_dir)
  except (ValueError, tf.errors.OpError) as e:
    return (f'{model_dir}/checkpoint cannot be read ({str(e).splitlines()[0]}): {restore}, or '
            'train in a new --model_dir')
  named = state.model_checkpoint_path if state else ''
  if not named:
    return (f'{model_dir}/checkpoint names no checkpoint: {restore}, or train in a new '
            '--model_dir') if newest else None
  if tf.io.gfile.glob(f'{named}.index'):
    return None
  return (f'{model_dir}/checkpoint names the checkpoint {named}, whose files are missing '
          f'(deleted, or a copy that missed them): restore them, or {restore}, or train in a '
          'new --model_dir')


def _device_problems(params) -> list[Problem]:
  """--tower_devices naming GPUs this machine does not have (soft placement would run
  those towers on the CPU without a word)."""
  gpus = [d for d in params.tower_devices if 'GPU' in d.upper()]
  if not gpus:
    return []
  visible = len(tf.config.list_physical_devices('GPU'))
  absent = [d for d in gpus if (tf.DeviceSpec.from_string(d).device_index or 0) >= visible]
  if absent:
    return [Problem('tower_devices',
                    f'tower_devices={",".join(params.tower_devices)} names '
                    f'{", ".join(absent)}, but this machine has {visible} GPU(s) visible to '
                    'TensorFlow: list devices it has (e.g. /cpu:0,/cpu:1 for virtual CPU '
                    'towers) or leave --tower_devices empty')]
  return []


def check(params, num_workers: int = 1, trains: bool = True,
          network: Network | None = None) -> None:
  """Raises `PreflightError` listing every problem, one per paragraph (`problems`;
  `network`: the caller's own, which a checkpoint is checked against)."""
  found = problems(params, num_workers, trains, network)
  if found:
    raise PreflightError(found)


def _has_checkpoint(model_dir: str) -> bool:
  """A resumed run restores model_dir and never warm-starts (Estimator's rule)."""
  return bool(model_dir) and tf.io.gfile.isdir(model_dir) and \
      tf.train.latest_checkpoint(model_dir) is not None

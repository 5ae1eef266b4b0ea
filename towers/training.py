"""`train_and_evaluate(params_or_dict, network=None)`: the one way to train (`//towers:train`).

    from towers import train_and_evaluate
    metrics = train_and_evaluate({'model_dir': '/tmp/run', 'num_towers': 2, 'max_steps': 100})

It gives the binary's guarantees from Python: the params are validated (`TrainParams`), the
cluster is found as the binary finds it (flags, TF_CONFIG or SLURM: `towers/cluster/spec.py`;
none trains on this machine), the preflight checks files, devices, data and a resumed
model_dir's graph (`towers/preflight.py`), and training refuses a resume with other learning
settings before anything is restored, and records them in model_dir
(`towers/train_settings.py`). On one machine it runs
`tf.estimator.train_and_evaluate` (`towers/train_and_evaluate_loop.py`); a cluster task runs its role's
runner (`towers/cluster/runners.py`, given `cluster_recipe(params)`), which starts its own
server with the towers' devices (the Estimator's would get one CPU). Problems raise the exceptions whose
messages `//towers:train` prints as its one `train: error:` line (`START_ERRORS`, exit code 2;
`END_ERRORS`, exit code 1).
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any, Mapping, Sequence

import numpy as np
import tensorflow as tf
from absl import logging

from command_line.console import protocol
from input_fn import datasets, factory, manifest
from input_fn.data_checks import DataError
from input_fn.manifest import ManifestError
from model_fn import confusion
from model_fn.eval_coverage import EvalCoverageError
from model_fn.eval_spec import CLIP_LOSS, PER_CLASS, class_names
from model_fn.networks import Network, caller_network_name
from model_fn.warm_start import WarmStartError
from model_fn.devices import resolve_tower_devices
from towers import model_dir_lock, preflight, run_summary, train_and_evaluate_loop
from towers import earlier_run, export_info, train_settings
from towers.checkpoints import checkpoint_step
from towers.cluster import lineage, runners
from towers.cluster import spec as cluster_spec
from towers.cluster import time_limit
from towers.cluster.base_runner import Recipe, assign_gpus
from towers.cluster.evaluator import EvaluationFailed
from towers.cluster.shutdown import TrainingIncomplete
from towers.estimator import as_params, build_estimator, session_config
from towers.params import ParamsError, TrainParams

# What stops a run: before training, nothing trained (the binary exits 2) ...
START_ERRORS = (ParamsError, cluster_spec.ClusterError, preflight.PreflightError, ManifestError,
                DataError, model_dir_lock.ModelDirBusy, train_settings.ResumeSettingsError,
                earlier_run.EarlierRunError, WarmStartError)
# ... or after it started, when it cannot end in right numbers (the binary exits 1).
END_ERRORS = (EvalCoverageError, TrainingIncomplete, EvaluationFailed)


def diverged_line(params: TrainParams) -> str:
  """The one line for a training loss that became NaN (the Estimator's NaN-loss check)."""
  try:
    step = checkpoint_step(params.model_dir)
  except (ValueError, tf.errors.OpError):  # a checkpoint cut short by the failure
    step = None
  kept = f' (its newest checkpoint, step {step}, may hold diverged weights)' if step else ''
  rates = ','.join(f'{v:g}' for v in params.lr_values)
  return (f'the training loss became NaN: the model diverged, most often from a learning rate '
          f'too high for it (--lr_values={rates}' +
          (f', scaled by --lr_reference_batch={params.lr_reference_batch}'
           if params.lr_reference_batch else '') +
          f'); lower it or add --warmup_steps, and train in a new --model_dir{kept}')


def train_and_evaluate(params: TrainParams | Mapping[str, Any] | None = None,
                       network: Network | None = None) -> dict[str, Any]:
  """Trains `params` (a TrainParams, or a dict of flag names to values: missing keys take
  the flags' defaults) to `max_steps` with periodic evaluation, exports the best top-1
  model to model_dir/export/best and returns the final evaluation metrics (for a model_dir
  already finished, the one-number metrics its final_evaluation.json recorded; {} for
  cluster tasks other than the evaluator). `network(clips, ctx) -> logits` is the user's own network (see
  `build_estimator`; one machine only); None trains `params.model`.

  A dict without 'dataset', 'split' or 'num_classes' trains on those its data holds, as
  `//towers:train` without those flags does (`with_data_settings`).

  Raises before training, as `//towers:train` does: `ParamsError` (a parameter),
  `ClusterError` (the cluster), `ModelDirBusy` (another live process trains in model_dir:
  `towers/model_dir_lock.py`; one machine and a cluster's chief hold its lock while they
  run), `PreflightError` (files, devices, data, a model_dir whose checkpoint does not fit:
  'cannot start:' and one '- ' line per problem), `ManifestError` (prepared data),
  `DataError` (data, `input_fn/data_checks.py`), `ResumeSettingsError` (a model_dir trained
  with other learning settings, raised before anything is restored); after:
  `EvalCoverageError`, `TrainingIncomplete`,
  `EvaluationFailed` (the cluster evaluator's final evaluation).
  """
  if not isinstance(params, TrainParams):
    unnamed = [name for name in DATA_SETTINGS if name not in (params or {})]
    params = with_data_settings(as_params(params), unnamed) if unnamed else params
  params = as_params(params)
  task = cluster_spec.resolve_cluster(params)
  if task is not None:
    if params.strategy != 'towers':
      raise ParamsError(f'strategy={params.strategy} trains on one machine, but a cluster is '
                        f'configured ({task.source}): use strategy=towers', option='strategy')
    if network is not None:
      raise ParamsError('train_and_evaluate(network=...) trains on one machine, but a cluster '
                        f'is configured ({task.source}): register the network '
                        '(model_fn.networks.register) and pass its name as model',
                        option='model')
    assign_gpus(params, task)  # before anything initialises TensorFlow's devices
  lock = _writer_lock(params, task)
  try:
    if task is None or task.task_type != 'ps':  # a ps needs neither data nor checkpoint
      preflight.check(params, task.num_workers if task else 1,
                      trains=task is None or task.task_type != 'evaluator', network=network)
      devices = resolve_tower_devices(params.num_towers, params.tower_devices)
      for line in run_summary.lines(params, devices, task, checkpoint_step(params.model_dir)):
        logging.info('%s', line)
      writes = task is None or task.task_type == 'chief'
      _check_finished_model_dir(params, task.num_workers if task else 1, writes,
                                network and caller_network_name(network))
      if writes:
        earlier_run.set_aside(params.model_dir)
    if task is None:
      if threading.current_thread() is threading.main_thread():
        time_limit.stop_trainer('train', lambda: checkpoint_step(params.model_dir),
                                params.max_steps)
      return train_and_evaluate_loop.run(params, network)
    return runners.run_task(cluster_recipe(params), task)
  finally:
    if lock is not None:
      lock.release()
    if task is None and threading.current_thread() is threading.main_thread():
      time_limit.ignore_signal()  # the work is done: nothing left to stop


def _check_finished_model_dir(params: TrainParams, num_workers: int, writes: bool,
                              network: str | None = None) -> None:
  """A model_dir trained to max_steps is only evaluated, exported or left as it is, so the
  check training makes in its model_fn (`train_settings.checked_record`: the learning
  settings and data it was trained with, and no test video it trained on) is made here:
  another data_dir or split stops the run instead of being evaluated on, or ignored.
  When `writes` (model_dir's writer) and its record has no lineage (trained before they
  were recorded), the checked record is written, giving the model one: its final
  evaluation and export are then made again and count. `network`: the caller's own
  network's name (`train_settings.settings`)."""
  step = checkpoint_step(params.model_dir)
  if step is not None and step >= params.max_steps:
    # Trained to `step`: a lower --max_steps trains nothing, so it changes no schedule.
    record = train_settings.checked_record(dataclasses.replace(params, max_steps=step),
                                           num_workers, network=network)
    if writes and lineage.of_model_dir(params.model_dir) is None:
      train_settings.write_record(params.model_dir, record)


# The settings a run takes from its data when it does not name them (`with_data_settings`).
DATA_SETTINGS = ('dataset', 'split', 'num_classes')


def with_data_settings(params: TrainParams,
                       fields: Sequence[str] = DATA_SETTINGS) -> TrainParams:
  """`params` with those of `fields` (`DATA_SETTINGS`) that its data holds: prepared records
  give their dataset, split and number of classes (the first readable manifest's,
  `input_fn/manifest.py`); videos or frames give the number of classes of their dataset's
  class list. For a run that did not name them; unchanged for what the data does not say
  (no manifest, no readable class list: the preflight names that) and for synthetic data."""
  if params.data_source == 'tfrecord':
    for subset in manifest.SUBSETS:
      try:
        found = manifest.read(params.data_dir, subset)
      except ManifestError:
        continue
      held = {'dataset': found.get('dataset', manifest.DEFAULT_DATASET),
              'split': found.get('split'), 'num_classes': found.get('num_classes')}
      usable = {'dataset': held['dataset'] in datasets.NAMES,
                'split': held['split'] in (1, 2, 3),
                'num_classes': isinstance(held['num_classes'], int) and held['num_classes'] >= 2}
      return dataclasses.replace(params, **{name: held[name] for name in fields
                                            if usable[name]})
    return params
  if params.data_source in ('videos', 'frames') and 'num_classes' in fields and \
      params.dataset != 'list':
    try:
      class_index, _ = datasets.read_classes(params.dataset, params.data_dir)
    except datasets.DatasetError:  # the preflight names it
      return params
    if class_index is not None and len(class_index) >= 2:
      return dataclasses.replace(params, num_classes=len(class_index))
  return params


def cluster_recipe(params: TrainParams) -> Recipe:
  """What the cluster's runners build (`towers/cluster/base_runner.py`), from `params`: the
  Estimator and input_fns of this package, the one-machine loop's exporters, and the
  session config that gives a trainer's server its towers' devices."""
  def trainer_session_config():
    devices = resolve_tower_devices(params.num_towers, params.tower_devices)
    return session_config(devices, devices.num_towers, params.gpu_memory_fraction)
  return Recipe(
      params=params,
      estimator=lambda task: build_estimator(params, cluster=task, flags_describe_run=True),
      input_fn=lambda mode, context: factory.make_input_fn(params, mode, context),
      exporters=lambda: train_and_evaluate_loop.make_exporters(params),
      trained_step=lambda: checkpoint_step(params.model_dir),
      session_config=trainer_session_config,
      evaluation=export_info.evaluation_settings(params))


def _writer_lock(params: TrainParams, task: cluster_spec.ClusterTask | None
                 ) -> model_dir_lock.Lock | None:
  """model_dir's writer lock, taken by a run on one machine or a cluster's chief (its
  other tasks are the same writer); raises `ModelDirBusy` naming the live writer. None
  for the other tasks, and when model_dir cannot be created (the preflight says why)."""
  if task is not None and task.task_type != 'chief':
    return None
  try:
    return model_dir_lock.acquire(params.model_dir)
  except OSError:
    return None


def final_metrics_text(params: TrainParams, metrics: dict[str, Any]) -> str:
  """'final metrics at step N (accuracy/video: 5 clips x 1 crop per video):', the table, and
  the classes of lowest clip top-1 (`worst_classes_line`) when the metrics have them."""
  text = (f'final metrics at step {int(metrics.get("global_step", -1))} (accuracy/video: '
          f'{protocol(params.eval_clips, params.eval_crops)} per video):\n'
          f'{metrics_table(metrics)}')
  if PER_CLASS in metrics:
    text += '\n' + worst_classes_line(metrics[PER_CLASS], class_names(params))
  return text


def worst_classes_line(per_class: Any, names: list[str] | None, k: int = 5) -> str:
  """'5 worst classes (clip top-1): name 0.1000, ...', lowest first, of the evaluated
  classes (`confusion.worst_classes`)."""
  worst = confusion.worst_classes(np.asarray(per_class, np.float64), names, k)
  return (f'{len(worst)} worst classes (clip top-1): ' +
          ', '.join(f'{name} {accuracy:.4f}' for name, accuracy in worst))


def metrics_table(metrics: dict[str, Any]) -> str:
  """The final metrics that are one number, one 'name  value' row each, names sorted
  (floats to 4 places); the Estimator's `loss` (a mean of per-batch means) is left out
  beside CLIP_LOSS, the mean over clips."""
  hidden = {'loss'} if CLIP_LOSS in metrics else set()
  rows = {k: f'{float(v):.4f}' if isinstance(v, float) or hasattr(v, 'dtype') and
          v.dtype.kind == 'f' else str(v) for k, v in metrics.items()
          if k in train_and_evaluate_loop.scalars(metrics) and k not in hidden}
  width = max(map(len, rows))
  return '\n'.join(f'  {name:<{width}}  {rows[name]:>10}' for name in sorted(rows))

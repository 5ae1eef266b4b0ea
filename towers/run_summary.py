"""The first console lines of a training run: what it trains, on what, how and where.

    lines(params, devices, task, start_step) -> list[str]

  run: c3d_small, stream rgb, 4 classes, clips of 8 frames of 32x32
  data: synthetic clips, 512 per epoch
  towers: 2 (/device:CPU:0, /device:CPU:1), 4+4 clips per micro-batch
  micro-batches: 1 of 8 clips = 8 clips per step
  steps: 0 to 600, checkpoint every 200, progress and summaries every 50
  cluster: none (this machine)
  settings: runs/demo/run.flags (--flagfile=it continues this run)
"""

from __future__ import annotations

from input_fn import manifest
from model_fn.batch_split import tower_sizes
from model_fn.devices import TowerDevices
from towers import run_flags
from towers.cluster.spec import ClusterTask
from towers.params import TrainParams


def lines(params: TrainParams, devices: TowerDevices, task: ClusterTask | None,
          start_step: int | None) -> list[str]:
  """The summary; `start_step` the checkpoint's step in model_dir (None: none yet)."""
  sizes = '+'.join(map(str, tower_sizes(params.batch_size, len(devices.devices))))
  return [
      f'run: {params.model}, stream {params.stream}, {params.num_classes} classes, clips of '
      f'{params.clip_frames} frames of {params.crop_size}x{params.crop_size}',
      f'data: {_data(params)}',
      f'towers: {len(devices.devices)} ({", ".join(devices.devices)}), {sizes} clips per '
      'micro-batch',
      f'micro-batches: {params.accumulate_steps} of {params.batch_size} clips = '
      f'{params.examples_per_step} clips per step',
      _steps(params, start_step),
      f'cluster: {_role(task)}',
      f'settings: {run_flags.path(params.model_dir)} (--flagfile=it continues this run)',
  ]


def _steps(params: TrainParams, start_step: int | None) -> str:
  if start_step is not None and start_step >= params.max_steps:
    return (f'steps: none to train (the checkpoint is at step {start_step}, --max_steps='
            f'{params.max_steps}): its final evaluation and export, if not made yet')
  return (f'steps: {start_step or 0} to {params.max_steps}, checkpoint every '
          f'{params.save_checkpoints_steps}, progress and summaries every '
          f'{params.log_every_steps}')


def _data(params: TrainParams) -> str:
  if params.data_source == 'synthetic':
    return f'synthetic clips, {params.synthetic_train_examples} per epoch'
  return (f'{params.data_source} from {params.data_dir} (dataset {params.dataset} split '
          f'{params.split}){_classes_without_videos(params)}')


def _classes_without_videos(params: TrainParams) -> str:
  """'; 2 of 5 classes have no training video (ExtraA, ExtraB)' for prepared records whose
  class list names classes none of their training records is of; '' otherwise."""
  if params.data_source != 'tfrecord':
    return ''
  try:
    prepared = manifest.read(params.data_dir, 'train')
  except manifest.ManifestError:
    return ''
  classes, counts = prepared.get('classes', ()), prepared.get('counts_per_class', {})
  empty = [name for name in classes if not counts.get(name)]
  if not empty:
    return ''
  shown = ', '.join(empty[:5]) + (', ...' if len(empty) > 5 else '')
  return f'; {len(empty)} of {len(classes)} classes have no training video ({shown})'


def _role(task: ClusterTask | None) -> str:
  if task is None:
    return 'none (this machine)'
  jobs = ', '.join(f'{len(hosts)} {job}' for job, hosts in sorted(task.cluster.items()))
  return f'{task.task_type} {task.task_index} of {jobs} (from {task.source})'

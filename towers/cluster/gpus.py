"""Which GPUs each task of a cluster sees, decided before TensorFlow initialises its devices.

TensorFlow's server initialises every GPU its process can see and, by default, reserves
nearly all of their memory; a ps beside a trainer would take the trainer's GPU. So, on
every launch path (flags, TF_CONFIG, SLURM, local_cluster, the batch script):
  - a ps sees no GPU;
  - the evaluator sees none, unless `evaluator_gpu` (then the GPUs its machine gives it);
  - a trainer (chief or worker) sees only its own GPUs: of the trainers whose cluster
    address names the same host, the k-th (in chief, worker order) sees the k-th group of
    `gpus_per_worker` (0: `num_towers`) of the GPUs the machine gives the process
    (`CUDA_VISIBLE_DEVICES` if set, else every NVIDIA GPU the driver lists).
Visibility is applied as `CUDA_VISIBLE_DEVICES` in this process's own environment, which
the CUDA runtime reads when TensorFlow first initialises its GPUs. This module imports no
TensorFlow.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import Mapping, MutableMapping

from towers.cluster.spec import ClusterError, ClusterTask

VISIBLE = 'CUDA_VISIBLE_DEVICES'
NVIDIA_PROC_DIR = '/proc/driver/nvidia/gpus'  # one entry per GPU while the driver is loaded


class VisibilityTooLate(RuntimeError):
  """GPU visibility was to be set after TensorFlow initialised its devices (it would be
  ignored)."""


@dataclasses.dataclass(frozen=True)
class RoleGpus:
  """The GPUs one task may see. `visible`: the `CUDA_VISIBLE_DEVICES` ids to set, () to
  hide every GPU, None to keep what the process was given. `reason`: one line for the log."""
  visible: tuple[str, ...] | None
  reason: str


def machine_gpus(environ: Mapping[str, str] = os.environ,
                 proc_dir: str = NVIDIA_PROC_DIR) -> tuple[str, ...]:
  """The GPU ids this process was given: `CUDA_VISIBLE_DEVICES` split on commas when set
  ('' = none), else '0'..'n-1' for the n GPUs the NVIDIA driver lists (none without it)."""
  if VISIBLE in environ:
    return tuple(i.strip() for i in environ[VISIBLE].split(',') if i.strip())
  try:
    return tuple(str(i) for i in range(len(os.listdir(proc_dir))))
  except OSError:
    return ()


def trainers_on_host(task: ClusterTask) -> tuple[int, int]:
  """(k, n): this trainer is the k-th (0-based) of n trainers whose addresses name its host."""
  host = task.address.rpartition(':')[0]
  trainers = [*task.cluster.get('chief', ()), *task.cluster.get('worker', ())]
  same = [a for a in trainers if a.rpartition(':')[0] == host]
  return same.index(task.address), len(same)


def plan_role_gpus(params, task: ClusterTask, environ: Mapping[str, str] = os.environ,
                   machine: tuple[str, ...] | None = None) -> RoleGpus:
  """The GPUs `task` may see (see the module docstring). `machine` defaults to
  `machine_gpus(environ)`. Raises `ClusterError` when the trainers sharing this machine
  need more GPUs than it gives, naming the counts and the flags that decide them."""
  if task.task_type == 'ps':
    return RoleGpus((), 'a ps serves variables on the CPU: no GPU visible')
  machine = machine_gpus(environ) if machine is None else machine
  if task.task_type == 'evaluator':
    if params.evaluator_gpu:
      return RoleGpus(None, f'--evaluator_gpu: GPUs {",".join(machine) or "none"} '
                            '(shared with a trainer)')
    return RoleGpus((), 'the evaluator runs on the CPU (--evaluator_gpu to give it a GPU): '
                        'no GPU visible')
  if not machine:
    return RoleGpus(None, 'no GPU on this machine')
  k, n = trainers_on_host(task)
  group = params.gpus_per_worker or max(params.num_towers, 0)
  if group and params.num_towers > group and not params.tower_devices:
    raise ClusterError(f'--gpus_per_worker={group} gives each trainer fewer GPUs than its '
                       f'--num_towers={params.num_towers}: raise it or lower --num_towers',
                       '--gpus_per_worker', group)
  if not group:
    if n == 1:
      return RoleGpus(None, f'every GPU of this machine ({",".join(machine)})')
    raise ClusterError(f'{n} trainers share host {task.address.rpartition(":")[0]} with '
                       '--num_towers=-1 (every visible GPU): say how many GPUs each gets '
                       'with --gpus_per_worker (or --num_towers)', '--gpus_per_worker', n)
  if n > 1 and len(machine) == group and environ.get('SLURM_JOB_ID'):
    # Slurm already gave this task its own GPUs (--gpus-per-task, --gres per task).
    return RoleGpus(machine, f'the GPUs Slurm gave this task ({",".join(machine)})')
  mine = machine[k * group:(k + 1) * group]
  if len(mine) < group:
    raise ClusterError(f'{task.name} is trainer {k + 1} of {n} on host '
                       f'{task.address.rpartition(":")[0]}, each with {group} GPU(s) '
                       f'(--gpus_per_worker, else --num_towers), but this machine gives '
                       f'{len(machine)} (GPU ids {",".join(machine)}): run fewer trainers '
                       'there (local_cluster: --workers), fewer towers each (--num_towers), '
                       f'or train on the CPU ({VISIBLE}= hides the GPUs)', '--gpus_per_worker',
                       len(machine))
  return RoleGpus(mine, f'GPUs {",".join(mine)}: group {k + 1} of {n} trainers on this machine')


def apply_role_gpus(role: RoleGpus, environ: MutableMapping[str, str] = os.environ) -> None:
  """Sets `CUDA_VISIBLE_DEVICES` for `role` (nothing when `role.visible` is None). Raises
  `VisibilityTooLate` when TensorFlow's eager runtime has already initialised its devices, as
  the setting would then be ignored."""
  if role.visible is None:
    return
  if environ is os.environ and _tensorflow_devices_initialised():
    raise VisibilityTooLate('GPU visibility must be set before TensorFlow initialises its '
                       'devices: plan and apply it before building any graph or server')
  environ[VISIBLE] = ','.join(role.visible)


def _tensorflow_devices_initialised() -> bool:
  if 'tensorflow' not in sys.modules:
    return False
  from tensorflow.python.eager import context  # pylint: disable=g-import-not-at-top
  return context.context()._initialized  # pylint: disable=protected-access

"""The base of every cluster role's runner, and what they share: the recipe, the server, GPUs.

Shaped after lingvo's runners (lingvo/runners.py and lingvo/base_runner.py, tensorflow/lingvo
at 168f61196b29f52d7f8492a35656eb82c399e7eb): one small base class holding the task's place
and what it builds, one subclass per job, each with its own loop (`start`), chosen by job name
(`towers/cluster/runners.py`).

What the tasks train comes from the layer above as a `Recipe` (`towers.training` builds it
from TrainParams): the Estimator, its input_fns, the exporters, the latest checkpoint's step
and the trainers' session config. So this package never imports `towers`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import tensorflow as tf
from absl import logging

from command_line import status_file
from towers.cluster.gpus import RoleGpus, apply_role_gpus, plan_role_gpus
from towers.cluster.spec import ClusterTask

InputFn = Callable[..., tf.data.Dataset]


@dataclasses.dataclass(frozen=True)
class Recipe:
  """What every task builds, given by the layer above. `params` is the run's TrainParams
  (read, never checked, here)."""
  params: Any
  estimator: Callable[[ClusterTask], tf.estimator.Estimator]  # this task's Estimator
  input_fn: Callable[[str, tf.distribute.InputContext | None], InputFn]  # mode, task's share
  exporters: Callable[[], list[tf.estimator.Exporter]]  # what follows each evaluation
  trained_step: Callable[[], int | None]  # the latest checkpoint's global step, None if none
  session_config: Callable[[], tf.compat.v1.ConfigProto]  # a trainer's devices and threads
  evaluation: dict[str, Any] | None = None  # what measures the run (final_evaluation.json)


class Runner:
  """One task's life in the cluster: `start()` runs it until training is over and returns
  the metrics it has ({} but for the evaluator)."""

  job = ''  # the task type it runs

  def __init__(self, recipe: Recipe, task: ClusterTask) -> None:
    self.recipe = recipe
    self.params = recipe.params
    self.task = task

  def start(self) -> dict[str, Any]:
    raise NotImplementedError

  def start_server(self) -> tf.distribute.Server:
    """This task's gRPC server (`start_server`)."""
    return start_server(self.recipe, self.task)


def start_server(recipe: Recipe, task: ClusterTask) -> tf.distribute.Server:
  """This task's gRPC server, with `server_config`."""
  cluster = tf.train.ClusterSpec({job: list(hosts) for job, hosts in task.cluster.items()})
  return tf.distribute.Server(cluster, job_name=task.task_type, task_index=task.task_index,
                              config=server_config(recipe, task), start=True)


def server_config(recipe: Recipe, task: ClusterTask) -> tf.compat.v1.ConfigProto:
  """On chief and workers as many CPU devices (and inter-op threads) as the towers need,
  GPU memory growing as needed (`Recipe.session_config`); on a ps one CPU device, no GPU
  device and TensorFlow's default threads, as it only serves reads and applies updates."""
  if task.task_type == 'ps':
    return tf.compat.v1.ConfigProto(device_count={'CPU': 1, 'GPU': 0})
  return recipe.session_config()


_assigned: dict[str, RoleGpus] = {}


def assign_gpus(params, task: ClusterTask) -> RoleGpus:
  """Decides and applies which GPUs this task sees (`towers/cluster/gpus.py`), once per
  process, before TensorFlow initialises its devices (the train binary calls it as soon
  as the role is known, `run_task` otherwise); logs one line saying which and why.
  Raises `ClusterError` when this machine cannot give the trainers their GPUs."""
  if task.name not in _assigned:
    role = plan_role_gpus(params, task)
    apply_role_gpus(role)
    _assigned[task.name] = role
    logging.info('%s: %s', task.name, role.reason)
    status_file.record('gpus', task=task.name,
                       visible=list(role.visible) if role.visible is not None else None)
  return _assigned[task.name]

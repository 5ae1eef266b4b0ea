"""Runs one task of a parameter-server cluster: ps, chief, worker or evaluator.

Why not plain `tf.estimator.train_and_evaluate` for every task: the Estimator starts its
own `tf.distribute.Server` and passes it only `gpu_options` from the session config, so on
a CPU cluster every task would have one CPU device and all towers would silently share
it. Here each ps, chief and worker starts its server itself with the full session config
(`device_count`), then the chief and workers call `Estimator.train` against that server.
The evaluator evaluates each new checkpoint, pinned so that the chief cannot delete it
under it (`towers/cluster_evaluator.py`; it serves nothing). Before any of it,
`assign_gpus` decides which GPUs the task sees (a ps none, the evaluator none unless
asked, each trainer its own: `towers/cluster/gpus.py`).

Asynchronous across workers by default; `--sync_replicas` wraps the optimizer in
`SyncReplicasOptimizer` (see `model_fn/tower_model_fn.py`). The chief writes checkpoints;
`MonitoredTrainingSession` recovers from a lost ps or worker by re-creating its session
(the chief restores the latest checkpoint). A ps that never comes back would make
TensorFlow retry forever, so a watchdog ends chief and workers after
`--ps_unreachable_secs`, and a chief that never comes back ends workers and ps tasks after
`--chief_lost_secs` (`chief_watchdog.py`). How the tasks end together:
`towers/cluster/shutdown.py`; stopping before a job's time limit: `time_limit.py`.
"""

from __future__ import annotations

import json
import os
import threading
import time

import tensorflow as tf
from absl import logging

from model_fn.devices import resolve_tower_devices
from towers import cluster_evaluator as evaluator
from towers import estimator_loop, inputs
from towers.checkpoints import checkpoint_step
from towers.cluster import shutdown, time_limit
from towers.cluster.chief_watchdog import ChiefWatchdog
from towers.cluster.gpus import RoleGpus, apply_role_gpus, plan_role_gpus
from towers.cluster.model_ready import ModelReadyHook
from towers.cluster.spec import ClusterTask, check_port_free
from towers.estimator import build_estimator, session_config

PS_UNREACHABLE_EXIT_CODE = 3


def run_task(params, task: ClusterTask) -> dict:
  """Runs this process's role until training is over (`towers/cluster/shutdown.py`): a ps
  until the chief says so, chief and workers until max_steps, the evaluator until it has
  evaluated the final checkpoint. Returns the evaluator's final metrics, {} for the
  others. Raises `shutdown.TrainingIncomplete` on the chief when a worker failed."""
  logging.info('cluster from %s: this is %s of %s', task.source, task.name,
               json.dumps(task.tf_config['cluster']))
  assign_gpus(params, task)
  if task.task_type == 'evaluator':
    metrics = evaluator.evaluate_until_final(params, task)
    time_limit.ignore_signal()  # its work is done
    return metrics
  check_port_free(task)
  if task.task_type == 'ps':
    time_limit.ignore_signal()
  else:
    stop = time_limit.stop_on_signal(task.name)
  server = start_server(params, task)
  if task.task_type != 'chief':
    ChiefWatchdog(task.name, task.cluster['chief'][0], params.chief_lost_secs).start()
  if task.task_type == 'ps':
    logging.info('ps %d serving variables at %s until training is over', task.task_index,
                 task.address)
    message = shutdown.serve_until_training_done(server, task)
    step = shutdown.held_global_step(server, task)
    logging.info('ps %d: the chief says training is over (%s); exiting%s', task.task_index,
                 message, '' if step is None else f' {shutdown.PS_FINAL_STEP} {step}')
    return {}
  finished = estimator_loop.finished_step(params)
  if finished is not None:
    logging.info('%s already holds a checkpoint at step %d >= max_steps=%d: nothing to do',
                 params.model_dir, finished, params.max_steps)
    _finish(params, task, server.target, f'{params.model_dir} was already trained')
    return {}
  PsWatchdog(task.cluster.get('ps', ()), params.ps_unreachable_secs).start()
  estimator = build_estimator(params, cluster=task)
  input_fn = inputs.make_input_fn(params, tf.estimator.ModeKeys.TRAIN, task.input_context())
  hooks = worker_hooks(estimator) + [time_limit.stop_hook(stop)]
  if task.task_type == 'chief':
    waiter = shutdown.WaitForWorkersHook(task, params.worker_lost_secs, skip=stop)
    config = estimator.config
    # Ours replaces the Estimator's own saver hook, so its final save comes after the wait.
    hooks = [waiter, tf.compat.v1.train.CheckpointSaverHook(
        params.model_dir, save_secs=config.save_checkpoints_secs,
        save_steps=config.save_checkpoints_steps,
        save_graph_def=config.checkpoint_save_graph_def), time_limit.stop_hook(stop)]
  try:
    estimator.train(input_fn, max_steps=params.max_steps, hooks=hooks)
  except Exception as e:
    if task.task_type == 'worker':
      shutdown.report_worker_done(server.target, task, shutdown.FAILED,
                                  f'{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ""}',
                                  params.ps_unreachable_secs)
    raise
  finally:
    time_limit.ignore_signal()  # training is over: a later signal has nothing to stop
  if stop.is_set():  # a worker does not report: the stopping chief waits for none
    if task.task_type == 'chief':
      _finish(params, task, server.target, 'stopped before the job\'s time limit')
    where = (f'checkpoint at step {checkpoint_step(params.model_dir)} written'
             if task.task_type == 'chief' else 'the chief writes the checkpoint')
    raise time_limit.StoppedBeforeTheEnd(
        f'{task.name}: stopped before max_steps={params.max_steps} for the job\'s time limit '
        f'({where}); training continues from the latest checkpoint when the job is '
        'requeued or resubmitted')
  logging.info('%s finished training at max_steps=%d', task.name, params.max_steps)
  if task.task_type == 'worker':
    _finish(params, task, server.target, 'done')
    return {}
  failures = '; '.join(f'{name}: {what}' for name, what in waiter.failures.items())
  _finish(params, task, server.target, f'failed: {failures}' if failures else 'every worker done')
  if failures:
    raise shutdown.TrainingIncomplete(f'training reached max_steps={params.max_steps} without '
                                      f'{failures}')
  return {}


def _finish(params, task: ClusterTask, target: str, message: str) -> None:
  """Tells the cluster that this trainer is done: a worker tells the chief, the chief
  tells every ps."""
  if task.task_type == 'worker':
    shutdown.report_worker_done(target, task, shutdown.OK, message, params.ps_unreachable_secs)
  else:
    shutdown.announce_training_done(target, task, message, params.ps_unreachable_secs)


def worker_hooks(estimator: tf.estimator.Estimator) -> list[tf.compat.v1.train.SessionRunHook]:
  """A non-chief worker waits for the chief's initialisation checking every 0.5 s,
  not TensorFlow's 30 s (see model_ready.py); the chief initialises, so needs no hook."""
  if estimator.config.is_chief:
    return []
  return [ModelReadyHook(estimator.config.master, estimator.config.session_config)]


def start_server(params, task: ClusterTask) -> tf.distribute.Server:
  """This task's gRPC server, with `server_config`."""
  cluster = tf.train.ClusterSpec({job: list(hosts) for job, hosts in task.cluster.items()})
  return tf.distribute.Server(cluster, job_name=task.task_type, task_index=task.task_index,
                              config=server_config(params, task), start=True)


def server_config(params, task: ClusterTask) -> tf.compat.v1.ConfigProto:
  """On chief and workers as many CPU devices (and inter-op threads) as the towers need,
  GPU memory growing as needed (`session_config`); on a ps one CPU device, no GPU device
  and TensorFlow's default threads, as it only serves reads and applies updates."""
  if task.task_type == 'ps':
    return tf.compat.v1.ConfigProto(device_count={'CPU': 1, 'GPU': 0})
  devices = resolve_tower_devices(params.num_towers, params.tower_devices)
  return session_config(devices, devices.num_towers, params.gpu_memory_fraction)


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
  return _assigned[task.name]


class PsWatchdog(threading.Thread):
  """Ends the process (exit code 3) when any ps task has refused TCP connections for
  `limit_secs` in a row, with a message naming it. Checks every `period_secs`."""

  def __init__(self, ps_addresses: tuple[str, ...], limit_secs: float,
               period_secs: float = 2.0) -> None:
    super().__init__(name='ps-watchdog', daemon=True)
    self._addresses = ps_addresses
    self._limit = limit_secs
    self._period = period_secs

  def run(self) -> None:
    down_since: dict[str, float] = {}
    while True:
      now = time.time()
      for address in self._addresses:
        if shutdown.reachable(address):
          down_since.pop(address, None)
          continue
        since = down_since.setdefault(address, now)
        if now - since >= self._limit:
          logging.error('ps task at %s has been unreachable for %.0f s (limit '
                        '--ps_unreachable_secs=%d): giving up. Restart it, or restart '
                        'the whole cluster to resume from the latest checkpoint.',
                        address, now - since, self._limit)
          logging.flush()
          os._exit(PS_UNREACHABLE_EXIT_CODE)  # pylint: disable=protected-access
      time.sleep(self._period)

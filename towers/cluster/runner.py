"""Runs one task of a parameter-server cluster: ps, chief, worker or evaluator.

Why not plain `tf.estimator.train_and_evaluate` for every task: the Estimator starts its
own `tf.distribute.Server` and passes it only `gpu_options` from the session config, so on
a CPU cluster every task would have one CPU device and all towers would silently share
it. Here each ps, chief and worker starts its server itself with the full session config
(`device_count`), then the chief and workers call `Estimator.train` against that server.
The evaluator runs `train_and_evaluate`'s continuous evaluation (it serves nothing).

Asynchronous across workers by default; `--sync_replicas` wraps the optimizer in
`SyncReplicasOptimizer` (see `model_fn/tower_model_fn.py`). The chief writes checkpoints;
`MonitoredTrainingSession` recovers from a lost ps or worker by re-creating its session
(the chief restores the latest checkpoint). A ps that never comes back would make
TensorFlow retry forever, so a watchdog ends chief and workers after
`--ps_unreachable_secs`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import threading
import time

import tensorflow as tf
from absl import logging

from model_fn.devices import resolve_tower_devices
from towers import inputs, training
from towers.cluster.spec import ClusterTask, check_port_free
from towers.estimator import build_estimator, session_config

PS_UNREACHABLE_EXIT_CODE = 3
EVALUATOR_CHECK_SECS = 5  # the evaluator looks for a new checkpoint at most this often


def run_task(params, task: ClusterTask) -> dict:
  """Runs this process's role until training ends (ps: until killed). Returns the final
  evaluation metrics for the evaluator, {} for the others."""
  os.environ['TF_CONFIG'] = json.dumps(task.tf_config)
  logging.info('cluster from %s: this is %s %d of %s', task.source, task.task_type,
               task.task_index, json.dumps(task.tf_config['cluster']))
  if task.task_type == 'evaluator':
    # With throttle_secs=0 the Estimator's evaluator loop spins on the latest checkpoint,
    # logging a warning each pass (hundreds per second); wait between checks instead.
    return training.train_and_evaluate(dataclasses.replace(
        params, throttle_secs=max(params.throttle_secs, EVALUATOR_CHECK_SECS)))
  finished = training.finished_step(params)
  if finished is not None and task.task_type != 'ps':
    logging.info('%s already holds a checkpoint at step %d >= max_steps=%d: nothing to do',
                 params.model_dir, finished, params.max_steps)
    return {}
  check_port_free(task)
  server = start_server(params, task)
  if task.task_type == 'ps':
    logging.info('ps %d serving variables at %s', task.task_index, task.address)
    server.join()
    return {}
  PsWatchdog(task.cluster.get('ps', ()), params.ps_unreachable_secs).start()
  estimator = build_estimator(params)
  estimator.train(inputs.make_input_fn(params, tf.estimator.ModeKeys.TRAIN),
                  max_steps=params.max_steps)
  logging.info('%s %d finished training at max_steps=%d', task.task_type, task.task_index,
               params.max_steps)
  return {}


def start_server(params, task: ClusterTask) -> tf.distribute.Server:
  """This task's gRPC server, with as many CPU devices as its towers need."""
  devices = resolve_tower_devices(params.num_towers, params.tower_devices)
  config = session_config(devices, devices.num_towers)
  if task.task_type == 'ps':
    config.device_count['CPU'] = 1
  cluster = tf.train.ClusterSpec({job: list(hosts) for job, hosts in task.cluster.items()})
  return tf.distribute.Server(cluster, job_name=task.task_type, task_index=task.task_index,
                              config=config, start=True)


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
        if _reachable(address):
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


def _reachable(address: str) -> bool:
  host, _, port = address.rpartition(':')
  try:
    with socket.create_connection((host, int(port)), timeout=2.0):
      return True
  except OSError:
    return False

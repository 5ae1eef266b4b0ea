"""Which cluster this process belongs to, and its role: from flags or TF_CONFIG.

The result is always expressed as a TF_CONFIG (what Kubeflow's TFJob sets), which
`tf.estimator.RunConfig` reads. Sources, first found wins:
  1. flags `--ps_hosts`, `--worker_hosts`, `--task_type`, `--task_index` (worker 0 is the chief;
     under Slurm, towers/cluster/node_main.py gives each process these);
  2. the `TF_CONFIG` environment variable.
A malformed or inconsistent cluster raises `ClusterError` naming the field. A TF_CONFIG
may list the evaluator in its cluster (Kubeflow's operator lists every replica type): it
is checked and left out of the training cluster, since no training task dials it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
from typing import TYPE_CHECKING, Any, Mapping

from absl import logging

from command_line.options import Problem

if TYPE_CHECKING:
  import tensorflow as tf

TRAINING_JOBS = ('chief', 'worker', 'ps')
TASK_TYPES = TRAINING_JOBS + ('evaluator',)
LOCAL_HOSTS = ('localhost', '127.0.0.1', '::1', '[::1]', '0.0.0.0')


class ClusterError(ValueError):
  """The cluster description is malformed or inconsistent; the message names the field.

  `field`: the field at fault as the message names it ('TF_CONFIG.cluster.chief',
  '--worker_hosts', 'SLURM_NODEID', 'task.index'); `value`: its offending value or count
  (None when it has none); `option`: the flag's name when the field is a flag, else None.
  """

  def __init__(self, message: str, field: str, value: Any = None) -> None:
    super().__init__(message)
    self.field = field
    self.value = value
    self.option = field[2:] if field.startswith('--') else None


@dataclasses.dataclass(frozen=True)
class ClusterTask:
  """This process's place in a training cluster.

  `cluster` maps 'chief', 'worker' and 'ps' to host:port lists (the evaluator is never
  part of it: a TF_CONFIG that lists it, as Kubeflow's operator does, has it dropped).
  `source` says where it came from: 'flags' or 'TF_CONFIG'.
  """
  cluster: Mapping[str, tuple[str, ...]]
  task_type: str
  task_index: int
  source: str

  @property
  def tf_config(self) -> dict[str, Any]:
    return {'cluster': {job: list(hosts) for job, hosts in self.cluster.items()},
            'task': {'type': self.task_type, 'index': self.task_index}}

  @property
  def address(self) -> str | None:
    """This task's host:port; None for the evaluator, which serves nothing."""
    if self.task_type == 'evaluator':
      return None
    return self.cluster[self.task_type][self.task_index]

  @property
  def num_workers(self) -> int:
    """Training workers, the chief included."""
    return len(self.cluster.get('chief', ())) + len(self.cluster.get('worker', ()))

  @property
  def name(self) -> str:
    """How logs and errors name this task, e.g. 'worker 1 (node03:2223)'."""
    where = f' ({self.address})' if self.address else ''
    return f'{self.task_type} {self.task_index}{where}'

  def input_context(self) -> tf.distribute.InputContext | None:
    """Which share of the training data this task reads: the chief is pipeline 0 and
    worker i pipeline i + 1, of `num_workers`. None (read everything) for the evaluator
    and the ps tasks."""
    import tensorflow as tf  # pylint: disable=g-import-not-at-top,redefined-outer-name
    if self.task_type == 'chief':
      return tf.distribute.InputContext(self.num_workers, 0)
    if self.task_type == 'worker':
      return tf.distribute.InputContext(self.num_workers, self.task_index + 1)
    return None


def resolve_cluster(params, environ: Mapping[str, str] = os.environ) -> ClusterTask | None:
  """The cluster from flags or TF_CONFIG (in that order), validated; None when none is
  configured (single-machine training). Flags with TF_CONFIG also set log that TF_CONFIG is
  not read."""
  if params.ps_hosts or params.worker_hosts or params.task_type:
    if environ.get('TF_CONFIG'):
      logging.warning('the cluster comes from the flags (--worker_hosts, --ps_hosts, '
                      '--task_type); TF_CONFIG, also set, is not read')
    return from_flags(params)
  if environ.get('TF_CONFIG'):
    return from_tf_config(environ['TF_CONFIG'])
  return None


def from_flags(params) -> ClusterTask:
  """`--worker_hosts` lists every trainer; the first is the chief. `--task_type=worker
  --task_index=0` therefore means the chief, and worker i > 0 is TF_CONFIG worker i-1."""
  if not params.worker_hosts:
    raise ClusterError('--worker_hosts: empty; list every training worker (the first is the chief)',
                       '--worker_hosts')
  if not params.task_type:
    raise ClusterError('--task_type: empty; say which role this process has', '--task_type')
  cluster = {'chief': (params.worker_hosts[0],), 'worker': tuple(params.worker_hosts[1:])}
  if params.ps_hosts:
    cluster['ps'] = tuple(params.ps_hosts)
  task_type, index = params.task_type, params.task_index
  if task_type == 'worker':
    if not 0 <= index < len(params.worker_hosts):
      raise ClusterError(f'--task_index={index} is out of range: --worker_hosts has '
                         f'{len(params.worker_hosts)} hosts', '--task_index', index)
    task_type, index = ('chief', 0) if index == 0 else ('worker', index - 1)
  cluster = {job: hosts for job, hosts in cluster.items() if hosts}
  return validate(cluster, task_type, index, 'flags')


def from_tf_config(text: str) -> ClusterTask:
  """Parses and validates a TF_CONFIG JSON string."""
  try:
    config = json.loads(text)
  except json.JSONDecodeError as e:
    raise ClusterError(f'TF_CONFIG is not valid JSON: {e}', 'TF_CONFIG') from e
  if not isinstance(config, dict):
    raise ClusterError('TF_CONFIG must be a JSON object with "cluster" and "task"', 'TF_CONFIG')
  cluster, task = config.get('cluster'), config.get('task')
  if not isinstance(cluster, dict) or not cluster:
    raise ClusterError('TF_CONFIG.cluster: missing or empty', 'TF_CONFIG.cluster')
  if not isinstance(task, dict) or 'type' not in task:
    raise ClusterError('TF_CONFIG.task.type: missing', 'TF_CONFIG.task.type')
  if task['type'] not in TASK_TYPES:
    master = (': a TFJob\'s Master replica is its chief here, name that replica Chief'
              if str(task['type']).lower() == 'master' else '')
    raise ClusterError(f'TF_CONFIG.task.type={task["type"]!r} is not one of '
                       f'{", ".join(TASK_TYPES)}{master}', 'TF_CONFIG.task.type', task['type'])
  if 'index' not in task:  # TensorFlow's RunConfig would stop on it with a traceback
    raise ClusterError(f'TF_CONFIG.task.index: missing; say which {task["type"]} this '
                       'process is (0 for the first)', 'TF_CONFIG.task.index')
  index = task['index']  # JSON's integers only: not 0.7, "1" or true
  if type(index) is not int or index < 0:  # pylint: disable=unidiomatic-typecheck
    quoted = isinstance(index, str) and index.isdigit()
    raise ClusterError(f'TF_CONFIG.task.index={index!r} is not a non-negative integer'
                       f'{f": write the number {index} without quotes" if quoted else ""}',
                       'TF_CONFIG.task.index', index)
  for job, hosts in cluster.items():
    if not isinstance(hosts, list):
      raise ClusterError(f'TF_CONFIG.cluster.{job}: must be a list of "host:port" strings',
                         f'TF_CONFIG.cluster.{job}', hosts)
  evaluators = cluster.get('evaluator', [])
  if len(evaluators) > 1:
    raise ClusterError(f'TF_CONFIG.cluster.evaluator: lists {len(evaluators)} tasks; one '
                       'evaluator is supported (TFJob: Evaluator replicas: 1)',
                       'TF_CONFIG.cluster.evaluator', len(evaluators))
  for i, address in enumerate(evaluators):
    _check_address(f'TF_CONFIG.cluster.evaluator[{i}]', address)
  # Kubeflow's operator lists every replica type in the cluster, the evaluator too. The
  # evaluator trains nothing and no server dials it: it is not part of the training cluster.
  training = {job: tuple(hosts) for job, hosts in cluster.items() if job != 'evaluator'}
  return validate(training, task['type'], index, 'TF_CONFIG')


def validate(cluster: Mapping[str, tuple[str, ...]], task_type: str, task_index: int,
             source: str) -> ClusterTask:
  """Checks jobs, addresses, the single chief and the task; returns the ClusterTask."""
  field = 'TF_CONFIG.cluster' if source == 'TF_CONFIG' else f'cluster (from {source})'
  for job in cluster:
    if job not in TRAINING_JOBS:
      raise ClusterError(f'{field}.{job}: unknown job; expected chief, worker, ps',
                         f'{field}.{job}', job)
  chiefs = cluster.get('chief', ())
  if len(chiefs) != 1:
    alone = (' (or unset TF_CONFIG to train on one machine)' if source == 'TF_CONFIG' else '')
    raise ClusterError(f'{field}.chief: lists {len(chiefs)} tasks; exactly one chief is '
                       f'needed{alone}', f'{field}.chief', len(chiefs))
  if not cluster.get('ps'):
    workers = len(cluster.get('worker', ()))
    raise ClusterError(f'{field}.ps: no ps task'
                       f'{f", but {workers} worker(s) besides the chief" if workers else ""}: '
                       'a cluster keeps its variables on ps tasks; list at least one ps '
                       '(--ps_hosts; local_cluster --ps=1), or train on one machine (without '
                       'TF_CONFIG and the cluster flags)', f'{field}.ps', workers)
  seen: dict[str, str] = {}
  for job, hosts in cluster.items():
    for i, address in enumerate(hosts):
      name = f'{field}.{job}[{i}]'
      _check_address(name, address)
      if address in seen:
        raise ClusterError(f'{name} and {seen[address]} both use {address}', name, address)
      seen[address] = name
  if task_type not in TASK_TYPES:
    raise ClusterError(f'task.type={task_type!r} is not one of {", ".join(TASK_TYPES)}',
                       'task.type', task_type)
  if task_type == 'evaluator':
    if task_index != 0:
      raise ClusterError(f'task.index={task_index}: there is one evaluator, index 0', 'task.index',
                         task_index)
  elif not 0 <= task_index < len(cluster.get(task_type, ())):
    raise ClusterError(f'task.index={task_index} is out of range: {field}.{task_type} has '
                       f'{len(cluster.get(task_type, ()))} tasks', 'task.index', task_index)
  return ClusterTask(dict(cluster), task_type, task_index, source)


def _check_address(name: str, address: Any) -> None:
  if not isinstance(address, str) or ':' not in address:
    raise ClusterError(f'{name}={address!r} is not "host:port"', name, address)
  host, _, port = address.rpartition(':')
  if not host or not port.isdigit() or not 0 < int(port) < 65536:
    raise ClusterError(f'{name}={address!r} is not "host:port" with a port in 1..65535', name,
                       address)


def check_port_free(task: ClusterTask) -> None:
  """For a task on this machine: its port must be free, else ClusterError names it."""
  address = task.address
  if address is None:
    return
  host, _, port = address.rpartition(':')
  if host not in LOCAL_HOSTS and host != socket.gethostname():
    return
  with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
    # As gRPC's own server socket: connections of a task that just died (TIME_WAIT) do
    # not make its port "taken" for the restarted task; a live listener does.
    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
      probe.bind(('127.0.0.1' if host in LOCAL_HOSTS else '', int(port)))
    except OSError as e:
      raise ClusterError(f'{task.task_type}[{task.task_index}]={address}: port {port} is '
                         f'already in use on this machine ({e.strerror})',
                         f'{task.task_type}[{task.task_index}]', int(port)) from e


def pick_free_ports(count: int) -> list[int]:
  """`count` distinct ports free on loopback right now (for the local launcher and tests)."""
  sockets, ports = [], []
  try:
    for _ in range(count):
      s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
      s.bind(('127.0.0.1', 0))
      sockets.append(s)
      ports.append(s.getsockname()[1])
  finally:
    for s in sockets:
      s.close()
  return ports


def backup_workers_problem(sync_replicas: bool, backup_workers: int,
                           workers: int) -> Problem | None:
  """Why --sync_replicas with `backup_workers` cannot train on `workers` training workers
  (the chief included): each step aggregates workers - backup_workers gradients, so at
  least one must remain; None when it can."""
  if sync_replicas and workers - backup_workers < 1:
    return Problem('backup_workers', f'--sync_replicas --backup_workers={backup_workers} with '
                   f'{workers} training worker(s) would aggregate no gradient per step (each '
                   'step waits for workers - backup_workers): set --backup_workers below '
                   f'{workers}')
  return None

"""One node of a training cluster: the processes it runs and their supervision, as a library.
The program: towers/cluster/node_main.py (docs/cluster/train_ucf101.sbatch runs it once per
node through srun).

`job_node` finds the job's nodes and this one in Slurm's environment; `node_roles` lays them
out: node i runs trainer i (node 0's is the chief), nodes 0..num_ps-1 also a ps, the last node
also the evaluator; ps and evaluator on the CPU.
`run_node` starts this node's processes and applies the policy of
`towers/cluster/supervision.py` to each end.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import subprocess
import sys
import time
from typing import Callable, Mapping, Sequence

from command_line import entry, status_file
from command_line.options import Options, Range, at_least, option
from towers.cluster import supervision
from towers.cluster.spec import ClusterError

PROGRAM = 'node'
STOP_GRACE_SECS = 10.0  # how long the others get to end after a failure, before SIGKILL


@dataclasses.dataclass(frozen=True)
class Role:
  """One process of a node. `name` is how its end is reported ('ps 0', 'trainer 3',
  'evaluator'); `task_type` the policy's ('ps', 'chief', 'worker', 'evaluator'); `args`
  the train flags that give its place; `gpu` False: it runs with no GPU visible."""
  name: str
  task_type: str
  args: tuple[str, ...]
  gpu: bool


def job_node(environ: Mapping[str, str],
             hostnames: Callable[[str], list[str]]) -> tuple[list[str], int]:
  """The job's host names in order (`hostnames(SLURM_JOB_NODELIST)`, e.g. `scontrol show
  hostnames`) and this node's index among them (`SLURM_NODEID`). Raises `ClusterError`
  naming the variable that is missing or out of range."""
  for name in ('SLURM_JOB_NODELIST', 'SLURM_NODEID'):
    if name not in environ:
      raise ClusterError(f'{name}: not set; run it under srun, once per node of a Slurm job '
                         '(docs/cluster/train_ucf101.sbatch)', name)
  nodes = hostnames(environ['SLURM_JOB_NODELIST'])
  node_id = environ['SLURM_NODEID']
  if not node_id.isdigit() or int(node_id) >= len(nodes):
    raise ClusterError(f'SLURM_NODEID={node_id} is not a node of the job: '
                       f'SLURM_JOB_NODELIST={environ["SLURM_JOB_NODELIST"]} lists {len(nodes)}',
                       'SLURM_NODEID', node_id)
  return nodes, int(node_id)


def node_roles(nodes: Sequence[str], node_id: int, num_ps: int, ps_port: int,
               trainer_port: int) -> list[Role]:
  """The processes of node `node_id` (0-based index into `nodes`, the job's host names in
  order): a ps on each of the first `num_ps` nodes (port `ps_port`), a trainer on every node
  (port `trainer_port`; node 0's is the chief), the evaluator on the last node. Raises
  `ClusterError` naming --num_ps when there are fewer nodes than ps tasks."""
  if num_ps > len(nodes):
    raise ClusterError(f'--num_ps={num_ps} but the job has {len(nodes)} node(s) and runs one '
                       f'ps per node: set --num_ps to at most {len(nodes)} or ask for more '
                       'nodes (--nodes)', '--num_ps', num_ps)
  ps_hosts = ','.join(f'{node}:{ps_port}' for node in nodes[:num_ps])
  trainer_hosts = ','.join(f'{node}:{trainer_port}' for node in nodes)
  cluster = (f'--ps_hosts={ps_hosts}', f'--worker_hosts={trainer_hosts}')
  roles = []
  if node_id < num_ps:
    roles.append(Role(f'ps {node_id}', 'ps',
                      (*cluster, '--task_type=ps', f'--task_index={node_id}'), gpu=False))
  if node_id == len(nodes) - 1:
    roles.append(Role('evaluator', 'evaluator',
                      (*cluster, '--task_type=evaluator', '--num_towers=1'), gpu=False))
  roles.append(Role(f'trainer {node_id}', 'chief' if node_id == 0 else 'worker',
                    (*cluster, '--task_type=worker', f'--task_index={node_id}'), gpu=True))
  return roles


def run_node(roles: Sequence[Role], train_args: Sequence[str], python: str,
             stopped_marker: str = '', poll_secs: float = 0.5) -> int:
  """Runs `python -m towers.train_main *train_args *role.args` for every role and waits for
  them all. Each end is recorded (status event task_ended {task, host, exit_code}) and judged
  by `supervision.verdict`: a trainer or ps that fails is named on one line, the others are
  stopped and its exit code returned; an evaluator that fails is named and the rest goes on;
  a chief or evaluator that stopped for the time limit creates `<stopped_marker>.chief` or
  `.evaluator` (when `stopped_marker` is set), so that the job can requeue itself.
  Returns 0 when no trainer or ps failed."""
  host = socket.gethostname()
  running: dict[str, tuple[Role, subprocess.Popen]] = {}
  for role in roles:
    env = dict(os.environ) if role.gpu else dict(os.environ, CUDA_VISIBLE_DEVICES='')
    running[role.name] = (role, subprocess.Popen(
        [python, '-m', 'towers.train_main', *train_args, *role.args], env=env,
        preexec_fn=supervision.die_with_parent))
  try:
    while running:
      time.sleep(poll_secs)
      for name, (role, process) in list(running.items()):
        if process.poll() is None:
          continue
        code = _exit_code(process.returncode)
        del running[name]
        status_file.record('task_ended', task=name, host=host, exit_code=code)
        judged = supervision.verdict(role.task_type, code)
        if judged == supervision.STOPPED and stopped_marker and role.task_type in (
            'chief', 'evaluator'):
          with open(f'{stopped_marker}.{role.task_type}', 'w', encoding='utf-8'):
            pass
        elif judged == supervision.EVALUATOR_FAILED:
          print(f'{PROGRAM}: warning: evaluator on {host} exited with code {code}; training '
                'goes on without it (its error is above)', file=sys.stderr, flush=True)
        elif judged == supervision.FAILED:
          print(entry.error_line(PROGRAM, f'{name} on {host} exited with code {code}; '
                                 'stopping the job'), file=sys.stderr, flush=True)
          return code
  finally:
    _stop([process for _, process in running.values()])
  return 0


def _exit_code(returncode: int) -> int:
  """A process's exit code as a shell reports it: killed by signal N is 128 + N."""
  return returncode if returncode >= 0 else 128 - returncode


def _stop(processes: Sequence[subprocess.Popen]) -> None:
  """Terminates `processes`; those still running after STOP_GRACE_SECS are killed."""
  for process in processes:
    if process.poll() is None:
      process.terminate()
  deadline = time.time() + STOP_GRACE_SECS
  for process in processes:
    try:
      process.wait(timeout=max(0.1, deadline - time.time()))
    except subprocess.TimeoutExpired:
      process.kill()
      process.wait()


@dataclasses.dataclass(frozen=True)
class NodeOptions(Options):
  """The node program's own flags; every other flag goes to each process's
  `towers.train_main`."""
  num_ps: int = option(1, 'ps tasks: one on each of the first num_ps nodes of the job.',
                       valid=at_least(1))
  ps_port: int = option(2222, 'Port of every ps task.', valid=Range(1, 65535))
  trainer_port: int = option(2223, 'Port of every trainer (chief, workers).',
                             valid=Range(1, 65535))
  python: str = option('', 'The interpreter each process runs under (empty: this one).')
  stopped_marker: str = option(
      '', 'Path prefix on storage every node sees: <prefix>.chief or <prefix>.evaluator is '
      'created when that process stops for the time limit (empty: none).')

"""A whole parameter-server cluster as local processes on loopback, as a library: `LocalCluster`
(the tasks, their logs, status files and ends; `run()` -> the cluster's exit code), its options
(`LocalClusterOptions`), and the private network namespace (`isolation_command`,
`reexec_in_private_network`). The program and its whole description:
towers/cluster/local_cluster_main.py.
"""

from __future__ import annotations

import atexit
import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import IO, Any, Sequence

from command_line import entry, signals, status_file
from towers.cluster import supervision
from towers.cluster.spec import pick_free_ports
from towers.cluster.time_limit import STOPPED_EXIT_CODE
from command_line.options import Options, at_least, option

HOST = '127.0.0.1'  # loopback only: TensorFlow's gRPC servers have no authentication
EVALUATOR = 'evaluator'
CHIEF_READY = 'session_ready'  # the status event of a chief whose model is initialised
STOP_GRACE_SECS = 30.0  # once the chief stopped for the time limit, how long the others may take


@dataclasses.dataclass
class Task:
  """One process of the cluster. `name` is e.g. 'ps0', 'chief', 'worker1', 'evaluator'."""
  name: str
  task_type: str
  task_index: int
  process: subprocess.Popen | None = None
  lines: list[str] = dataclasses.field(default_factory=list)
  stopped_by_us: bool = False
  starts: int = 0
  output_closed: float | None = None  # when its last start's output ended (at its exit)


class LocalCluster:
  """ps tasks, a chief, workers and (optionally) an evaluator on loopback.

  `train_args` are passed to every task's `towers.train_main` (e.g. --flagfile, --model_dir).
  A subclass runs other programs or places tasks elsewhere by overriding `hosts`, `command`
  and `environment` (benchmarks/program_cluster.py).
  Each task's status events (`events(name)`) go to `<log_dir>/<task>.events.jsonl`,
  emptied when the cluster is made (in a temporary directory without `log_dir`).
  """

  def __init__(self, num_ps: int, num_workers: int, train_args: Sequence[str],
               evaluator: bool = True, log_dir: str | None = None,
               echo: IO[str] | None = sys.stdout) -> None:
    if num_workers < 1:
      raise ValueError('--workers must be >= 1 (the first worker is the chief)')
    if num_ps < 0:
      raise ValueError('--ps must be >= 0')
    ports = pick_free_ports(num_ps + num_workers)
    hosts = self.hosts(num_ps + num_workers)
    addresses = [f'{host}:{p}' for host, p in zip(hosts, ports)]
    self.cluster = {'chief': addresses[num_ps:num_ps + 1]}
    if num_workers > 1:
      self.cluster['worker'] = addresses[num_ps + 1:]
    if num_ps:
      self.cluster['ps'] = addresses[:num_ps]
    self.tasks: dict[str, Task] = {}
    for i in range(num_ps):
      self.tasks[f'ps{i}'] = Task(f'ps{i}', 'ps', i)
    self.tasks['chief'] = Task('chief', 'chief', 0)
    for i in range(num_workers - 1):
      self.tasks[f'worker{i + 1}'] = Task(f'worker{i + 1}', 'worker', i)
    if evaluator:
      self.tasks['evaluator'] = Task('evaluator', 'evaluator', 0)
    self._train_args = list(train_args)
    self._log_dir = log_dir
    self._echo = echo
    self._lock = threading.Lock()
    if log_dir:
      os.makedirs(log_dir, exist_ok=True)
      self._status_dir = log_dir
    else:
      self._status_dir = tempfile.mkdtemp(prefix='local_cluster_status_')
      atexit.register(shutil.rmtree, self._status_dir, ignore_errors=True)
    for task in self.tasks.values():
      if os.path.exists(self.status_path(task.name)):
        os.remove(self.status_path(task.name))

  def status_path(self, name: str) -> str:
    """The status file task `name` appends its events to (`command_line/status_file.py`)."""
    return os.path.join(self._status_dir, f'{name}.events.jsonl')

  def events(self, name: str, event: str | None = None) -> list[dict[str, Any]]:
    """Task `name`'s status events so far, over all its starts, in order (only those of
    kind `event`, if given)."""
    events = status_file.read(self.status_path(name))
    return [e for e in events if event is None or e['event'] == event]

  def hosts(self, count: int) -> list[str]:
    """The host of each ps, then of each worker (`count` in all): loopback."""
    return [HOST] * count

  def command(self, task: Task) -> list[str]:
    """What starts `task`: `towers.train_main` with the train args and its role's flags."""
    return [sys.executable, '-m', 'towers.train_main', *self._train_args, *self.role_args(task)]

  def environment(self, task: Task) -> dict[str, str]:
    """`task`'s environment: this one, unbuffered, its status file, and no TF_CONFIG (the
    flags say the role; a stray TF_CONFIG must not)."""
    env = dict(os.environ, PYTHONUNBUFFERED='1')
    env.pop('TF_CONFIG', None)
    env[status_file.STATUS_FILE_ENV] = self.status_path(task.name)
    return env

  def role_args(self, task: Task) -> list[str]:
    """The train flags that give `task` its place in the cluster (worker 0 is the chief)."""
    trainers = self.cluster['chief'] + self.cluster.get('worker', [])
    if task.task_type in ('chief', 'worker'):
      role = ['--task_type=worker', f'--task_index={task.task_index + (task.task_type == "worker")}']
    else:
      role = [f'--task_type={task.task_type}', f'--task_index={task.task_index}']
    return [f'--ps_hosts={",".join(self.cluster.get("ps", []))}',
            f'--worker_hosts={",".join(trainers)}', *role]

  def start_all(self, chief_ready_timeout: float = 120.0) -> None:
    """Starts ps tasks, chief and evaluator, then the workers once the chief has
    initialised the model (a worker that finds it uninitialised re-checks only every 30 s)."""
    for task in self.tasks.values():
      if task.task_type != 'worker':
        self.start(task.name)
    ready = self.wait_for_event('chief', CHIEF_READY, chief_ready_timeout)
    if not ready and self.tasks['chief'].process.poll() is None:
      print(f'local_cluster: the chief has not reported a ready session after '
            f'{chief_ready_timeout:.0f} s; starting the workers anyway (they wait for it)',
            file=sys.stderr)
    for task in self.tasks.values():
      if task.task_type == 'worker':
        self.start(task.name)

  def wait_for_event(self, name: str, event: str, timeout: float) -> bool:
    """True once task `name` has recorded a status event `event`; False after `timeout`
    seconds or when the task has exited without it."""
    deadline = time.time() + timeout
    while time.time() < deadline:
      if self.events(name, event):
        return True
      process = self.tasks[name].process
      if process is not None and process.poll() is not None:
        return bool(self.events(name, event))
      time.sleep(0.2)
    return False

  def start(self, name: str) -> None:
    """Starts one task (again, if it ended)."""
    task = self.tasks[name]
    task.process = subprocess.Popen(
        self.command(task), env=self.environment(task),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
        preexec_fn=supervision.die_with_parent)
    task.stopped_by_us = False
    task.starts += 1
    task.output_closed = None
    threading.Thread(target=self._pump, args=(task, task.process), daemon=True).start()

  def _pump(self, task: Task, process: subprocess.Popen) -> None:
    log = None
    if self._log_dir:
      os.makedirs(self._log_dir, exist_ok=True)
      log = open(os.path.join(self._log_dir, f'{task.name}.log'), 'a', encoding='utf-8')
    for line in process.stdout:
      with self._lock:
        task.lines.append(line.rstrip('\n'))
        if self._echo is not None:
          self._echo.write(f'[{task.name}] {line}')
          self._echo.flush()
      if log:
        log.write(line)
        log.flush()
    if log:
      log.close()
    if task.process is process:
      task.output_closed = time.time()

  def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
    """Sends `sig` (default SIGKILL: a crash, no clean-up) to one task and waits for it."""
    task = self.tasks[name]
    if task.process and task.process.poll() is None:
      task.stopped_by_us = True
      task.process.send_signal(sig)
      task.process.wait()

  def wait(self, name: str, timeout: float | None = None) -> int:
    """Waits for one task to exit; returns its exit code."""
    return self.tasks[name].process.wait(timeout=timeout)

  def output(self, name: str) -> list[str]:
    with self._lock:
      return list(self.tasks[name].lines)

  def stop_all(self, grace_secs: float = 10.0) -> None:
    """SIGTERM to every running task; a task still running `grace_secs` later is killed."""
    for task in self.tasks.values():
      if task.process and task.process.poll() is None:
        task.stopped_by_us = True
        task.process.terminate()
    deadline = time.time() + grace_secs
    for task in self.tasks.values():
      if task.process:
        try:
          task.process.wait(timeout=max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
          task.process.kill()
          task.process.wait()

  def _ended(self, *verdicts: str) -> list[str]:
    """Tasks that ended on their own (not stopped by us) with one of `verdicts`
    (`towers/cluster/supervision.py`)."""
    return [t.name for t in self.tasks.values()
            if t.process and t.process.poll() is not None and not t.stopped_by_us
            and supervision.verdict(t.task_type, t.process.poll()) in verdicts]

  def failed_tasks(self) -> list[str]:
    """Tasks that exited non-zero on their own (not stopped by us), other than those that
    stopped for the time limit (`stopped_tasks`)."""
    return self._ended(supervision.FAILED, supervision.EVALUATOR_FAILED)

  def stopped_tasks(self) -> list[str]:
    """Tasks that stopped on the time-limit signal (exit STOPPED_EXIT_CODE): a chief after
    writing a checkpoint, the evaluator before a final evaluation; not failures."""
    return self._ended(supervision.STOPPED)

  def signal_all(self, sig: int) -> None:
    """Sends `sig` to every running task (the launcher passes on the time-limit signal)."""
    for task in self.tasks.values():
      if task.process and task.process.poll() is None:
        task.process.send_signal(sig)

  def run(self, timeout_secs: float | None = None, poll_secs: float = 0.5) -> int:
    """Starts everything and waits until every task has ended by itself (training over,
    the evaluator's final evaluation done). The first task that fails is named on one line
    with its exit code and the others are stopped; an evaluator that fails is named on
    one line too, but training goes on. Returns 0 when every ps and trainer exited 0, 1
    when one failed or `timeout_secs` passed, 130 on Ctrl-C, STOPPED_EXIT_CODE (75) when
    the chief or the evaluator stopped for the time limit (SIGUSR1, passed on to every
    task): run it again to continue. Once the chief has stopped, the other tasks get
    STOP_GRACE_SECS to end, then are stopped; a task that fails meanwhile (still starting,
    it waited for a ps the chief sent home) is not a failure of the run."""
    deadline = None if timeout_secs is None else time.time() + timeout_secs
    evaluator_reported = False
    chief_stopped_at = None
    try:
      self.start_all()
      while any(t.process.poll() is None for t in self.tasks.values()):
        if 'chief' in self.stopped_tasks():
          # The run stopped for the time limit: a task still starting (it may wait for a ps
          # the chief sent home) gets a grace period, then is stopped; none counts as failed.
          chief_stopped_at = chief_stopped_at or time.time()
          if time.time() - chief_stopped_at > STOP_GRACE_SECS:
            break
          time.sleep(poll_secs)
          continue
        failed = self.failed_tasks()
        if EVALUATOR in failed and not evaluator_reported:
          self._report_evaluator()
          evaluator_reported = True
        if [name for name in failed if name != EVALUATOR]:
          break
        if deadline is not None and time.time() > deadline:
          running = [t.name for t in self.tasks.values() if t.process.poll() is None]
          print(entry.error_line('local_cluster', f'still running after {timeout_secs:.0f} s: '
                                 f'{", ".join(running)}; stopping them'), file=sys.stderr)
          return 1
        time.sleep(poll_secs)
    except KeyboardInterrupt:
      print('local_cluster: interrupted, stopping every task', file=sys.stderr)
      self.stop_all()
      return 130
    finally:
      self.stop_all()
    stopped = self.stopped_tasks()
    if 'chief' in stopped:
      print('local_cluster: stopped for the time limit: the chief wrote a checkpoint; run '
            'the same command again to continue from it', file=sys.stderr)
      return STOPPED_EXIT_CODE
    failed = [name for name in self.failed_tasks() if name != EVALUATOR]
    if EVALUATOR in self.failed_tasks() and not evaluator_reported:
      self._report_evaluator()
      evaluator_reported = True
    if failed:
      first = self.tasks[failed[0]]
      print(entry.error_line(
          'local_cluster', f'{first.name} failed with exit code {first.process.returncode}'
          f'{" (also " + ", ".join(failed[1:]) + ")" if failed[1:] else ""}; '
          f'its log: {self._log_hint(first)}'), file=sys.stderr)
      return 1
    if EVALUATOR in stopped:
      print('local_cluster: training ended cleanly; the evaluator stopped for the time limit '
            'before the final evaluation: run the same command again to evaluate',
            file=sys.stderr)
      return STOPPED_EXIT_CODE
    if evaluator_reported or EVALUATOR in self.failed_tasks():
      print('local_cluster: training ended cleanly; the evaluator failed (see above)')
    else:
      print('local_cluster: every task ended cleanly')
    return 0

  def _report_evaluator(self) -> None:
    """The evaluator's failure never stops training: one line says so."""
    task = self.tasks[EVALUATOR]
    print(f'local_cluster: warning: the evaluator failed with exit code '
          f'{task.process.returncode}; training goes on without it; its log: '
          f'{self._log_hint(task)}', file=sys.stderr)

  def _log_hint(self, task: Task) -> str:
    if self._log_dir:
      return os.path.join(self._log_dir, f'{task.name}.log')
    return f'the [{task.name}] lines above'


ISOLATED_ENV = 'LOCAL_CLUSTER_IN_NAMESPACE'


def isolation_command() -> list[str] | None:
  """The command prefix that runs a program in a fresh loopback-only network namespace,
  or None when this machine does not allow it."""
  if not (shutil.which('unshare') and shutil.which('ip')):
    return None
  prefix = ['unshare', '--net', '--map-root-user', 'sh', '-c', 'ip link set lo up && exec "$@"',
            'local_cluster']
  probe = subprocess.run(prefix + ['true'], capture_output=True, check=False)
  return prefix if probe.returncode == 0 else None


def reexec_in_private_network(script: str, argv: Sequence[str]) -> None:
  """Replaces this process with `python script argv...` inside a fresh loopback-only
  network namespace (the same process, so Ctrl-C still reaches it). Returns only when
  that is impossible here, or when already inside one."""
  if os.environ.get(ISOLATED_ENV):
    return
  prefix = isolation_command()
  if prefix is None:
    return
  env = dict(os.environ, **{ISOLATED_ENV: '1'})
  signals.blocked_in_child()  # through unshare and sh, until the new program's handlers exist
  try:
    os.execvpe(prefix[0], prefix + [sys.executable, os.path.abspath(script), *argv], env)
  finally:  # reached only when the exec failed
    signal.pthread_sigmask(signal.SIG_UNBLOCK, signals.HANDLED)


@dataclasses.dataclass(frozen=True)
class LocalClusterOptions(Options):
  """The launcher's own flags; every other flag goes to each task's `towers.train_main`."""
  ps: int = option(1, 'Number of ps tasks: the variables of a training cluster live on them '
                   '(without a cluster: //towers:train).', valid=at_least(1))
  workers: int = option(2, 'Training workers, the chief included.', valid=at_least(1))
  evaluator: bool = option(True, 'Start an evaluator task (--noevaluator: none).')
  network: str = option('isolated', 'isolated: a private loopback-only network namespace; '
                        'host: the host network.', choices=('isolated', 'host'))

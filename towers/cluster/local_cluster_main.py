"""Starts a whole parameter-server cluster as local processes on loopback.

    bazel run //towers/cluster:local_cluster -- --ps=2 --workers=2 --flagfile=towers/demo.flags

Starts `--ps` ps tasks, `--workers` training workers (the first is the chief) and an
evaluator, each a `towers.train` process told its role by flags (`--ps_hosts`,
`--worker_hosts`, `--task_type`, `--task_index`) on free loopback ports. Streams every
task's output prefixed with its name ([ps0], [chief], [worker1], [evaluator]), and also
appends it to `runs/local_cluster_logs/<task>.log`; `--verbose` goes to every task and
brings back TensorFlow's own logs (see command_line/console.py). Every task ends by itself when training
is over (`towers/cluster/shutdown.py`): nothing is stopped while another task needs it.
When a task fails, one line names it and its exit code, the others are stopped, and the
launcher exits 1 (an evaluator that fails is named, but training goes on); Ctrl-C stops
all at once (exit 130). SIGUSR1 (a job's time limit) is passed on to every task: the
chief stops at a checkpoint (towers/cluster/time_limit.py), and the launcher says so on
one line and exits 75 (run it again to continue), as when only the evaluator stopped
before its final evaluation. Flags it does not know are passed to every task (so any train
flag works; their help: `bazel run //towers:train -- --help`); they are checked once,
before any task starts (the train binary's --check_flags), so a bad value is one line
of the launcher, exit 2. The launcher's own:
--ps, --workers, --[no]evaluator, --network. Real clusters: see docs/cluster.md. On a
machine with several GPUs, `--gpus_per_worker=N` (a train flag, so
every task gets it) gives the chief the first N GPUs, worker 1 the next N, and so on; the
ps tasks and the evaluator see none (`towers/cluster/gpus.py`).

Network: TensorFlow's gRPC servers listen on every interface (0.0.0.0:port, hard-coded
in grpc_server_lib.cc) and have no authentication. So by default (`--network=isolated`)
the launcher runs the whole cluster inside a new network namespace that has only a
loopback interface (`unshare --net --map-root-user`): nothing outside this machine, nor
other processes on it, can reach the tasks. Where unprivileged namespaces are not
allowed it says so and falls back to the host network (`--network=host`), where the
tasks address each other on 127.0.0.1 but their ports are open on every interface.

Tasks tell the launcher what they did through files, never through their output: each
task appends JSON events to its own status file (`command_line/status_file.py`, named by
$TOWERS_STATUS_FILE), e.g. `session_ready` once the chief has initialised or restored the
model, which is when the launcher starts the workers.

`LocalCluster` is the same machinery as a Python API; the fault tests drive it.

The library: towers/cluster/local_cluster.py.
"""

from __future__ import annotations

# First: its signal handlers (command_line/signals.py), before anything slow.
from command_line import entry
# pylint: disable=wrong-import-position,wrong-import-order
import os
import signal
import subprocess
import sys
import tempfile
import time
from typing import Sequence

from absl import flags

from command_line import status_file, working_dir
from command_line.options import Problem
from towers.cluster import spec
from towers.cluster.local_cluster import (ISOLATED_ENV, LocalCluster, LocalClusterOptions,
                                          reexec_in_private_network)
from towers.cluster.time_limit import STOP_SIGNAL


def _raise_keyboard_interrupt(signum, frame) -> None:
  del signum, frame
  raise KeyboardInterrupt


def _sync_problem(train_args: Sequence[str], workers: int) -> Problem | None:
  """Why --sync_replicas with --backup_workers (given to the tasks, also in a --flagfile)
  cannot run on `workers` workers; None when it can."""
  values = flags.FlagValues()
  flags.DEFINE_bool('sync_replicas', False, '', flag_values=values)
  flags.DEFINE_integer('backup_workers', 0, '', flag_values=values)
  try:
    values(['local_cluster', *train_args], known_only=True)
  except flags.Error:
    return None  # the tasks' own flag parsing reports it
  return spec.backup_workers_problem(values.sync_replicas, values.backup_workers, workers)


def _task_flags_problem(train_args: Sequence[str]) -> Problem | None:
  """What the train binary says of `train_args` (its --check_flags: TrainParams' rules,
  each declared beside its option), or None when they make a valid run: the message and
  first option of its `error` status event. Checked once here, before any task starts,
  instead of by every task."""
  with tempfile.TemporaryDirectory() as scratch:
    events_path = os.path.join(scratch, 'check_flags.jsonl')
    env = dict(os.environ, **{status_file.STATUS_FILE_ENV: events_path})
    done = subprocess.run([sys.executable, '-m', 'towers.train_main', *train_args, '--check_flags'],
                          capture_output=True, text=True, check=False, env=env)
    errors = [e for e in status_file.read(events_path) if e['event'] == 'error']
  if done.returncode == 0:
    return None
  if errors:
    return Problem(errors[-1]['options'][0] if errors[-1]['options'] else None,
                   errors[-1]['message'])
  return Problem(None, f'the train flags cannot be checked (exit code {done.returncode}): '
                       f'{done.stderr.strip()[-500:]}')


def parse_flags(argv: list[str]) -> list[str]:
  """Parses the launcher's flags; returns [program, *train flags] (the unknown ones)."""
  return [argv[0], *flags.FLAGS(argv, known_only=True)[1:]]


def run(options: LocalClusterOptions, train_args: list[str]) -> int:
  """Starts the cluster with `train_args` for every task; its exit code (see
  `LocalCluster.run`)."""
  problem = _sync_problem(train_args, options.workers)
  if problem is None and not os.environ.get(ISOLATED_ENV):  # not again once re-executed
    problem = _task_flags_problem(train_args)
  if problem:
    raise entry.Refused(problem)
  log_dir = os.path.abspath(os.path.join('runs', 'local_cluster_logs'))
  unwritable = working_dir.unwritable_dir(log_dir)
  if unwritable:
    raise entry.Refused(f'the task logs\' directory {log_dir} {unwritable}: start it from a '
                        'writable working directory')
  os.makedirs(log_dir, exist_ok=True)
  if options.network == 'isolated' and not os.environ.get(ISOLATED_ENV):
    reexec_in_private_network(__file__, sys.argv[1:])
    print('local_cluster: cannot create a network namespace here (unshare/ip missing or '
          'not permitted); using the host network: the tasks\' ports are open on every '
          'interface while they run', file=sys.stderr)
  elif os.environ.get(ISOLATED_ENV):
    print('local_cluster: network isolated: a new namespace with loopback only')
  status_file.record('network', isolated=bool(os.environ.get(ISOLATED_ENV)))
  cluster = LocalCluster(options.ps, options.workers, train_args,
                         evaluator=options.evaluator, log_dir=log_dir)
  signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
  signal.signal(STOP_SIGNAL, lambda signum, frame: cluster.signal_all(STOP_SIGNAL))
  started = time.time()
  code = cluster.run()
  print(f'local_cluster: wall time {time.time() - started:.1f} s')
  return code


PROGRAM = entry.Program('local_cluster', run, LocalClusterOptions, arguments=True)


if __name__ == '__main__':
  PROGRAM.start(flags_parser=parse_flags)

"""This library's cluster training beside TensorFlow's own multi-node tools, as a library: the
systems (`make_system`), one run of one (`run_once`), the report (`report`) and the whole
comparison (`run`). The program and what it measures: benchmarks/cluster_peers_main.py.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from typing import Callable

from command_line import console

console.quiet_native_logs()  # before TensorFlow is imported: it reads the level once

# pylint: disable=wrong-import-position
import numpy as np
import tensorflow as tf

from benchmarks import machine
from benchmarks.cluster_bytes import loopback_received_bytes, model_bytes
from towers.checkpoints import checkpoint_step
from towers.cluster.ps_variables import read_ps_variables
from benchmarks.program_cluster import ProgramCluster
from towers.cluster.local_cluster import LocalCluster
from benchmarks.peers_options import OURS, PeersOptions

tf1 = tf.compat.v1

NETWORK = ('--model=c3d_small', '--num_classes=4', '--clip_frames=8', '--crop_size=32')
COMMON = ('--data_source=synthetic', '--num_towers=1', '--save_checkpoints_steps=100000',
          '--log_every_steps=10', '--lr_schedule=constant', '--lr_values=0.001',
          '--weight_decay=1e-4')
WAIT_TARGET_SECS = 5.0
CLOCK_TICKS = os.sysconf('SC_CLK_TCK')
BYTES_TARGET = 1.05


@dataclasses.dataclass(frozen=True)
class System:
  """How one system is started: program, its flags, ps count, examples per global step
  (in replica batches)."""
  name: str
  module: str
  args: tuple[str, ...]
  num_ps: int
  replicas_per_step: int


def make_system(name: str, replica_batch: int) -> System:
  if name in OURS:
    sync = ('--sync_replicas',) if name == 'ours_sync' else ()
    return System(name, 'towers.train_main', (f'--batch_size={replica_batch}', *sync),
                  1, 2 if sync else 1)
  if name == 'multi_worker_mirrored':  # the input_fn's batch is global under this strategy
    return System(name, 'benchmarks.cluster_peer_task_main',
                  (f'--peer={name}', f'--batch_size={2 * replica_batch}'), 0, 2)
  return System(name, 'benchmarks.cluster_peer_task_main',
                (f'--peer={name}', f'--batch_size={replica_batch}'), 1, 1)


@dataclasses.dataclass(frozen=True)
class Sample:
  """The cluster when the chief recorded global step `step`: seconds since the tasks
  started, the loopback's received bytes, each task's CPU seconds so far."""
  time: float
  step: int
  loopback_bytes: int
  cpu_seconds: dict[str, float]


@dataclasses.dataclass
class Run:
  """What one run measured. Times are seconds since the tasks started."""
  examples_per_sec: float | None  # None: both workers never trained together long enough
  bytes_per_replica_step: float | None
  cpu_ms_per_example: float | None  # CPU time of every task of the cluster, same window
  cpu_ms_by_task: dict[str, float]  # the same per task (ps0, chief, worker1), same window
  session_after_chief: float  # worker's session ready - chief's session ready
  worker_wait: float  # worker's session ready - max(chief's session ready, worker's graph built)
  step_after_chief: float  # worker's first step - chief's first step
  lost_steps: int | None  # None: no ps, or the ps could not be read (see note)
  changed_variables: int | None  # None: not compared (the ps had exited)
  note: str = ''


class Watcher:
  """Follows a running cluster's status events: when each of chief and worker built its
  graph, had its session ready and made its first step (seconds since start, as the task
  recorded them), and (time, step, loopback bytes, CPU) at each chief progress event, as
  first seen (bytes and CPU are read then)."""

  def __init__(self, cluster: LocalCluster, started: float) -> None:
    self.cluster = cluster
    self.started = started
    self.graph_built: dict[str, float] = {}
    self.session_ready: dict[str, float] = {}
    self.first_step: dict[str, float] = {}
    self.samples: list[Sample] = []
    self.replica_batches: set[int] = set()
    self._seen = {'chief': 0, 'worker1': 0}

  def poll(self) -> None:
    now = time.time() - self.started
    for name in self._seen:
      events = self.cluster.events(name)
      for event in events[self._seen[name]:]:
        kind, at = event['event'], event['time'] - self.started
        if kind == 'replica_batch':
          self.replica_batches.add(event['clips'])
        elif kind == 'graph_built':
          self.graph_built.setdefault(name, at)
        elif kind == 'session_ready':  # chief and workers alike
          self.session_ready.setdefault(name, at)
        elif kind == 'first_step':
          self.first_step.setdefault(name, at)
        elif kind == 'progress' and name == 'chief':
          self.samples.append(Sample(now, event['step'], loopback_received_bytes(),
                                     task_cpu_seconds(self.cluster)))
      self._seen[name] = len(events)


def run_once(system: System, options: PeersOptions, repeat: int) -> Run:
  """Starts every task of `system` at once, watches it train to max_steps, checks the
  ps against the final checkpoint, stops everything and removes the model_dir."""
  model_dir = tempfile.mkdtemp(prefix=f'cluster_peers_{system.name}_')
  args = [*NETWORK, *COMMON, *system.args, f'--max_steps={options.max_steps}',
          f'--model_dir={model_dir}']
  log_dir = (os.path.join(options.task_logs, f'{system.name}_{repeat}') if options.task_logs
             else None)
  cluster = ProgramCluster(system.num_ps, 2, args, program=('-m', system.module),
                           tf_config_role=system.module != 'towers.train_main',
                           evaluator=False, log_dir=log_dir, echo=None)
  started = time.time()
  watcher = Watcher(cluster, started)
  note = ''
  try:
    for name in cluster.tasks:
      cluster.start(name)
    deadline = started + options.timeout_secs
    chief = cluster.tasks['chief'].process
    while chief.poll() is None and time.time() < deadline:
      watcher.poll()
      if cluster.failed_tasks():
        raise RuntimeError(f'{system.name}: tasks failed: {cluster.failed_tasks()}; '
                           f'chief said: {cluster.output("chief")[-3:]}')
      time.sleep(0.05)
    if chief.poll() is None:
      raise RuntimeError(f'{system.name}: the chief did not end in {options.timeout_secs} s')
    try:
      cluster.wait('worker1', timeout=30)
    except subprocess.TimeoutExpired:
      note = 'worker still running 30 s after the chief ended'
    watcher.poll()
    lost = changed = None
    if system.module == 'towers.train_main':  # this library's ps exits by itself, just after them
      try:
        cluster.wait('ps0', timeout=30)
      except subprocess.TimeoutExpired:
        note = (note + '; ' if note else '') + 'the ps still ran 30 s after the chief ended'
    if system.num_ps and cluster.tasks['ps0'].process.poll() is None:
      try:
        lost, changed = compare_ps_with_checkpoint(cluster.cluster['ps'][0], model_dir)
      except tf.errors.OpError as e:
        note = (note + '; ' if note else '') + f'ps not readable: {e.message.splitlines()[0]}'
    elif system.num_ps:  # this library's ps exits once told; it records its final global step
      final_step = ps_final_step(cluster.events('ps0'))
      saved_step = checkpoint_step(model_dir)
      if final_step is None or saved_step is None:
        note = (note + '; ' if note else '') + (
            'the ps had ended without its final step event' if final_step is None
            else f'no checkpoint in {model_dir}')
      else:
        lost = final_step - saved_step
  finally:
    cluster.stop_all()
    shutil.rmtree(model_dir, ignore_errors=True)
  if cluster.failed_tasks():
    raise RuntimeError(f'{system.name}: tasks failed: {cluster.failed_tasks()}')
  if system.module != 'towers.train_main' and watcher.replica_batches != {options.replica_batch}:
    raise RuntimeError(f'{system.name}: replicas got batches {watcher.replica_batches}, '
                       f'not {options.replica_batch}')
  if len(watcher.session_ready) < 2 or len(watcher.first_step) < 2 or (
      'worker1' not in watcher.graph_built):
    raise RuntimeError(f'{system.name}: chief or worker never recorded a ready session '
                       f'({watcher.session_ready}) or a first step ({watcher.first_step})')
  worker_first_step = watcher.first_step['worker1']
  both_stepping = max(watcher.first_step.values())
  rate = per_step = cpu_ms = None
  cpu_by_task: dict[str, float] = {}
  span = window(watcher.samples, both_stepping, options)
  if span is None:
    note = (note + '; ' if note else '') + ('no throughput: the worker joined when the chief '
                                            'had nearly finished')
  else:
    first, last = span
    replica_steps = (last.step - first.step) * system.replicas_per_step
    examples = replica_steps * options.replica_batch
    rate = examples / (last.time - first.time)
    per_step = (last.loopback_bytes - first.loopback_bytes) / replica_steps
    cpu_by_task = {name: 1000.0 * (seconds - first.cpu_seconds.get(name, 0.0)) / examples
                   for name, seconds in last.cpu_seconds.items()}
    cpu_ms = sum(cpu_by_task.values())
  return Run(examples_per_sec=rate, bytes_per_replica_step=per_step, cpu_ms_per_example=cpu_ms,
             cpu_ms_by_task=cpu_by_task,
             session_after_chief=watcher.session_ready['worker1'] - watcher.session_ready['chief'],
             worker_wait=watcher.session_ready['worker1'] - max(
                 watcher.session_ready['chief'], watcher.graph_built['worker1']),
             step_after_chief=worker_first_step - watcher.first_step['chief'],
             lost_steps=lost, changed_variables=changed, note=note)


def window(samples: list[Sample], both_stepping: float, options: PeersOptions
           ) -> tuple[Sample, Sample] | None:
  """The first progress sample `settle_secs` after both chief and worker made their first
  step, and the first one `window_secs` after that (else the last); None when there are
  fewer than two such samples."""
  begin = both_stepping + options.settle_secs
  after = [s for s in samples if s.time >= begin]
  if len(after) < 2:
    return None
  first = after[0]
  last = next((s for s in after if s.time >= first.time + options.window_secs), after[-1])
  return first, last


def task_cpu_seconds(cluster: LocalCluster) -> dict[str, float]:
  """Task name -> user + system CPU seconds used so far by that running task process of
  `cluster` (/proc/<pid>/stat; a task that has ended is left out, so windows end while
  all tasks run)."""
  seconds = {}
  for name, task in cluster.tasks.items():
    if task.process is None or task.process.poll() is not None:
      continue
    try:
      with open(f'/proc/{task.process.pid}/stat') as f:
        fields = f.read().rsplit(')', 1)[1].split()
    except FileNotFoundError:
      continue
    seconds[name] = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime
  return seconds


def ps_final_step(events: list[dict]) -> int | None:
  """The global step ps 0 held when it exited (its last `ps_final_step` status event)."""
  steps = [e['step'] for e in events if e['event'] == 'ps_final_step']
  return steps[-1] if steps else None


def compare_ps_with_checkpoint(ps_address: str, model_dir: str) -> tuple[int, int]:
  """(global steps on the ps beyond the final checkpoint's, variables whose ps value
  differs from the checkpoint's), reading every checkpointed variable from the live ps."""
  checkpoint = tf.train.latest_checkpoint(model_dir)
  if checkpoint is None:
    raise RuntimeError(f'no checkpoint in {model_dir}')
  reader = tf.train.load_checkpoint(checkpoint)
  dtypes = reader.get_variable_to_dtype_map()
  shapes = reader.get_variable_to_shape_map()
  names = sorted(dtypes)
  live = read_ps_variables(f'grpc://{ps_address}', 0,
                           {n: (dtypes[n], shapes[n]) for n in names}, timeout_ms=20000)
  changed = sum(not np.array_equal(live[n], reader.get_tensor(n)) for n in names)
  return int(live['global_step']) - int(reader.get_tensor('global_step')), changed


def measured(runs: list[Run], field: str) -> list[float]:
  """`field` of the runs that measured it."""
  return [getattr(r, field) for r in runs if getattr(r, field) is not None]


def median_of(runs: list[Run], field: str) -> float | None:
  values = measured(runs, field)
  return statistics.median(values) if values else None


def verdict(ok: bool) -> str:
  return 'met' if ok else 'NOT met'


def lost_cell(name: str, rs: list[Run]) -> str:
  if make_system(name, 1).num_ps == 0:
    return 'n/a (no ps)'
  if any(r.lost_steps is None for r in rs):
    return 'not compared'
  if any(r.changed_variables is None for r in rs):  # a ps that exits by itself: steps only
    return f'{max(r.lost_steps for r in rs)} steps (the ps\'s final global step)'
  return (f'{max(r.lost_steps for r in rs)} steps, '
          f'{max(r.changed_variables for r in rs)} variables')


def print_ratios(title: str, ours: list[str], peers: list[str],
                 cell: Callable[[str, str], str]) -> None:
  """One Markdown table: a row per system of ours, a column per peer, `cell(ours, peer)`."""
  print(f'\n{title}')
  print('| ours \\ peer | ' + ' | '.join(peers) + ' |')
  print('|---|' + '---|' * len(peers))
  for mine in ours:
    print(f'| {mine} | ' + ' | '.join(cell(mine, peer) for peer in peers) + ' |')


def report(runs: dict[str, list[Run]], model: int, options: PeersOptions) -> None:
  """Prints the per-system table, ours/peer throughput ratios and this library's targets."""
  print(f'\n{machine.machine_name()}; c3d_small 8x32x32, replica batch '
        f'{options.replica_batch}, global batch '
        f'{2 * options.replica_batch}, {options.repeats} interleaved repeat(s); model '
        f'{model / 1e6:.3f} MB per replica step (2 x parameters + batch-norm statistics)')
  print('| system | examples/s median (min-max) | CPU ms per example, all tasks (min-max) | '
        'bytes per replica step / model | '
        'worker session ready after chief\'s | worker first step after chief\'s | '
        'worker waited for the chief | lost final updates |')
  print('|---|---|---|---|---|---|---|---|')
  for name, rs in runs.items():
    rates = measured(rs, 'examples_per_sec')
    per_step = median_of(rs, 'bytes_per_replica_step')
    notes = '; '.join(sorted({r.note for r in rs if r.note}))
    rate_cell = (f'{statistics.median(rates):.1f} ({min(rates):.1f}-{max(rates):.1f}, '
                 f'{len(rates)} runs)' if rates else 'n/a')
    cpu = measured(rs, 'cpu_ms_per_example')
    cpu_cell = (f'{statistics.median(cpu):.1f} ({min(cpu):.1f}-{max(cpu):.1f})' if cpu
                else 'n/a')
    bytes_cell = f'{per_step / model:.3f}x' if per_step else 'n/a'
    print(f'| {name} | {rate_cell} | {cpu_cell} | {bytes_cell} | {max(r.session_after_chief for r in rs):.1f} s | '
          f'{max(r.step_after_chief for r in rs):.1f} s | '
          f'{max(r.worker_wait for r in rs):.1f} s | {lost_cell(name, rs)}'
          f'{" (" + notes + ")" if notes else ""} |')
  ours = [n for n in OURS if n in runs]
  peers = [n for n in runs if n not in OURS]
  if ours and peers:
    def rate_ratio(mine: str, peer: str) -> str:
      ours_rate = median_of(runs[mine], 'examples_per_sec')
      peer_rate = median_of(runs[peer], 'examples_per_sec')
      if ours_rate is None or peer_rate is None:
        return 'n/a'
      return f'{ours_rate / peer_rate:.2f}x {verdict(ours_rate >= peer_rate)}'

    def cpu_ratio(mine: str, peer: str) -> str:
      ours_cpu = median_of(runs[mine], 'cpu_ms_per_example')
      peer_cpu = median_of(runs[peer], 'cpu_ms_per_example')
      return 'n/a' if ours_cpu is None or peer_cpu is None else f'{peer_cpu / ours_cpu:.2f}x'

    print_ratios('throughput, ours / peer at equal replica and global batch (target >= 1.0x):',
                 ours, peers, rate_ratio)
    print_ratios('CPU time per example, peer / ours (above 1.0x: ours needs less CPU per '
                 'example; on a machine whose cores all tasks share, examples/s follow it):',
                 ours, peers, cpu_ratio)
  print('\ntargets for this library:')
  for mine in ours:
    rs = runs[mine]
    per_step = median_of(rs, 'bytes_per_replica_step')
    ratio = per_step / model if per_step else None
    worst = max(r.worker_wait for r in rs)
    lost = lost_cell(mine, rs)
    lost_ok = all(r.lost_steps is not None and r.lost_steps <= 0 and not r.changed_variables
                  for r in rs)
    bytes_text = f'{ratio:.3f}x' if ratio else 'n/a'
    print(f'  {mine}: bytes per replica step {bytes_text} the model (<= {BYTES_TARGET}x): '
          f'{verdict(ratio is not None and ratio <= BYTES_TARGET)}; worker waited {worst:.1f} s for the chief '
          f'(<= {WAIT_TARGET_SECS:.0f} s): {verdict(worst <= WAIT_TARGET_SECS)}; '
          f'lost final updates {lost}: {verdict(lost_ok)}')




def run(options: PeersOptions) -> int:
  """Runs every system `repeats` times and prints the report; 1 when a run failed. Inside
  a private network namespace only, so that the loopback counter sees only the cluster."""
  parameters, statistics_bytes = model_bytes(NETWORK)
  model = 2 * parameters + statistics_bytes
  systems = [make_system(n, options.replica_batch) for n in options.systems]
  runs: dict[str, list[Run]] = {s.name: [] for s in systems}
  total = len(systems) * options.repeats
  began = time.time()
  print(f'cluster_peers {time.strftime("%Y-%m-%d")}: {total} runs ({machine.machine_name()})',
        flush=True)
  failures: dict[str, list[str]] = {s.name: [] for s in systems}
  for repeat in range(options.repeats):
    for system in systems:
      try:
        run = run_once(system, options, repeat + 1)
      except RuntimeError as e:  # one system's failure must not hide the others' figures
        failures[system.name].append(str(e))
        print(f'{system.name} repeat {repeat + 1} FAILED: {e}', flush=True)
        continue
      runs[system.name].append(run)
      done = repeat * len(systems) + systems.index(system) + 1
      elapsed = time.time() - began
      rate = f'{run.examples_per_sec:.1f}' if run.examples_per_sec else 'n/a'
      per_step = (f'{run.bytes_per_replica_step / model:.3f}x' if run.bytes_per_replica_step
                  else 'n/a')
      cpu = f'{run.cpu_ms_per_example:.1f}' if run.cpu_ms_per_example else 'n/a'
      by_task = ', '.join(f'{name} {ms:.1f}' for name, ms in run.cpu_ms_by_task.items())
      print(f'[{done}/{total}] {system.name} repeat {repeat + 1}: {rate} examples/s, '
            f'{cpu} CPU ms per example ({by_task or "n/a"}), '
            f'{per_step} model bytes per replica step, worker '
            f'session {run.session_after_chief:.1f} s and first step '
            f'{run.step_after_chief:.1f} s after the chief\'s, waited {run.worker_wait:.1f} s '
            f'for it, lost steps {run.lost_steps}; '
            f'ETA {elapsed / done * (total - done):.0f} s', flush=True)
  for name, errors in failures.items():
    if errors:
      print(f'{name}: {len(errors)} of {options.repeats} runs failed; first: {errors[0]}')
  runs = {name: rs for name, rs in runs.items() if rs}
  report(runs, model, options)
  return 1 if any(failures.values()) else 0

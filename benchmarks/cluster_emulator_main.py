"""A GPU cluster emulated on this machine: `bazel run //benchmarks:cluster_emulator [-- flags]`.

    bazel run //benchmarks:cluster_emulator -- --nodes=1,2,4,10 --link_mbit=1000 --time_scale=10

For each system, mode (sync, async) and node count it builds `nodes` network namespaces
on shaped full-duplex links (`benchmarks/emulated_network.py`: `--link_mbit` /
`--time_scale` per direction per node, `--link_latency_ms`), puts one ps task and one
worker on every node (they share the node's link, as on the real cluster), runs them as
separate processes with `LocalCluster` (`benchmarks/emulated_task.py`: the real
network's variables on the ps tasks, real pulls and pushes through TensorFlow's gRPC
parameter-server runtime, the forward and backward passes replaced by a wait of
`--emulate_compute x --time_scale` seconds, split per layer by FLOPs with `--overlap` so
that pulls overlap the forward pass and pushes the backward pass, as in training
without gradient clipping), and prints one Markdown row per run.

`--systems` chooses what runs those steps: `ours` (the above), or a TensorFlow peer
through its own strategy object (`benchmarks/emulated_peer_task.py`, same variables, same
wait, roles from TF_CONFIG): `ps_strategy` (tf.compat.v1 ParameterServerStrategy, one ps
and one worker per node, asynchronous only) and `multi_worker_mirrored`
(MultiWorkerMirroredStrategy, one worker per node and no ps, synchronous only; its model
is a ring all-reduce). A mode a system does not have is skipped with one line.
Columns:

* examples/s per worker and step-time percentiles, in the USER's seconds (measured
  seconds / time_scale): stretching the compute wait and slowing the links by the same k
  keeps their ratio and leaves this machine's CPU time per step (gRPC copies) k times
  smaller in comparison;
* scaling efficiency against one node (the 1-node run of the same invocation) and
  against a GPU that never waits, beside the paper model's prediction for the same
  layout (`benchmarks/cluster_model.py`, at `--link_efficiency` of the link);
* MB per worker step through the busiest node link, sent / received, measured from the
  bridge's counters (Ethernet, IP, TCP and gRPC framing included) beside the model's for
  that node at the measured mix of worker steps (asynchronous workers step at different
  rates when their remote ps shares differ; the model counts each worker's steps), and
  that link's use: its busier direction's bytes over the window / the link rate (a
  shaped link cannot exceed 100%).

`--plot=<file.png>` also draws the scaling curve (nodes against the share of compute, one
line per system and mode, the model dashed; `benchmarks/plots.py`); with
`--rows_from=<status file>` it draws the rows a run recorded and measures nothing.

Steps: `--untimed_steps` per worker are not measured, then `--steps` are. Each run is
bounded by `--timeout_secs`; every namespace, link and process is removed at the end.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import shutil
import sys
import tempfile
import time

from command_line import console, status_file

console.quiet_native_logs()  # before TensorFlow is imported: it reads the level once

# pylint: disable=wrong-import-position
from benchmarks import cluster_model, machine
from benchmarks.emulated_network import EmulatedNetwork, NetworkSetupError, node_address
from benchmarks.emulated_peer_task import PeerTaskOptions
from benchmarks.emulated_task import (STEP_EVENT, ComputeShare, TaskOptions, compute_shares,
                                      ps_shares, variable_shapes, write_compute_shares)
from model_fn import transfer
from command_line import entry, working_dir
from towers.cluster.local_cluster import ISOLATED_ENV, LocalCluster, reexec_in_private_network
from command_line.options import Options, Problem, Range, above, at_least, option

SCRIPT = os.path.abspath(__file__)
ROLE_FLAGS = ('ps_hosts', 'worker_hosts', 'task_type', 'task_index')  # LocalCluster's
MB = 1e6
SYSTEMS = ('ours', 'ps_strategy', 'multi_worker_mirrored')
# Modes each system has: TensorFlow's v1 ParameterServerStrategy is asynchronous by
# definition ("An asynchronous multi-worker parameter server tf.distribute strategy"),
# MultiWorkerMirroredStrategy synchronous (every step all-reduces every gradient).
SYSTEM_MODES = {'ours': ('sync', 'async'), 'ps_strategy': ('async',),
                'multi_worker_mirrored': ('sync',)}


def _rows_from_draws_a_plot(o: EmulatorOptions) -> Problem | None:
  return Problem('rows_from', '--rows_from draws recorded rows: give --plot=<file.png>'
                 ) if o.rows_from and not o.plot else None


def _lists_name_one(o: EmulatorOptions) -> Problem | None:
  empty = [name for name in ('modes', 'systems', 'nodes') if not getattr(o, name)]
  return Problem(empty[0], f'--{empty[0]} is empty: name at least one') if empty else None


def _peers_transfer_float32(o: EmulatorOptions) -> Problem | None:
  peers = [s for s in o.systems if s != 'ours']
  if peers and (o.accumulate_steps != 1 or o.transfer_dtype != 'float32'):
    return Problem('systems', f'--systems={",".join(peers)} transfer float32 once per '
                   'micro-batch: run them with --accumulate_steps=1 --transfer_dtype=float32 '
                   '(ours separately)')
  return None


@dataclasses.dataclass(frozen=True)
class EmulatorOptions(Options):
  rules = (_rows_from_draws_a_plot, _lists_name_one, _peers_transfer_float32)

  nodes: tuple[int, ...] = option((1, 2, 4, 10), 'Node counts to emulate (one ps and one '
                                  'worker per node; multi_worker_mirrored: one worker).',
                                  valid=Range(low=1, high=200))
  systems: tuple[str, ...] = option(('ours',), 'Systems to run, from ours (this library\'s '
                                    'ps runtime), ps_strategy (async only), '
                                    'multi_worker_mirrored (sync only).', choices=SYSTEMS)
  modes: tuple[str, ...] = option(('sync', 'async'), 'sync and/or async.',
                                  choices=('sync', 'async'))
  link_mbit: float = option(1000.0, 'Each node\'s link, Mbit/s per direction (full duplex).',
                            valid=above(0))
  link_latency_ms: float = option(0.0, 'One-way delay added per link direction (needs netem).',
                                  valid=at_least(0))
  emulate_compute: float = option(2.099, 'GPU seconds of one step (GTX1060, 6 I3D clips of '
                                  '64x224x224: docs/scaling.md).', valid=at_least(0))
  time_scale: float = option(10.0, 'k: the compute wait is multiplied by k and the link '
                             'rate divided by k.', valid=above(0))
  batch_size: int = option(6, 'Clips per worker micro-batch (for examples/s).', valid=at_least(1))
  model: str = option('i3d', 'Network whose variables are transferred.',
                      choices=('i3d', 'c3d_small'))
  num_classes: int = option(101, 'Classes of the network head.', valid=at_least(1))
  transfer_dtype: str = option('float32', 'Pulled parameters and pushed gradients travel '
                               'in this type (the ps keeps float32).',
                               choices=tuple(transfer.TRANSFER_DTYPES))
  accumulate_steps: int = option(1, 'Micro-batches per pull and push.', valid=at_least(1))
  ps_placement: str = option('largest_first', 'Variable placement over the ps tasks '
                             '(ours; training in a cluster always places largest_first).',
                             choices=('greedy', 'largest_first'))
  overlap: bool = option(True, 'Compute split per layer by FLOPs, each layer\'s forward '
                         'after its pull and its push right after its backward, as training '
                         'without --clip_gradient_norm runs; false: one wait between all '
                         'pulls and all pushes (no overlap, as with clipping). Ours only: '
                         'the peers always wait in one block.')
  untimed_steps: int = option(1, 'Steps per worker before measuring (not the training warm-up).',
                              valid=at_least(0))
  steps: int = option(3, 'Measured steps per worker (a rate needs two step ends).',
                      valid=at_least(2))
  link_efficiency: float = option(0.9, 'Usable fraction of the link in the model prediction.',
                                  valid=Range(low=0.0, high=1.0, low_open=True))
  timeout_secs: float = option(1800.0, 'Each run gives up after this long.', valid=above(0))
  task_logs: str = option('', 'If set, each task\'s output is appended to <task_logs>/<task>.log.',
                        path=True)
  plot: str = option('', 'Also draw the scaling curve (nodes against share of compute, one '
                     'line per system and mode, the model dashed) as a PNG at this path.',
                     path=True)
  rows_from: str = option('', 'Measure nothing: draw --plot from the emulator_row events a '
                          'run recorded in this status file (its $TOWERS_STATUS_FILE).',
                          path=True)


@dataclasses.dataclass
class Measurement:
  """One run. Rates and durations in the emulated cluster's seconds (measured / time_scale)."""
  worker_steps_per_second: float
  step_seconds: list[float]
  sent_per_step: list[float]  # per node, bytes per worker step
  received_per_step: list[float]
  busiest_link_use: float  # the busiest link direction's bytes / (window x link rate)
  step_mix: list[float]  # per node, its worker's fraction of all worker steps in the window


def task_options(options: EmulatorOptions, sync: bool, compute_shares_file: str) -> list[str]:
  """The flags every emulated task gets (`compute_shares_file`: the variables' compute
  shares, counted once here, or '')."""
  task = TaskOptions(model=options.model, num_classes=options.num_classes,
                     emulate_compute=options.emulate_compute, time_scale=options.time_scale,
                     accumulate_steps=options.accumulate_steps,
                     transfer_dtype=options.transfer_dtype, ps_placement=options.ps_placement,
                     sync_replicas=sync, overlap=options.overlap,
                     compute_shares_file=compute_shares_file, steps=1000000,
                     max_seconds=options.timeout_secs)
  return [f'--{f.name}={getattr(task, f.name)}' for f in dataclasses.fields(task)
          if f.name not in ROLE_FLAGS]


def step_events(events: list[dict]) -> list[tuple[int, float, float]]:
  """(index, end time, duration) of every `emulated_step` status event."""
  return [(e['index'], e['end'], e['seconds']) for e in events if e['event'] == STEP_EVENT]


def peer_task_options(options: EmulatorOptions, peer: str, model_dir: str) -> list[str]:
  """The flags every task of TensorFlow peer `peer` gets (its role comes from TF_CONFIG)."""
  task = PeerTaskOptions(peer=peer, model=options.model, num_classes=options.num_classes,
                         emulate_compute=options.emulate_compute,
                         time_scale=options.time_scale, model_dir=model_dir,
                         max_seconds=options.timeout_secs)
  return [f'--{f.name}={getattr(task, f.name)}' for f in dataclasses.fields(task)]


def node_of(task) -> int:
  """The emulated node of a `LocalCluster` task: ps n and worker n on node n; the chief
  is worker 0 (node 0), LocalCluster's worker k is worker k + 1."""
  return task.task_index + 1 if task.task_type == 'worker' else task.task_index


def make_cluster(options: EmulatorOptions, system: str, nodes: int, sync: bool,
                 network: EmulatedNetwork, model_dir: str, compute_shares_file: str
                 ) -> LocalCluster:
  """The tasks of `system` on `nodes` emulated nodes: ps n (if any) and worker n on node n
  (worker 0 is the chief)."""
  common = dict(evaluator=False, echo=None, log_dir=options.task_logs or None,
                launcher=lambda task: network.enter(node_of(task)))
  addresses = [node_address(n) for n in range(nodes)]
  if system == 'ours':
    return LocalCluster(nodes, nodes, task_options(options, sync, compute_shares_file),
                        program=('-m', 'benchmarks.emulated_task_main'), hosts=addresses * 2,
                        **common)
  num_ps = nodes if system == 'ps_strategy' else 0
  return LocalCluster(num_ps, nodes, peer_task_options(options, system, model_dir),
                      program=('-m', 'benchmarks.emulated_peer_task_main'),
                      hosts=addresses * (2 if num_ps else 1), tf_config_role=True, **common)


def measure(options: EmulatorOptions, system: str, nodes: int, sync: bool,
            compute_shares_file: str = '') -> Measurement:
  """Runs one emulated cluster and measures it (see the module docstring);
  `compute_shares_file` as `task_options` takes it."""
  k = options.time_scale
  model_dir = tempfile.mkdtemp(prefix=f'cluster_emulator_{system}_')
  with EmulatedNetwork(nodes, options.link_mbit / k, options.link_latency_ms) as network:
    cluster = make_cluster(options, system, nodes, sync, network, model_dir,
                           compute_shares_file)
    workers = sorted((name for name, t in cluster.tasks.items()
                      if t.task_type in ('chief', 'worker')),
                     key=lambda name: node_of(cluster.tasks[name]))  # node order
    start = end = None
    try:
      if system == 'multi_worker_mirrored':
        for name in cluster.tasks:  # collective initialisation needs every worker at once
          cluster.start(name)
      else:
        cluster.start_all(chief_ready_timeout=300)
      deadline = time.time() + options.timeout_secs
      while time.time() < deadline and end is None:
        outputs = {w: step_events(cluster.events(w)) for w in workers}
        if start is None and all(len(s) >= options.untimed_steps for s in outputs.values()):
          start = (time.time(), network.link_bytes())
        elif start is not None and all(
            sum(1 for s in lines if s[1] > start[0]) >= options.steps
            for lines in outputs.values()):
          end = (time.time(), network.link_bytes())
        if cluster.failed_tasks():
          raise RuntimeError(f'emulated tasks failed: {cluster.failed_tasks()}: '
                             + ' | '.join(cluster.output(cluster.failed_tasks()[0])[-5:]))
        time.sleep(0.05)
    finally:
      cluster.stop_all()
      shutil.rmtree(model_dir, ignore_errors=True)
  if end is None:
    raise RuntimeError(f'{system}, {nodes} nodes: not every worker finished {options.steps} '
                       f'steps after warm-up in --timeout_secs={options.timeout_secs:.0f}')
  return window_measurement(outputs, start, end, k,
                            options.link_mbit / k * 1e6 / 8)


def window_measurement(outputs: dict[str, list[tuple[int, float, float]]],
                       start: tuple[float, list[tuple[int, int]]],
                       end: tuple[float, list[tuple[int, int]]], k: float,
                       link_bytes_per_second: float) -> Measurement:
  """The rates, step times and bytes per worker step of the steps that ended between
  `start` and `end` (each a time and the links' counters then). A worker's rate is
  (its steps in the window - 1) / (time between its first and last step end there), so
  the window's edges do not bias it; the workers' rates add up. Bytes per worker step are
  the window's bytes over rate x window length (counting the steps that END in the
  window would credit the window with steps whose pulls preceded it). `outputs` is in
  node order (one worker per node); the step mix is each worker's rate / their sum."""
  rates, durations = [], []
  for lines in outputs.values():
    inside = [s for s in lines if start[0] < s[1] <= end[0]]
    rates.append((len(inside) - 1) / (inside[-1][1] - inside[0][1]))
    durations += [s[2] / k for s in inside]
  rate = sum(rates)
  steps_between = rate * (end[0] - start[0])
  moved = [(b[0] - a[0], b[1] - a[1]) for a, b in zip(start[1], end[1])]
  use = max(max(m) for m in moved) / ((end[0] - start[0]) * link_bytes_per_second)
  return Measurement(rate * k, durations, [m[0] / steps_between for m in moved],
                     [m[1] / steps_between for m in moved], use, [r / rate for r in rates])


def model_shares(options: EmulatorOptions, system: str,
                 shapes: list[tuple[str, tuple[int, ...]]], nodes: int) -> list[float]:
  """Bytes on the wire per pull held by each ps task as `system` places the variables of
  `shapes` (multi_worker_mirrored, which has no ps: [all parameter bytes])."""
  value_bytes = transfer.bytes_per_value(options.transfer_dtype)
  if system == 'ours':
    return ps_shares(shapes, nodes, options.ps_placement, value_bytes)
  sizes = [value_bytes * math.prod(shape) for _, shape in shapes]
  if system == 'ps_strategy':  # the Estimator's global step takes ps 0 first
    return cluster_model.round_robin_shares(sizes, nodes, first_task=1)
  return [float(sum(sizes))]


@dataclasses.dataclass(frozen=True)
class Layers:
  """Per trainable variable in creation order, the model's overlap inputs: its share of
  the step's compute (forward, backward) and of the transferred bytes."""
  forward: tuple[float, ...]
  backward: tuple[float, ...]
  bytes: tuple[float, ...]


def model_layers(shares: list[ComputeShare], shapes: list[tuple[str, tuple[int, ...]]]
                 ) -> Layers:
  """`Layers` from `emulated_task.compute_shares` and `variable_shapes` (same order)."""
  if [s.name for s in shares] != [name for name, _ in shapes]:
    raise ValueError('compute shares and variable shapes name different variables')
  sizes = [math.prod(shape) for _, shape in shapes]
  return Layers(tuple(s.forward for s in shares), tuple(s.backward for s in shares),
                tuple(size / sum(sizes) for size in sizes))


def predicted_efficiency(options: EmulatorOptions, system: str, shares: list[float],
                         nodes: int, sync: bool, layers: Layers | None = None) -> float:
  """Efficiency against a GPU that never waits of the paper model for this layout; with
  `layers` (ours with --overlap), of its overlapped step. For multi_worker_mirrored
  `shares` is [parameter bytes] and the traffic a ring all-reduce."""
  compute = options.emulate_compute * options.accumulate_steps
  link = options.link_mbit * 1e6 / 8 * options.link_efficiency
  step = (functools.partial(_overlapped_step, compute, options.accumulate_steps, layers)
          if layers and system == 'ours' else None)
  if system == 'multi_worker_mirrored':
    seconds = cluster_model.allreduce_sync_step_seconds(compute, shares[0], nodes, link)
    return cluster_model.efficiency(nodes / seconds, nodes, compute)
  if sync:
    seconds = cluster_model.sync_step_seconds(compute, shares, nodes, nodes, link, step)
    return cluster_model.efficiency(nodes / seconds, nodes, compute)
  rate = cluster_model.async_steps_per_second(compute, shares, nodes, nodes, link, step)
  return cluster_model.efficiency(rate, nodes, compute)


def predicted_bytes(system: str, shares: list[float], nodes: int, node: int,
                    step_mix: list[float]) -> float:
  """The traffic model's bytes per worker step through `node`'s link in one direction,
  at the measured `step_mix` (each worker's fraction of the steps: asynchronous workers
  with unequal remote shares do not step alike). multi_worker_mirrored: `shares` is
  [parameter bytes], a ring all-reduce, the same on every node."""
  if system == 'multi_worker_mirrored':
    return cluster_model.allreduce_node_bytes_per_worker_step(shares[0], nodes)
  return cluster_model.node_bytes_per_worker_step(shares, nodes, node, step_mix)


def _overlapped_step(compute: float, micro_batches: int, layers: Layers,
                     transfer_seconds: float) -> float:
  """The overlapped step as `emulated_task.compute_waits` emulates it: the first
  micro-batch's forward and the last one's backward overlap the transfers."""
  per_micro_batch = compute / micro_batches
  return cluster_model.overlapped_step_seconds(
      [per_micro_batch * f for f in layers.forward],
      [per_micro_batch * b for b in layers.backward], layers.bytes, transfer_seconds,
      compute - per_micro_batch)


def percentile(values: list[float], fraction: float) -> float:
  ordered = sorted(values)
  return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def describe(options: EmulatorOptions) -> str:
  return (f'{options.model}, {options.transfer_dtype} transfers, accumulate_steps='
          f'{options.accumulate_steps}, ps_placement={options.ps_placement} (ours), '
          f'{"overlapped per layer" if options.overlap else "no overlap (one compute wait)"} '
          '(ours), '
          f'{options.link_mbit:g} Mbit/s links, compute {options.emulate_compute} s per '
          f'micro-batch of {options.batch_size}, time_scale {options.time_scale:g}')


def recorded_rows(path: str) -> list[dict]:
  """The `emulator_row` events of the status file `path` that carry compute_share."""
  return [e for e in status_file.read(path)
          if e['event'] == 'emulator_row' and 'compute_share' in e]


def options_problem(options: EmulatorOptions) -> Problem | None:
  """--plot that cannot be written or --rows_from without recorded rows, or None."""
  if options.plot and working_dir.unwritable(options.plot):
    return Problem('plot', f'--plot={options.plot}: {working_dir.unwritable(options.plot)}')
  if options.rows_from and (not os.path.isfile(options.rows_from) or
                            not recorded_rows(options.rows_from)):
    return Problem('rows_from', f'--rows_from={options.rows_from}: no emulator_row event '
                   'with compute_share in it; give the status file of a cluster_emulator run')
  return None


def runs(options: EmulatorOptions) -> tuple[list[tuple[str, str]], list[str]]:
  """(system, mode) pairs to run in order, and one line per pair skipped because the
  system does not have that mode."""
  pairs, skipped = [], []
  for system in options.systems:
    for mode in options.modes:
      if mode in SYSTEM_MODES[system]:
        pairs.append((system, mode))
      else:
        only = 'synchronous' if SYSTEM_MODES[system] == ('sync',) else 'asynchronous'
        skipped.append(f'{system} is {only} only: no {mode} rows for it')
  return pairs, skipped


def draw(rows: list[dict], path: str, title: str = '') -> None:
  """The scaling curve of `rows` (`emulator_row` values) as a PNG at `path`."""
  # The plotting library loads only for a picture (its start-up time and its notices).
  from benchmarks import plots  # pylint: disable=import-outside-toplevel
  plots.scaling_curve(rows, path, title)


def run(options: EmulatorOptions) -> None:
  """Prints the table (with --plot, draws it); refused (exit 2) when the emulated network
  cannot be set up. With --rows_from, only draws the recorded rows."""
  if options.rows_from:
    draw(recorded_rows(options.rows_from), options.plot)
    print(f'cluster_emulator: drew {options.rows_from} in {options.plot}')
    return
  if not os.environ.get(ISOLATED_ENV):
    reexec_in_private_network(SCRIPT, sys.argv[1:])
    raise entry.Refused('needs network namespaces (unshare --net --map-root-user); this '
                        'machine does not allow them')
  pairs, skipped = runs(options)
  shapes = variable_shapes(options.model, options.num_classes)
  compute = (compute_shares(options.model, options.num_classes)
             if options.overlap and any(system == 'ours' for system, _ in pairs) else None)
  print(f'cluster_emulator {time.strftime("%Y-%m-%d")} on {machine.machine_name()}: '
        f'{describe(options)}')
  for line in skipped:
    print(f'cluster_emulator: {line}')
  print('| system | mode | nodes | examples/s per worker | eff. vs 1 node | eff. vs compute | '
        'model eff. | step p50 / p90 (s) | busiest link MB per worker step, out / in | '
        'model MB | busiest link use |')
  print('|---|---|---:|---:|---:|---:|---:|---|---|---:|---:|', flush=True)
  with tempfile.TemporaryDirectory(prefix='cluster_emulator_') as scratch:
    # Counted once here rather than in every emulated worker (~8 s CPU each for I3D).
    compute_file = (write_compute_shares(compute, os.path.join(scratch, 'compute.json'))
                    if compute else '')
    rows = print_rows(options, pairs, shapes, model_layers(compute, shapes) if compute
                      else None, compute_file)
  if options.plot:
    draw(rows, options.plot, f'emulated cluster: {describe(options)}')
    print(f'cluster_emulator: the curve is in {options.plot}')


def print_rows(options: EmulatorOptions, pairs: list[tuple[str, str]],
               shapes: list[tuple[str, tuple[int, ...]]], layers: Layers | None,
               compute_shares_file: str) -> list[dict]:
  """Measures every (system, mode) pair at every node count and prints its row (also an
  `emulator_row` status event: the row's figures, MB per worker step of the busiest link);
  returns the events' values. Raises `NetworkSetupError` (exit 2) if the emulated network
  cannot be set up."""
  ideal = options.batch_size / options.emulate_compute
  rows = []
  for system, mode in pairs:
    sync = mode == 'sync'
    one_node = None
    for nodes in options.nodes:
      shares = model_shares(options, system, shapes, nodes)
      m = measure(options, system, nodes, sync, compute_shares_file)
      per_worker = m.worker_steps_per_second / nodes * options.batch_size * \
          options.accumulate_steps
      if nodes == 1:
        one_node = per_worker
      vs_one = f'{per_worker / one_node:.0%}' if one_node else 'n/a'
      model_efficiency = predicted_efficiency(options, system, shares, nodes, sync, layers)
      busiest = max(range(nodes), key=lambda n: m.sent_per_step[n] + m.received_per_step[n])
      model_bytes = predicted_bytes(system, shares, nodes, busiest, m.step_mix)
      print(f'| {system} | {mode} | {nodes} | {per_worker:.2f} | {vs_one} | '
            f'{per_worker / ideal:.0%} | {model_efficiency:.0%} | '
            f'{percentile(m.step_seconds, 0.5):.2f} / {percentile(m.step_seconds, 0.9):.2f} | '
            f'{m.sent_per_step[busiest] / MB:.3f} / {m.received_per_step[busiest] / MB:.3f} | '
            f'{model_bytes / MB:.3f} | {m.busiest_link_use:.0%} |', flush=True)
      rows.append(dict(system=system, mode=mode, nodes=nodes,
                       examples_per_second_per_worker=per_worker,
                       compute_share=per_worker / ideal, model_efficiency=model_efficiency,
                       sent_mb=m.sent_per_step[busiest] / MB,
                       received_mb=m.received_per_step[busiest] / MB,
                       model_mb=model_bytes / MB, link_use=m.busiest_link_use))
      status_file.record('emulator_row', **rows[-1])
  return rows


PROGRAM = entry.Program('cluster_emulator', run, EmulatorOptions, check=options_problem,
                        refused=(NetworkSetupError,))


if __name__ == '__main__':
  PROGRAM.start()

"""The cluster emulator as a library: its options (`EmulatorOptions`), the checks before
any work (`options_problem`), and `run`: every (system, mode) pair at every node count
measured on an emulated cluster (`benchmarks/emulated_cluster.py`) beside the paper
model's figures (`benchmarks/emulator_prediction.py`), one Markdown row and one
`emulator_row` status event each; or, with --rows_from, only the picture of recorded rows.
The program and its columns: benchmarks/cluster_emulator_main.py.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import time

from command_line import console, status_file

console.quiet_native_logs()  # before TensorFlow is imported: it reads the level once

# pylint: disable=wrong-import-position
from benchmarks import emulator_prediction, machine
from benchmarks.emulated_cluster import Links, Measurement, Window, measure
from benchmarks.emulated_peer_task import PeerTaskOptions
from benchmarks.emulated_task import (TaskOptions, compute_shares, variable_shapes,
                                      write_compute_shares)
from benchmarks.emulator_prediction import Layers
from model_fn import transfer
from command_line import working_dir
from command_line.options import Options, Problem, Range, above, at_least, option

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
  """The flags of //benchmarks:cluster_emulator."""
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



def task_flags(options: EmulatorOptions, system: str, sync: bool, model_dir: str,
               compute_shares_file: str) -> list[str]:
  """The flags every task of `system` gets: ours `emulated_task`'s (their roles added per
  task; `compute_shares_file`: the variables' compute shares counted once here, or ''),
  a TensorFlow peer `emulated_peer_task`'s (roles from TF_CONFIG) with its `model_dir`."""
  if system == 'ours':
    task = TaskOptions(model=options.model, num_classes=options.num_classes,
                       emulate_compute=options.emulate_compute, time_scale=options.time_scale,
                       accumulate_steps=options.accumulate_steps,
                       transfer_dtype=options.transfer_dtype, ps_placement=options.ps_placement,
                       sync_replicas=sync, overlap=options.overlap,
                       compute_shares_file=compute_shares_file, steps=1000000,
                       max_seconds=options.timeout_secs)
  else:
    task = PeerTaskOptions(peer=system, model=options.model, num_classes=options.num_classes,
                           emulate_compute=options.emulate_compute,
                           time_scale=options.time_scale, model_dir=model_dir,
                           max_seconds=options.timeout_secs)
  return [f'--{f.name}={getattr(task, f.name)}' for f in dataclasses.fields(task)
          if f.name not in ROLE_FLAGS]


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


def draw_recorded(options: EmulatorOptions) -> None:
  """--rows_from: draws the recorded rows at --plot, measuring nothing."""
  draw(recorded_rows(options.rows_from), options.plot)
  print(f'cluster_emulator: drew {options.rows_from} in {options.plot}')


def run(options: EmulatorOptions) -> None:
  """Prints the table (with --plot, draws it), in a network namespace where this process
  may create more (the program re-executes itself into one). Raises `NamespaceError` if
  the emulated network cannot be set up."""
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
    rows = print_rows(options, pairs, shapes,
                      emulator_prediction.model_layers(compute, shapes) if compute else None,
                      compute_file)
  if options.plot:
    draw(rows, options.plot, f'emulated cluster: {describe(options)}')
    print(f'cluster_emulator: the curve is in {options.plot}')


def measure_run(options: EmulatorOptions, system: str, nodes: int, sync: bool,
                compute_shares_file: str) -> Measurement:
  """One emulated cluster of `system` on `nodes` nodes, measured (`emulated_cluster.measure`)."""
  links = Links(options.link_mbit, options.link_latency_ms, options.time_scale)
  window = Window(options.untimed_steps, options.steps, options.timeout_secs)
  with tempfile.TemporaryDirectory(prefix=f'cluster_emulator_{system}_',
                                   ignore_cleanup_errors=True) as model_dir:
    flags = task_flags(options, system, sync, model_dir, compute_shares_file)
    return measure(system, nodes, flags, links, window, options.task_logs)


def print_rows(options: EmulatorOptions, pairs: list[tuple[str, str]],
               shapes: list[tuple[str, tuple[int, ...]]], layers: Layers | None,
               compute_shares_file: str) -> list[dict]:
  """Measures every (system, mode) pair at every node count and prints its row (also an
  `emulator_row` status event: the row's figures, MB per worker step of the busiest link);
  returns the events' values. Raises `NamespaceError` (exit 2) if the emulated network
  cannot be set up."""
  ideal = options.batch_size / options.emulate_compute
  usable_link = options.link_mbit * 1e6 / 8 * options.link_efficiency
  rows = []
  for system, mode in pairs:
    sync = mode == 'sync'
    one_node = None
    for nodes in options.nodes:
      shares = emulator_prediction.model_shares(system, shapes, nodes, options.ps_placement,
                                                options.transfer_dtype)
      m = measure_run(options, system, nodes, sync, compute_shares_file)
      per_worker = m.worker_steps_per_second / nodes * options.batch_size * \
          options.accumulate_steps
      if nodes == 1:
        one_node = per_worker
      vs_one = f'{per_worker / one_node:.0%}' if one_node else 'n/a'
      model_efficiency = emulator_prediction.predicted_efficiency(
          system, shares, nodes, sync, options.emulate_compute, options.accumulate_steps,
          usable_link, layers)
      busiest = max(range(nodes), key=lambda n: m.sent_per_step[n] + m.received_per_step[n])
      model_bytes = emulator_prediction.predicted_bytes(system, shares, nodes, busiest,
                                                        m.step_mix)
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

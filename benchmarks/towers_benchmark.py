"""The library of //benchmarks:towers_benchmark (`benchmarks/towers_benchmark_main.py` says what it
measures and how to run it): its options, their checks and its run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import os
import sys
import time
from typing import Callable

from command_line.options import Options, Problem, above, at_least, option


@dataclasses.dataclass(frozen=True)
class BenchmarkOptions(Options):
  """What to measure and how; `batch_size`, `clip_frames`, `crop_size` and `num_classes`
  mean what they mean for //towers:train."""
  models: tuple[str, ...] = option(('c3d_small', 'i3d'), 'Networks to benchmark, all in one run.')
  devices: tuple[int, ...] = option((1, 2, 4), 'Device counts for the towers and mirrored rows.',
                                    valid=at_least(1))
  batch_size: int = option(16, 'Fixed global batch, split across the devices.', valid=at_least(1))
  clip_frames: int = option(8, 'Frames per synthetic clip.', valid=at_least(1))
  crop_size: int = option(64, 'Height and width of the synthetic clips.', valid=at_least(1))
  num_classes: int = option(101, 'Classes of the network head.', valid=at_least(1))
  untimed_steps: int = option(3, 'Steps run per row before the timed repeats (not timed).',
                              valid=at_least(0))
  repeats: int = option(7, 'Timed repeats per row (median and min-max over these).',
                        valid=at_least(1))
  steps_per_repeat: int = option(4, 'Training steps timed per repeat.', valid=at_least(1))
  trace: str = option('', 'Write a Chrome trace of one towers step here (JSON).', path=True)
  trace_devices: int = option(2, 'Tower count of the traced step.', valid=at_least(1))
  include_input: bool = option(
      False, 'Also run the input-pipeline benchmark (benchmarks/input_benchmark.py).')
  input_seconds: float = option(8.0, 'With --include_input: seconds per input route.',
                                valid=above(0))




def _params(options: BenchmarkOptions, model: str, devices: int):
  from towers.params import make_params
  return make_params(model=model, num_towers=devices, batch_size=options.batch_size,
                     clip_frames=options.clip_frames, crop_size=options.crop_size,
                     num_classes=options.num_classes, weight_decay=1e-4,
                     lr_schedule='constant', lr_values=(1e-3,), lr_boundaries=())


def _builders() -> dict[str, Callable]:
  from benchmarks import benchmark_graphs, benchmark_report
  return {benchmark_report.REFERENCE: benchmark_graphs.reference_step,
          benchmark_report.TOWERS: benchmark_graphs.towers_step,
          benchmark_report.MIRRORED: benchmark_graphs.mirrored_step}


def _configurations(device_counts: list[int]) -> list[tuple[str, int]]:
  from benchmarks import benchmark_report as report
  return ([(report.REFERENCE, 1)] + [(report.TOWERS, n) for n in device_counts]
          + [(report.MIRRORED, n) for n in device_counts])


def _open(options: BenchmarkOptions, method: str, model: str, devices: int):
  """Builds the row's step, starts its session, initialises it and runs its untimed steps."""
  import tensorflow as tf
  step = _builders()[method](_params(options, model, devices))
  session = tf.compat.v1.Session(graph=step.graph, config=step.config)
  session.run(step.init_op)
  for _ in range(options.untimed_steps):
    session.run(step.train_op)
  return session, step


def measure_model(options: BenchmarkOptions, model: str, log: Callable[[str], None]) -> list:
  """All rows of one model, repeats interleaved across rows; returns benchmark_report.Rows."""
  from benchmarks import benchmark_report
  configurations = _configurations(list(options.devices))
  opened = []
  for method, devices in configurations:
    start = time.perf_counter()
    opened.append(_open(options, method, model, devices))
    log(f'  {model} {method} x{devices}: built and run untimed in '
        f'{time.perf_counter() - start:.1f} s')
  samples = [[] for _ in configurations]
  cpu_samples = [[] for _ in configurations]
  examples = options.steps_per_repeat * options.batch_size
  for repeat in range(options.repeats):
    for i, (session, step) in enumerate(opened):
      start, cpu_start = time.perf_counter(), time.process_time()
      for _ in range(options.steps_per_repeat):
        session.run(step.train_op)
      samples[i].append(examples / (time.perf_counter() - start))
      cpu_samples[i].append((time.process_time() - cpu_start) / examples)
    log(f'  {model}: repeat {repeat + 1}/{options.repeats} done')
  for session, _ in opened:
    session.close()
  return [benchmark_report.Row(model, method, devices, tuple(s), tuple(c))
          for (method, devices), s, c in zip(configurations, samples, cpu_samples)]


def trace(options: BenchmarkOptions, model: str, devices: int, path: str) -> str:
  """Traces one step of towers (to `path`), reference and mirrored (next to it)."""
  from benchmarks import benchmark_report, benchmark_trace
  root, ext = os.path.splitext(path)
  targets = [(benchmark_report.TOWERS, devices, path),
             (benchmark_report.REFERENCE, 1, f'{root}.reference{ext or ".json"}'),
             (benchmark_report.MIRRORED, devices, f'{root}.mirrored{ext or ".json"}')]
  lines = []
  for method, count, out in targets:
    session, step = _open(options, method, model, count)
    metadata = benchmark_trace.trace_step(session, step.train_op)
    session.close()
    benchmark_trace.write_chrome_trace(metadata, out)
    lines += [f'trace of one {model} step, {benchmark_report.METHOD_LABELS[method]} on '
              f'{count} device(s): {out}', benchmark_trace.summarize(metadata), '']
  return '\n'.join(lines)


def options_problem(options: BenchmarkOptions) -> Problem | None:
  """--models that are not registered networks (the registry loads with TensorFlow, so
  after the options are made), or None."""
  from model_fn import networks
  unknown = [m for m in options.models if m not in networks.names()]
  if unknown:
    return Problem('models', f'--models: {", ".join(unknown)} not registered '
                   f'({", ".join(networks.names())})')
  return None


def run(options: BenchmarkOptions) -> None:
  """Measures every model and prints the report."""
  from model_fn.devices import ensure_logical_cpus
  ensure_logical_cpus(max(options.devices + (options.trace_devices,)))  # Mirrored's replicas
  import tensorflow as tf
  from benchmarks import benchmark_report
  log = lambda line: print(line, file=sys.stderr, flush=True)
  gpus = len(tf.config.list_physical_devices('GPU'))
  rows = []
  for model in options.models:
    rows += measure_model(options, model, log)
  report = [
      f'tower benchmark, {datetime.date.today().isoformat()}: global batch {options.batch_size} '
      f'synthetic clips {options.clip_frames}x{options.crop_size}x{options.crop_size}x3, '
      f'{options.num_classes} classes, momentum optimizer, weight decay 1e-4',
      f'devices: {f"{gpus} GPU(s)" if gpus else f"virtual CPU devices sharing {os.cpu_count()} cores"}',
      f'method (every row): session.run(train_op) of the row\'s own training-step graph, '
      f'{options.untimed_steps} untimed steps first, {options.repeats} repeats x '
      f'{options.steps_per_repeat} steps, repeats interleaved across the rows of a model; '
      'median and min-max over the repeats; CPU = process CPU time (all threads) per '
      'example, median',
      '',
      benchmark_report.format_table(rows),
      '',
      *benchmark_report.targets(rows)]
  if options.trace:
    report += ['', trace(options, options.models[0], options.trace_devices, options.trace)]
  if options.include_input:
    from benchmarks import input_benchmark
    with contextlib.redirect_stdout(sys.stderr):  # data preparation progress lines
      report += ['', input_benchmark.run(input_benchmark.InputBenchmarkOptions(
          seconds=options.input_seconds, clip_frames=16, crop_size=112, batch_size=8,
          groups=12, frames=48, profile=False))]
  print('\n'.join(report))

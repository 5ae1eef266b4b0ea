"""The library of //benchmarks:time_to_accuracy (`benchmarks/time_to_accuracy_main.py` says what it
measures and how to run it): its options, their checks and its run.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import sys
import tempfile
import time

from absl import flags

from command_line import working_dir
from command_line.options import Options, Problem, Range, at_least, option


def _results_from_draws_a_plot(o: TimeToAccuracyOptions) -> Problem | None:
  return Problem('results_from', '--results_from draws recorded runs: give --plot=<file.png>'
                 ) if o.results_from and not o.plot else None


@dataclasses.dataclass(frozen=True)
class TimeToAccuracyOptions(Options):
  """The runs to compare and when each stops."""
  rules = (_results_from_draws_a_plot,)

  towers: tuple[int, ...] = option((1, 2), 'Tower counts to compare (same global batch).',
                                   valid=at_least(1))
  target: float = option(0.9, 'Top-1 test accuracy to reach.',
                         valid=Range(low=0.0, high=1.0, low_open=True))
  eval_every: int = option(20, 'Training steps between evaluations.', valid=at_least(1))
  step_limit: int = option(600, 'Give up at this global step (the runs\' max_steps).',
                           valid=at_least(1))
  set: tuple[str, ...] = option(
      ('num_classes=16',), 'Demo flag overrides name=value, comma-separated. Default '
      'num_classes=16: the demo itself (4 directions) is at 100% by the first evaluations, '
      'too easy for a curve.')
  work_dir: str = option('', 'Model directories go here (default: a temp dir).', path=True)
  plot: str = option('', 'Also draw the curves (step against test top-1, one line per tower '
                     'count) as a PNG at this path, and write the runs beside it as JSON '
                     '(the same path ending .json).', path=True)
  results_from: str = option('', 'Train nothing: draw --plot from the JSON runs a --plot run '
                             'wrote.', path=True)



DEMO_FLAGS = os.path.join(os.path.dirname(os.path.dirname(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'time_to_accuracy_main.py'))), 'towers', 'demo.flags')


def demo_params(options: TimeToAccuracyOptions, num_towers: int, model_dir: str):
  """towers/demo.flags read through the train binary's own flags, plus overrides."""
  from towers import flags as train_flags
  values = flags.FlagValues()
  train_flags.define_flags(values)
  argv = ['time_to_accuracy', f'--flagfile={DEMO_FLAGS}', *[f'--{o}' for o in options.set],
          f'--num_towers={num_towers}', f'--model_dir={model_dir}',
          f'--max_steps={options.step_limit}', '--log_every_steps=1000',
          '--export_savedmodel=false', f'--save_checkpoints_steps={options.step_limit}']
  values(argv)
  return train_flags.params_from_flags(values)


def _step_timer():
  import tensorflow as tf

  class StepTimer(tf.compat.v1.train.SessionRunHook):
    """Sums the wall time of the training session.run calls."""
    seconds = 0.0

    def before_run(self, run_context):
      self._start = time.perf_counter()

    def after_run(self, run_context, run_values):
      StepTimer.seconds += time.perf_counter() - self._start

  return StepTimer


def run_to_target(options: TimeToAccuracyOptions, num_towers: int, model_dir: str, log) -> dict:
  """Trains until the target accuracy; returns the curve and the totals."""
  import tensorflow as tf
  from input_fn import factory
  from model_fn.eval_spec import TOP_1
  from towers.estimator import build_estimator
  params = demo_params(options, num_towers, model_dir)
  estimator = build_estimator(params)
  train_input = factory.make_input_fn(params, tf.estimator.ModeKeys.TRAIN)
  eval_input = factory.make_input_fn(params, tf.estimator.ModeKeys.EVAL)
  timer = _step_timer()
  curve, step, start, reached = [], 0, time.perf_counter(), None
  while step < options.step_limit:
    step = min(step + options.eval_every, options.step_limit)
    estimator.train(train_input, max_steps=step, hooks=[timer()])
    accuracy = float(estimator.evaluate(eval_input)[TOP_1])
    curve.append((step, accuracy))
    log(f'  {num_towers} tower(s): step {step}, top-1 {accuracy:.3f}')
    if accuracy >= options.target:
      reached = step
      break
  return {'towers': num_towers, 'curve': curve, 'steps': reached,
          'step_seconds': timer.seconds, 'wall_seconds': time.perf_counter() - start,
          'batch': params.batch_size}


def format_report(results: list[dict], target: float) -> str:
  """The curve (top-1 per evaluation) and the side-by-side totals, in Markdown."""
  steps = sorted({s for r in results for s, _ in r['curve']})
  by_step = [{s: a for s, a in r['curve']} for r in results]
  lines = ['| step | ' + ' | '.join(f'top-1, {r["towers"]} tower(s)' for r in results) + ' |',
           '|---:|' + '---:|' * len(results)]
  for s in steps:
    lines.append(f'| {s} | ' + ' | '.join(f'{b[s]:.3f}' if s in b else '-' for b in by_step)
                 + ' |')
  first = results[0]
  lines += ['', f'| towers | steps to {target:.0%} | training-step seconds | wall seconds '
            '| step-seconds ratio | wall ratio |', '|---:|---:|---:|---:|---:|---:|']
  for r in results:
    reached = r['steps'] if r['steps'] is not None else f'not reached by {r["curve"][-1][0]}'
    lines.append(f'| {r["towers"]} | {reached} | {r["step_seconds"]:.1f} | '
                 f'{r["wall_seconds"]:.1f} | {r["step_seconds"] / first["step_seconds"]:.2f}x | '
                 f'{r["wall_seconds"] / first["wall_seconds"]:.2f}x |')
  return '\n'.join(lines)


def results_path(plot: str) -> str:
  """Where a --plot run writes its runs: the picture's path ending .json."""
  return os.path.splitext(plot)[0] + '.json'


def draw(results: list[dict], options: TimeToAccuracyOptions) -> None:
  """The curves of `results` (`run_to_target`'s) as the PNG --plot."""
  from benchmarks import plots  # the plotting library loads only for a picture
  plots.accuracy_curves(results, options.target, options.plot,
                        f'time to {options.target:.0%} test top-1, global batch '
                        f'{results[0]["batch"]}')
  print(f'time_to_accuracy: the curves are in {options.plot}')


def run(options: TimeToAccuracyOptions) -> None:
  """Trains to the target with every tower count and prints the report (with --plot, draws
  it); with --results_from, only draws those runs."""
  if options.results_from:
    with open(options.results_from, encoding='utf-8') as f:
      draw(json.load(f), options)
    return
  from model_fn.devices import ensure_logical_cpus
  ensure_logical_cpus(max(options.towers))
  log = lambda line: print(line, file=sys.stderr, flush=True)
  root = options.work_dir or tempfile.mkdtemp(prefix='time_to_accuracy_')
  results = [run_to_target(options, n, os.path.join(root, f'towers_{n}'), log)
             for n in options.towers]
  print(f'time to {options.target:.0%} test top-1, {datetime.date.today().isoformat()}: '
        f'towers/demo.flags{" with " + " ".join(options.set) if options.set else ""}, global '
        f'batch {results[0]["batch"]}, evaluation every {options.eval_every} steps on the '
        'demo\'s test clips')
  print(format_report(results, options.target))
  if options.plot:
    with open(results_path(options.plot), 'w', encoding='utf-8') as f:
      json.dump(results, f, indent=1)
    draw(results, options)


def options_problem(options: TimeToAccuracyOptions) -> Problem | None:
  """--plot that cannot be written, --results_from that is not a file, before any
  training; else None."""
  problem = options.plot and working_dir.unwritable(options.plot)
  if problem:
    return Problem('plot', f'--plot={options.plot}: {problem}')
  if options.results_from and not os.path.isfile(options.results_from):
    return Problem('results_from', f'--results_from={options.results_from} not found: give '
                   'the .json a --plot run wrote')
  return None

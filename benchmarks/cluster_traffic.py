"""The library of //benchmarks:cluster_traffic (`benchmarks/cluster_traffic_main.py` says what it
measures and how to run it): its options, their checks and its run.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
import tempfile
import time


from benchmarks.cluster_bytes import loopback_received_bytes, model_bytes
from towers.cluster.local_cluster import ISOLATED_ENV, LocalCluster, reexec_in_private_network
from command_line import entry
from command_line.options import Options, Problem, above, option

# The program's file: re-executed inside a private network namespace.
PROGRAM_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                            'cluster_traffic_main.py')


MODELS = {
    'c3d_small': ('--model=c3d_small', '--num_classes=4', '--clip_frames=8', '--crop_size=32',
                  '--batch_size=8'),
    'i3d': ('--model=i3d', '--num_classes=101', '--clip_frames=8', '--crop_size=64',
            '--batch_size=4', '--warm_start_from='),
}
COMMON = ('--data_source=synthetic', '--num_towers=2', '--save_checkpoints_steps=100000',
          '--log_every_steps=10', '--lr_schedule=constant', '--lr_values=0.001',
          '--max_steps=100000', '--weight_decay=1e-4')


def _layouts_are_ps_x_workers(o: TrafficOptions) -> Problem | None:
  malformed = [l for l in o.layouts if not re.fullmatch(r'[1-9][0-9]*x[1-9][0-9]*', l)]
  return Problem('layouts', f'--layouts like 2x2 (ps x workers); got {", ".join(malformed)}'
                 ) if malformed else None


@dataclasses.dataclass(frozen=True)
class TrafficOptions(Options):
  """Which networks and cluster layouts to measure."""
  rules = (_layouts_are_ps_x_workers,)

  models: tuple[str, ...] = option(('c3d_small', 'i3d'), 'Networks to measure (c3d_small, i3d).',
                                   choices=tuple(MODELS))
  layouts: tuple[str, ...] = option(('1x1', '1x2', '2x2'), 'ps x workers pairs to measure.')
  timeout_secs: float = option(900.0, 'Seconds one layout may take to reach its last step.',
                               valid=above(0))




@dataclasses.dataclass(frozen=True)
class Setup:
  """One measured configuration."""
  name: str
  train_args: tuple[str, ...]
  num_ps: int
  num_workers: int
  first_step: int
  last_step: int


def measure(setup: Setup, timeout: float) -> tuple[int, int]:
  """(global steps, loopback bytes) between the chief's first progress events (its status
  file) at or after `first_step` and `last_step`."""
  model_dir = tempfile.mkdtemp(prefix='cluster_traffic_')
  cluster = LocalCluster(setup.num_ps, setup.num_workers,
                         [*setup.train_args, f'--model_dir={model_dir}'], evaluator=False,
                         echo=None)
  samples: list[tuple[int, int]] = []
  try:
    cluster.start_all()
    seen = 0
    deadline = time.time() + timeout
    while time.time() < deadline and len(samples) < 2:
      events = cluster.events('chief')
      for event in events[seen:]:
        target = setup.first_step if not samples else setup.last_step
        if event['event'] == 'progress' and event['step'] >= target:
          samples.append((event['step'], loopback_received_bytes()))
          if len(samples) == 2:
            break
      seen = len(events)
      if cluster.failed_tasks():
        raise RuntimeError(f'{setup.name}: tasks failed: {cluster.failed_tasks()}')
      time.sleep(0.05)
  finally:
    cluster.stop_all()
  if len(samples) < 2:
    raise RuntimeError(f'{setup.name}: the chief did not reach step {setup.last_step} '
                       f'in {timeout:.0f} s')
  (step_a, bytes_a), (step_b, bytes_b) = samples
  return step_b - step_a, bytes_b - bytes_a


def run(options: TrafficOptions) -> int:
  """Measures every model and layout and prints the table."""
  reexec_in_private_network(PROGRAM_FILE, sys.argv[1:])
  if not os.environ.get(ISOLATED_ENV):
    raise entry.Refused('needs a private network namespace (unshare) so that the loopback '
                        'counter sees only the cluster')

  print(f'cluster_traffic {time.strftime("%Y-%m-%d")}: bytes on loopback per global step, '
        'measured vs model (2 x parameters + batch-norm statistics)')
  print('| model | ps | workers | towers/worker | steps | measured MB/step | model MB/step | '
        'measured / model |')
  print('|---|---|---|---|---|---|---|---|')
  for model in options.models:
    train_args = (*MODELS[model], *COMMON)
    parameters, statistics = model_bytes(train_args)
    predicted = 2 * parameters + statistics
    window = (30, 130) if model == 'c3d_small' else (20, 60)
    for layout in options.layouts:
      num_ps, num_workers = (int(v) for v in layout.split('x'))
      setup = Setup(model, train_args, num_ps, num_workers, *window)
      steps, moved = measure(setup, options.timeout_secs)
      per_step = moved / steps
      print(f'| {model} | {num_ps} | {num_workers} | 2 | {steps} | {per_step / 1e6:.3f} | '
            f'{predicted / 1e6:.3f} | {per_step / predicted:.3f} |', flush=True)
  return 0

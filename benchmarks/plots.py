"""The benchmarks' pictures (PNG, matplotlib): the only module that imports the plotting library.

    scaling_curve(rows, path)     cluster_emulator's `emulator_row` events: nodes (x) against
                                  the share of compute (y, %), one line per system and mode,
                                  the model's prediction dashed where the rows carry it
    accuracy_curves(results, target, path)
                                  time_to_accuracy's runs: step (x) against test top-1 (y),
                                  one line per tower count, the target dotted

Pictures are 1000 x 600 pixels (10 x 6 inches at 100 dpi), white, without a window
(the Agg backend).
"""

from __future__ import annotations

from typing import Any, Sequence

import matplotlib

matplotlib.use('Agg')  # files only: no display is needed or opened

# pylint: disable=wrong-import-position
from matplotlib import pyplot as plt

SIZE_INCHES = (10, 6)
DPI = 100


def _save(figure, path: str) -> None:
  figure.tight_layout()
  figure.savefig(path, dpi=DPI, format='png', facecolor='white')
  plt.close(figure)


def scaling_curve(rows: Sequence[dict[str, Any]], path: str, title: str = '') -> None:
  """Writes the emulated cluster's scaling curve of `rows` (each with system, mode, nodes,
  compute_share in [0, 1] and optionally model_efficiency) to `path`."""
  figure, axes = plt.subplots(figsize=SIZE_INCHES)
  series = sorted({(r['system'], r['mode']) for r in rows})
  for index, (system, mode) in enumerate(series):
    points = sorted((r['nodes'], r) for r in rows if (r['system'], r['mode']) == (system, mode))
    nodes = [n for n, _ in points]
    colour = f'C{index}'
    axes.plot(nodes, [100 * r['compute_share'] for _, r in points], 'o-', color=colour,
              label=f'{system} {mode}: measured')
    if all(r.get('model_efficiency') is not None for _, r in points):
      axes.plot(nodes, [100 * r['model_efficiency'] for _, r in points], '--', color=colour,
                label=f'{system} {mode}: model')
  axes.set_xlabel('nodes (one GPU worker and one ps each)')
  axes.set_ylabel('share of compute: examples/s per worker vs a GPU that never waits (%)')
  axes.set_xticks(sorted({r['nodes'] for r in rows}))
  axes.set_ylim(0, 105)
  axes.grid(alpha=0.3)
  axes.legend()
  axes.set_title(title or 'emulated cluster: scaling')
  _save(figure, path)


def accuracy_curves(results: Sequence[dict[str, Any]], target: float, path: str,
                    title: str = '') -> None:
  """Writes time_to_accuracy's curves (each result: towers, curve [(step, top-1)], steps to
  the target or None, step_seconds) to `path`."""
  figure, axes = plt.subplots(figsize=SIZE_INCHES)
  for r in results:
    reached = (f'{r["steps"]} steps, {r["step_seconds"]:.1f} training-step s'
               if r['steps'] is not None else 'not reached')
    axes.plot([s for s, _ in r['curve']], [a for _, a in r['curve']], 'o-',
              label=f'{r["towers"]} tower(s): {reached}')
  axes.axhline(target, linestyle=':', color='grey', label=f'target {target:.0%}')
  axes.set_xlabel('training step (same global batch)')
  axes.set_ylabel('test top-1')
  axes.set_ylim(0, 1.02)
  axes.grid(alpha=0.3)
  axes.legend()
  axes.set_title(title or 'time to accuracy')
  _save(figure, path)

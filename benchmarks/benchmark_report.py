"""Statistics and the printed table of the tower throughput benchmark (pure Python).

A `Row` holds one configuration's repeated throughput samples (examples per second, one
per repeat). The table shows each row's median, its spread (min-max over the repeats),
its ratio to the model's one-device reference and, for tower rows, the ratio to
MirroredStrategy on the same devices; then the process CPU time per example and its ratio
to the reference's (lower is less work). `targets` checks the issue's two targets.
"""

from __future__ import annotations

import dataclasses
import statistics
from typing import Sequence

REFERENCE = 'reference'
TOWERS = 'towers'
MIRRORED = 'mirrored'
TOWER_OVERHEAD_TARGET = 0.95  # 2 and 4 towers vs the one-device reference
MIRRORED_TARGET = 1.0         # towers vs MirroredStrategy on the same devices
METHOD_LABELS = {REFERENCE: 'one device, no towers', TOWERS: 'ours (towers)',
                 MIRRORED: 'MirroredStrategy'}


@dataclasses.dataclass(frozen=True)
class Row:
  """Samples of one (model, method, device count), one per repeat, non-empty:
  `samples` examples per second (wall clock); `cpu_samples` CPU seconds of the whole
  process per example (all threads, user + system), which other processes' load on a
  shared machine disturbs far less than wall time."""
  model: str
  method: str
  devices: int
  samples: tuple[float, ...]
  cpu_samples: tuple[float, ...] = ()

  @property
  def median(self) -> float:
    return statistics.median(self.samples)

  @property
  def spread(self) -> tuple[float, float]:
    """(min, max) of the samples."""
    return min(self.samples), max(self.samples)

  @property
  def cpu_ms_per_example(self) -> float | None:
    """Median CPU milliseconds per example; None without CPU samples."""
    return 1e3 * statistics.median(self.cpu_samples) if self.cpu_samples else None


def find(rows: Sequence[Row], model: str, method: str, devices: int) -> Row | None:
  for row in rows:
    if (row.model, row.method, row.devices) == (model, method, devices):
      return row
  return None


def ratio_to_reference(rows: Sequence[Row], row: Row) -> float | None:
  reference = find(rows, row.model, REFERENCE, 1)
  return row.median / reference.median if reference else None


def ratio_to_mirrored(rows: Sequence[Row], row: Row) -> float | None:
  """Towers median / MirroredStrategy median on the same devices; None for other rows."""
  if row.method != TOWERS:
    return None
  mirrored = find(rows, row.model, MIRRORED, row.devices)
  return row.median / mirrored.median if mirrored else None


def _ratio(value: float | None) -> str:
  return f'{value:.3f}x' if value is not None else '-'


def format_table(rows: Sequence[Row]) -> str:
  """A Markdown table, one line per row, in the given order."""
  header = ('| model | method | devices | examples/s (median) | min-max | vs reference '
            '| ours vs mirrored | CPU ms/example | CPU vs reference |')
  lines = [header, '|---|---|---:|---:|---:|---:|---:|---:|---:|']
  for row in rows:
    low, high = row.spread
    cpu = row.cpu_ms_per_example
    reference = find(rows, row.model, REFERENCE, 1)
    cpu_ratio = (cpu / reference.cpu_ms_per_example
                 if cpu is not None and reference and reference.cpu_ms_per_example else None)
    lines.append(f'| {row.model} | {METHOD_LABELS.get(row.method, row.method)} | '
                 f'{row.devices} | {row.median:.2f} | {low:.2f}-{high:.2f} | '
                 f'{_ratio(ratio_to_reference(rows, row))} | '
                 f'{_ratio(ratio_to_mirrored(rows, row))} | '
                 f'{f"{cpu:.1f}" if cpu is not None else "-"} | {_ratio(cpu_ratio)} |')
  return '\n'.join(lines)


@dataclasses.dataclass(frozen=True)
class Target:
  """One target of one model: `ratios` (device count -> median ratio: to the one-device
  reference for the tower overhead, to MirroredStrategy for `versus_mirrored`) each at
  least `threshold` when `met`."""
  model: str
  versus_mirrored: bool
  threshold: float
  ratios: dict[int, float]

  @property
  def met(self) -> bool:
    return all(x >= self.threshold for x in self.ratios.values())

  @property
  def line(self) -> str:
    """The report's line: met or NOT met, with the figures."""
    verdict = 'met' if self.met else 'NOT met'
    if self.versus_mirrored:
      figures = ', '.join(f'{d} devices {x:.3f}x' for d, x in self.ratios.items())
      return (f'{self.model}: ours at least {self.threshold}x MirroredStrategy on every row: '
              f'{verdict} ({figures})')
    figures = ', '.join(f'{d} towers {x:.3f}x' for d, x in self.ratios.items())
    return (f'{self.model}: 2 and 4 towers at least {self.threshold}x the one-device '
            f'reference: {verdict} ({figures})')


def target_results(rows: Sequence[Row]) -> list[Target]:
  """Per model: the tower overhead target (2 and 4 towers vs the reference), then towers vs
  MirroredStrategy on every tower row; a target without any figure is left out."""
  found = []
  for model in dict.fromkeys(row.model for row in rows):
    overhead = {r.devices: ratio_to_reference(rows, r) for r in rows
                if r.model == model and r.method == TOWERS and r.devices in (2, 4)}
    overhead = {d: x for d, x in overhead.items() if x is not None}
    if overhead:
      found.append(Target(model, False, TOWER_OVERHEAD_TARGET, overhead))
    versus = {r.devices: ratio_to_mirrored(rows, r) for r in rows
              if r.model == model and r.method == TOWERS}
    versus = {d: x for d, x in versus.items() if x is not None}
    if versus:
      found.append(Target(model, True, MIRRORED_TARGET, versus))
  return found


def targets(rows: Sequence[Row]) -> list[str]:
  """One line per target and model: met or NOT met, with the figures (medians)."""
  return [target.line for target in target_results(rows)]

"""The one progress-line format of the project: done/total, percentage, rates and ETA.

Used by training (`model_fn/training_hooks.ProgressHook`: steps) and, through `Progress`,
by the data tools (`data_tools/prepare`, `data_tools/extract_flow`: videos), so every long job
reads the same way:

    step 300/1200 (25%)  loss 1.2345  150.2 examples/s  9.39 steps/s  ETA 1m36s
    prepare: train,test: 120/150 videos (80%)  31.5 videos/s  ETA 1s
    extract_flow: 12/150 videos (8%)  0.9 videos/s  35.2 flow frames/s  ETA 2m33s

Needs neither TensorFlow nor absl.
"""

from __future__ import annotations

import sys
import time
from typing import Sequence, TextIO

# ProgressHook logs '<SESSION_READY> N to M' once training's session exists (the model is
# initialised or restored), for a person to read; programs read its `session_ready` status
# event instead (command_line/status_file.py).
SESSION_READY = 'training from step'


def format_duration(seconds: float) -> str:
  """'1h02m03s', '4m05s' or '6s' (rounded to whole seconds; negative counts as 0)."""
  seconds = max(int(round(seconds)), 0)
  hours, rest = divmod(seconds, 3600)
  minutes, secs = divmod(rest, 60)
  if hours:
    return f'{hours}h{minutes:02d}m{secs:02d}s'
  if minutes:
    return f'{minutes}m{secs:02d}s'
  return f'{secs}s'


def eta_seconds(done: float, total: float, rate: float) -> float | None:
  """Seconds until `total` at `rate` units of `done` per second; None when the rate is
  not positive (unknown)."""
  return (total - done) / rate if rate > 0 else None


def progress_line(label: str, done: int, total: int, rate: float,
                  fields: Sequence[str] = (), unit: str = '') -> str:
  """`label done/total [unit] (pct%)  fields...  ETA t`.

  `rate` is in units of `done` per second and gives the ETA ('ETA ?' when not positive);
  `fields` are preformatted parts (loss, rates) printed in order, two spaces apart.
  """
  count = f'{done}/{total}' + (f' {unit}' if unit else '')
  percent = 100.0 * done / total if total > 0 else 100.0
  eta = eta_seconds(done, total, rate)
  parts = [f'{label} {count} ({percent:.0f}%)', *fields,
           f'ETA {format_duration(eta) if eta is not None else "?"}']
  return '  '.join(parts)


class Progress:
  """The progress line of a job counted in units (videos): `progress_line` on `stream`,
  at most every second on a terminal (rewriting one line), every 10 s otherwise, and once
  at the end (`done >= total`).

  The rate counts from the first `add` on (workers start slowly; the first unit's start-up
  is not a rate). `add(n, amount)` may also count a second quantity (`amount_unit`, e.g.
  flow frames), shown as its rate since the start: `extract_flow: 12/150 videos (8%)
  0.9 videos/s  35.2 flow frames/s  ETA 2m22s`.
  """

  def __init__(self, label: str, total: int, unit: str, amount_unit: str = '',
               stream: TextIO | None = None) -> None:
    self.label, self.total, self.unit, self.amount_unit = label, total, unit, amount_unit
    self.stream = stream if stream is not None else sys.stderr
    self.done, self.amount = 0, 0.0
    self.start = time.time()
    self._first: tuple[float, int] | None = None  # (time, done) at the first add
    self._shown = 0.0
    self.tty = hasattr(self.stream, 'isatty') and self.stream.isatty()

  def add(self, n: int = 1, amount: float = 0.0) -> None:
    now = time.time()
    self.done += n
    self.amount += amount
    if self._first is None:
      self._first, self._shown = (now, self.done), now
    finished = self.done >= self.total
    if now - self._shown < (1 if self.tty else 10) and not finished:
      return
    self._shown = now
    first_time, first_done = self._first
    rate = ((self.done - first_done) / (now - first_time) if now > first_time
            else self.done / max(now - self.start, 1e-6))
    fields = [f'{rate:.1f} {self.unit}/s']
    if self.amount_unit:
      fields.append(f'{self.amount / max(now - self.start, 1e-6):.1f} {self.amount_unit}/s')
    line = progress_line(self.label, self.done, self.total, rate, fields, unit=self.unit)
    if self.tty:
      self.stream.write('\r' + line + ('\n' if finished else ''))
    else:
      self.stream.write(line + '\n')
    self.stream.flush()

"""The one progress-line format of the project: done/total, percentage, rates and ETA.

Used by training (`model_fn/training_hooks.ProgressHook`: steps) and by data preparation
(`input_fn/prepare`: videos), so every long job reads the same way:

    step 300/1200 (25%)  loss 1.2345  150.2 examples/s  9.39 steps/s  ETA 1m36s
    prepare: train,test: 120/150 videos (80%)  31.5 videos/s  ETA 1s

Needs neither TensorFlow nor absl.
"""

from __future__ import annotations

from typing import Sequence

# ProgressHook logs '<SESSION_READY> N to M' once training's session exists (the model is
# initialised or restored); local_cluster starts the other workers when the chief says it.
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

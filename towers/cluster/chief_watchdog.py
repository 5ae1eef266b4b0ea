"""A chief that dies for good ends the other tasks, with one line naming it.

Without this, a worker would retry its session forever and a ps would serve forever,
and a job whose chief died (its node lost, the process killed) would hang until its time
limit. A chief restarted within `--chief_lost_secs` is simply waited for.
"""

from __future__ import annotations

import os
import threading
import time

from absl import logging

from towers.cluster.shutdown import reachable

CHIEF_LOST_EXIT_CODE = 4


def chief_lost_message(address: str, down_secs: float, limit_secs: float) -> str:
  """The one line every task prints when it gives up on the chief."""
  return (f'the chief ({address}) has been unreachable for {down_secs:.0f} s (limit '
          f'--chief_lost_secs={limit_secs:.0f}) before training was over: giving up. '
          'Resubmit the job (or restart the chief) to resume from the latest checkpoint')


class ChiefWatchdog(threading.Thread):
  """Ends the process (exit code 4) when the chief at `address` has refused connections
  for `limit_secs` in a row, after logging `chief_lost_message`. Checks every
  `period_secs`. A daemon thread: it ends with the task."""

  def __init__(self, name: str, address: str, limit_secs: float,
               period_secs: float = 2.0) -> None:
    super().__init__(name='chief-watchdog', daemon=True)
    self._task_name = name
    self._address = address
    self._limit = limit_secs
    self._period = period_secs

  def run(self) -> None:
    down_since = None
    while True:
      now = time.time()
      if reachable(self._address):
        down_since = None
      else:
        down_since = down_since or now
        if now - down_since >= self._limit:
          logging.error('%s: %s', self._task_name,
                        chief_lost_message(self._address, now - down_since, self._limit))
          logging.flush()
          os._exit(CHIEF_LOST_EXIT_CODE)  # pylint: disable=protected-access
      time.sleep(self._period)

"""Ends a task whose peer is gone for good: a ps for chief and workers, the chief for the rest.

Without it, TensorFlow would retry a lost ps forever, a worker would retry its session
forever and a ps would serve forever, so a job whose peer died (its node lost, the process
killed) would hang until its time limit. A peer back within the limit is simply waited for.

    ps_watchdog(ps_addresses, limit_secs).start()               # exit code 3
    chief_watchdog(task_name, chief_address, limit_secs).start()  # exit code 4
"""

from __future__ import annotations

import os
import threading
import time
from typing import Callable, Sequence

from absl import logging

from command_line import status_file
from towers.cluster.shutdown import reachable

PS_UNREACHABLE_EXIT_CODE = 3
CHIEF_LOST_EXIT_CODE = 4


def chief_lost_message(address: str, down_secs: float, limit_secs: float) -> str:
  """The one line every task prints when it gives up on the chief."""
  return (f'the chief ({address}) has been unreachable for {down_secs:.0f} s (limit '
          f'--chief_lost_secs={limit_secs:.0f}) before training was over: giving up. '
          'Resubmit the job (or restart the chief) to resume from the latest checkpoint')


def ps_unreachable_message(address: str, down_secs: float, limit_secs: float) -> str:
  """The one line a trainer prints when it gives up on a ps task."""
  return (f'ps task at {address} has been unreachable for {down_secs:.0f} s (limit '
          f'--ps_unreachable_secs={int(limit_secs)}): giving up. Restart it, or restart the '
          'whole cluster to resume from the latest checkpoint.')


class Watchdog(threading.Thread):
  """Ends the process with `exit_code` when any of `addresses` has refused TCP connections
  for `limit_secs` in a row, after logging `message(address, down_secs, limit_secs)` as an
  error and recording a `peer_lost` status event. Checks every `period_secs`. A daemon
  thread: it ends with the task."""

  def __init__(self, name: str, addresses: Sequence[str], limit_secs: float,
               message: Callable[[str, float, float], str], exit_code: int,
               period_secs: float = 2.0) -> None:
    super().__init__(name=name, daemon=True)
    self._addresses = tuple(addresses)
    self._limit = limit_secs
    self._message = message
    self.exit_code = exit_code
    self._period = period_secs

  def run(self) -> None:
    down_since: dict[str, float] = {}
    while True:
      now = time.time()
      for address in self._addresses:
        if reachable(address):
          down_since.pop(address, None)
          continue
        since = down_since.setdefault(address, now)
        if now - since >= self._limit:
          logging.error('%s', self._message(address, now - since, self._limit))
          logging.flush()
          status_file.record('peer_lost', address=address, down_secs=now - since,
                             limit_secs=self._limit, exit_code=self.exit_code)
          os._exit(self.exit_code)  # pylint: disable=protected-access
      time.sleep(self._period)


def ps_watchdog(ps_addresses: Sequence[str], limit_secs: float) -> Watchdog:
  """Watches every ps task for a trainer (`--ps_unreachable_secs`)."""
  return Watchdog('ps-watchdog', ps_addresses, limit_secs, ps_unreachable_message,
                  PS_UNREACHABLE_EXIT_CODE)


def chief_watchdog(task_name: str, chief_address: str, limit_secs: float) -> Watchdog:
  """Watches the chief for a ps or worker (`--chief_lost_secs`); its line starts with the
  task's name."""
  def message(address: str, down_secs: float, limit: float) -> str:
    return f'{task_name}: {chief_lost_message(address, down_secs, limit)}'
  return Watchdog('chief-watchdog', (chief_address,), limit_secs, message,
                  CHIEF_LOST_EXIT_CODE)

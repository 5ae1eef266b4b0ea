"""One writer per model_dir: a training run holds `model_dir/writer.lock` while it trains.

    lock = model_dir_lock.acquire(model_dir)   # raises ModelDirBusy naming the other writer
    ...train...
    lock.release()

The lock is a small JSON file (host, pid, the process's start time, the Slurm job) created
atomically (O_EXCL, also on NFS), and kept fresh while held: a thread touches it every
`HEARTBEAT_SECS`. Another process that finds it decides whether its writer still lives:

- on the same host, by its pid (and the process's start time, so a reused pid does not
  count);
- on another host (shared storage), by the lease: a lock not touched for `LEASE_SECS` is
  stale (the hosts' clocks are assumed to agree within seconds, as NTP keeps them);
- a process of the same Slurm job (a requeued job's next run) takes it over: the job's
  earlier run has ended.

A stale lock is taken over (renamed away first, so two newcomers cannot both take it).
So is a lock that holds no writer's record (empty, damaged, not JSON, no host and pid)
once `WRITE_SECS` old: a live writer writes its record at once after creating the file,
so such a lock shows no live writer. A lock that cannot be read at all (a directory, no
permission) stops the run with one line naming the file.
Of a cluster only the chief holds it: the cluster's tasks count as one writer.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from typing import Any

from absl import logging

LOCK_FILE = 'writer.lock'
HEARTBEAT_SECS = 10.0
LEASE_SECS = 60.0
WRITE_SECS = 2.0  # a lock without a record this old was left by a writer that died writing


class ModelDirBusy(RuntimeError):
  """Another live process trains in this model_dir; the message names its host and pid (or
  the lock file, when it cannot be read, and what to do).
  `option` is model_dir; `holder` the lock's record of that process ({'host', 'pid', ...};
  {} when the lock kept changing hands), `age` seconds since it last touched its lock."""
  option = 'model_dir'

  def __init__(self, message: str, holder: dict[str, Any] | None = None,
               age: float | None = None) -> None:
    super().__init__(message)
    self.holder = dict(holder or {})
    self.age = age


def _start_time(pid: int) -> str | None:
  """The live process's start time in clock ticks since boot (/proc); None when there is
  no such process, or only its zombie (dead, not yet reaped by its parent)."""
  try:
    with open(f'/proc/{pid}/stat', encoding='ascii') as f:
      fields = f.read().rsplit(')', 1)[1].split()
  except OSError:
    return None
  return None if len(fields) < 20 or fields[0] in ('Z', 'X') else fields[19]


def _me() -> dict[str, Any]:
  return {'host': socket.gethostname(), 'pid': os.getpid(), 'start': _start_time(os.getpid()),
          'slurm_job': os.environ.get('SLURM_JOB_ID', ''),
          'token': f'{socket.gethostname()}:{os.getpid()}:{time.time_ns()}'}


def _read(path: str) -> tuple[dict[str, Any], float] | None:
  """The lock's writer record and its age in seconds; None when there is no lock. A lock
  without a record (empty, not UTF-8 JSON, no string host and integer pid: its writer died
  while writing it, or something else wrote it) reads as {} with its age. Raises
  `ModelDirBusy` naming the file when it cannot be read at all."""
  try:
    with open(path, 'rb') as f:
      data = f.read()
    age = time.time() - os.stat(path).st_mtime
  except FileNotFoundError:
    return None
  except OSError as e:
    raise ModelDirBusy(f'the model_dir lock {path} cannot be read ({e.strerror}): remove it '
                       'if no training runs in this model_dir, or choose another --model_dir'
                       ) from None
  try:
    holder = json.loads(data.decode('utf-8'))
  except ValueError:  # UnicodeDecodeError too
    return {}, age
  if (not isinstance(holder, dict) or not isinstance(holder.get('host'), str) or
      type(holder.get('pid')) is not int):  # pylint: disable=unidiomatic-typecheck
    return {}, age
  return holder, age


def _alive(holder: dict[str, Any], age: float) -> bool:
  """Whether the process that wrote `holder` may still be writing."""
  me = _me()
  if holder.get('slurm_job') and holder.get('slurm_job') == me['slurm_job']:
    return holder.get('host') == me['host'] and holder.get('pid') == me['pid']  # not earlier
  if holder.get('host') == me['host'] and isinstance(holder.get('pid'), int):
    start = _start_time(holder['pid'])
    return start is not None and (holder.get('start') in (None, start))
  return age < LEASE_SECS


def describe(holder: dict[str, Any], age: float) -> str:
  """'pid 1234 on host n1 (lock touched 3 s ago)'."""
  return (f'pid {holder.get("pid", "?")} on host {holder.get("host", "?")} (its lock touched '
          f'{age:.0f} s ago)')


class Lock:
  """A held lock: `release()` removes it if it is still this process's, and the model_dir
  too when taking the lock created it and nothing was written there since (a run refused
  before any work leaves no directory behind)."""

  def __init__(self, path: str, holder: dict[str, Any], created_dir: bool = False) -> None:
    self.path = path
    self.holder = holder
    self._created_dir = created_dir
    self._released = threading.Event()
    threading.Thread(target=self._heartbeat, name='model-dir-lock', daemon=True).start()

  def _mine(self) -> bool:
    try:
      found = _read(self.path)
    except ModelDirBusy:
      return False  # unreadable now: not provably this process's
    return found is not None and found[0].get('token') == self.holder['token']

  def _heartbeat(self) -> None:
    while not self._released.wait(HEARTBEAT_SECS):
      try:
        if self._mine():
          os.utime(self.path)
      except OSError:
        pass  # the storage is briefly away: the lease covers several beats

  def release(self) -> None:
    self._released.set()
    with contextlib.suppress(OSError):
      if self._mine():
        os.remove(self.path)
        if self._created_dir:
          os.rmdir(os.path.dirname(self.path))  # fails, as it should, unless empty


def acquire(model_dir: str) -> Lock:
  """Takes model_dir's lock (creating model_dir); raises `ModelDirBusy` when a live
  process holds it. A stale lock (its writer dead or its lease over) is taken over."""
  created = not os.path.isdir(model_dir)
  os.makedirs(model_dir, exist_ok=True)
  path = os.path.join(model_dir, LOCK_FILE)
  me = _me()
  for _ in range(5):
    try:
      fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
      found = _read(path)
      if found is None:
        continue  # released meanwhile
      holder, age = found
      if not holder and age < WRITE_SECS:
        time.sleep(WRITE_SECS - age)  # its writer may be writing the record now
        continue
      if not holder:
        logging.warning('taking over the model_dir lock %s: it holds no writer\'s record '
                        '(empty or damaged) and is %.0f s old', path, age)
      elif _alive(holder, age):
        raise ModelDirBusy(
            f'model_dir={model_dir} is being trained by {describe(holder, age)}: one '
            'training per model_dir at a time; wait for it to end or choose another '
            f'--model_dir (a lock of a process that died is ignored: {path})', holder,
            age) from None
      _take_away(path, f'{path}.stale-{me["host"]}-{me["pid"]}', holder.get('token'))
      continue
    with os.fdopen(fd, 'w', encoding='utf-8') as f:
      json.dump(me, f)
    return Lock(path, me, created)
  raise ModelDirBusy(f'model_dir={model_dir}: could not take {path} (other processes keep '
                     'taking it): one training per model_dir at a time')


def _take_away(path: str, aside: str, token: Any) -> None:
  """Removes the stale lock at `path` whose token is `token`: renamed aside first (only
  one newcomer can), put back when another newcomer's fresh lock was renamed instead."""
  try:
    os.rename(path, aside)
  except FileNotFoundError:
    return
  try:
    found = _read(aside)
  except ModelDirBusy:
    found = None
  if found is not None and found[0].get('token') != token:
    with contextlib.suppress(OSError):
      os.link(aside, path)  # never over a lock created meanwhile
  with contextlib.suppress(OSError):
    os.remove(aside)

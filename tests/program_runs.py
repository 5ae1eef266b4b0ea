"""Runs a project program as a user would and returns what specs assert on: the exit code,
the program's status events (`command_line/status_file.py`) and its `error` event.

    done = program_runs.run('towers.train_main', '--num_classes=1')
    done.code == 2 and done.error['options'] == ['num_classes']

The console text is kept (`stdout`, `stderr`) only for failure messages: specs outside the
console's own specs assert on codes, files, JSON and metrics, not on those lines.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import subprocess
import sys
import tempfile
from typing import Any, Iterator, Mapping
from unittest import mock

from command_line import status_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Variables that would make a program join a cluster or a Slurm job it is not part of.
_FOREIGN = ('TF_CONFIG', 'SLURM_JOB_ID', 'SLURM_PROCID', 'SLURM_STEP_NUM_TASKS')


@dataclasses.dataclass(frozen=True)
class ProgramRun:
  """One finished run: exit code, status events, console text (for failure messages)."""
  code: int
  events: list[dict[str, Any]]
  stdout: str
  stderr: str

  @property
  def error(self) -> dict[str, Any] | None:
    """The `error` event (program, exit_code, error, options, message), or None when none was
    written."""
    found = [e for e in self.events if e['event'] == 'error']
    return found[-1] if found else None

  @property
  def error_options(self) -> list[str]:
    """The option names of the `error` event; [] without one."""
    return self.error['options'] if self.error else []

  def output(self) -> str:
    """The last of the console text, for an assertion's failure message."""
    return (self.stdout + self.stderr)[-3000:]


def run(module: str, *args: str, timeout: float = 240, cwd: str | None = None,
        env: Mapping[str, str] | None = None, prefix: tuple[str, ...] = ()) -> ProgramRun:
  """Runs `python -m module args` from `cwd` with the project on PYTHONPATH and a fresh
  status file; `env` adds to (not replaces) this process's environment; `prefix` is a
  command that runs the rest of its arguments (e.g. `unshare ... sh -c '...' name`)."""
  with tempfile.TemporaryDirectory() as scratch:
    events_path = os.path.join(scratch, 'events.jsonl')
    full_env = {k: v for k, v in os.environ.items() if k not in _FOREIGN}
    full_env.update(PYTHONPATH=ROOT, **(env or {}))
    full_env[status_file.STATUS_FILE_ENV] = events_path
    done = subprocess.run([*prefix, sys.executable, '-m', module, *args], capture_output=True,
                          text=True, timeout=timeout, check=False, cwd=cwd, env=full_env)
    return ProgramRun(done.returncode, status_file.read(events_path), done.stdout,
                      done.stderr)


@contextlib.contextmanager
def recorded_events() -> Iterator[list[dict[str, Any]]]:
  """The status events this process records inside the block (`status_file.record`), in
  order; the list is filled when the block ends: `with recorded_events() as events: ...`."""
  with tempfile.TemporaryDirectory() as scratch:
    path = os.path.join(scratch, 'events.jsonl')
    events: list[dict[str, Any]] = []
    with mock.patch.dict(os.environ, {status_file.STATUS_FILE_ENV: path}):
      yield events
    events.extend(status_file.read(path))

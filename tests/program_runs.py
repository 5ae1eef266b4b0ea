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


def _environment(events_path: str, env: Mapping[str, str] | None) -> dict[str, str]:
  """This process's environment without cluster variables, the project on PYTHONPATH,
  `env` added and the status file at `events_path`."""
  full_env = {k: v for k, v in os.environ.items() if k not in _FOREIGN}
  full_env.update(PYTHONPATH=ROOT, **(env or {}))
  full_env[status_file.STATUS_FILE_ENV] = events_path
  return full_env


def run(module: str, *args: str, timeout: float = 240, cwd: str | None = None,
        env: Mapping[str, str] | None = None, prefix: tuple[str, ...] = ()) -> ProgramRun:
  """Runs `python -m module args` from `cwd` with the project on PYTHONPATH and a fresh
  status file; `env` adds to (not replaces) this process's environment; `prefix` is a
  command that runs the rest of its arguments (e.g. `unshare ... sh -c '...' name`)."""
  with tempfile.TemporaryDirectory() as scratch:
    events_path = os.path.join(scratch, 'events.jsonl')
    done = subprocess.run([*prefix, sys.executable, '-m', module, *args], capture_output=True,
                          text=True, timeout=timeout, check=False, cwd=cwd,
                          env=_environment(events_path, env))
    return ProgramRun(done.returncode, status_file.read(events_path), done.stdout,
                      done.stderr)


class Started:
  """A program started by `start`, still running: `process` (a Popen, its output piped),
  `events()` its status events so far, `finish()` -> the ProgramRun once it ends."""

  def __init__(self, process: subprocess.Popen, events_path: str) -> None:
    self.process, self.events_path = process, events_path

  def events(self) -> list[dict[str, Any]]:
    return status_file.read(self.events_path)

  def finish(self, timeout: float = 240) -> ProgramRun:
    """Waits for the end (killing it after `timeout` seconds) and returns the run."""
    try:
      stdout, stderr = self.process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
      self.process.kill()
      stdout, stderr = self.process.communicate()
    return ProgramRun(self.process.returncode, self.events(), stdout, stderr)


def start(test: Any, module: str, *args: str, env: Mapping[str, str] | None = None,
          cwd: str | None = None, preexec_fn: Any = None) -> Started:
  """Starts `python -m module args` as `run` does, without waiting; `test` (an absltest
  case) kills it and removes its status file when it ends. `preexec_fn` runs in the child
  before exec (e.g. `command_line.signals.blocked_in_child`)."""
  scratch = test.create_tempdir().full_path
  events_path = os.path.join(scratch, 'events.jsonl')
  process = subprocess.Popen([sys.executable, '-m', module, *args], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, preexec_fn=preexec_fn,
                             cwd=cwd, env=_environment(events_path, env))
  test.addCleanup(lambda: process.poll() is None and process.kill())
  return Started(process, events_path)


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

"""A task's structured record of what it did, for the processes that watch it.

When the environment variable `STATUS_FILE_ENV` names a file, `record(event, **values)`
appends one JSON object per line to it: {"event": event, "time": unix seconds, **values}.
`read(path)` returns those objects in order. Launchers (`towers/cluster/local_cluster.py`),
benchmarks and specs read these values, never a task's console text, so the wording of a
log line is free to change. Without the variable, `record` does nothing.

Events written today:
  full_disk      {path, free_bytes}          a program ended on a write to a full disk
                                             (`command_line/entry.py`; path '' if unknown)
  graph_built    {}                          a training graph exists, no session yet
  unrecorded_settings {model_dir}            a resumed checkpoint had no learning-settings
                                             record: this run's are recorded as its own
  session_ready  {step, max_steps}           the model is initialised or restored
  first_step     {step}                      the first training step of this process ran
  progress       {step, max_steps, loss, examples_per_second, steps_per_second}
                 (+ skipped_records, records_read once damaged records were skipped)
  sync_replicas  {workers, aggregated}       synchronous training built: gradients of the
                                             first `aggregated` of `workers` per step
  replica_batch  {clips}                     a replica's batch (benchmark peers)
  waiting_for_workers {workers}              the chief reached max_steps and waits for
                                             these worker indices' last steps
  workers_finished {workers}                 the chief heard from every worker; it writes
                                             the final checkpoint next
  training_over  {message}                   a ps was told by the chief (its message)
  ps_final_step  {step}                      the global step a ps held when told to exit
  evaluation     {step, metrics}             one evaluation's metrics (name -> float)
  emulated_step  {index, end, seconds}       a step of the cluster emulator's tasks
  error          {program, exit_code, error, options}
                                             a program ended with its one error line
                                             (`command_line/entry.py`): the exception's
                                             type (None for a stray argument) and the
                                             option names it concerns

Needs neither TensorFlow nor absl.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

STATUS_FILE_ENV = 'TOWERS_STATUS_FILE'


def record(event: str, **values: Any) -> None:
  """Appends `event` with `values` (JSON-serialisable) to this process's status file, if
  one is set; one `write` of one line, so a reader never sees half an event."""
  path = os.environ.get(STATUS_FILE_ENV)
  if not path:
    return
  line = json.dumps({'event': event, 'time': time.time(), **values}) + '\n'
  fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
  try:
    os.write(fd, line.encode())
  finally:
    os.close(fd)


def read(path: str) -> list[dict[str, Any]]:
  """Every complete event in the status file at `path`, in order; [] when it does not exist
  (yet). A last line still being written is left for the next read."""
  try:
    with open(path, encoding='utf-8') as f:
      text = f.read()
  except FileNotFoundError:
    return []
  return [json.loads(line) for line in text.split('\n')[:-1] if line]


def values(events: list[dict[str, Any]], event: str, key: str) -> list[Any]:
  """`key` of every `event` in `events`, in order (e.g. the steps of the progress events)."""
  return [e[key] for e in events if e['event'] == event]

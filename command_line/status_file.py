"""A task's structured record of what it did, for the processes that watch it.

When the environment variable `STATUS_FILE_ENV` names a file, `record(event, **values)`
appends one JSON object per line to it: {"event": event, "time": unix seconds, **values}.
`read(path)` returns those objects in order. Launchers (`towers/cluster/local_cluster.py`),
benchmarks and specs read these values, never a task's console text, so the wording of a
log line is free to change. Without the variable, `record` writes nothing.

Every event is declared in `EVENTS` (its members, their JSON types, what it means); `record`
raises `EventError` for an event not declared there, or one missing a declared member, adding
an undeclared one or giving a member the wrong type, whether or not a status file is set.
Events, generated from `EVENTS` by `bazel run //tools:status_events_doc` ([optional]):
  already_trained {step: int, max_steps: int}
      the model_dir holds a checkpoint at `step` >= max_steps and its final evaluation
      (towers/cluster/final_evaluation.py; one machine and every cluster task but the ps):
      nothing to do, nothing written
  checkpoints_skipped {skipped: int, step: int, last_step: int | None}
      a lagging evaluator skips `skipped` checkpoints: it evaluates `step` next, after
      `last_step`
  cluster_task {source: str, task_type: str, index: int, address: str | None}
      a cluster task starts its role: where its cluster came from ('flags' or 'TF_CONFIG'),
      its job and index, its host:port (None for the evaluator)
  earlier_run_set_aside {model_dir: str, moved_to: str, names: list}
      a run starting from step 0 in a model_dir without a checkpoint moved what an earlier
      run left there (`names`: export, eval, final_evaluation.json, ...) into `moved_to`
      (towers/earlier_run.py)
  emulated_step {index: int, end: float, seconds: float}
      a step of the cluster emulator's tasks: its index, when it ended (unix seconds) and
      how long it took
  emulator_row {system: str, mode: str, nodes: int, examples_per_second_per_worker: float,
                compute_share: float, model_efficiency: float, sent_mb: float,
                received_mb: float, model_mb: float, link_use: float}
      one row of the cluster emulator's table: the share of a never-waiting GPU's
      examples/s, the model's, the busiest link's MB per worker step, measured and modelled,
      and its use of the shaped rate
  error {program: str, exit_code: int, error: str | None, options: list, message: str}
      a program ended with its one error line (`command_line/entry.py`): the exception's
      type (None for a stray argument), the option names it concerns and the line's message
      (for a launcher to pass on)
  evaluation {step: int, checkpoint_step: int | None, metrics: dict, per_class: list}
      one evaluation's metrics (name -> float) and each class's clip top-1 (null: no clip of
      it); `step` is the global step the checkpoint holds, `checkpoint_step` the one it is
      named with (async training may save one later)
  first_step {step: int}
      the first training step of this process ran
  flow_computed {videos: int, flow_frames: int, seconds: float, backend: str, workers: int}
      what this extract_flow process computed
  flow_plan {videos: int, mine: int, already_done: int, adopted: int, to_compute: int,
             changed: int, backend: str, workers: int, shard: int, num_shards: int}
      //data_tools:extract_flow's plan: videos found, this shard's share, how many have
      current flow (`adopted`: kept without a source record), how many to compute
      (`changed`: their video changed)
  full_disk {path: str, free_bytes: int | None, resumes: bool}
      a program ended on a write to a full disk (`command_line/entry.py`; path '' if
      unknown; resumes: a rerun goes on from what it kept)
  gpus {task: str, visible: list | None}
      a cluster task's GPU visibility was decided before TensorFlow started: its name and
      the CUDA_VISIBLE_DEVICES ids set ([] none, None the ones the process was given)
  graph_built {}
      a training graph exists, no session yet
  network {isolated: bool}
      local_cluster starts its tasks: in a private loopback-only namespace (true) or on the
      host network
  peer_lost {address: str, down_secs: float, limit_secs: float, exit_code: int}
      a watchdog gave up on a ps or the chief unreachable past its limit; the task exits
      with `exit_code`
  prepare_plan {subsets: dict, videos: int, shards: int, workers: int}
      //data_tools:prepare's plan: per subset its shards and those already done ({name:
      {shards, already_done}}); the videos and shards to convert now, and the worker count
  progress {step: int, max_steps: int, loss: float, examples_per_second: float,
            steps_per_second: float} [skipped_records: int, records_read: int]
      training progress, every few steps and at max_steps; the counts once damaged records
      were skipped
  ps_final_step {step: int}
      the global step a ps held when told to exit
  replica_batch {clips: int}
      a replica's batch (benchmark peers)
  requeue {job: str, stopped: str}
      docs/cluster/train_ucf101.sbatch requeues its job: the chief or the evaluator stopped
      for the time limit
  session_ready {step: int, max_steps: int}
      the model is initialised or restored
  stopped {program: str, step: int | None, max_steps: int | None}
      a program stopped for the job's time limit (SIGUSR1, exit 75;
      `command_line/signals.py`): train at a checkpoint of `step` (None: the cluster
      session's own end saved it); the others with step and max_steps None
  sync_replicas {workers: int, aggregated: int}
      synchronous training built: gradients of the first `aggregated` of `workers` per step
  task_ended {task: str, host: str, exit_code: int}
      towers/cluster/node_main.py: one of a node's processes ended ('ps 0', 'trainer 1',
      'evaluator'; killed by signal N: 128 + N)
  training_over {message: str}
      a ps was told by the chief (its message)
  unrecorded_settings {model_dir: str}
      a resumed checkpoint had no learning-settings record: this run's are recorded as its
      own
  waiting_for_workers {workers: list}
      the chief reached max_steps and waits for these worker indices' last steps
  worker_lost {worker: int, address: str, stuck: bool, lost_secs: float}
      the chief, waiting at max_steps, counts worker `worker` as failed: unreachable (stuck
      false) or answering without its last step (true) for lost_secs
  workers_finished {workers: int}
      the chief heard from every worker; it writes the final checkpoint next

Needs neither TensorFlow nor absl.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
import typing
from typing import Any, Mapping

from command_line import working_dir

STATUS_FILE_ENV = 'TOWERS_STATUS_FILE'


@dataclasses.dataclass(frozen=True)
class Event:
  """One kind of status event: `fields` every record of it carries (name -> JSON type: int,
  float (an int fits), str, bool, list, dict, or `T | None`), `optional` those it may add,
  and `meaning`, the table's description of when it is written."""
  fields: Mapping[str, Any]
  meaning: str
  optional: Mapping[str, Any] = dataclasses.field(default_factory=dict)


# Every status event, alphabetical; the module docs' table is generated from it.
EVENTS: dict[str, Event] = {
    'already_trained': Event({'step': int, 'max_steps': int},
        'the model_dir holds a checkpoint at `step` >= max_steps and its final evaluation '
        '(towers/cluster/final_evaluation.py; one machine and every cluster task but the '
        'ps): nothing to do, nothing written'),
    'checkpoints_skipped': Event({'skipped': int, 'step': int, 'last_step': int | None},
        'a lagging evaluator skips `skipped` checkpoints: it evaluates `step` next, after '
        '`last_step`'),
    'cluster_task': Event({'source': str, 'task_type': str, 'index': int,
                           'address': str | None},
        "a cluster task starts its role: where its cluster came from ('flags' or "
        "'TF_CONFIG'), its job and index, its host:port (None for the evaluator)"),
    'earlier_run_set_aside': Event({'model_dir': str, 'moved_to': str, 'names': list},
        'a run starting from step 0 in a model_dir without a checkpoint moved what an earlier '
        'run left there (`names`: export, eval, final_evaluation.json, ...) into `moved_to` '
        '(towers/earlier_run.py)'),
    'emulated_step': Event({'index': int, 'end': float, 'seconds': float},
        "a step of the cluster emulator's tasks: its index, when it ended (unix seconds) and "
        'how long it took'),
    'emulator_row': Event({'system': str, 'mode': str, 'nodes': int,
                           'examples_per_second_per_worker': float, 'compute_share': float,
                           'model_efficiency': float, 'sent_mb': float, 'received_mb': float,
                           'model_mb': float, 'link_use': float},
        "one row of the cluster emulator's table: the share of a never-waiting GPU's "
        "examples/s, the model's, the busiest link's MB per worker step, measured and "
        'modelled, and its use of the shaped rate'),
    'error': Event({'program': str, 'exit_code': int, 'error': str | None, 'options': list,
                    'message': str},
        'a program ended with its one error line (`command_line/entry.py`): the '
        "exception's type (None for a stray argument), the option names it concerns and the "
        "line's message (for a launcher to pass on)"),
    'evaluation': Event({'step': int, 'checkpoint_step': int | None, 'metrics': dict,
                         'per_class': list},
        "one evaluation's metrics (name -> float) and each class's clip top-1 (null: no clip "
        'of it); `step` is the global step the checkpoint holds, `checkpoint_step` the one it '
        'is named with (async training may save one later)'),
    'first_step': Event({'step': int}, 'the first training step of this process ran'),
    'flow_computed': Event({'videos': int, 'flow_frames': int, 'seconds': float,
                            'backend': str, 'workers': int},
        'what this extract_flow process computed'),
    'flow_plan': Event({'videos': int, 'mine': int, 'already_done': int, 'adopted': int,
                        'to_compute': int, 'changed': int, 'backend': str, 'workers': int,
                        'shard': int, 'num_shards': int},
        "//data_tools:extract_flow's plan: videos found, this shard's share, how many have "
        'current flow (`adopted`: kept without a source record), how many to compute '
        '(`changed`: their video changed)'),
    'full_disk': Event({'path': str, 'free_bytes': int | None, 'resumes': bool},
        'a program ended on a write to a full disk (`command_line/entry.py`; path \'\' if '
        'unknown; resumes: a rerun goes on from what it kept)'),
    'gpus': Event({'task': str, 'visible': list | None},
        "a cluster task's GPU visibility was decided before TensorFlow started: its name "
        'and the CUDA_VISIBLE_DEVICES ids set ([] none, None the ones the process was '
        'given)'),
    'graph_built': Event({}, 'a training graph exists, no session yet'),
    'network': Event({'isolated': bool},
        'local_cluster starts its tasks: in a private loopback-only namespace (true) or on '
        'the host network'),
    'peer_lost': Event({'address': str, 'down_secs': float, 'limit_secs': float,
                        'exit_code': int},
        'a watchdog gave up on a ps or the chief unreachable past its limit; the task exits '
        'with `exit_code`'),
    'prepare_plan': Event({'subsets': dict, 'videos': int, 'shards': int, 'workers': int},
        "//data_tools:prepare's plan: per subset its shards and those already done "
        '({name: {shards, already_done}}); the videos and shards to convert now, and the '
        'worker count'),
    'progress': Event({'step': int, 'max_steps': int, 'loss': float,
                       'examples_per_second': float, 'steps_per_second': float},
        'training progress, every few steps and at max_steps; the counts once damaged '
        'records were skipped',
        optional={'skipped_records': int, 'records_read': int}),
    'ps_final_step': Event({'step': int}, 'the global step a ps held when told to exit'),
    'replica_batch': Event({'clips': int}, "a replica's batch (benchmark peers)"),
    'requeue': Event({'job': str, 'stopped': str},
        'docs/cluster/train_ucf101.sbatch requeues its job: the chief or the evaluator '
        'stopped for the time limit'),
    'session_ready': Event({'step': int, 'max_steps': int},
        'the model is initialised or restored'),
    'stopped': Event({'program': str, 'step': int | None, 'max_steps': int | None},
        'a program stopped for the job\'s time limit (SIGUSR1, exit 75; '
        '`command_line/signals.py`): train at a checkpoint of `step` (None: the cluster '
        "session's own end saved it); the others with step and max_steps None"),
    'sync_replicas': Event({'workers': int, 'aggregated': int},
        'synchronous training built: gradients of the first `aggregated` of `workers` per '
        'step'),
    'task_ended': Event({'task': str, 'host': str, 'exit_code': int},
        "towers/cluster/node_main.py: one of a node's processes ended ('ps 0', "
        "'trainer 1', 'evaluator'; killed by signal N: 128 + N)"),
    'training_over': Event({'message': str}, 'a ps was told by the chief (its message)'),
    'unrecorded_settings': Event({'model_dir': str},
        'a resumed checkpoint had no learning-settings record: this run\'s are recorded as '
        'its own'),
    'waiting_for_workers': Event({'workers': list},
        "the chief reached max_steps and waits for these worker indices' last steps"),
    'worker_lost': Event({'worker': int, 'address': str, 'stuck': bool, 'lost_secs': float},
        'the chief, waiting at max_steps, counts worker `worker` as failed: unreachable '
        '(stuck false) or answering without its last step (true) for lost_secs'),
    'workers_finished': Event({'workers': int},
        'the chief heard from every worker; it writes the final checkpoint next'),
}


class EventError(ValueError):
  """A status event `EVENTS` does not allow as given; `event` names it, the message says
  which member is missing, undeclared or of the wrong type."""

  def __init__(self, event: str, message: str) -> None:
    super().__init__(f'status event {event!r}: {message}')
    self.event = event


def _fits(value: Any, kind: Any) -> bool:
  """Whether `value` is of the JSON type `kind` (a float member takes an int, an int member
  no bool)."""
  kinds = typing.get_args(kind) or (kind,)
  kinds = tuple(type(None) if k is None else k for k in kinds)
  if isinstance(value, bool) and bool not in kinds:
    return False
  return isinstance(value, kinds + ((int,) if float in kinds else ()))


def check(event: str, values: Mapping[str, Any]) -> None:
  """Raises `EventError` unless `EVENTS` declares `event` and `values` holds each of its
  fields, no member it does not declare, and each of the declared type."""
  declared = EVENTS.get(event)
  if declared is None:
    raise EventError(event, 'not declared in command_line/status_file.py EVENTS')
  missing = [name for name in declared.fields if name not in values]
  if missing:
    raise EventError(event, f'missing {", ".join(missing)}')
  kinds = {**declared.fields, **declared.optional}
  for name, value in values.items():
    if name not in kinds:
      raise EventError(event, f'{name} is not one of its members ({", ".join(kinds)})')
    if not _fits(value, kinds[name]):
      raise EventError(event, f'{name}={value!r} is not {type_name(kinds[name])}')


def type_name(kind: Any) -> str:
  """A member's type as the docs write it: 'int', 'int | None'."""
  kinds = typing.get_args(kind) or (kind,)
  return ' | '.join('None' if k in (None, type(None)) else k.__name__ for k in kinds)


def anchor() -> None:
  """A relative path in `STATUS_FILE_ENV` becomes the absolute one the user meant (against
  their working directory, `working_dir.user_path`), for this process and its children,
  whatever directory they run in (`bazel run` starts a binary in its runfiles)."""
  path = os.environ.get(STATUS_FILE_ENV)
  if path:
    os.environ[STATUS_FILE_ENV] = working_dir.user_path(path)


def unwritable() -> str | None:
  """The problem, as `<STATUS_FILE_ENV>=<path>: <why>; <fix>`, when the status file the
  variable names cannot be appended to (its directory missing, a directory, no
  permission); None when it can, or without the variable. A file it can write is created
  (empty) if missing, as the first `record` would."""
  path = os.environ.get(STATUS_FILE_ENV)
  if not path:
    return None
  try:
    os.close(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644))
  except OSError as e:
    return (f'{STATUS_FILE_ENV}={path}: cannot append to it ({e.strerror}): name a file in '
            'a directory that exists, or unset the variable')
  return None


def record(event: str, **values: Any) -> None:
  """Appends `event` with `values` (JSON-serialisable) to this process's status file, if
  one is set; one `write` of one line, so a reader never sees half an event. Raises
  `EventError` (`check`) for an event `EVENTS` does not allow, with or without a file."""
  check(event, values)
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

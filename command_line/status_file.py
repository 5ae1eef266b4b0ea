"""A task's structured record of what it did, for the processes that watch it.

When the environment variable `STATUS_FILE_ENV` names a file, `record(event, **values)`
appends one JSON object per line to it: {"event": event, "time": unix seconds, **values}.
`read(path)` returns those objects in order. Launchers (`towers/cluster/local_cluster.py`),
benchmarks and specs read these values, never a task's console text, so the wording of a
log line is free to change. Without the variable, `record` does nothing.

Events written today:
  full_disk      {path, free_bytes, resumes} a program ended on a write to a full disk
                                             (`command_line/entry.py`; path '' if unknown;
                                             resumes: a rerun goes on from what it kept)
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
  gpus           {task, visible}             a cluster task's GPU visibility was decided
                                             before TensorFlow started: its name and the
                                             CUDA_VISIBLE_DEVICES ids set ([] none, None
                                             the ones the process was given)
  waiting_for_workers {workers}              the chief reached max_steps and waits for
                                             these worker indices' last steps
  workers_finished {workers}                 the chief heard from every worker; it writes
                                             the final checkpoint next
  worker_lost    {worker, address, stuck, lost_secs}
                                             the chief, waiting at max_steps, counts worker
                                             `worker` as failed: unreachable (stuck false)
                                             or answering without its last step (true) for
                                             lost_secs
  training_over  {message}                   a ps was told by the chief (its message)
  ps_final_step  {step}                      the global step a ps held when told to exit
  evaluation     {step, checkpoint_step, metrics, per_class}
                                             one evaluation's metrics (name -> float) and
                                             each class's clip top-1 (null: no clip of it);
                                             `step` is the global step the checkpoint
                                             holds, `checkpoint_step` the one it is named
                                             with (async training may save one later)
  checkpoints_skipped {skipped, step, last_step}
                                             a lagging evaluator skips `skipped`
                                             checkpoints: it evaluates `step` next, after
                                             `last_step`
  emulated_step  {index, end, seconds}       a step of the cluster emulator's tasks
  emulator_row   {system, mode, nodes, examples_per_second_per_worker, compute_share,
                  model_efficiency, sent_mb, received_mb, model_mb, link_use}
                                             one row of the cluster emulator's table: the
                                             share of a never-waiting GPU's examples/s,
                                             the model's, the busiest link's MB per worker
                                             step, measured and modelled, and its use of
                                             the shaped rate
  task_ended     {task, host, exit_code}       towers/cluster/node_main.py: one of a node's
                                             processes ended ('ps 0', 'trainer 1',
                                             'evaluator'; killed by signal N: 128 + N)
  requeue        {job, stopped}              docs/cluster/train_ucf101.sbatch requeues its
                                             job: the chief or the evaluator stopped for
                                             the time limit
  cluster_task   {source, task_type, index, address}
                                             a cluster task starts its role: where its
                                             cluster came from ('flags' or
                                             'TF_CONFIG'), its job and index, its host:port
                                             (None for the evaluator)
  prepare_plan   {subsets: {name: {shards, already_done}}, videos, shards, workers}
                                             //data_tools:prepare's plan: per subset its
                                             shards and those already done; the videos and
                                             shards to convert now, and the worker count
  flow_plan      {videos, mine, already_done, adopted, to_compute, changed, backend,
                  workers, shard, num_shards}
                                             //data_tools:extract_flow's plan: videos found,
                                             this shard's share, how many have current flow
                                             (`adopted`: kept without a source record), how
                                             many to compute (`changed`: their video changed)
  flow_computed  {videos, flow_frames, seconds, backend, workers}
                                             what this extract_flow process computed
  network        {isolated}                  local_cluster starts its tasks: in a private
                                             loopback-only namespace (true) or on the
                                             host network
  already_trained {step, max_steps}          the model_dir holds a checkpoint at `step` >=
                                             max_steps: nothing to do, nothing written
  stopped        {program, step, max_steps}  a program stopped for the job's time limit
                                             (SIGUSR1, exit 75; `command_line/signals.py`):
                                             train at a checkpoint of `step` (None: the
                                             cluster session's own end saved it); the others
                                             with step and max_steps None
  peer_lost      {address, down_secs, limit_secs, exit_code}
                                             a watchdog gave up on a ps or the chief
                                             unreachable past its limit; the task exits
                                             with `exit_code`
  error          {program, exit_code, error, options, message}
                                             a program ended with its one error line
                                             (`command_line/entry.py`): the exception's
                                             type (None for a stray argument), the
                                             option names it concerns and the line's
                                             message (for a launcher to pass on)

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

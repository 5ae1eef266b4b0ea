"""One runner per role of a parameter-server cluster: ps, chief, worker and evaluator.

    run_task(recipe, task) -> dict   # this process's role, until training is over

Why not plain `tf.estimator.train_and_evaluate` for every task: the Estimator starts its
own `tf.distribute.Server` and passes it only `gpu_options` from the session config, so on
a CPU cluster every task would have one CPU device and all towers would silently share
it. Here each ps, chief and worker starts its server itself with the full session config
(`device_count`), then the chief and workers call `Estimator.train` against that server.
The evaluator evaluates each new checkpoint, pinned so that the chief cannot delete it
under it (`towers/cluster/evaluator.py`; it serves nothing). Before any of it,
`assign_gpus` decides which GPUs the task sees (a ps none, the evaluator none unless
asked, each trainer its own: `towers/cluster/gpus.py`).

Asynchronous across workers by default; `--sync_replicas` wraps the optimizer in
`SyncReplicasOptimizer` (see `model_fn/train_spec.py`). The chief writes checkpoints;
`MonitoredTrainingSession` recovers from a lost ps or worker by re-creating its session
(the chief restores the latest checkpoint). A ps that never comes back would make
TensorFlow retry forever, so a watchdog ends chief and workers after
`--ps_unreachable_secs`, and a chief that never comes back ends workers and ps tasks after
`--chief_lost_secs` (`towers/cluster/watchdog.py`). How the tasks end together:
`towers/cluster/shutdown.py`; stopping before a job's time limit: `time_limit.py`.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import tensorflow as tf
from absl import logging

from command_line import status_file
from towers.cluster import evaluator, final_evaluation, shutdown, time_limit
from towers.cluster.base_runner import Recipe, Runner, assign_gpus
from towers.cluster.model_ready import ModelReadyHook
from towers.cluster.spec import ClusterTask, check_port_free
from towers.cluster.watchdog import chief_watchdog, ps_watchdog


class PsRunner(Runner):
  """Serves variables until the chief says training is over; ends when the chief is lost
  for `--chief_lost_secs`."""

  job = 'ps'

  def start(self) -> dict[str, Any]:
    check_port_free(self.task)
    time_limit.ignore_signal()  # a ps holds nothing to save: it ends with the others
    server = self.start_server()
    chief_watchdog(self.task.name, self.task.cluster['chief'][0],
                   self.params.chief_lost_secs).start()
    logging.info('ps %d serving variables at %s until training is over', self.task.task_index,
                 self.task.address)
    message = shutdown.serve_until_training_done(server, self.task)
    shutdown.record_final_step(server, self.task)
    logging.info('ps %d: the chief says training is over (%s); exiting', self.task.task_index,
                 message)
    return {}


class TrainerRunner(Runner):
  """Trains to max_steps with `Estimator.train` against this task's own server; the chief
  and workers differ in their hooks and in whom they tell at the end (`hooks`, `finish`)."""

  def start(self) -> dict[str, Any]:
    params, task = self.params, self.task
    check_port_free(task)
    stop = time_limit.stop_trainer(task.name, self.recipe.trained_step, params.max_steps)
    server = self.start_server()
    self.watch(server)
    if final_evaluation.already_trained(params.model_dir, params.max_steps,
                                        self.recipe.trained_step(), self.recipe.evaluation):
      self.finish(server.target, f'{params.model_dir} was already trained')
      return {}
    ps_watchdog(task.cluster.get('ps', ()), params.ps_unreachable_secs).start()
    estimator = self.recipe.estimator(task)
    input_fn = self.recipe.input_fn(tf.estimator.ModeKeys.TRAIN, task.input_context())
    try:
      estimator.train(input_fn, max_steps=params.max_steps, hooks=self.hooks(estimator, stop))
    except Exception as e:
      self.failed(server.target, e)
      raise
    finally:
      time_limit.ignore_signal()  # training is over: a later signal has nothing to stop
    if stop.is_set():
      self.stopped(server.target)
    logging.info('%s finished training at max_steps=%d', task.name, params.max_steps)
    self.done(server.target)
    return {}

  def watch(self, server: tf.distribute.Server) -> None:
    """Starts what watches the cluster besides the ps watchdog."""
    del server

  def hooks(self, estimator: tf.estimator.Estimator,
            stop: threading.Event) -> list[tf.compat.v1.train.SessionRunHook]:
    raise NotImplementedError

  def finish(self, target: str, message: str) -> None:
    """Tells the cluster that this trainer is done with `message`."""
    raise NotImplementedError

  def failed(self, target: str, error: Exception) -> None:
    """Training raised `error` (raised again after this)."""
    del target, error

  def stopped(self, target: str) -> None:
    """The time-limit signal stopped training: raises `StoppedBeforeTheEnd`."""
    del target
    raise time_limit.stopped_before_the_end(self.task.name, self.params.max_steps,
                                            self.where_the_checkpoint_is())

  def where_the_checkpoint_is(self) -> str:
    raise NotImplementedError

  def done(self, target: str) -> None:
    """Training reached max_steps."""
    self.finish(target, 'done')


class WorkerRunner(TrainerRunner):
  """Waits for the chief's initialisation, trains, and tells the chief when it is done or
  failed; ends when the chief is lost for `--chief_lost_secs`."""

  job = 'worker'

  def watch(self, server: tf.distribute.Server) -> None:
    chief_watchdog(self.task.name, self.task.cluster['chief'][0],
                   self.params.chief_lost_secs).start()

  def hooks(self, estimator, stop):
    return worker_hooks(estimator) + [time_limit.stop_hook(stop)]

  def finish(self, target: str, message: str) -> None:
    shutdown.report_worker_done(target, self.task, shutdown.OK, message,
                                self.params.ps_unreachable_secs)

  def failed(self, target: str, error: Exception) -> None:
    first = str(error).splitlines()[0] if str(error) else ''
    shutdown.report_worker_done(target, self.task, shutdown.FAILED,
                                f'{type(error).__name__}: {first}',
                                self.params.ps_unreachable_secs)

  def where_the_checkpoint_is(self) -> str:
    return 'the chief writes the checkpoint'  # a stopped worker does not report: the
                                              # stopping chief waits for none


class ChiefRunner(TrainerRunner):
  """Initialises or restores the variables, trains, writes checkpoints; at max_steps waits
  for every worker, writes the final checkpoint and tells every ps. Raises
  `shutdown.TrainingIncomplete` when a worker failed."""

  job = 'chief'

  def hooks(self, estimator, stop):
    self.waiter = shutdown.WaitForWorkersHook(self.task, self.params.worker_lost_secs, skip=stop)
    config = estimator.config
    # Ours replaces the Estimator's own saver hook, so its final save comes after the wait.
    return [self.waiter, tf.compat.v1.train.CheckpointSaverHook(
        self.params.model_dir, save_secs=config.save_checkpoints_secs,
        save_steps=config.save_checkpoints_steps,
        save_graph_def=config.checkpoint_save_graph_def), time_limit.stop_hook(stop)]

  def finish(self, target: str, message: str) -> None:
    shutdown.announce_training_done(target, self.task, message, self.params.ps_unreachable_secs)

  def stopped(self, target: str) -> None:
    self.finish(target, 'stopped before the job\'s time limit')
    super().stopped(target)

  def where_the_checkpoint_is(self) -> str:
    return f'checkpoint at step {self.recipe.trained_step()} written'

  def done(self, target: str) -> None:
    failures = '; '.join(f'{name}: {what}' for name, what in self.waiter.failures.items())
    self.finish(target, f'failed: {failures}' if failures else 'every worker done')
    if failures:
      raise shutdown.TrainingIncomplete(f'training reached max_steps={self.params.max_steps} '
                                        f'without {failures}')


class EvaluatorRunner(Runner):
  """Evaluates each new checkpoint until the final one (`towers/cluster/evaluator.py`);
  returns the final metrics."""

  job = 'evaluator'

  def start(self) -> dict[str, Any]:
    metrics = evaluator.evaluate_until_final(self.recipe, self.task)
    time_limit.ignore_signal()  # its work is done
    return metrics


RUNNERS: dict[str, type[Runner]] = {
    runner.job: runner for runner in (PsRunner, ChiefRunner, WorkerRunner, EvaluatorRunner)}


def run_task(recipe: Recipe, task: ClusterTask) -> dict[str, Any]:
  """Runs this process's role until training is over (`towers/cluster/shutdown.py`): a ps
  until the chief says so, chief and workers until max_steps, the evaluator until it has
  evaluated the final checkpoint. Returns the evaluator's final metrics, {} for the
  others. Raises `shutdown.TrainingIncomplete` on the chief when a worker failed."""
  logging.info('cluster from %s: this is %s of %s', task.source, task.name,
               json.dumps(task.tf_config['cluster']))
  status_file.record('cluster_task', source=task.source, task_type=task.task_type,
                     index=task.task_index, address=task.address)
  assign_gpus(recipe.params, task)
  return RUNNERS[task.task_type](recipe, task).start()


def worker_hooks(estimator: tf.estimator.Estimator) -> list[tf.compat.v1.train.SessionRunHook]:
  """A non-chief worker waits for the chief's initialisation checking every 0.5 s,
  not TensorFlow's 30 s (see model_ready.py); the chief initialises, so needs no hook."""
  if estimator.config.is_chief:
    return []
  return [ModelReadyHook(estimator.config.master, estimator.config.session_config)]

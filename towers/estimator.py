"""`build_estimator(params, network=None)`: the Estimator, its RunConfig and its session config."""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import tensorflow as tf
from tensorflow.python.training.device_setter import STANDARD_PS_OPS

from model_fn import tower_model_fn
from model_fn.devices import TowerDevices, ensure_logical_cpus, resolve_tower_devices
from model_fn.networks import Network, caller_network_name, input_channels
from model_fn.variable_placement import PS_DEVICE
from towers import checkpoints, run_flags, train_settings
from towers.cluster.spec import ClusterTask
from towers.params import ParamsError, TrainParams, make_params

tf1 = tf.compat.v1


def as_params(params: TrainParams | Mapping[str, Any] | None) -> TrainParams:
  """A TrainParams as is; a dict (keys = flag names, missing keys = defaults) validated."""
  if isinstance(params, TrainParams):
    return params
  return make_params(params or {})


def session_config(devices: TowerDevices, num_towers: int, gpu_memory_fraction: float = 0.0,
                   use_gpus: bool = True) -> tf1.ConfigProto:
  """Exposes as many CPU devices as the towers need (`device_count`). Several towers (or
  MirroredStrategy replicas) get 2 x towers + 2 inter-op threads, so that every tower can
  run at once; one tower keeps TensorFlow's default (one inter-op thread per core): more
  threads cost CPU and gain nothing with one tower (docs/performance.md, section 5).
  GPU memory grows as needed (`allow_growth`), capped at `gpu_memory_fraction` of each GPU
  when > 0, so that processes sharing a GPU can all start; `use_gpus=False` creates no GPU
  device at all (`device_count['GPU'] = 0`)."""
  config = tf1.ConfigProto(allow_soft_placement=True)
  if num_towers > 1:
    config.inter_op_parallelism_threads = 2 * num_towers + 2
  if devices.virtual_cpus:
    config.device_count['CPU'] = devices.virtual_cpus
  config.gpu_options.allow_growth = True
  if gpu_memory_fraction:
    config.gpu_options.per_process_gpu_memory_fraction = gpu_memory_fraction
  if not use_gpus:
    config.device_count['GPU'] = 0
  return config


def run_config(params: TrainParams, cluster: ClusterTask | None = None
               ) -> tf.estimator.RunConfig:
  """model_dir, checkpoint cadence, seed, session config, and MirroredStrategy if asked.
  With `cluster` (this task's place, `towers.cluster.spec`) the RunConfig carries it, and
  chief and workers filter devices to the ps tasks and themselves; the evaluator gets no
  GPU device unless `params.evaluator_gpu`."""
  devices = resolve_tower_devices(params.num_towers, params.tower_devices)
  distribute = None
  if params.strategy == 'mirrored':
    if devices.virtual_cpus > 1:
      ensure_logical_cpus(devices.virtual_cpus)
    distribute = tf.distribute.MirroredStrategy(devices=list(devices.devices))
  config = tf.estimator.RunConfig(
      model_dir=params.model_dir,
      tf_random_seed=params.random_seed,
      save_checkpoints_steps=params.save_checkpoints_steps,
      keep_checkpoint_max=params.keep_checkpoint_max,
      save_summary_steps=params.log_every_steps,
      log_step_count_steps=params.log_every_steps,
      session_config=session_config(
          devices, devices.num_towers, params.gpu_memory_fraction,
          use_gpus=not (cluster and cluster.task_type == 'evaluator' and
                        not params.evaluator_gpu)),
      train_distribute=distribute)
  if cluster is not None:
    # RunConfig reads its cluster only from the TF_CONFIG variable; hand it ours directly.
    config._init_distributed_setting_from_environment_var(cluster.tf_config)  # pylint: disable=protected-access
  if config.num_ps_replicas:
    config = config.replace(device_fn=ps_cpu_device_setter(config))
  if config.cluster_spec and config.task_type in ('chief', 'worker'):
    # Talk only to the ps tasks and ourselves: a lost worker must not stall the others.
    filtered = tf1.ConfigProto()
    filtered.CopyFrom(config.session_config)
    filtered.device_filters.extend(['/job:ps', f'/job:{config.task_type}/task:{config.task_id}'])
    config = config.replace(session_config=filtered)
  return config


def ps_cpu_device_setter(config: tf.estimator.RunConfig) -> Callable[[tf.Operation], str]:
  """The Estimator's own device setter (variables round-robin over the ps tasks, other ops
  on this task), except that a variable no placement named lands on its ps task's CPU
  (`PS_DEVICE`; e.g. the global step) rather than on whichever device the ps sees."""
  return tf1.train.replica_device_setter(
      ps_tasks=config.num_ps_replicas, ps_device=PS_DEVICE,
      worker_device=f'/job:{config.task_type}/task:{config.task_id}', merge_devices=True,
      ps_ops=list(STANDARD_PS_OPS), cluster=config.cluster_spec)


def build_estimator(params: TrainParams | Mapping[str, Any] | None = None,
                    network: Network | None = None, cluster: ClusterTask | None = None,
                    *, flags_describe_run: bool = False) -> tf.estimator.Estimator:
  """An Estimator that trains a network over towers (or MirroredStrategy); in a cluster,
  as the task `cluster` (see `run_config`).

  `network(clips, ctx) -> logits` is the user's own network (see `model_fn.networks`):
  clips float32 [batch, frames, height, width, channels], `ctx` the tower's
  `model_fn.layers.TowerContext`, logits [batch, num_classes]. It is called once per
  tower, and must create its variables with `tf.compat.v1.get_variable` (or
  `model_fn.layers`) so that the towers share them. Without it, the registered network
  `params.model` is trained; with it, `params.model` is not used.
  It trains on any input_fn yielding (clips, labels): float32
  [batch, frames, height, width, channels] in [-1, 1] (a batch outside fails its step
  naming the range, `checking_caller_clips`) and int64 [batch].
  Training records the run's learning settings in model_dir and refuses to resume a
  model_dir trained with others (`towers/train_settings.py`). `flags_describe_run`: the
  run's input and network are those `params` name (`towers.training`'s runs), so
  model_dir/run.flags, the flagfile that continues it, is written too; a run on the
  caller's own input_fn or network gets none (the flags would train something else), and
  without it the record says the data came from the caller's input_fn
  (`train_settings.CALLER_INPUT`): `//towers:train` then refuses that model_dir.
  """
  params = as_params(params)
  if network is not None:
    registry_only = [name for name in ('trainable_from', 'warm_start_from')
                     if getattr(params, name)]
    if registry_only:
      raise ParamsError(f'{" and ".join(registry_only)} need a registered network that '
                        'declares its endpoints or checkpoint (model_fn.networks.register), '
                        'not one passed as build_estimator(network=...)')
  model_fn = tower_model_fn.make_model_fn(network, params.strategy)
  if not flags_describe_run:
    model_fn = checking_caller_clips(model_fn)
  return tf.estimator.Estimator(
      model_fn=recording_settings(model_fn, flags_describe_run and network is None,
                                  caller_input=not flags_describe_run,
                                  network=network and caller_network_name(network)),
      config=run_config(params, cluster), params=params)


def checking_caller_clips(model_fn: Callable[..., tf.estimator.EstimatorSpec]
                          ) -> Callable[..., tf.estimator.EstimatorSpec]:
  """`model_fn` whose float clips from the caller's own input_fn (training and evaluation)
  are checked to lie in [-1, 1] (`checked_unit_range`): raw 0..255 pixels would train and
  score without a word, and the export then refuses exactly those values."""
  def model_fn_checking_clips(features, labels, mode, params, config):
    if mode != tf.estimator.ModeKeys.PREDICT:
      clips = features['clips'] if isinstance(features, dict) else features
      if clips.dtype.is_floating:
        checked = checked_unit_range(clips)
        features = dict(features, clips=checked) if isinstance(features, dict) else checked
    return model_fn(features, labels, mode, params, config)
  return model_fn_checking_clips


def recording_settings(model_fn: Callable[..., tf.estimator.EstimatorSpec],
                       writes_flagfile: bool = False, caller_input: bool = False,
                       network: str | None = None) -> Callable[..., tf.estimator.EstimatorSpec]:
  """`model_fn` that, in TRAIN mode, first decides whether the run may continue model_dir
  with its learning settings (`train_settings.checked_record`, the one place that decides
  it, for `//towers:train` and library users alike: raises `ResumeSettingsError` before
  anything is restored when a resume would mix settings), and on the chief records them
  once the training session has started, with the run's flagfile when `writes_flagfile`
  (`RecordSettingsHook`). A cluster's workers decide too (they read the record and write
  nothing). `caller_input`: the run reads the caller's own input_fn; `network`: the
  caller's own network's name, None for the registered one (`train_settings.settings`)."""
  def model_fn_recording_settings(features, labels, mode, params, config):
    if mode != tf.estimator.ModeKeys.TRAIN:
      return model_fn(features, labels, mode, params, config)
    record = train_settings.checked_record(params, config.num_worker_replicas or 1,
                                           caller_input, network)
    spec = model_fn(features, labels, mode, params, config)
    checkpoints.mark_graph()
    if not config.is_chief:
      return spec
    jobs = config.cluster_spec.jobs if config.cluster_spec else []
    cluster = ', '.join(f'{len(config.cluster_spec.job_tasks(job))} {job}' for job in jobs)
    hook = RecordSettingsHook(params, record, cluster if writes_flagfile else None)
    return spec._replace(training_chief_hooks=(*spec.training_chief_hooks, hook))
  return model_fn_recording_settings


class RecordSettingsHook(tf1.train.SessionRunHook):
  """Writes model_dir/train_settings.json and the run's flagfile (`run_flags.py`, unless
  `cluster` is None) once the session exists (checkpoint restored or variables
  initialised): a run that fails before leaves the earlier ones as they were."""

  def __init__(self, params: TrainParams, record: dict[str, Any],
               cluster: str | None = '') -> None:
    self._params = params
    self._record = record
    # The cluster's tasks for run.flags' comment (e.g. '1 chief, 1 ps, 1 worker'; '' on one
    # machine); None: no run.flags (the flags do not describe the run's input or network).
    self._cluster = cluster

  def after_create_session(self, session, coord) -> None:
    del session, coord
    train_settings.write_record(self._params.model_dir, self._record)
    if self._cluster is not None:
      run_flags.write(self._params, self._cluster)


def serving_input_receiver_fn(params: TrainParams, class_names: Sequence[str] = ()):
  """Serving input: `clips` float32 [None, clip_frames, crop_size, crop_size, channels] in
  [-1, 1] (uint8 pixel or flow code x as x / 127.5 - 1). A batch holding a value outside
  [-1, 1] (raw 0..255 pixels, NaN) fails at run time with InvalidArgumentError naming the
  range, instead of a confident wrong class. With `class_names` (label order) the
  signature also returns them (`class_name`, `class_names`: `model_fn.predict_spec`)."""
  shape = [None, params.clip_frames, params.crop_size, params.crop_size, input_channels(params)]

  def receiver_fn():
    clips = tf1.placeholder(tf.float32, shape, name='clips')
    features = {'clips': checked_unit_range(clips)}
    if class_names:
      features['class_names'] = tf.constant(list(class_names), tf.string)
    return tf.estimator.export.ServingInputReceiver(features, {'clips': clips})

  return receiver_fn


UNIT_RANGE_MESSAGE = ('clips must be float32 in [-1, 1] (uint8 pixel or flow code x as '
                      'x / 127.5 - 1); this batch holds values from')


def checked_unit_range(clips: tf.Tensor) -> tf.Tensor:
  """`clips`, once every value is known to lie in [-1, 1] (an empty batch passes); else
  running it raises InvalidArgumentError with `UNIT_RANGE_MESSAGE` and the batch's min and
  max."""
  low, high = tf.reduce_min(clips), tf.reduce_max(clips)
  inside = tf.logical_or(tf.equal(tf.size(clips), 0),
                         tf.logical_and(low >= -1.0, high <= 1.0))
  check = tf.debugging.Assert(inside, [UNIT_RANGE_MESSAGE, low, 'to', high], name='unit_range')
  with tf.control_dependencies([check]):
    return tf.identity(clips, name='clips_in_unit_range')

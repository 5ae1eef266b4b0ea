"""One immutable parameter object for the whole library, in sections.

`TrainParams` is the public contract: every field is also a command-line flag of
`//towers:train` with the same name (see `towers/flags.py`), and `build_estimator(params)`
accepts a dict with these keys. The library never reads absl flags itself, so it works
without absl.

The fields are declared in sections, one frozen dataclass per concern (`ModelSection`,
`DevicesSection`, `OptimizationSection`, `RunSection`, `ClusterSection`, `DataSection`),
each holding its fields, their ranges and its cross-field `rules`; `TrainParams` inherits
them all, so names stay flat (`params.batch_size`, `--batch_size`, `{'batch_size': 8}`) and
a function may declare the section it reads. The rules between sections are `TrainParams`'
own. Every object is checked when made (`command_line.options.validated`).

Units: steps are global steps; learning rates are per step; batch sizes are global
(summed over towers and, in a cluster, per worker). Each numeric field declares its
range beside it (`valid=`, `command_line/options.py`: checked when made, shown in the
flag's help); every float must be finite.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Mapping

from input_fn import datasets
from model_fn import networks
from model_fn.networks import i3d_names
from command_line.options import (OptionsError, Options, Problem, Range, above, at_least,
                                  build, option)

# How a resume treats each field (its `RESUME` metadata), declared on the field itself:
# STRUCTURE decides the network's variables and can never change within a model_dir;
# MUST_MATCH is a learning setting that must match model_dir's record unless
# --resume_changes names it (`towers/train_settings.py`); MAY_CHANGE is free on a resume
# (steps, cadences, evaluation, devices, cluster, paths).
RESUME = 'resume'
STRUCTURE = 'structure'
MUST_MATCH = 'must_match'
MAY_CHANGE = 'may_change'


def _resume_option(resume: str):
  """`option(...)` whose field also declares how a resume treats it."""
  def make(default: Any, help_text: str, choices: tuple[Any, ...] | None = None,
           path: bool = False, valid: Range | None = None, key: bool = False) -> Any:
    made = option(default, help_text, choices, path, valid, key)
    return dataclasses.field(default=default, metadata={**made.metadata, RESUME: resume})
  return make


structure = _resume_option(STRUCTURE)
must_match = _resume_option(MUST_MATCH)
may_change = _resume_option(MAY_CHANGE)


class ParamsError(OptionsError):
  """A parameter value or combination is invalid. The message names the parameter and
  `option` holds its name (None for a `make_params` argument that is not a dict)."""
  noun: ClassVar[str] = 'parameter'


class Section(Options):
  """Base of the sections of `TrainParams`: a section made alone is checked too (its fields
  and its `rules`); `TITLE` heads its flags in --helpfull and docs/flags.md."""
  TITLE: ClassVar[str] = ''
  error: ClassVar[type[OptionsError]] = ParamsError


# --- Model ----------------------------------------------------------------------------------

def _registered_model(p: ModelSection) -> Problem | None:
  if p.model not in networks.names():
    return Problem('model', f'model={p.model!r} is not a registered network '
                   f'({", ".join(networks.names())})')
  return None


def _trainable_from_is_an_endpoint(p: ModelSection) -> Problem | None:
  endpoints = networks.spec(p.model).endpoints
  if p.trainable_from and p.trainable_from not in endpoints:
    return Problem('trainable_from', f'trainable_from={p.trainable_from!r} is not an endpoint '
                   f'of model={p.model} ({", ".join(endpoints) or "it has none"})')
  return None


def _warm_start_needs_a_checkpoint_network(p: ModelSection) -> Problem | None:
  if p.warm_start_from and not networks.spec(p.model).warm_start:
    able = [name for name in networks.names() if networks.spec(name).warm_start]
    return Problem('warm_start_from', f'warm_start_from restores a checkpoint into a '
                   f'registered network that declares one (model={" or ".join(able)}), got '
                   f'model={p.model}: leave --warm_start_from empty or change --model')
  return None


def _network_builds_these_params(p: ModelSection) -> Problem | None:
  """The network's own `param_problems`; a plain text names `model`."""
  for problem in networks.spec(p.model).param_problems(p):
    return problem if isinstance(problem, Problem) else Problem('model', problem)
  return None


@dataclasses.dataclass(frozen=True)
class ModelSection(Section):
  """The network: which one, its input clips and its head; what a warm start restores."""
  TITLE: ClassVar[str] = 'Model'
  rules = (_registered_model, _trainable_from_is_an_endpoint,
           _warm_start_needs_a_checkpoint_network, _network_builds_these_params)

  model: str = structure(
      'c3d_small', f'Network to train: {", ".join(networks.names())}, or a network added '
      'with model_fn.networks.register().', key=True)
  num_classes: int = structure(
      101, 'Number of output classes; without it //towers:train takes the data\'s (the '
      'prepared records\' or the class list\'s).', valid=at_least(2), key=True)
  clip_frames: int = must_match(16, 'Frames per clip fed to the network.', valid=at_least(1))
  crop_size: int = must_match(112, 'Height and width of the clip crop, in pixels.',
      valid=at_least(1))
  batch_norm: bool = structure(True, 'Use batch normalisation in the network.')
  bn_update: str = must_match(
      'main', 'Where batch-norm moving statistics come from: the main tower only, or the '
      'size-weighted mean of all towers.', choices=('main', 'mean'))
  dropout_keep: float = must_match(1.0, 'Keep probability of dropout before the classifier.',
      valid=Range(0.0, 1.0, low_open=True))
  # I3D and fine-tuning.
  stream: str = structure(
      'rgb', 'Input stream: rgb (3-channel clips) or flow (2-channel TV-L1 optical flow, u '
      'and v, from //data_tools:extract_flow). For i3d it also picks the variables\' scope '
      '(RGB/inception_i3d or Flow/inception_i3d). The streams train separately; '
      '//serving:evaluate_two_stream fuses two trained models per video.',
      choices=tuple(i3d_names.STREAMS), key=True)
  warm_start_from: str = may_change(
      '', 'I3D: checkpoint prefix (e.g. data/checkpoints/rgb_imagenet/model.ckpt, from '
      'DeepMind\'s kinetics-i3d repository) or a directory holding one, restored into the '
      'network when model_dir has no checkpoint yet. Empty: train from scratch.', path=True,
      key=True)
  warm_start_scope: str = may_change(
      '', 'Maps graph names to checkpoint names for the warm start: '
      '"graph_prefix=checkpoint_prefix", comma-separated for several. E.g. '
      '"RGB/inception_i3d/=" for the Kinetics-600 checkpoint, whose names have no prefix. '
      'Empty: the names are the same.')
  head: str = structure(
      'replace', 'I3D classifier: replace = a fresh num_classes-way Logits layer (the '
      'checkpoint\'s is not restored); stack = keep the checkpoint\'s pretrained_classes-way '
      'Logits (restored) and put a fresh dense layer on top; keep = restore the Logits too '
      '(num_classes must equal the checkpoint\'s).', choices=i3d_names.HEADS)
  pretrained_classes: int = structure(
      400, 'head=stack: classes of the checkpoint\'s Logits layer (400 Kinetics-400, '
      '600 Kinetics-600).', valid=at_least(1))
  trainable_from: str = must_match(
      '', 'Freeze every endpoint of the network before this one (their weights keep their '
      'warm-start values; their batch norm moving statistics still follow the training '
      'data); empty trains all variables. Endpoints: ' + '; '.join(
          f'model={name}: {", ".join(networks.spec(name).endpoints)}' for name in networks.names()
          if networks.spec(name).endpoints) + '.')


# --- Towers and devices -----------------------------------------------------------------------

def _one_device_per_tower(p: DevicesSection) -> Problem | None:
  if p.tower_devices and p.num_towers > 0 and len(p.tower_devices) != p.num_towers:
    return Problem('tower_devices', f'tower_devices lists {len(p.tower_devices)} devices but '
                   f'num_towers={p.num_towers}')
  return None


@dataclasses.dataclass(frozen=True)
class DevicesSection(Section):
  """The towers of one worker, where they and the variables run, and the strategy."""
  TITLE: ClassVar[str] = 'Towers and devices'
  rules = (_one_device_per_tower,)

  num_towers: int = may_change(
      -1, 'Towers per worker. -1: one per visible GPU (1 when there is no GPU).', key=True,
      valid=Range(low=-1, excluded=(0,)))
  tower_devices: tuple[str, ...] = may_change(
      (), 'Comma-separated devices, one per tower. Empty: every visible GPU, or with none, '
      'num_towers virtual CPU devices.')
  variable_device: str = may_change(
      'cpu', 'Where variables live on one machine: cpu (host as parameter server), gpu0 '
      '(first tower device), balanced (greedy by byte size over tower devices). In a cluster '
      'with ps tasks they always live on the ps tasks, the largest first, each on the ps '
      'holding the fewest bytes.',
      choices=('cpu', 'gpu0', 'balanced'))
  strategy: str = must_match(
      'towers', 'towers: this library\'s tower model_fn (every option applies). mirrored: '
      'the same network, loss and optimizer under tf.distribute.MirroredStrategy on the same '
      'devices of one machine, to check results against TensorFlow\'s own strategy; it '
      'refuses the options it does not apply (ema_decay, clip_gradient_norm, sync_replicas, '
      'accumulate_steps, bn_update=mean, variable_device, transfer_dtype) and a cluster.',
      choices=('towers', 'mirrored'))
  gpu_memory_fraction: float = may_change(
      0.0, 'Share of each GPU\'s memory this process may take (per_process_gpu_memory_fraction); '
      '0: none reserved up front, memory grows as needed (allow_growth), so processes '
      'sharing a GPU can all start.', valid=Range(0.0, 1.0))
  gpus_per_worker: int = may_change(
      0, 'Cluster: GPUs each trainer (chief or worker) sees when several trainers share a '
      'machine; trainer k of that machine sees its k-th group of this many. 0: num_towers '
      '(with num_towers=-1 a trainer alone on its machine sees every GPU). A ps never sees '
      'a GPU.', valid=at_least(0))
  evaluator_gpu: bool = may_change(
      False, 'Cluster: the evaluator may use the GPUs its machine gives it (sharing them with '
      'a trainer); default it runs on the CPU and sees no GPU.')

  @property
  def tower_count(self) -> int:
    """Towers per worker as far as the params say (-1 counts as 1: the GPUs are unknown
    until the devices are resolved, `model_fn.devices`)."""
    return len(self.tower_devices) or max(self.num_towers, 1)


# --- Optimisation -----------------------------------------------------------------------------

def _one_rate_more_than_boundaries(p: OptimizationSection) -> Problem | None:
  if p.lr_schedule == 'piecewise' and len(p.lr_values) != len(p.lr_boundaries) + 1:
    return Problem('lr_values', f'lr_values has {len(p.lr_values)} values but lr_boundaries '
                   f'has {len(p.lr_boundaries)}: piecewise needs exactly one value more than '
                   'boundaries')
  return None


def _some_rate(p: OptimizationSection) -> Problem | None:
  return None if p.lr_values else Problem('lr_values', 'lr_values must hold at least one rate')


def _boundaries_increase(p: OptimizationSection) -> Problem | None:
  if list(p.lr_boundaries) != sorted(set(p.lr_boundaries)):
    return Problem('lr_boundaries',
                   f'lr_boundaries must be strictly increasing, got {p.lr_boundaries}')
  return None


@dataclasses.dataclass(frozen=True)
class OptimizationSection(Section):
  """The optimizer, the learning-rate schedule and what acts on the gradients."""
  TITLE: ClassVar[str] = 'Optimisation'
  rules = (_one_rate_more_than_boundaries, _some_rate, _boundaries_increase)

  optimizer: str = must_match('momentum', 'Optimizer.',
                              choices=('momentum', 'sgd', 'adam', 'rmsprop'))
  momentum: float = must_match(0.9, 'Momentum of the momentum optimizer (and of RMSProp).',
      valid=at_least(0.0))
  lr_schedule: str = must_match(
      'piecewise', 'Learning-rate schedule.',
      choices=('piecewise', 'cosine', 'exponential', 'constant'))
  lr_boundaries: tuple[int, ...] = must_match(
      (10000, 20000, 30000, 40000, 50000),
      'Piecewise schedule: global steps at which the rate changes.', valid=at_least(0))
  lr_values: tuple[float, ...] = must_match(
      (1e-3, 8e-4, 5e-4, 3e-4, 1e-4, 5e-5),
      'Piecewise schedule: one more value than boundaries. lr_values[0] is also the base '
      'rate of the cosine, exponential and constant schedules.', valid=above(0.0))
  lr_decay_steps: int = must_match(10000, 'Exponential schedule: steps per decay by lr_decay_rate.',
                                   valid=at_least(1))
  lr_decay_rate: float = must_match(0.5, 'Exponential schedule: factor per lr_decay_steps.',
                                    valid=above(0))
  warmup_steps: int = must_match(0, 'Linear warm-up from 0 to the scheduled rate over these steps.',
      valid=at_least(0))
  lr_reference_batch: int = must_match(
      0, 'Linear scaling: if > 0, every rate is multiplied by the clips of one update '
      '(accumulate_steps x batch_size) / lr_reference_batch.',
      valid=at_least(0))
  weight_decay: float = must_match(
      0.0, 'L2 weight decay: adds weight_decay * sum(l2_loss(w)) over conv/dense kernels '
      '(variables named w or kernel), once per step.', valid=at_least(0.0))
  ema_decay: float = must_match(
      0.0, 'Exponential moving average of the weights (e.g. 0.9999); 0 disables. When on, '
      'EVAL, PREDICT and export use the averaged weights.', valid=Range(0.0, 1.0, high_open=True))
  clip_gradient_norm: float = must_match(
      0.0, 'Clip the averaged gradients to this global norm; 0 disables. In a cluster, '
      'clipping needs every gradient before any is pushed, so pushes no longer overlap '
      'backprop (docs/scaling.md).', valid=at_least(0.0))


# --- Run --------------------------------------------------------------------------------------

def _model_dir_named(p: RunSection) -> Problem | None:
  if not p.model_dir:
    return Problem('model_dir', 'model_dir is empty: name the directory for checkpoints and '
                   'exports')
  return None


def _strict_eval_reads_everything(p: RunSection) -> Problem | None:
  if p.strict_eval and p.eval_steps:
    return Problem('strict_eval', f'strict_eval needs the whole eval set, but eval_steps='
                   f'{p.eval_steps} reads part of it: set eval_steps=0')
  return None


@dataclasses.dataclass(frozen=True)
class RunSection(Section):
  """Batches, steps, cadences, evaluation and where the run keeps its checkpoints."""
  TITLE: ClassVar[str] = 'Run'
  rules = (_model_dir_named, _strict_eval_reads_everything)

  batch_size: int = must_match(
      24, 'Clips per micro-batch per worker, split across the towers (a worker step reads '
      'accumulate_steps x batch_size clips).', valid=at_least(1), key=True)
  accumulate_steps: int = must_match(
      1, 'Micro-batches per training step (k): each step reads k x batch_size clips, each '
      'tower device runs k micro-batches of its share of batch_size one after another '
      '(micro-batch j+1\'s forward waits for micro-batch j\'s backward: peak activation '
      'memory of one micro-batch), sums their gradients (the gradient of the mean loss over '
      'all k x batch_size clips, weight decay once), and applies ONE update: each variable '
      'is pulled once and one gradient per variable pushed per step, so network traffic '
      'per example falls k-fold. lr_reference_batch scaling counts k x batch_size. '
      'Evaluation is unchanged (eval_batch_size).', valid=at_least(1))
  eval_batch_size: int = may_change(0, 'Global evaluation batch size; 0 means batch_size.',
      valid=at_least(0))
  max_steps: int = may_change(1000, 'Stop training at this global step.', valid=at_least(1),
                              key=True)
  eval_steps: int = may_change(
      0, 'Evaluation batches per evaluation; 0 means the whole eval set. The first batches of '
      'the test list (ordered by class) are read. Clip metrics (top-1, top-5, mean per class, '
      'per class, loss/per_clip) count every view read; a video whose views the last batch '
      'cuts is left out of the video accuracy and the evaluated-videos count.',
      valid=at_least(0))
  strict_eval: bool = may_change(
      False, 'An evaluation that saw fewer videos than the test list holds (videos prepare '
      'skipped, records lost to damage, unreadable videos on the direct route) is an error '
      'instead of a warning. An evaluation of no video is an error either way.')
  save_checkpoints_steps: int = may_change(500, 'Write a checkpoint every this many steps.',
      valid=at_least(1))
  keep_checkpoint_max: int = may_change(5, 'Checkpoints kept in model_dir.', valid=at_least(1))
  log_every_steps: int = may_change(50, 'Progress line and summaries every this many steps.',
      valid=at_least(1))
  throttle_secs: int = may_change(0, 'Minimum seconds between evaluations during training.',
      valid=at_least(0))
  random_seed: int = may_change(0, 'Graph-level random seed.', valid=at_least(0))
  model_dir: str = may_change('/tmp/video_towers', 'Checkpoints, summaries and exports.',
                              path=True, key=True)
  resume_changes: tuple[str, ...] = may_change(
      (), 'Learning settings (towers/train_settings.py: e.g. lr_values, batch_size) allowed '
      'to differ from those model_dir was trained with, when it holds a checkpoint; the '
      'change and its step are kept in model_dir/train_settings.json. Empty: resuming with '
      'any other learning setting stops before training (max_steps, cadences, evaluation '
      'and device flags may always change). Changes that need variables the checkpoint '
      'lacks (another optimizer than sgd, ema_decay from 0) cannot be allowed.')
  export_savedmodel: bool = may_change(True, 'Export a SavedModel after the final evaluation.')

  @property
  def effective_eval_batch_size(self) -> int:
    return self.eval_batch_size or self.batch_size

  @property
  def examples_per_step(self) -> int:
    """Training clips per worker step: accumulate_steps micro-batches of batch_size."""
    return self.batch_size * self.accumulate_steps


# --- Cluster ----------------------------------------------------------------------------------

def _backup_workers_need_sync(p: ClusterSection) -> Problem | None:
  if p.backup_workers and not p.sync_replicas:
    return Problem('backup_workers', f'backup_workers={p.backup_workers} needs sync_replicas '
                   '(backup workers are stragglers of a synchronous step): add --sync_replicas '
                   'or set --backup_workers=0')
  return None


def _task_index_needs_task_type(p: ClusterSection) -> Problem | None:
  if p.task_index and not p.task_type:
    return Problem('task_index', f'task_index={p.task_index} names a cluster task but no '
                   '--task_type says which: give --task_type (with --ps_hosts and '
                   '--worker_hosts), or drop --task_index to train on one machine')
  return None


@dataclasses.dataclass(frozen=True)
class ClusterSection(Section):
  """The cluster: its tasks, synchronous or not, what travels, how long a task is waited for."""
  TITLE: ClassVar[str] = 'Cluster'
  rules = (_backup_workers_need_sync, _task_index_needs_task_type)

  ps_hosts: tuple[str, ...] = may_change(
      (), 'Cluster from flags: host:port of every ps task (with worker_hosts; else TF_CONFIG).')
  worker_hosts: tuple[str, ...] = may_change(
      (), 'Cluster from flags: host:port of every training worker; the first is the chief.')
  task_type: str = may_change(
      '', 'Cluster from flags: this process\'s role. worker index 0 is the chief.',
      choices=('', 'chief', 'worker', 'ps', 'evaluator'))
  task_index: int = may_change(0, 'Cluster from flags: index of this task in its host list.',
      valid=at_least(0))
  sync_replicas: bool = must_match(
      False, 'Synchronous training across workers (SyncReplicasOptimizer); default async.')
  backup_workers: int = may_change(
      0, 'With sync_replicas: a step aggregates the first (workers - backup_workers) '
      'gradients and drops the stragglers.', valid=at_least(0))
  transfer_dtype: str = must_match(
      'float32', 'Type in which the towers\' host receives parameters from the variables\' '
      'device (the ps in a cluster) and sends gradients back; bfloat16 or float16 halve the '
      'bytes per step, the variables and their updates stay float32 (model_fn/transfer.py).',
      choices=('float32', 'bfloat16', 'float16'))
  ps_unreachable_secs: int = may_change(
      120, 'A worker or chief whose ps task stays unreachable this long exits with an error '
      '(TensorFlow alone would retry forever).', valid=at_least(1))
  worker_lost_secs: int = may_change(
      120, 'At max_steps the chief waits for every worker\'s last step before its final '
      'checkpoint; a worker unreachable this long meanwhile, or answering this long without '
      'finishing its step (stuck), is counted as failed.', valid=at_least(1))
  chief_lost_secs: int = may_change(
      300, 'A worker, ps or evaluator whose chief stays unreachable this long before '
      'training is over exits with an error naming the chief (a chief restarted sooner is '
      'waited for).', valid=at_least(1))


# --- Data -------------------------------------------------------------------------------------

def _crops_need_video_data(p: DataSection) -> Problem | None:
  if p.eval_crops != 1 and p.data_source == 'synthetic':
    return Problem('eval_crops', 'eval_crops=3 needs video data: the synthetic source makes '
                   'single clips without frames to crop; use data_source=tfrecord, videos or '
                   'frames')
  return None


def _list_needs_records(p: DataSection) -> Problem | None:
  if p.dataset == 'list' and p.data_source in ('videos', 'frames'):
    return Problem('data_source', f'dataset=list trains from prepared records, not '
                   f'data_source={p.data_source}: run //data_tools:prepare --dataset=list (with '
                   '--train_list, --test_list, --class_names) and train with '
                   '--data_source=tfrecord on its --out')
  return None


def _synthetic_reads_no_files(p: DataSection) -> Problem | None:
  if p.data_source == 'synthetic' and p.data_dir:
    return Problem('data_source', f'data_dir={p.data_dir} is given, but data_source=synthetic '
                   '(also the default) reads no files: it would train on built-in clips; for '
                   'that data set data_source=tfrecord (prepared records), videos or frames; for '
                   'the built-in clips leave data_dir empty')
  return None


@dataclasses.dataclass(frozen=True)
class DataSection(Section):
  """Where the clips come from and how training and evaluation read them."""
  TITLE: ClassVar[str] = 'Data'
  rules = (_synthetic_reads_no_files, _crops_need_video_data, _list_needs_records)

  data_source: str = must_match(
      'synthetic', 'synthetic: a built-in learnable clip source (no files). tfrecord: '
      'shards written by //data_tools:prepare in data_dir (the fast route). videos: raw UCF101 '
      '.avi files decoded with OpenCV (data_dir/UCF-101 + split files; slow, no preparation). '
      'frames: pre-extracted JPEG frame folders (data_dir/jpegs_256 + split files; slow).',
      choices=('synthetic', 'tfrecord', 'videos', 'frames'), key=True)
  dataset: str = must_match(datasets.DEFAULT, datasets.HELP, choices=datasets.NAMES, key=True)
  data_dir: str = may_change(
      '', 'Dataset directory. tfrecord: the --out directory of //data_tools:prepare. '
      'videos/frames: the UCF101 or HMDB51 root holding the videos (UCF-101/, hmdb51_org/) '
      'or frame folders and the split files (see --dataset).', path=True, key=True)
  split: int = must_match(
      1, 'Official split (1, 2 or 3) of ucf101 and hmdb51 for the videos and frames '
      'sources; tfrecord data holds the split it was prepared from.', choices=datasets.SPLITS)
  eval_clips: int = may_change(
      5, 'Clips per video in evaluation, starts spread evenly over the video; clip '
      'predictions of one video are averaged for the video-level accuracy.', valid=at_least(1))
  eval_crops: int = may_change(
      1, 'Crops per evaluation clip: 1 (centre) or 3 (start, centre and end of the frame\'s '
      'long side). A video\'s prediction averages its eval_clips x eval_crops views.',
      choices=datasets.EVAL_CROPS)
  shuffle_buffer: int = may_change(
      64, 'Training shuffle buffer, in decoded uint8 clips (each clip_frames x crop_size^2 '
      'x 3 bytes). Files are also shuffled and read interleaved.', valid=at_least(1))
  max_eval_videos: int = may_change(
      4096, 'Upper bound on the number of videos in the evaluation split: size of the '
      'video-level accuracy accumulators ([max_eval_videos, num_classes] floats).',
      valid=at_least(1))
  frame_short_side: int = must_match(
      256, 'videos source: frames are resized so their short side is this many pixels '
      '(0 keeps the decoded size), matching //data_tools:prepare --short_side.', valid=at_least(0))
  input_threads: int = may_change(
      0, 'Parallel calls of the parse/decode map and parallel file reads; 0 = AUTOTUNE.',
      valid=at_least(0))
  synthetic_train_examples: int = must_match(
      512, 'synthetic data_source: number of training clips per epoch.', valid=at_least(1))
  synthetic_eval_examples: int = may_change(
      128, 'synthetic data_source: number of evaluation clips.', valid=at_least(1))


# --- Between sections -------------------------------------------------------------------------

def _every_tower_gets_an_example(p: TrainParams) -> Problem | None:
  if p.batch_size < p.tower_count:
    return Problem('batch_size', f'batch_size={p.batch_size} is smaller than the '
                   f'{p.tower_count} towers: every tower needs at least one example')
  return None


def _flow_needs_flow_data(p: TrainParams) -> Problem | None:
  if p.stream == 'flow' and p.data_source in ('synthetic', 'videos'):
    return Problem(
        'stream', f'stream=flow needs 2-channel optical flow, but data_source={p.data_source} '
        'gives RGB clips: extract TV-L1 flow once (bazel run //data_tools:extract_flow -- '
        '--data_dir=<UCF101 root holding UCF-101/>), then use --data_source=frames (reads '
        '<data_dir>/tvl1_flow) or prepare flow records (bazel run //data_tools:prepare -- '
        '--source=flow --data_dir=<UCF101 root holding tvl1_flow/> --out=<new directory>) '
        'for --data_source=tfrecord')
  return None


def _mirrored_ignored(p: TrainParams) -> list[str]:
  """The options set in `p` that `strategy=mirrored` does not apply: clipping and EMA
  would act per replica, accumulation is built only in the towers' graph, batch-norm
  statistics come from each replica (MEAN-aggregated), tf.distribute places the
  variables, and there is no SyncReplicasOptimizer."""
  ignored = [name for name in ('ema_decay', 'clip_gradient_norm', 'sync_replicas')
             if getattr(p, name)]
  if p.accumulate_steps != 1:
    ignored.append(f'accumulate_steps={p.accumulate_steps}')
  if p.bn_update != 'main':
    ignored.append(f'bn_update={p.bn_update}')
  if p.variable_device != 'cpu':
    ignored.append(f'variable_device={p.variable_device}')
  if p.transfer_dtype != 'float32':
    ignored.append(f'transfer_dtype={p.transfer_dtype}')
  return ignored


def _mirrored_applies_every_option(p: TrainParams) -> Problem | None:
  ignored = _mirrored_ignored(p) if p.strategy == 'mirrored' else []
  if ignored:
    return Problem('strategy', f'strategy=mirrored does not apply {", ".join(ignored)}: leave '
                   f'{"it" if len(ignored) == 1 else "them"} unset or use strategy=towers')
  return None


def _mirrored_splits_batches_evenly(p: TrainParams) -> Problem | None:
  """tf.distribute splits a global batch into equal per-replica batches (the towers'
  strategy splits unevenly)."""
  if p.strategy != 'mirrored':
    return None
  for name, size in (('batch_size', p.batch_size),
                     ('eval_batch_size', p.effective_eval_batch_size)):
    if size % p.tower_count:
      return Problem(name, f'strategy=mirrored splits each batch evenly over its '
                     f'{p.tower_count} replicas, but {name}={size} is not a multiple of '
                     f'{p.tower_count}: use a multiple, or strategy=towers')
  return None


# Bases in reverse: a dataclass lists its last base's fields first, so the flags read Model,
# Towers and devices, Optimisation, Run, Cluster, Data (and the rules run in that order).
@dataclasses.dataclass(frozen=True)
class TrainParams(DataSection, ClusterSection, RunSection, OptimizationSection, DevicesSection,
                  ModelSection):
  """All knobs of a training run, valid whenever it exists: construction (directly, through
  `make_params` or `dataclasses.replace`) converts lists to tuples and raises `ParamsError`
  naming the first invalid parameter (`.option`). Each field declares how a resume treats it
  (`RESUME`); the sections' rules run, then the rules between sections."""
  rules = (_every_tower_gets_an_example, _flow_needs_flow_data, _mirrored_applies_every_option,
           _mirrored_splits_batches_evenly)


SECTIONS: tuple[type[Section], ...] = (ModelSection, DevicesSection, OptimizationSection,
                                       RunSection, ClusterSection, DataSection)
FIELD_NAMES: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(TrainParams))


def make_params(values: Mapping[str, Any] | None = None, **overrides: Any) -> TrainParams:
  """Builds validated params from a dict (keys = flag names) plus keyword overrides.

  Missing keys take the flag defaults; an unknown key is a `ParamsError` naming it.
  Lists are stored as tuples so the object stays immutable and hashable.
  """
  if values is not None and not isinstance(values, Mapping):
    raise ParamsError(f'params must be a TrainParams or a dict of parameter names to values '
                      f'(e.g. {{"batch_size": 8}}), got a {type(values).__name__}: {values!r:.80}')
  return build(TrainParams, {**(values or {}), **overrides}, ParamsError)


def fields_by_resume(*resumes: str) -> tuple[str, ...]:
  """The TrainParams fields whose `RESUME` is one of `resumes`, in declaration order."""
  return tuple(f.name for f in dataclasses.fields(TrainParams) if f.metadata[RESUME] in resumes)

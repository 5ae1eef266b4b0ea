"""How many I3D training clips fit in a GTX1060's memory, from TensorFlow's own accounting,
as a library: `step_peak(clips, config)` -> `Peak` (Grappler's peak bytes on a virtual
GTX1060, for the training step as built and after the default optimizers), `Overheads`
(the CUDA context and cuDNN workspace the peak does not count), `fit(config, clips,
usable_gib)` -> `Fit` (need and `most_clips`), the table, a recipe's line (`recipe_fit`,
`recipe_line`) and `run`. The program and its whole description: benchmarks/i3d_memory_main.py.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from typing import Sequence

from command_line import console, entry

console.quiet_native_logs()  # before TensorFlow is imported: it reads the level once

# pylint: disable=wrong-import-position
import tensorflow as tf
from tensorflow.core.protobuf import config_pb2, device_properties_pb2, meta_graph_pb2
from tensorflow.python.grappler import cluster as grappler_cluster
from tensorflow.python.grappler import item as grappler_item
from tensorflow.python.grappler import tf_optimizer

from command_line.options import option, Options, Range
from model_fn import freezing, layers
from model_fn.networks import i3d, i3d_names

tf1 = tf.compat.v1

MIB = 1 << 20
GIB = 1 << 30
GPU = '/job:localhost/replica:0/task:0/device:GPU:0'
HOST_COPIES = ('_CopyFromGpuToHost', '_CopyFromHostToGpu')

# A GeForce GTX 1060 6GB (GP106, compute capability 6.1): 10 SMs at 1,708 MHz boost, 6 GiB
# of GDDR5 at 192 GB/s, 1.5 MiB L2, 64K registers and 96 KiB shared memory per SM (NVIDIA's
# GTX 1060 specifications and Pascal tuning guide). Grappler's scheduler orders the ops by
# its cost model, so the peak depends on these, not only on memory_size.
GTX1060 = device_properties_pb2.DeviceProperties(
    type='GPU', vendor='NVIDIA', model='GeForce GTX 1060 6GB', frequency=1708, num_cores=10,
    environment={'architecture': '6.1'}, num_registers=65536, l1_cache_size=48 * 1024,
    l2_cache_size=1536 * 1024, shared_memory_size_per_multiprocessor=96 * 1024,
    memory_size=6 * GIB, bandwidth=192_000_000)  # bandwidth in KB/s


@dataclasses.dataclass(frozen=True)
class Overheads:
  """GPU memory a training process holds besides the step's tensors, bytes.

  cuda_context: the driver's context, outside TensorFlow's allocator: 363 MiB in nvidia-smi
    for a TensorFlow session that has run nothing (tensorflow/tensorflow#27651); PyTorch's
    maintainers put it at 200-700 MiB by GPU and driver (pytorch/pytorch#28113). Not
    measured here (no GPU).
  cudnn_workspace: a reserve in the allocator for convolution scratch memory. TensorFlow
    2.15's conv kernels may take up to TF_CUDNN_WORKSPACE_LIMIT_IN_MB (default 4 GiB) from
    the allocator, but only what it can give without retrying; an algorithm whose workspace
    cannot be allocated is skipped for one that needs less (DnnScratchAllocator and
    AllocateScratchOrFallback in tensorflow/core/kernels/conv_ops_gpu.h, TensorFlow
    v2.15.0-11-g63f5a65c7cd as installed). 512 MiB is this project's choice, not a
    measurement: less leaves the fastest algorithms out, it does not fail the step.
  """
  cuda_context: int = 363 * MIB
  cudnn_workspace: int = 512 * MIB

  @property
  def total(self) -> int:
    return self.cuda_context + self.cudnn_workspace


OVERHEADS = Overheads()


@dataclasses.dataclass(frozen=True)
class Config:
  """One tower's I3D training step: clips of `frames` x `crop` x `crop`, `stream`, the
  variables from `trainable_from` on trained; `accumulate` adds the accumulated gradients
  (one more copy of the trained variables, as --accumulate_steps > 1 keeps)."""
  frames: int = 64
  crop: int = 224
  trainable_from: str = ''
  stream: str = 'rgb'
  num_classes: int = 101
  accumulate: bool = False


@dataclasses.dataclass(frozen=True)
class Peak:
  """Grappler's peak memory of one step on the virtual GTX1060, bytes: `as_built` (the
  graph as Python built it), `optimized` (after the default optimizers, what a session
  runs), and `transposes` the layout optimizer added (NDHWC -> NCDHW)."""
  as_built: int
  optimized: int
  transposes: int


def _step_graph(clips: int, config: Config) -> meta_graph_pb2.MetaGraphDef:
  """The training step of `clips` clips: I3D, mean softmax cross-entropy, the gradients of
  the trained variables, momentum updates (plus an accumulator per trained variable with
  `config.accumulate`); every op on the GPU."""
  channels = i3d_names.STREAMS[config.stream][1]
  with tf.Graph().as_default() as graph:
    inputs = tf1.placeholder(tf.float32, [clips, config.frames, config.crop, config.crop,
                                          channels], name='clips')
    logits, _ = i3d.inception_i3d(inputs, layers.TowerContext(is_training=True),
                                  config.num_classes, config.stream, dropout_keep=0.5)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.zeros([clips], tf.int32), logits=logits))
    frozen = freezing.frozen_endpoints('i3d', config.trainable_from)
    trained = [v for v in tf1.trainable_variables()
               if i3d_names.endpoint_of(v.op.name) not in frozen]
    grads = tf1.gradients(loss, trained)
    if config.accumulate:
      sums = [tf1.get_local_variable(f'accumulated_{i}', initializer=tf.zeros_like(v))
              for i, v in enumerate(trained)]
      grads = [s.assign_add(g) for s, g in zip(sums, grads)]
    step = tf1.train.MomentumOptimizer(0.1, 0.9).apply_gradients(zip(grads, trained))
    graph.add_to_collection('train_op', step)
    meta = tf1.train.export_meta_graph(graph=graph)
  for node in meta.graph_def.node:
    node.device = GPU
  return meta


def _peak(cluster: grappler_cluster.Cluster, meta: meta_graph_pb2.MetaGraphDef) -> int:
  """The GPU's peak bytes. Above the device's memory Grappler raises ResourceExhaustedError
  with its peak in the message ("Graph requires N bytes of memory on device ..."): N."""
  try:
    return int(cluster.DeterminePeakMemoryUsage(grappler_item.Item(meta))[GPU][0])
  except tf.errors.ResourceExhaustedError as e:
    found = re.search(r'Graph requires (\d+) bytes of memory', str(e))
    if not found:
      raise
    return int(found[1])


@functools.lru_cache(maxsize=None)
def step_peak(clips: int, config: Config = Config()) -> Peak:
  """Grappler's peak (`Cluster.DeterminePeakMemoryUsage`) of the step on a virtual cluster
  of one GTX1060, as built and after `tf_optimizer.OptimizeGraph` with a default
  ConfigProto (the optimizers a session runs by default)."""
  meta = _step_graph(clips, config)
  cluster = grappler_cluster.Cluster(devices=[device_properties_pb2.NamedDevice(
      name=GPU, properties=GTX1060)])
  as_built = _peak(cluster, meta)
  optimized_graph = tf_optimizer.OptimizeGraph(config_pb2.ConfigProto(), meta, cluster=cluster)
  optimized = meta_graph_pb2.MetaGraphDef()
  optimized.CopyFrom(meta)
  optimized.graph_def.CopyFrom(optimized_graph)
  for node in optimized.graph_def.node:
    # pin_to_host's copies of small int32 tensors: their kernels exist only in GPU builds,
    # and Grappler cannot cost an op it cannot find; an Identity holds the same bytes.
    if node.op in HOST_COPIES:
      node.op = 'Identity'
      node.device = GPU
  peak = _peak(cluster, optimized)
  transposes = (sum(n.op == 'Transpose' for n in optimized_graph.node) -
                sum(n.op == 'Transpose' for n in meta.graph_def.node))
  return Peak(as_built, peak, transposes)


@dataclasses.dataclass(frozen=True)
class Fit:
  """`clips` per tower against `usable_bytes`: `peak` of their step, `need_bytes` = its
  optimized peak + `OVERHEADS.total`, and `most_clips` whose need is within usable (0 when
  not even one clip fits)."""
  clips: int
  peak: Peak
  need_bytes: int
  usable_bytes: int
  most_clips: int

  @property
  def fits(self) -> bool:
    return self.need_bytes <= self.usable_bytes


def need_bytes(clips: int, config: Config) -> int:
  return step_peak(clips, config).optimized + OVERHEADS.total


def most_clips(config: Config, usable_bytes: int, start: int | None = None) -> int:
  """The largest clip count whose need fits `usable_bytes` (0 when not even one clip
  fits): from `start` (a count whose peak is already measured, as `fit` has), else from a
  first guess from the peaks of 1 and 2 clips (the peak grows linearly with the clips),
  each neighbour measured until n fits and n + 1 does not."""
  if start is None:
    one, two = need_bytes(1, config), need_bytes(2, config)
    start = 1 if one > usable_bytes else 1 + int((usable_bytes - one) // max(two - one, 1))
  n = max(1, start)
  while n > 1 and need_bytes(n, config) > usable_bytes:
    n -= 1
  if need_bytes(n, config) > usable_bytes:
    return 0
  while need_bytes(n + 1, config) <= usable_bytes:
    n += 1
  return n


def fit(config: Config, clips: int, usable_gib: float) -> Fit:
  usable = int(usable_gib * GIB)
  return Fit(clips, step_peak(clips, config), need_bytes(clips, config), usable,
             most_clips(config, usable, start=clips))


DEFAULT_CONFIGS = (Config(), Config(stream='flow'), Config(trainable_from='Mixed_4b'))


def table(configs: Sequence[Config], usable_gib: float) -> str:
  """A markdown table: per configuration, Grappler's peak for 1 clip as built and after the
  default optimizers, the optimized peak's growth per clip, and the clips that fit."""
  rows = ['| stream, frames x crop | trainable_from | peak, 1 clip, as built | peak, 1 clip, '
          'optimized | + per clip | transposes added | clips per tower in '
          f'{usable_gib:.1f} GiB |', '| --- | --- | ---: | ---: | ---: | ---: | ---: |']
  for config in configs:
    one, two = step_peak(1, config), step_peak(2, config)
    rows.append(f'| {config.stream} {config.frames}x{config.crop}x{config.crop} | '
                f'{config.trainable_from or "(all)"} | {one.as_built / GIB:.2f} GiB | '
                f'{one.optimized / GIB:.2f} GiB | {(two.optimized - one.optimized) / GIB:.2f} '
                f'GiB | {one.transposes} | {most_clips(config, int(usable_gib * GIB))} |')
  return '\n'.join(rows)


def recipe_config(params) -> Config:
  return Config(params.clip_frames, params.crop_size, params.trainable_from, params.stream,
                params.num_classes, params.accumulate_steps > 1)


@dataclasses.dataclass(frozen=True)
class RecipeFit:
  """A train recipe's I3D against the usable memory of one GPU: `clips_per_tower` of one
  tower's micro-batch (batch_size / towers, rounded up), `clips_per_update` (all
  micro-batches of a step) and that micro-batch's `fit`."""
  towers: int
  clips_per_tower: int
  clips_per_update: int
  fit: Fit


def recipe_fit(params, usable_gib: float) -> RecipeFit:
  towers = len(params.tower_devices) or max(params.num_towers, 1)
  clips = -(-params.batch_size // towers)
  return RecipeFit(towers, clips, params.examples_per_step,
                   fit(recipe_config(params), clips, usable_gib))


def recipe_line(params, usable_gib: float) -> str:
  """The line the program prints for a recipe (`recipe_fit`)."""
  r = recipe_fit(params, usable_gib)
  return (f'{params.model} {params.stream} {params.clip_frames}x{params.crop_size}x'
          f'{params.crop_size}, trainable from {params.trainable_from or "(all)"}: '
          f'{r.clips_per_tower} clip(s) per tower micro-batch ({params.batch_size} over '
          f'{r.towers} tower(s), {params.accumulate_steps} micro-batch(es) = '
          f'{r.clips_per_update} clips per update) need {r.fit.need_bytes / GIB:.2f} GiB '
          f'(TensorFlow peak {r.fit.peak.optimized / GIB:.2f} GiB after its optimizers, '
          f'{r.fit.peak.as_built / GIB:.2f} as built; + CUDA context '
          f'{OVERHEADS.cuda_context / MIB:.0f} MiB + cuDNN workspace '
          f'{OVERHEADS.cudnn_workspace / MIB:.0f} MiB) of {usable_gib:.1f} GiB usable: '
          f'{"fits" if r.fit.fits else "does NOT fit"} (at most {r.fit.most_clips} clip(s) '
          'per tower)')


def recipe_params(path: str):
  """The TrainParams the train binary builds from flagfile `path`."""
  from absl import flags  # pylint: disable=g-import-not-at-top
  from towers import flags as train_flags  # pylint: disable=g-import-not-at-top
  values = flags.FlagValues()
  train_flags.define_flags(values)
  values(['i3d_memory', f'--flagfile={path}'])
  return train_flags.params_from_flags(values)


@dataclasses.dataclass(frozen=True)
class MemoryOptions(Options):
  usable_gib: float = option(5.0, 'GPU memory a training process may use, GiB, CUDA context '
                             'and cuDNN workspace included (6 GB GTX1060: 5).',
                             valid=Range(low=0, low_open=True))
  recipe: str = option('', 'A train flagfile (e.g. gtx1060.flags): check that its I3D '
                       'micro-batch fits, instead of printing the table.', path=True)


def run(options: MemoryOptions) -> int:
  """Prints the table, or the recipe's line; 1 when the recipe does not fit."""
  if not options.recipe:
    print(table(DEFAULT_CONFIGS, options.usable_gib))
    return 0
  params = recipe_params(options.recipe)
  if params.model != 'i3d':
    raise entry.Refused(f'--recipe={options.recipe} trains {params.model}; this estimate is '
                        'for i3d')
  print(f'{options.recipe}: {recipe_line(params, options.usable_gib)}')
  return 0 if recipe_fit(params, options.usable_gib).fit.fits else 1

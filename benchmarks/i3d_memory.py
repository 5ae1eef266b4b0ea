"""How many I3D training clips fit in a GPU's memory, as a library: `estimate(frames, crop, ...)`
-> `MemoryEstimate` (bytes per clip, retained and transient, and the weights' fixed bytes,
from the graph's tensor shapes; `clips_that_fit(usable_bytes)`), the table, a recipe's line
(`recipe_fit`, `recipe_line`) and `run`. The program and its whole description: benchmarks/i3d_memory_main.py.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from command_line import console, entry

console.quiet_native_logs()  # before TensorFlow is imported: it reads the level once

# pylint: disable=wrong-import-position
import numpy as np
import tensorflow as tf

from model_fn import freezing, layers
from model_fn.networks import i3d, i3d_names
from command_line.options import option, Options

tf1 = tf.compat.v1

MIB = 1 << 20
GIB = 1 << 30
SHAPE_ONLY = {'Shape', 'ShapeN', 'Size', 'Rank'}


@dataclasses.dataclass(frozen=True)
class MemoryEstimate:
  frames: int
  crop: int
  trainable_from: str
  retained_bytes_per_clip: int
  transient_bytes_per_clip: int
  parameter_bytes: int      # weights only
  trained_parameter_bytes: int

  @property
  def per_clip_bytes(self) -> int:
    return self.retained_bytes_per_clip + self.transient_bytes_per_clip

  @property
  def fixed_bytes(self) -> int:
    """Weights + gradients + momentum slots of the trained ones."""
    return self.parameter_bytes + 2 * self.trained_parameter_bytes

  def clips_that_fit(self, usable_bytes: float) -> int:
    return max(0, int((usable_bytes - self.fixed_bytes) // self.per_clip_bytes))


def _bytes(t: tf.Tensor) -> int | None:
  if not t.shape.is_fully_defined() or t.dtype.base_dtype.is_bool:
    return None
  return int(np.prod(t.shape.as_list(), dtype=np.int64)) * t.dtype.base_dtype.size


def estimate(frames: int = 64, crop: int = 224, trainable_from: str = '',
             stream: str = 'rgb', num_classes: int = 101) -> MemoryEstimate:
  """Builds the graph for one clip and measures it (see the module docstring)."""
  channels = i3d_names.STREAMS[stream][1]
  with tf.Graph().as_default() as graph:
    clips = tf1.placeholder(tf.float32, [1, frames, crop, crop, channels], name='clips')
    logits, _ = i3d.inception_i3d(clips, layers.TowerContext(is_training=True), num_classes,
                                  stream, dropout_keep=0.5)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.constant([0]), logits=logits))
    forward_ops = set(graph.get_operations())
    forward_peak = max(sum(_bytes(t) or 0 for t in (*op.inputs, *op.outputs)
                           if t.shape.rank == 5) for op in forward_ops)
    all_vars = tf1.trainable_variables()
    trained = freezing.frozen_endpoints('i3d', trainable_from)
    variables = [v for v in all_vars if i3d_names.endpoint_of(v.op.name) not in trained]
    grads = tf1.gradients(loss, variables)
    del grads
    retained: dict[str, int] = {}
    gradient_sizes = []
    for op in graph.get_operations():
      if op in forward_ops:
        continue
      for out in op.outputs:
        size = _bytes(out)
        if size and out.shape.rank == 5:
          gradient_sizes.append(size)
      if op.type in SHAPE_ONLY:
        continue
      for t in op.inputs:
        if t.op in forward_ops and t.op.type not in ('VarHandleOp', 'Const', 'VariableV2') \
            and t.op.type != 'ReadVariableOp':
          size = _bytes(t)
          if size:
            retained[t.name] = size
    param_bytes = sum(_bytes(v) for v in all_vars)
    trained_bytes = sum(_bytes(v) for v in variables)
  transient = max(sum(sorted(gradient_sizes)[-2:]), forward_peak)
  return MemoryEstimate(frames, crop, trainable_from, sum(retained.values()), transient,
                        param_bytes, trained_bytes)


def table(configs: Sequence[tuple[int, int, str]], usable_gib: float) -> str:
  """A markdown table of `(frames, crop, trainable_from)` configurations."""
  rows = ['| frames x crop | trainable_from | retained / clip | transient / clip | '
          'fixed (weights, grads, momentum) | clips per tower in %.1f GiB |' % usable_gib,
          '| --- | --- | --- | --- | --- | --- |']
  for frames, crop, trainable_from in configs:
    e = estimate(frames, crop, trainable_from)
    rows.append(f'| {frames}x{crop}x{crop} | {trainable_from or "(all)"} | '
                f'{e.retained_bytes_per_clip / MIB:,.0f} MiB | '
                f'{e.transient_bytes_per_clip / MIB:,.0f} MiB | {e.fixed_bytes / MIB:,.0f} MiB | '
                f'{e.clips_that_fit(usable_gib * GIB)} |')
  return '\n'.join(rows)


DEFAULT_CONFIGS = (
    (64, 224, ''), (64, 224, 'Mixed_3b'), (64, 224, 'Mixed_4b'), (64, 224, 'Mixed_5b'),
    (32, 224, ''), (32, 224, 'Mixed_4b'), (16, 224, ''), (64, 160, ''), (64, 112, ''))


@dataclasses.dataclass(frozen=True)
class RecipeFit:
  """A train recipe's I3D against the usable memory of one GPU: `clips_per_tower` of one
  tower's micro-batch (batch_size / towers, rounded up), `clips_per_update` (all
  micro-batches of a step), `need_bytes` for that micro-batch, `most_clips` per tower that
  would fit, and whether the recipe `fits`."""
  towers: int
  clips_per_tower: int
  clips_per_update: int
  need_bytes: int
  most_clips: int
  fits: bool


def recipe_fit(params, usable_gib: float) -> RecipeFit:
  """How a recipe's one-tower micro-batch fits `usable_gib`. With accumulate_steps > 1 the
  fixed cost also holds the gradient accumulator (one more copy of the trained parameters)."""
  towers = len(params.tower_devices) or max(params.num_towers, 1)
  clips = -(-params.batch_size // towers)
  e = estimate(params.clip_frames, params.crop_size, params.trainable_from, params.stream,
               params.num_classes)
  fixed = e.fixed_bytes + (e.trained_parameter_bytes if params.accumulate_steps > 1 else 0)
  need = fixed + clips * e.per_clip_bytes
  most = max(0, int((usable_gib * GIB - fixed) // e.per_clip_bytes))
  return RecipeFit(towers, clips, params.examples_per_step, need, most,
                   need <= usable_gib * GIB)


def recipe_line(params, usable_gib: float) -> str:
  """The line the program prints for a recipe (`recipe_fit`)."""
  fit = recipe_fit(params, usable_gib)
  return (f'{params.model} {params.stream} {params.clip_frames}x{params.crop_size}x'
          f'{params.crop_size}, trainable from {params.trainable_from or "(all)"}: '
          f'{fit.clips_per_tower} clip(s) per tower micro-batch ({params.batch_size} over '
          f'{fit.towers} tower(s), {params.accumulate_steps} micro-batch(es) = '
          f'{fit.clips_per_update} clips per update) need {fit.need_bytes / GIB:.2f} GiB of '
          f'{usable_gib:.1f} GiB usable: {"fits" if fit.fits else "does NOT fit"} '
          f'(at most {fit.most_clips} clip(s) per tower)')


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
  usable_gib: float = option(5.0, 'GPU memory the TF allocator can use, GiB (6 GB GTX1060: '
                             'about 5).')
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
  return 0 if recipe_fit(params, options.usable_gib).fits else 1

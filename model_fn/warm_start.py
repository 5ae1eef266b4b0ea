"""Warm start of I3D from DeepMind's Kinetics checkpoints (`--warm_start_from`).

    init_fn = make_warm_start_init_fn(params, tf.compat.v1.global_variables())
    scaffold = tf.compat.v1.train.Scaffold(init_fn=init_fn)   # None: nothing to restore

`make_warm_start_init_fn` runs at graph-construction time: it resolves the checkpoint,
decides for every network variable whether it is restored or left fresh, checks names and
shapes, and creates the placeholders and assign ops (the Estimator finalizes the graph
afterwards). The returned `init_fn(scaffold, session)` only reads the checkpoint and runs
those ops. Estimator calls `Scaffold.init_fn` only when `model_dir` has no checkpoint yet,
so a resumed run keeps its own weights.

Rules:
  * Network variables are those whose last name component is a weight or batch-norm
    statistic (`w`, `b`, `beta`, `gamma`, `moving_mean`, `moving_variance`, `kernel`,
    `bias`); optimizer slots (`.../Momentum`), EMA shadows and `global_step` are never
    restored.
  * Every network variable under `<Stream>/inception_i3d/` is restored, except the
    `Logits` layer when `head=replace`. Variables outside (the `head=stack` dense layer)
    stay fresh.
  * Graph name -> checkpoint name via `warm_start_scope` ("graph_prefix=ckpt_prefix",
    comma-separated). Shapes must match up to size-1 axes (the Kinetics-600 checkpoint
    stores batch-norm tensors as [1,1,1,1,C]); values are reshaped on load.
  * A missing checkpoint, a missing tensor or a shape that does not fit raises
    `WarmStartError` listing every problem; nothing is partially restored.

Variables may live on any device (towers, `/job:ps`): each assign op is placed on its
variable's device, and the values are fed from the client.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Callable, Sequence

import numpy as np
import tensorflow as tf
from absl import logging

from model_fn.layers import variable_name
from model_fn import networks
from model_fn.networks import i3d_names

tf1 = tf.compat.v1

NETWORK_LEAVES = ('w', 'b', 'beta', 'gamma', 'moving_mean', 'moving_variance', 'kernel', 'bias')

# Where DeepMind's kinetics-i3d repository keeps each published checkpoint.
DEEPMIND_CHECKPOINTS = ('rgb_imagenet', 'flow_imagenet', 'rgb_scratch', 'flow_scratch',
                        'rgb_scratch_kin600')
DEEPMIND_REPOSITORY = 'https://github.com/deepmind/kinetics-i3d'

InitFn = Callable[[tf1.train.Scaffold, tf1.Session], None]


class WarmStartError(ValueError):
  """The warm-start checkpoint is missing or does not fit the graph. The message (one
  line) counts the problems, names the first of each kind and what to do. `option`: the flag to change (warm_start_from,
  warm_start_scope, head or model); `path`: the checkpoint file looked for and absent ('' when
  the checkpoint is there); `download`: the DeepMind checkpoint to fetch
  (data/checkpoints/<name>/model.ckpt, '' when none is missing); `missing`: graph variables
  the checkpoint lacks; `mismatched`: (graph variable, its shape, the checkpoint's shape)."""

  def __init__(self, message: str, option: str = 'warm_start_from', path: str = '',
               download: str = '', missing: Sequence[str] = (),
               mismatched: Sequence[tuple[str, list[int], list[int]]] = ()) -> None:
    super().__init__(message)
    self.option, self.path, self.download = option, path, download
    self.missing, self.mismatched = tuple(missing), tuple(mismatched)


@dataclasses.dataclass(frozen=True)
class Restore:
  variable: tf.Variable
  name: str              # graph name
  checkpoint_name: str
  checkpoint_shape: tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class WarmStartPlan:
  """What a warm start does: `restored` variables, network variables left `fresh`, and
  checkpoint tensors `unused` (optimizer slots, a replaced Logits layer, ...)."""
  checkpoint: str
  restored: tuple[Restore, ...]
  fresh: tuple[str, ...]
  unused: tuple[str, ...]

  @property
  def restored_parameters(self) -> int:
    return sum(int(np.prod(r.checkpoint_shape)) for r in self.restored)


def is_network_variable(name: str) -> bool:
  return name.rsplit('/', 1)[-1] in NETWORK_LEAVES


def parse_scope_map(spec: str) -> list[tuple[str, str]]:
  """'a/=b/,c/=' -> [('a/', 'b/'), ('c/', '')], longest graph prefix first."""
  pairs = []
  for item in (s.strip() for s in spec.split(',')):
    if not item:
      continue
    if '=' not in item:
      raise WarmStartError(f'warm_start_scope: {item!r} is not "graph_prefix=checkpoint_prefix"',
                           'warm_start_scope')
    graph_prefix, ckpt_prefix = (s.strip() for s in item.split('=', 1))
    pairs.append((graph_prefix, ckpt_prefix))
  return sorted(pairs, key=lambda p: -len(p[0]))


def checkpoint_name(name: str, scope_map: Sequence[tuple[str, str]]) -> str:
  for graph_prefix, ckpt_prefix in scope_map:
    if name.startswith(graph_prefix):
      return ckpt_prefix + name[len(graph_prefix):]
  return name


def shapes_fit(graph_shape: Sequence[int], ckpt_shape: Sequence[int]) -> bool:
  """Equal up to axes of size 1 ([C] fits [1,1,1,1,C])."""
  squeeze = lambda s: [int(d) for d in s if int(d) != 1]
  return squeeze(graph_shape) == squeeze(ckpt_shape)


def deepmind_checkpoint(path: str, stream: str = 'rgb') -> str:
  """The DeepMind checkpoint a `warm_start_from` path most likely means:
  data/checkpoints/<rgb_imagenet, flow_imagenet, ...>/model.ckpt."""
  guess = next((c for c in DEEPMIND_CHECKPOINTS if c in path), f'{stream}_imagenet')
  return f'data/checkpoints/{guess}/model.ckpt'


def missing_checkpoint_message(path: str, stream: str = 'rgb') -> str:
  """What to download and where, for a `warm_start_from` that holds no checkpoint."""
  folder = os.path.dirname(path) or '.'
  return (
      f'warm_start_from={path}: no usable checkpoint there. I3D fine-tuning starts from '
      f'DeepMind\'s Kinetics checkpoints: download {deepmind_checkpoint(path, stream)}.index '
      f'and model.ckpt.data-00000-of-00001 (about 51 MB) from {DEEPMIND_REPOSITORY} and put '
      f'them in {folder}/, so that {path}.index and {path}.data-00000-of-00001 exist '
      f'(e.g. `git clone {DEEPMIND_REPOSITORY} && mkdir -p data && cp -r '
      f'kinetics-i3d/data/checkpoints data/`). Use rgb_imagenet for --stream=rgb and '
      f'flow_imagenet for --stream=flow; --warm_start_from= (empty) trains from scratch.')


def resolve_checkpoint(path: str, stream: str = 'rgb') -> str:
  """The checkpoint prefix for `path` (a prefix, or a directory holding a checkpoint).

  Raises `WarmStartError` saying what to download when there is no index, or when the
  index has no weights file beside it (e.g. the index-only copies in `../shared/i3d`).
  """
  prefix = path
  if tf.io.gfile.isdir(path):
    prefix = tf.train.latest_checkpoint(path) or os.path.join(path, 'model.ckpt')
  if not tf.io.gfile.exists(prefix + '.index'):
    raise WarmStartError(missing_checkpoint_message(path, stream) +
                         f' (looked for {prefix}.index)', path=prefix + '.index',
                         download=deepmind_checkpoint(path, stream))
  if not tf.io.gfile.glob(prefix + '.data-*'):
    raise WarmStartError(f'{prefix}.index exists but its weights file '
                         f'{prefix}.data-00000-of-00001 does not. ' +
                         missing_checkpoint_message(path, stream),
                         path=f'{prefix}.data-00000-of-00001',
                         download=deepmind_checkpoint(path, stream))
  return prefix


def plan_warm_start(params, variables: Sequence[tf.Variable]) -> WarmStartPlan:
  """Decides and checks what `params.warm_start_from` restores into `variables`.

  Raises `WarmStartError` listing every missing tensor and shape mismatch.
  """
  if not networks.spec(params.model).warm_start:
    raise WarmStartError(f'warm_start_from restores DeepMind\'s checkpoints into a network '
                         f'registered with warm_start=True, got model={params.model}', 'model')
  prefix = resolve_checkpoint(params.warm_start_from, params.stream)
  ckpt_shapes = {n: tuple(s) for n, s in tf.train.list_variables(prefix)}
  scope_map = parse_scope_map(params.warm_start_scope)
  scope = i3d_names.stream_scope(params.stream) + '/'
  restored, fresh, missing, mismatched = [], [], [], []
  absent, reshaped = [], []  # graph names; (graph name, graph shape, checkpoint shape)
  seen = set()
  for v in variables:
    name = variable_name(v)
    if name in seen or not is_network_variable(name):
      continue
    seen.add(name)
    if not name.startswith(scope) or (params.head == 'replace' and
                                      i3d_names.endpoint_of(name) == 'Logits'):
      fresh.append(name)
      continue
    ck = checkpoint_name(name, scope_map)
    shape = tuple(v.shape.as_list())
    if ck not in ckpt_shapes:
      missing.append(f'{name} (as {ck}) {list(shape)}: not in the checkpoint')
      absent.append(name)
    elif not shapes_fit(shape, ckpt_shapes[ck]):
      mismatched.append(f'{name} {list(shape)} vs checkpoint {ck} {list(ckpt_shapes[ck])}')
      reshaped.append((name, list(shape), list(ckpt_shapes[ck])))
    else:
      restored.append(Restore(v, name, ck, ckpt_shapes[ck]))
  if missing or mismatched or not restored:
    foreign = missing and not any(n.startswith(scope) for n in ckpt_shapes)
    option = (('stream' if _other_stream(ckpt_shapes, params.stream) else 'warm_start_scope')
              if foreign else 'head' if any('Logits' in m for m in mismatched)
              else 'warm_start_from')
    raise WarmStartError(_mismatch_message(prefix, params, missing, mismatched, ckpt_shapes,
                                           bool(restored)), option, missing=absent,
                         mismatched=reshaped)
  used = {r.checkpoint_name for r in restored}
  unused = tuple(sorted(n for n in ckpt_shapes if n not in used))
  return WarmStartPlan(prefix, tuple(restored), tuple(fresh), unused)


def _mismatch_message(prefix, params, missing, mismatched, ckpt_shapes, any_restored) -> str:
  """One line: what does not fit (counts and the first of each kind) and the likely flag.
  Every missing and mismatched tensor is logged (shown with --verbose)."""
  for problem in [f'missing: {m}' for m in missing] + [f'shape: {m}' for m in mismatched]:
    logging.info('warm start: %s', problem)
  scope = i3d_names.stream_scope(params.stream) + '/'
  parts = [f'warm start from {prefix} does not fit the graph (model=i3d, '
           f'stream={params.stream}, head={params.head}, '
           f'warm_start_scope={params.warm_start_scope!r}): {len(missing)} missing'
           + (f' (e.g. {missing[0]})' if missing else '') + f', {len(mismatched)} with other '
           'shapes' + (f' (e.g. {mismatched[0]})' if mismatched else '')]
  if not any_restored and not missing and not mismatched:
    parts.append(f'no variable under {scope} to restore')
  if missing and not any(n.startswith(scope) for n in ckpt_shapes):
    sample = next(iter(sorted(ckpt_shapes)), '')
    other = _other_stream(ckpt_shapes, params.stream)
    if other:
      parts.append(f'its names start with {i3d_names.stream_scope(other)}/ (e.g. {sample!r}): '
                   f'it is the {other} stream\'s checkpoint; set --stream={other}, or '
                   f'warm-start from the {params.stream} one')
    else:
      parts.append(f'its names do not start with {scope} (e.g. {sample!r}); for the '
                   f'Kinetics-600 layout use --warm_start_scope={scope}=')
  if any('Logits' in m for m in mismatched):
    parts.append('the Logits layer has the checkpoint\'s class count only with '
                 '--head=stack (--pretrained_classes) or num_classes equal to it; '
                 '--head=replace leaves it fresh')
  return '; '.join(parts)


def _other_stream(ckpt_shapes: dict[str, tuple[int, ...]], stream: str) -> str | None:
  """The other stream ('rgb' or 'flow') when every checkpoint name is under its scope."""
  other = 'flow' if stream == 'rgb' else 'rgb'
  prefix = i3d_names.stream_scope(other) + '/'
  return other if ckpt_shapes and all(n.startswith(prefix) for n in ckpt_shapes) else None


def make_warm_start_init_fn(params, variables: list) -> InitFn | None:
  """Returns `init_fn(scaffold, session)` restoring `params.warm_start_from`, or None.

  None when `warm_start_from` is empty, or when `model_dir` already holds a checkpoint
  (a resumed run: Estimator would not call `init_fn`, and the pretrained checkpoint need
  not be there any more). Builds its placeholders and assign ops now (call
  before the graph is finalized); raises `WarmStartError` now when the checkpoint is
  missing or does not fit. Logs what it restores and what it leaves fresh.
  """
  if not params.warm_start_from:
    return None
  model_dir = params.model_dir
  if model_dir and tf.io.gfile.isdir(model_dir) and tf.train.latest_checkpoint(model_dir):
    # Estimator restores model_dir and would not run init_fn: the run resumes.
    logging.info('warm start skipped: %s has a checkpoint, training resumes from it', model_dir)
    return None
  plan = plan_warm_start(params, variables)
  feeds, assigns = [], []
  with tf1.name_scope('warm_start'):
    for r in plan.restored:
      with tf.device(r.variable.device):
        ph = tf1.placeholder(r.variable.dtype.base_dtype, r.variable.shape,
                             name=r.name.replace('/', '_'))
        # tf1.assign works for ref, resource and distributed variables alike.
        assigns.append(tf1.assign(r.variable, ph))
      feeds.append((ph, r))
    assign_op = tf.group(*assigns, name='restore')
  _log_plan(plan)

  def init_fn(scaffold, session) -> None:
    del scaffold
    reader = tf.train.load_checkpoint(plan.checkpoint)
    feed_dict = {ph: np.reshape(reader.get_tensor(r.checkpoint_name),
                                r.variable.shape.as_list()) for ph, r in feeds}
    session.run(assign_op, feed_dict=feed_dict)
    logging.info('warm start: restored %d variables (%d parameters) from %s',
                 len(plan.restored), plan.restored_parameters, plan.checkpoint)

  return init_fn


def _log_plan(plan: WarmStartPlan) -> None:
  tf1.logging.info('warm start from %s: %d variables to restore (%d parameters), '
                   '%d network variables left fresh, %d checkpoint tensors unused',
                   plan.checkpoint, len(plan.restored), plan.restored_parameters,
                   len(plan.fresh), len(plan.unused))
  for r in plan.restored:
    tf1.logging.debug('warm start: %s <- %s %s', r.name, r.checkpoint_name,
                      list(r.checkpoint_shape))
  for name in plan.fresh:
    tf1.logging.info('warm start: left fresh: %s', name)
  if plan.unused:
    shown = [n for n in plan.unused if is_network_variable(n)]
    tf1.logging.info('warm start: checkpoint weights not used (%d, plus %d slots/other): %s',
                     len(shown), len(plan.unused) - len(shown), ', '.join(shown[:20]))

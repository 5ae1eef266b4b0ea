"""Checks, before anything is restored, that a model_dir's checkpoint has the shapes of the graph asked for.

    problems(params) -> list[CheckpointMismatch]   # [] when no checkpoint or it fits

Without it a resumed run with another `--num_classes` restores 4-class weights into a
3-class graph without a word (resource variables take any shape), and another `--model`
ends in a long NotFoundError. Here the graph's model variables (built by the tower model_fn
in PREDICT mode, in a throwaway graph, without weights) are compared by name and shape with
`tf.train.list_variables(checkpoint)`; optimizer slots and other checkpoint-only variables
are ignored. Each message names the variable, both shapes and the flag that most likely
changed (num_classes, model, or the flag the network's registry entry names, e.g. I3D's
stream or head); each is a `CheckpointMismatch` holding that flag as its option, the
variable and both shapes. Runs with --strategy=mirrored are not checked (their variables
are created under the strategy).
"""

from __future__ import annotations

import tensorflow as tf

from command_line.options import Problem
from model_fn import networks, tower_model_fn
from towers import train_settings
from model_fn.networks import Network, input_channels

tf1 = tf.compat.v1


class CheckpointMismatch(Problem):
  """A checkpoint variable that does not fit the graph, with the flag that most likely
  changed as the option: `variable` (its name), `stored` (its shape in the checkpoint; None
  when absent), `wanted` (the shape these flags build)."""
  variable: str
  stored: list[int] | None
  wanted: list[int]

  def __new__(cls, option: str, text: str, variable: str, stored: list[int] | None,
              wanted: list[int]) -> 'CheckpointMismatch':
    made = super().__new__(cls, option, text)
    made.variable, made.stored, made.wanted = variable, stored, wanted
    return made


def graph_variables(params, network: Network | None = None) -> dict[str, list[int]]:
  """{name: shape} of the model variables `params` builds with `network` (None: the
  registered `params.model`): PREDICT graph, no weights."""
  with tf.Graph().as_default():
    clips = tf1.placeholder(tf.float32, [None, params.clip_frames, params.crop_size,
                                         params.crop_size, input_channels(params)])
    tower_model_fn.make_model_fn(network)({'clips': clips}, None, tf.estimator.ModeKeys.PREDICT,
                                          params)
    return {v.op.name: v.shape.as_list() for v in tf1.global_variables()}


def problems(params, network: Network | None = None) -> list[CheckpointMismatch]:
  """Why model_dir's latest checkpoint cannot be resumed with `params` and `network` (the
  caller's own, as training builds it; None: `params.model`), at most one message per kind
  of mismatch; [] when there is no checkpoint or it fits."""
  checkpoint = tf.train.latest_checkpoint(params.model_dir)
  if checkpoint is None or params.strategy != 'towers':
    return []
  stored = dict(tf.train.list_variables(checkpoint))
  wanted = graph_variables(params, network)
  missing = sorted(name for name in wanted if name not in stored)
  reshaped = sorted(name for name in wanted
                    if name in stored and list(stored[name]) != wanted[name])
  found = []
  if reshaped:
    name = reshaped[0]
    option, likely = _likely_flag(params, stored[name], wanted[name])
    found.append(CheckpointMismatch(
        option, f'{params.model_dir} holds a checkpoint whose {name} has shape '
        f'{list(stored[name])}, but these flags build {wanted[name]} ({len(reshaped)} '
        f'variable(s) differ): {_trained_by(params, network) or likely}: '
        f'{_fix(params, network)}',
        name, list(stored[name]), wanted[name]))
  if missing:
    option, likely = _likely_scope_flag(params, missing, stored)
    found.append(CheckpointMismatch(
        option, f'{params.model_dir} holds a checkpoint without {missing[0]} '
        f'({len(missing)} of the {len(wanted)} variables these flags build are not in '
        f'it): {_trained_by(params, network) or likely}: {_fix(params, network)}', missing[0], None,
        wanted[missing[0]]))
  return found


def _recorded_network(model_dir: str) -> str | None:
  """The caller's own network model_dir's record names (`train_settings.settings`); None
  for a registered one, no record or one that cannot be read (the resume check names it)."""
  try:
    stored = train_settings.read_record(model_dir)
  except train_settings.ResumeSettingsError:
    return None
  network = (stored or {}).get('settings', {}).get('network')
  return network if isinstance(network, str) else None


def _trained_by(params, network: Network | None) -> str | None:
  """'it was trained by your own network <module.name> ...' when model_dir's record says so
  and this run builds something else (`params.model`, or another function); else None."""
  recorded = _recorded_network(params.model_dir)
  now = networks.caller_network_name(network) if network else f'--model={params.model}'
  if recorded and recorded != now:
    return f'it was trained by your own network {recorded} (train_settings.json), now {now}'
  return None


def _fix(params, network: Network | None) -> str:
  """How to continue model_dir: its own network in Python, or the flags it was trained with."""
  if _trained_by(params, network):
    return (f'continue it in Python with train_and_evaluate(params, network='
            f'{_recorded_network(params.model_dir).rsplit(".", 1)[-1]}), or use a new '
            '--model_dir')
  return ('rerun with the flags it was trained with (its run.flags), or use a new '
          '--model_dir')


def _likely_flag(params, stored_shape, wanted_shape) -> tuple[str, str]:
  """The flag that most likely changed, for a variable whose shape differs: (its name, what
  to say)."""
  if stored_shape and wanted_shape and stored_shape[:-1] == wanted_shape[:-1] and \
      wanted_shape[-1] == params.num_classes:
    return 'num_classes', (f'it was trained with --num_classes={stored_shape[-1]}, now '
                           f'--num_classes={params.num_classes}')
  if stored_shape and wanted_shape and params.pretrained_classes in (stored_shape[-1],
                                                                     wanted_shape[-1]):
    return 'head', f'it was trained with another --head (now --head={params.head})'
  return 'model', (f'it was trained with other model flags (--model={params.model}, --head, '
                   '--num_classes)')


def _likely_scope_flag(params, missing: list[str], stored: dict) -> tuple[str, str]:
  """The flag that most likely changed, for graph variables the checkpoint lacks: (its name,
  what to say)."""
  hint = networks.spec(params.model).missing_hint(params, missing, stored)
  if hint:
    return getattr(hint, 'option', None) or 'model', str(hint)
  if all('batch_norm' in n for n in missing) and params.batch_norm:
    return 'batch_norm', 'it was trained with --batch_norm=false, now --batch_norm=true'
  scopes = sorted({n.split('/')[0] for n in stored if n != 'global_step'})
  known = [s for s in scopes if s in networks.names()]
  if len(known) == 1:
    return 'model', f'it was trained with --model={known[0]}, now --model={params.model}'
  return 'model', (f'it was trained with another --model (its variables are under '
                   f'{", ".join(scopes[:3]) or "nothing"}; now --model={params.model})')

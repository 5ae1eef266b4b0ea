"""I3D's names and rules, without TensorFlow: its endpoints, scopes, streams and heads,
the variable -> endpoint map, and what it cannot build from a TrainParams.

`model_fn/networks/i3d.py` builds the graph under these names; the registry, TrainParams
and the warm start read them here, so a program can check its flags before TensorFlow
loads.
"""

from __future__ import annotations

from command_line.options import Problem

# Endpoints in network order.
ENDPOINTS: tuple[str, ...] = (
    'Conv3d_1a_7x7', 'MaxPool3d_2a_3x3', 'Conv3d_2b_1x1', 'Conv3d_2c_3x3',
    'MaxPool3d_3a_3x3', 'Mixed_3b', 'Mixed_3c', 'MaxPool3d_4a_3x3', 'Mixed_4b',
    'Mixed_4c', 'Mixed_4d', 'Mixed_4e', 'Mixed_4f', 'MaxPool3d_5a_2x2', 'Mixed_5b',
    'Mixed_5c', 'Logits', 'Predictions')
# The endpoints that hold variables: the names `--trainable_from` accepts.
VARIABLE_ENDPOINTS: tuple[str, ...] = tuple(
    e for e in ENDPOINTS if not e.startswith('MaxPool') and e != 'Predictions')

STREAMS: dict[str, tuple[str, int]] = {'rgb': ('RGB', 3), 'flow': ('Flow', 2)}
NETWORK_SCOPE = 'inception_i3d'
LOGITS_CONV = 'Conv3d_0c_1x1'
STACKED_HEAD = 'stacked_head'  # `<Stream>/stacked_head/{kernel,bias}` for head='stack'
HEADS = ('replace', 'stack', 'keep')
KINETICS_CLASSES = 400


def stream_scope(stream: str) -> str:
  """`RGB/inception_i3d` or `Flow/inception_i3d`: the prefix of every checkpoint variable."""
  return f'{stream_parts(stream)[0]}/{NETWORK_SCOPE}'


def endpoint_of(variable_name: str) -> str | None:
  """The endpoint a variable belongs to (`RGB/inception_i3d/Mixed_4b/...` -> `Mixed_4b`).

  None for variables outside an I3D scope (e.g. the stacked head or `global_step`).
  """
  parts = variable_name.split('/')
  if len(parts) >= 3 and parts[0] in ('RGB', 'Flow') and parts[1] == NETWORK_SCOPE:
    return parts[2] if parts[2] in ENDPOINTS else None
  return None


def param_problems(params) -> list[Problem]:
  """What I3D cannot build from `params`: batch_norm=false (every Unit3D has batch norm, as
  DeepMind's checkpoints do); head=keep restores the checkpoint's Logits, so num_classes
  must equal its classes."""
  if not params.batch_norm:
    return [Problem('batch_norm', 'batch_norm=false does not apply to model=i3d: every Unit3D '
                    'has batch norm, as its Kinetics checkpoints do; drop --batch_norm=false or '
                    'use --model=c3d_small')]
  if params.head == 'keep' and params.warm_start_from and \
      params.num_classes != params.pretrained_classes:
    return [Problem('head', f'head=keep restores the checkpoint\'s Logits, which needs '
                    f'num_classes equal to its classes ({params.pretrained_classes}), got '
                    f'num_classes={params.num_classes}; use head=replace (a new '
                    f'{params.num_classes}-way layer) or head=stack')]
  return []


def missing_hint(params, missing: list[str], stored: dict) -> Problem | None:
  """The flag that most likely changed when a checkpoint (`stored` names) lacks the
  graph's variables `missing`: another --stream (its scope) or another --head (the
  `Problem`'s option)."""
  for stream in STREAMS:
    if stream != params.stream and any(n.startswith(stream_scope(stream) + '/')
                                       for n in stored):
      return Problem('stream', f'it was trained with --stream={stream}, now '
                               f'--stream={params.stream}')
  if any(STACKED_HEAD in n for n in missing):
    return Problem('head', f'it was trained without --head=stack (now --head={params.head})')
  return None


def stream_parts(stream: str) -> tuple[str, int]:
  """(top scope, input channels) of `stream`: ('RGB', 3) or ('Flow', 2); ValueError otherwise."""
  if stream not in STREAMS:
    raise ValueError(f'stream={stream!r} is not one of {", ".join(STREAMS)}')
  return STREAMS[stream]

"""The network registry: name -> how to build `network(clips, ctx) -> logits` from params.

A network is a plain function `network(clips, ctx) -> logits`: clips float32
`[batch, frames, height, width, channels]` in [-1, 1], `ctx` the tower's
`model_fn.layers.TowerContext` (training or not, the batch-norm moments it records),
logits `[batch, num_classes]`. The built-in networks are registered here like any other;
`--model`, `--trainable_from` and their help text are derived from this registry.

    networks.register('my_net', lambda params: my_net.build(params.num_classes))
    build_estimator({'model': 'my_net', ...})

`towers.build_estimator(params, network=fn)` takes an unregistered network directly.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable

from model_fn.networks import i3d_names

# network(clips: tf.Tensor, ctx: model_fn.layers.TowerContext) -> logits: tf.Tensor. The
# registry itself loads no TensorFlow: the built-in networks' graph modules are imported
# when one is built, so TrainParams (which checks --model and its options here) and a
# program's flag checks run before TensorFlow starts.
Network = Callable[[Any, Any], Any]


@dataclasses.dataclass(frozen=True)
class NetworkSpec:
  """How to build one registered network.

  `build(params)` returns the network for `params` (a `TrainParams`). `endpoints` are the
  names `--trainable_from` accepts, in network order (empty: the network cannot be
  partly frozen); `endpoint_of(variable_name)` names the endpoint a variable belongs to
  (None outside every endpoint). `warm_start` says whether `--warm_start_from` can
  restore it (DeepMind's I3D checkpoints). `param_problems(params)` lists what this
  network cannot build from `params` (checked whenever a TrainParams is made), each a
  `command_line.options.Problem` naming its option (a plain text names --model);
  `missing_hint(params, missing, stored)` names the flag that most likely changed when a
  checkpoint (`stored`: {name: shape}) lacks the graph's variables `missing`, or None (a
  `command_line.options.Problem` names the flag as its option).
  """
  build: Callable[[Any], Network]
  endpoints: tuple[str, ...] = ()
  endpoint_of: Callable[[str], str | None] = lambda name: None
  warm_start: bool = False
  param_problems: Callable[[Any], list[str]] = lambda params: []
  missing_hint: Callable[[Any, list[str], dict], str | None] = (
      lambda params, missing, stored: None)


_REGISTRY: dict[str, NetworkSpec] = {}


def register(name: str, build: Callable[[Any], Network], endpoints: tuple[str, ...] = (),
             endpoint_of: Callable[[str], str | None] | None = None,
             warm_start: bool = False,
             param_problems: Callable[[Any], list[str]] | None = None,
             missing_hint: Callable[[Any, list[str], dict], str | None] | None = None) -> None:
  """Adds a network under `name` (an error if the name is taken); see `NetworkSpec`."""
  if name in _REGISTRY:
    raise ValueError(f'a network named {name!r} is already registered')
  defaults = NetworkSpec(build)
  _REGISTRY[name] = NetworkSpec(build, tuple(endpoints), endpoint_of or defaults.endpoint_of,
                                warm_start, param_problems or defaults.param_problems,
                                missing_hint or defaults.missing_hint)


def names() -> tuple[str, ...]:
  """Registered network names, built-ins first."""
  return tuple(_REGISTRY)


def spec(name: str) -> NetworkSpec:
  """The registered network `name`; ValueError naming the known ones otherwise."""
  if name not in _REGISTRY:
    raise ValueError(f'model={name!r} is not a registered network '
                     f'(registered: {", ".join(_REGISTRY)})')
  return _REGISTRY[name]


def build_network(params) -> Network:
  """Builds the network named by `params.model` for `params.num_classes` outputs."""
  return spec(params.model).build(params)


def caller_network_name(network: Network) -> str:
  """'<module>.<qualified name>' of a caller's own network function (of its class, for a
  callable object; of the function a functools.partial wraps), as training records and
  exports name it: the same function names itself the same in every run."""
  while isinstance(network, functools.partial):
    network = network.func
  named = network if hasattr(network, '__qualname__') else type(network)
  return f'{getattr(named, "__module__", None) or "?"}.{named.__qualname__}'


def input_channels(params) -> int:
  """Channels the network expects: 2 for an optical-flow stream, else 3 (RGB)."""
  return 2 if params.stream == 'flow' else 3


def _c3d_small(p) -> Network:
  from model_fn.networks import c3d_small  # pylint: disable=import-outside-toplevel
  return c3d_small.build(p.num_classes, use_batch_norm=p.batch_norm, dropout_keep=p.dropout_keep)


def _i3d(p) -> Network:
  """DeepMind's Unit3D always has batch norm: batch_norm=false is refused
  (`i3d_names.param_problems`)."""
  from model_fn.networks import i3d  # pylint: disable=import-outside-toplevel
  return i3d.build(p.num_classes, stream=p.stream, dropout_keep=p.dropout_keep, head=p.head,
                   pretrained_classes=p.pretrained_classes)


register('c3d_small', _c3d_small)
register('i3d', _i3d, endpoints=i3d_names.VARIABLE_ENDPOINTS, endpoint_of=i3d_names.endpoint_of,
         warm_start=True, param_problems=i3d_names.param_problems,
         missing_hint=i3d_names.missing_hint)

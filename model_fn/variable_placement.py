"""Where variables live: one small strategy class per placement policy.

A placement maps each variable (by name, shape, dtype) to a device string. The tower
builder applies it through a variable-scope custom getter, so networks never see it.
Every strategy answers the same device for the same variable name, whichever tower asks.
"""

from __future__ import annotations

import abc
from typing import Sequence

import numpy as np
import tensorflow as tf

from command_line.options import Problem


class VariablePlacement(abc.ABC):
  """Assigns a device to each variable the first time it is requested."""

  def __init__(self) -> None:
    self._assigned: dict[str, str] = {}

  def device_for(self, name: str, shape: Sequence[int], dtype: tf.DType) -> str:
    if name not in self._assigned:
      self._assigned[name] = self._choose(name, _num_bytes(shape, dtype))
    return self._assigned[name]

  @abc.abstractmethod
  def _choose(self, name: str, num_bytes: int) -> str:
    """Device for a variable not placed before."""

  def reduce_device(self, variable: tf.Variable) -> str:
    """Where the towers' gradients of `variable` are summed: next to the variable."""
    return variable.device

  @property
  def caching_device(self) -> str | None:
    """Where the towers read variables from, None for the variable's own device."""
    return None


class SingleDevicePlacement(VariablePlacement):
  """Every variable on one device: the host CPU (`cpu`) or the first tower (`gpu0`)."""

  def __init__(self, device: str) -> None:
    super().__init__()
    self._device = device

  def _choose(self, name: str, num_bytes: int) -> str:
    return self._device


class GreedyBytesPlacement(VariablePlacement):
  """Each new variable goes to the device holding the fewest bytes so far (ties: first).

  Used over tower devices (`balanced`) and over the cluster's ps tasks (`ps`).
  """

  def __init__(self, devices: Sequence[str]) -> None:
    super().__init__()
    if not devices:
      raise ValueError('GreedyBytesPlacement needs at least one device')
    self._devices = tuple(devices)
    self._load = [0] * len(devices)

  def _choose(self, name: str, num_bytes: int) -> str:
    index = int(np.argmin(self._load))
    self._load[index] += num_bytes
    return self._devices[index]

  @property
  def bytes_per_device(self) -> dict[str, int]:
    return dict(zip(self._devices, self._load))


class ParameterServerPlacement(GreedyBytesPlacement):
  """Variables on the cluster's ps tasks, greedy by bytes. Each step the worker's host
  reads every variable once and its towers share that copy, and the towers' gradients
  are summed on the host too: each worker pulls each parameter once and pushes one
  gradient per variable per step, instead of once per tower."""

  def __init__(self, ps_devices: Sequence[str], worker_host: str = '/device:CPU:0') -> None:
    super().__init__(ps_devices)
    self._worker_host = worker_host

  def reduce_device(self, variable: tf.Variable) -> str:
    return self._worker_host

  @property
  def caching_device(self) -> str | None:
    return self._worker_host


class LargestFirstPlacement(ParameterServerPlacement):
  """The ps placement with the variables known up front (`planned`: name -> bytes, e.g.
  the trainable variables of `network_variables.network_variables`): the largest goes
  first, each to the ps holding the fewest bytes so far (ties: the first such ps), so
  the busiest ps holds less than the ideal share plus the largest variable, whatever the
  creation order. For I3D over 10 ps: 8.0 MB on the busiest (its largest variable, the
  floor) against 10.3 MB greedy in creation order (ideal 4.95 MB).

  A variable not in `planned` (batch-norm moving statistics, the global step) falls back
  to the greedy rule on top of the planned loads. Only devices change, never names, so
  checkpoints interchange with the greedy placement. Training in a cluster always places
  its variables so (`tower_model_fn`), on every task alike."""

  def __init__(self, ps_devices: Sequence[str], planned: Sequence[tuple[str, int]],
               worker_host: str = '/device:CPU:0') -> None:
    super().__init__(ps_devices, worker_host)
    self._planned: dict[str, str] = {}
    for name, num_bytes in largest_first(planned):
      self._planned[name] = super()._choose(name, num_bytes)

  def _choose(self, name: str, num_bytes: int) -> str:
    if name in self._planned:
      return self._planned[name]
    return super()._choose(name, num_bytes)


def largest_first(variables: Sequence[tuple[str, int]]) -> list[tuple[str, int]]:
  """(name, bytes) pairs by decreasing bytes, equal sizes in their given order: the order
  in which `LargestFirstPlacement` assigns them."""
  return sorted(variables, key=lambda item: -item[1])


PS_DEVICE = '/job:ps/device:CPU:0'  # a ps task's ops: its CPU, whatever device encloses them


def ps_device(task: int) -> str:
  """Device of ps task `task`'s variables and of every op beside them: its CPU, named in
  full, so that an enclosing tower scope (`/device:GPU:0`) cannot merge into it and a ps
  that sees a GPU still keeps the model in host memory."""
  return tf.DeviceSpec.from_string(PS_DEVICE).replace(task=task).to_string()


def make_placement(policy: str, tower_devices: Sequence[str],
                   host_device: str = '/device:CPU:0',
                   ps_devices: Sequence[str] = (),
                   planned: Sequence[tuple[str, int]] = ()) -> VariablePlacement:
  """Builds the placement for `policy`: on one machine `--variable_device`'s cpu, gpu0 or
  balanced; `ps` is a cluster's (the tower model_fn picks it whenever there are ps tasks,
  whatever `--variable_device` says). `host_device` is this machine's (in a cluster: this
  worker's) CPU. For `ps`, a non-empty `planned` ((name, bytes) of the variables known up
  front) places them largest first (`LargestFirstPlacement`), else greedy in creation order."""
  if policy == 'cpu':
    return SingleDevicePlacement(host_device)
  if policy == 'gpu0':
    return SingleDevicePlacement(tower_devices[0])
  if policy == 'balanced':
    return GreedyBytesPlacement(tower_devices)
  if policy == 'ps':
    if not ps_devices:
      raise ValueError(Problem('variable_device',
                               'variable_device=ps needs a cluster with ps tasks (TF_CONFIG)'))
    if planned:
      return LargestFirstPlacement(ps_devices, planned, worker_host=host_device)
    return ParameterServerPlacement(ps_devices, worker_host=host_device)
  raise ValueError(f'variable_device={policy!r} is not one of cpu, gpu0, balanced, ps')


def _num_bytes(shape: Sequence[int], dtype: tf.DType) -> int:
  dims = [int(d) if d is not None else 1 for d in tf.TensorShape(shape).as_list()] \
      if tf.TensorShape(shape).rank is not None else [1]
  return int(np.prod(dims, dtype=np.int64)) * tf.as_dtype(dtype).size

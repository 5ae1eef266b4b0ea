"""Which devices the towers of one worker run on."""

from __future__ import annotations

import dataclasses

import tensorflow as tf

# This machine's (in a cluster: this task's) CPU: the input is split there, so that each
# tower's share is copied to its device once, and the towers' logits are gathered there.
HOST_DEVICE = '/device:CPU:0'


@dataclasses.dataclass(frozen=True)
class TowerDevices:
  """The tower devices of one worker.

  `devices[i]` is where tower i's ops run, e.g. `/device:GPU:1` or `/device:CPU:1`.
  `virtual_cpus` is how many CPU devices the session must expose (`device_count`), 0 when
  towers run on GPUs.
  """
  devices: tuple[str, ...]
  virtual_cpus: int

  @property
  def num_towers(self) -> int:
    return len(self.devices)


def resolve_tower_devices(num_towers: int, tower_devices: tuple[str, ...] = (),
                          num_gpus: int | None = None) -> TowerDevices:
  """Chooses tower devices.

  Explicit `tower_devices` win. Otherwise, with GPUs visible: one tower per GPU
  (`num_towers` -1) or the first `num_towers` GPUs. With no GPU: `num_towers` virtual
  CPU devices (1 for -1). `num_gpus` defaults to the GPUs TensorFlow sees. `num_towers` is
  -1 or positive (`towers.params.DevicesSection` refuses others).
  """
  if tower_devices:
    cpus = [d for d in tower_devices if 'CPU' in d.upper()]
    cpu_count = max((_device_index(d) for d in cpus), default=-1) + 1
    return TowerDevices(tuple(tower_devices), cpu_count)
  if num_gpus is None:
    num_gpus = len(tf.config.list_physical_devices('GPU'))
  if num_gpus:
    count = num_gpus if num_towers == -1 else num_towers
    if count > num_gpus:
      raise ValueError(f'num_towers={count} but only {num_gpus} GPU(s) are visible')
    return TowerDevices(tuple(f'/device:GPU:{i}' for i in range(count)), 0)
  count = max(num_towers, 1)
  return TowerDevices(tuple(f'/device:CPU:{i}' for i in range(count)), count)


def _device_index(device: str) -> int:
  spec = tf.DeviceSpec.from_string(device)
  return spec.device_index or 0


def ensure_logical_cpus(count: int) -> None:
  """Makes the eager runtime expose `count` CPU devices (tf.distribute creates eager
  variables on every replica device). Must run before TensorFlow initialises its
  devices; afterwards a `RuntimeError` says so unless enough CPUs already exist."""
  cpu = tf.config.list_physical_devices('CPU')[0]
  current = tf.config.get_logical_device_configuration(cpu)
  if current is not None and len(current) >= count:
    return
  try:
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(count)])
  except RuntimeError as e:
    have = len(tf.config.list_logical_devices('CPU'))
    if have >= count:
      return
    raise RuntimeError(
        f'strategy=mirrored needs {count} CPU devices but TensorFlow was already initialised '
        f'with {have}: build the estimator before running any TensorFlow operation') from e

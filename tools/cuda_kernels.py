"""TensorFlow's GPU kernel registry as data, and the rule that picks a kernel for a node.

    registry(kernel_list, device_type) -> {op: [Kernel]}   from a KernelList proto
    write_snapshot(path, ...) / read_snapshot(path)        the GPU kernels of a CUDA build
    find_kernel(node_def, kernels) -> Kernel or None       TensorFlow's matching rule

A snapshot is JSON: {"tensorflow": version, "cuda": version, "kernels": {op: [{"device":
"GPU"|"DEFAULT", "label": str, "constraints": {attr: {"type"|"s"|"i"|"b": [allowed]}}}]}},
the kernels `tensorflow.python.framework.kernels.get_all_registered_kernels()` lists for
device "GPU" (and "DEFAULT", any device's fallback) in a CUDA build (the pip `tensorflow`
wheel), dtypes by their DataType enum names.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Mapping

from tensorflow.core.framework import attr_value_pb2, kernel_def_pb2, node_def_pb2, types_pb2

KERNEL_LABEL_ATTR = '_kernel'  # a NodeDef attr that selects a labelled kernel
DEFAULT_DEVICE = 'DEFAULT'  # kernels registered for every device without its own match
VALUE_KINDS = ('type', 's', 'i', 'b')


@dataclasses.dataclass(frozen=True)
class Kernel:
  """One registered kernel of an op: its device type ('GPU', 'CPU' or DEFAULT_DEVICE), its
  label ('' for none) and, per constrained attr, the kind of value ('type', 's', 'i' or
  'b') and the values allowed."""
  device: str
  label: str
  constraints: Mapping[str, tuple[str, tuple]]


def registry(kernel_list: kernel_def_pb2.KernelList, device_type: str
             ) -> dict[str, list[Kernel]]:
  """The kernels of `kernel_list` registered for `device_type` ('GPU', 'CPU') or for
  DEFAULT_DEVICE, per op."""
  kernels: dict[str, list[Kernel]] = {}
  for kernel_def in kernel_list.kernel:
    if kernel_def.device_type not in (device_type, DEFAULT_DEVICE):
      continue
    constraints = {}
    for constraint in kernel_def.constraint:
      values = constraint.allowed_values.list
      kinds = [kind for kind in VALUE_KINDS if len(getattr(values, kind))]
      if len(kinds) != 1:
        raise ValueError(f'{kernel_def.op}: constraint on {constraint.name} has value kinds '
                         f'{kinds}, expected exactly one')
      allowed = getattr(values, kinds[0])
      if kinds[0] == 'type':
        allowed = [types_pb2.DataType.Name(t) for t in allowed]
      elif kinds[0] == 's':
        allowed = [s.decode() for s in allowed]
      constraints[constraint.name] = (kinds[0], tuple(allowed))
    kernels.setdefault(kernel_def.op, []).append(
        Kernel(kernel_def.device_type, kernel_def.label, constraints))
  return kernels


def write_snapshot(path: str, kernels: Mapping[str, list[Kernel]], tensorflow_version: str,
                   cuda_version: str) -> None:
  """Writes `kernels` (of a CUDA build) as the snapshot JSON the module docstring shows."""
  data = {'tensorflow': tensorflow_version, 'cuda': cuda_version,
          'kernels': {op: [{'device': k.device, 'label': k.label,
                            'constraints': {name: {kind: list(allowed)}
                                            for name, (kind, allowed) in k.constraints.items()}}
                           for k in op_kernels]
                      for op, op_kernels in sorted(kernels.items())}}
  with open(path, 'w', encoding='utf-8') as f:
    json.dump(data, f, indent=0, sort_keys=True)
    f.write('\n')


def read_snapshot(path: str) -> tuple[str, dict[str, list[Kernel]]]:
  """(the TensorFlow version it was written from, its GPU kernels per op)."""
  with open(path, encoding='utf-8') as f:
    data = json.load(f)
  kernels = {op: [Kernel(k['device'], k['label'], {name: next((kind, tuple(allowed))
                                                           for kind, allowed in value.items())
                                                for name, value in k['constraints'].items()})
                  for k in op_kernels]
             for op, op_kernels in data['kernels'].items()}
  return data['tensorflow'], kernels


def find_kernel(node_def: node_def_pb2.NodeDef, kernels: Mapping[str, list[Kernel]]
                ) -> Kernel | None:
  """A kernel of `kernels[node_def.op]` that the node's label and attrs meet, or None: one
  of its own device if any matches, else a DEFAULT_DEVICE one.

  TensorFlow's rule (tensorflow/tensorflow, tensorflow/core/framework/kernel_def_util.cc,
  KernelAttrsMatch; op_kernel.cc, FindKernelRegistration: the label is the node's `_kernel`
  attr, DEFAULT kernels only when no kernel of the device matches): every constrained attr
  must be set on the node (its defaults filled in, as a graph's NodeDef has them); a
  `type` attr must be among the allowed types, each element of a `list(type)` attr too;
  a string, int or bool attr must equal one allowed value."""
  label = ''
  if KERNEL_LABEL_ATTR in node_def.attr:
    label = node_def.attr[KERNEL_LABEL_ATTR].s.decode()
  matching = [kernel for kernel in kernels.get(node_def.op, ())
              if kernel.label == label and all(
                  _allowed(node_def, name, kind, allowed)
                  for name, (kind, allowed) in kernel.constraints.items())]
  own = [kernel for kernel in matching if kernel.device != DEFAULT_DEVICE]
  return (own or matching or [None])[0]


def _allowed(node_def: node_def_pb2.NodeDef, name: str, kind: str, allowed: tuple) -> bool:
  if name not in node_def.attr:
    raise ValueError(f'{node_def.name} ({node_def.op}) has no attr {name!r}, which a kernel '
                     'constrains: pass a NodeDef with its default attrs')
  value: attr_value_pb2.AttrValue = node_def.attr[name]
  if kind == 'type':
    if value.WhichOneof('value') == 'list':
      return all(types_pb2.DataType.Name(t) in allowed for t in value.list.type)
    return types_pb2.DataType.Name(value.type) in allowed
  if kind == 's':
    return value.s.decode() in allowed
  return getattr(value, kind) in allowed

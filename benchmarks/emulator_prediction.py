"""The paper model's figures for an emulated cluster's layout (`benchmarks/cluster_model.py`):
the bytes each ps task holds as a system places the variables (`model_shares`), the
efficiency against a GPU that never waits (`predicted_efficiency`, with per-layer overlap
from `Layers`) and the bytes per worker step through a node's link (`predicted_bytes`).
"""

from __future__ import annotations

import dataclasses
import functools
import math

from benchmarks import cluster_model
from benchmarks.emulated_task import ComputeShare, ps_shares
from model_fn import transfer


@dataclasses.dataclass(frozen=True)
class Layers:
  """Per trainable variable in creation order, the model's overlap inputs: its share of
  the step's compute (forward, backward) and of the transferred bytes."""
  forward: tuple[float, ...]
  backward: tuple[float, ...]
  bytes: tuple[float, ...]


def model_layers(shares: list[ComputeShare], shapes: list[tuple[str, tuple[int, ...]]]
                 ) -> Layers:
  """`Layers` from `emulated_task.compute_shares` and `variable_shapes` (same order)."""
  if [s.name for s in shares] != [name for name, _ in shapes]:
    raise ValueError('compute shares and variable shapes name different variables')
  sizes = [math.prod(shape) for _, shape in shapes]
  return Layers(tuple(s.forward for s in shares), tuple(s.backward for s in shares),
                tuple(size / sum(sizes) for size in sizes))


def model_shares(system: str, shapes: list[tuple[str, tuple[int, ...]]], nodes: int,
                 ps_placement: str, transfer_dtype: str) -> list[float]:
  """Bytes on the wire per pull held by each ps task as `system` places the variables of
  `shapes` (ours by `ps_placement`; multi_worker_mirrored, which has no ps: [all parameter
  bytes])."""
  value_bytes = transfer.bytes_per_value(transfer_dtype)
  if system == 'ours':
    return ps_shares(shapes, nodes, ps_placement, value_bytes)
  sizes = [value_bytes * math.prod(shape) for _, shape in shapes]
  if system == 'ps_strategy':  # the Estimator's global step takes ps 0 first
    return cluster_model.round_robin_shares(sizes, nodes, first_task=1)
  return [float(sum(sizes))]


def predicted_efficiency(system: str, shares: list[float], nodes: int, sync: bool,
                         compute: float, micro_batches: int, link_bytes_per_second: float,
                         layers: Layers | None = None) -> float:
  """Efficiency against a GPU that never waits of the paper model for this layout:
  `compute` seconds per micro-batch, `micro_batches` per pull and push, links of
  `link_bytes_per_second` usable; with `layers` (ours with --overlap), of its overlapped
  step. For multi_worker_mirrored `shares` is [parameter bytes], a ring all-reduce."""
  compute *= micro_batches
  step = (functools.partial(_overlapped_step, compute, micro_batches, layers)
          if layers and system == 'ours' else None)
  link = link_bytes_per_second
  if system == 'multi_worker_mirrored':
    seconds = cluster_model.allreduce_sync_step_seconds(compute, shares[0], nodes, link)
    return cluster_model.efficiency(nodes / seconds, nodes, compute)
  if sync:
    seconds = cluster_model.sync_step_seconds(compute, shares, nodes, nodes, link, step)
    return cluster_model.efficiency(nodes / seconds, nodes, compute)
  rate = cluster_model.async_steps_per_second(compute, shares, nodes, nodes, link, step)
  return cluster_model.efficiency(rate, nodes, compute)


def predicted_bytes(system: str, shares: list[float], nodes: int, node: int,
                    step_mix: list[float]) -> float:
  """The traffic model's bytes per worker step through `node`'s link in one direction,
  at the measured `step_mix` (each worker's fraction of the steps: asynchronous workers
  with unequal remote shares do not step alike). multi_worker_mirrored: `shares` is
  [parameter bytes], a ring all-reduce, the same on every node."""
  if system == 'multi_worker_mirrored':
    return cluster_model.allreduce_node_bytes_per_worker_step(shares[0], nodes)
  return cluster_model.node_bytes_per_worker_step(shares, nodes, node, step_mix)


def _overlapped_step(compute: float, micro_batches: int, layers: Layers,
                     transfer_seconds: float) -> float:
  """The overlapped step as `emulated_task.compute_waits` emulates it: the first
  micro-batch's forward and the last one's backward overlap the transfers."""
  per_micro_batch = compute / micro_batches
  return cluster_model.overlapped_step_seconds(
      [per_micro_batch * f for f in layers.forward],
      [per_micro_batch * b for b in layers.backward], layers.bytes, transfer_seconds,
      compute - per_micro_batch)

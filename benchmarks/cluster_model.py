"""A paper model of parameter-server training on a small GPU cluster (pure arithmetic).

Setting (docs/scaling.md): `nodes` machines, one GPU each, one full-duplex NIC each with
`link` usable bytes per second in each direction. Worker w runs on node w (w < workers);
ps task j runs on node j, so ps tasks share nodes (and NICs) with workers. `ps_bytes[j]`
is the bytes of trainable variables on ps j (greedy by bytes, `model_fn/variable_placement`),
summing to `total` = P.

Each worker step pulls every variable once (P bytes in) and pushes one summed gradient per
variable once (P bytes out; the towers' gradients are summed on the worker host first);
the part held by a ps on the worker's own node does not cross the NIC.

* Synchronous: all workers pull at once, compute, then push at once; the phases do not
  overlap with compute (pessimistic, and what gradient clipping by global norm
  forces on the pushes; the overlapped step is next). In the pull phase node n sends s_n (W - w_n) bytes
  (its ps share to every remote worker) and receives w_n (P - s_n); the push phase mirrors
  it. Step time = compute + 2 x max_n max(sent_n, received_n) / link.
* Synchronous, overlapped (`overlapped_step_seconds`): per layer, as TensorFlow's
  dataflow runs a step without gradient clipping. The layers' pulls arrive in creation
  order, each taking its share of the pull phase (by bytes); layer i's forward starts
  once its pull arrived and layer i - 1's forward ended; backward runs in reverse order;
  layer i's push (its share of the push phase) starts once its backward ended and the
  push of layer i + 1 ended. The step ends with the last push. One layer gives the
  non-overlapped step; the per-layer shares assume every ps share and the busiest NIC
  split like the total bytes.
* Asynchronous: workers run independently. Throughput (worker steps per second) is the
  lesser of the workers' unloaded rate, sum_w 1 / (compute + 2 (P - s_w) / link), and the
  busiest NIC's capacity, link / (bytes through it per worker step, per direction).
  Overlapped, a worker's unloaded step is `overlapped_step_seconds` with its own
  transfers.

Scaling efficiency = throughput / (workers x the rate of one GPU with no network).
"""

from __future__ import annotations

from typing import Callable, Sequence


def compute_seconds(flops_per_clip: float, clips: int, gpu_flops: float,
                    achieved_fraction: float) -> float:
  """GPU time of one training step of `clips` clips at `achieved_fraction` of peak."""
  return flops_per_clip * clips / (gpu_flops * achieved_fraction)


def _share(ps_bytes: Sequence[float], node: int) -> float:
  return ps_bytes[node] if node < len(ps_bytes) else 0.0


def phase_bytes(ps_bytes: Sequence[float], workers: int, nodes: int) -> list[float]:
  """Per node, max(bytes sent, bytes received) during one synchronous pull phase (the
  push phase is its mirror image)."""
  total = sum(ps_bytes)
  result = []
  for n in range(nodes):
    share, has_worker = _share(ps_bytes, n), int(n < workers)
    sent = share * (workers - has_worker)
    received = has_worker * (total - share)
    result.append(max(sent, received))
  return result


def sync_step_seconds(compute: float, ps_bytes: Sequence[float], workers: int, nodes: int,
                      link: float, worker_step: Callable[[float], float] | None = None
                      ) -> float:
  """Synchronous step time: compute plus a pull and a push phase at the busiest NIC;
  with `worker_step(phase_seconds)` (e.g. `overlapped_step_seconds`), that step for
  the busiest NIC's phase."""
  phase = max(phase_bytes(ps_bytes, workers, nodes)) / link
  return worker_step(phase) if worker_step else compute + 2.0 * phase


def overlapped_step_seconds(forward: Sequence[float], backward: Sequence[float],
                            byte_shares: Sequence[float], phase_seconds: float,
                            between: float = 0.0) -> float:
  """One step with transfers overlapping compute, layer by layer (module docstring).

  Args:
    forward, backward: seconds of each layer's forward and backward pass, in forward
      (creation) order.
    byte_shares: each layer's fraction of the pulled (= pushed) bytes; they sum to 1.
    phase_seconds: the whole pull phase (= the whole push phase) at the bottleneck, e.g.
      max(phase_bytes(...)) / link.
    between: compute after the last forward and before the first backward, overlapping
      no transfer (with gradient accumulation over k micro-batches: the first one's
      backward, the k - 2 in between and the last one's forward; then `forward` is the
      first micro-batch's, `backward` the last one's).
  Returns:
    seconds from the first pull to the end of the last push.
  """
  pulled = forward_end = 0.0
  for f, share in zip(forward, byte_shares):
    pulled += share * phase_seconds
    forward_end = max(pulled, forward_end) + f
  backward_end = pushed = forward_end + between
  for b, share in zip(reversed(backward), reversed(byte_shares)):
    backward_end += b
    pushed = max(backward_end, pushed) + share * phase_seconds
  return pushed


def node_bytes_per_worker_step(ps_bytes: Sequence[float], workers: int, node: int,
                               step_mix: Sequence[float] | None = None) -> float:
  """Bytes node `node` sends (= receives) per worker step, averaged over the steps of
  all workers: its ps share to every remote worker, and its own worker's pushes to (=
  pulls from) the remote shares. `step_mix`: each worker's fraction of all worker steps
  (worker w on node w; they add up to 1); None: every worker the same. Asynchronous
  workers do not step alike: the one whose remote shares are smaller steps more often,
  which moves the average below the equal-mix figure when the ps shares differ."""
  mix = list(step_mix) if step_mix is not None else [1.0 / workers] * workers
  if len(mix) != workers or abs(sum(mix) - 1.0) > 1e-6:
    raise ValueError(f'step_mix must hold {workers} fractions adding up to 1, got {mix}')
  total = sum(ps_bytes)
  share = _share(ps_bytes, node)
  own = mix[node] if node < workers else 0.0
  return share * (1.0 - own) + own * (total - share)


def async_steps_per_second(compute: float, ps_bytes: Sequence[float], workers: int,
                           nodes: int, link: float,
                           worker_step: Callable[[float], float] | None = None) -> float:
  """Asynchronous throughput in worker steps per second (see the module docstring).
  `worker_step(transfer_seconds)`, if given, is a worker's unloaded step for a pull
  phase (= push phase) of that many seconds (e.g. `overlapped_step_seconds`); None:
  compute + 2 x transfer_seconds."""
  total = sum(ps_bytes)
  step = worker_step or (lambda transfer: compute + 2.0 * transfer)
  unloaded = sum(1.0 / step((total - _share(ps_bytes, w)) / link) for w in range(workers))
  capacity = float('inf')
  for n in range(nodes):
    per_worker_step = node_bytes_per_worker_step(ps_bytes, workers, n)
    if per_worker_step > 0:
      capacity = min(capacity, link / per_worker_step)
  return min(unloaded, capacity)


def efficiency(steps_per_second: float, workers: int, compute: float) -> float:
  """Throughput relative to `workers` GPUs that never wait for the network."""
  return steps_per_second * compute / workers


def ps_traffic_per_step(ps_bytes: Sequence[float], workers: int) -> list[tuple[float, float]]:
  """(bytes in, bytes out) through each ps task per synchronous step: every worker pushes
  its gradient share and pulls its parameter share (the colocated worker's included)."""
  return [(share * workers, share * workers) for share in ps_bytes]


def largest_first_shares(sizes: Sequence[float], num_ps: int) -> list[float]:
  """Bytes per ps if variables were placed largest first, each on the least-loaded ps
  (a what-if: the project places them greedily in creation order)."""
  load = [0.0] * num_ps
  for size in sorted(sizes, reverse=True):
    load[load.index(min(load))] += size
  return load


def best_ps_count(compute: float, ps_bytes_by_count: dict[int, Sequence[float]], workers: int,
                  nodes: int, link: float) -> int:
  """The ps count with the shortest synchronous step (ties: fewer ps tasks)."""
  return min(ps_bytes_by_count, key=lambda k: (
      round(sync_step_seconds(compute, ps_bytes_by_count[k], workers, nodes, link), 6), k))


def round_robin_shares(sizes: Sequence[float], num_ps: int, first_task: int = 0) -> list[float]:
  """Bytes per ps when variables of `sizes` (in creation order) are placed round robin,
  the first on ps `first_task`: TensorFlow's `replica_device_setter` default, which
  `tf.compat.v1.distribute.experimental.ParameterServerStrategy` uses. Under an Estimator
  the global step is created first in the strategy's scope and takes ps 0, so the model's
  variables start at `first_task=1`."""
  load = [0.0] * num_ps
  for i, size in enumerate(sizes):
    load[(first_task + i) % num_ps] += size
  return load


def ring_allreduce_bytes(parameter_bytes: float, workers: int) -> float:
  """Bytes each worker sends (= receives) per step in a ring all-reduce of
  `parameter_bytes` over `workers`: (N - 1) / N x P in the reduce-scatter phase and as
  much in the all-gather phase, 2 (N - 1) / N x P in all (0 for one worker)."""
  return 2.0 * (workers - 1) / workers * parameter_bytes


def allreduce_node_bytes_per_worker_step(parameter_bytes: float, workers: int) -> float:
  """Bytes one node (one worker) sends (= receives) per worker step, counting the steps of
  all workers as `node_bytes_per_worker_step` does: one all-reduce per global step of
  `workers` worker steps, so the ring's bytes / `workers`."""
  return ring_allreduce_bytes(parameter_bytes, workers) / workers


def allreduce_sync_step_seconds(compute: float, parameter_bytes: float, workers: int,
                                link: float) -> float:
  """Synchronous all-reduce step (one worker per node): compute, then the ring all-reduce
  at `link` bytes per second per direction (no overlap, as `sync_step_seconds`)."""
  return compute + ring_allreduce_bytes(parameter_bytes, workers) / link

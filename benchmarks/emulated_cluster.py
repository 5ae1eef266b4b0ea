"""One emulated cluster, run and measured: `measure` starts a system's tasks on `nodes`
network namespaces joined by shaped links (`tools/namespaces.py`), one ps (if the system
has any) and one worker per node, waits for the measured window of steps and returns its
`Measurement` (`window_measurement`). What it emulates: benchmarks/cluster_emulator_main.py.
"""

from __future__ import annotations

import dataclasses
import time

from benchmarks.emulated_task import STEP_EVENT
from benchmarks.program_cluster import ProgramCluster
from tools.namespaces import Hosts

EMULATED_SUBNET = '198.18.0'  # RFC 2544's benchmarking range, inside the namespaces only


@dataclasses.dataclass(frozen=True)
class Links:
  """Each node's link as the user states it (Mbit/s per direction, one-way delay); the
  emulated link runs `time_scale` times slower and the measured seconds are divided by it."""
  mbit: float
  latency_ms: float
  time_scale: float


@dataclasses.dataclass(frozen=True)
class Window:
  """`untimed_steps` per worker are not measured, then `steps` per worker are; the run
  gives up after `timeout_secs`."""
  untimed_steps: int
  steps: int
  timeout_secs: float


@dataclasses.dataclass
class Measurement:
  """One run. Rates and durations in the emulated cluster's seconds (measured / time_scale)."""
  worker_steps_per_second: float
  step_seconds: list[float]
  sent_per_step: list[float]  # per node, bytes per worker step
  received_per_step: list[float]
  busiest_link_use: float  # the busiest link direction's bytes / (window x link rate)
  step_mix: list[float]  # per node, its worker's fraction of all worker steps in the window


def step_events(events: list[dict]) -> list[tuple[int, float, float]]:
  """(index, end time, duration) of every `emulated_step` status event."""
  return [(e['index'], e['end'], e['seconds']) for e in events if e['event'] == STEP_EVENT]


def node_of(task) -> int:
  """The emulated node of a `LocalCluster` task: ps n and worker n on node n; the chief
  is worker 0 (node 0), LocalCluster's worker k is worker k + 1."""
  return task.task_index + 1 if task.task_type == 'worker' else task.task_index


def make_cluster(system: str, nodes: int, task_flags: list[str], network: Hosts,
                 task_logs: str) -> ProgramCluster:
  """The tasks of `system` on `nodes` emulated nodes, each given `task_flags`: ps n (if
  any) and worker n on node n (worker 0 is the chief). `ours` are told their role by
  flags, TensorFlow's peers by TF_CONFIG (ps_strategy: a ps per node, multi_worker_mirrored:
  none)."""
  common = dict(evaluator=False, echo=None, log_dir=task_logs or None,
                launcher=lambda task: network.enter(network.names[node_of(task)]))
  addresses = [network.address(name) for name in network.names]
  if system == 'ours':
    return ProgramCluster(nodes, nodes, task_flags, program=('-m', 'benchmarks.emulated_task_main'),
                          hosts=addresses * 2, **common)
  num_ps = nodes if system == 'ps_strategy' else 0
  return ProgramCluster(num_ps, nodes, task_flags,
                        program=('-m', 'benchmarks.emulated_peer_task_main'),
                        hosts=addresses * (2 if num_ps else 1), tf_config_role=True, **common)


def measure(system: str, nodes: int, task_flags: list[str], links: Links, window: Window,
            task_logs: str = '') -> Measurement:
  """Runs one emulated cluster (`make_cluster`) and measures the steps of `window`; every
  namespace, link and process is removed at the end. Raises `NamespaceError` when the
  network cannot be set up, RuntimeError when a task fails or the window does not end in
  time."""
  k = links.time_scale
  with Hosts([f'node{n}' for n in range(nodes)], EMULATED_SUBNET, link_mbit=links.mbit / k,
             link_latency_ms=links.latency_ms) as network:
    cluster = make_cluster(system, nodes, task_flags, network, task_logs)
    workers = sorted((name for name, t in cluster.tasks.items()
                      if t.task_type in ('chief', 'worker')),
                     key=lambda name: node_of(cluster.tasks[name]))  # node order
    start = end = None
    try:
      if system == 'multi_worker_mirrored':
        for name in cluster.tasks:  # collective initialisation needs every worker at once
          cluster.start(name)
      else:
        cluster.start_all(chief_ready_timeout=300)
      deadline = time.time() + window.timeout_secs
      while time.time() < deadline and end is None:
        outputs = {w: step_events(cluster.events(w)) for w in workers}
        if start is None and all(len(s) >= window.untimed_steps for s in outputs.values()):
          start = (time.time(), network.link_bytes())
        elif start is not None and all(
            sum(1 for s in lines if s[1] > start[0]) >= window.steps
            for lines in outputs.values()):
          end = (time.time(), network.link_bytes())
        if cluster.failed_tasks():
          raise RuntimeError(f'emulated tasks failed: {cluster.failed_tasks()}: '
                             + ' | '.join(cluster.output(cluster.failed_tasks()[0])[-5:]))
        time.sleep(0.05)
    finally:
      # No grace: the tasks keep nothing, and MultiWorkerMirrored's outlive SIGTERM
      # (each run waited out the whole grace, 10 s, before they were killed).
      cluster.stop_all(grace_secs=0)
  if end is None:
    raise RuntimeError(f'{system}, {nodes} nodes: not every worker finished {window.steps} '
                       f'steps after warm-up in --timeout_secs={window.timeout_secs:.0f}')
  return window_measurement(outputs, start, end, k, links.mbit / k * 1e6 / 8)


def window_measurement(outputs: dict[str, list[tuple[int, float, float]]],
                       start: tuple[float, list[tuple[int, int]]],
                       end: tuple[float, list[tuple[int, int]]], k: float,
                       link_bytes_per_second: float) -> Measurement:
  """The rates, step times and bytes per worker step of the steps that ended between
  `start` and `end` (each a time and the links' counters then). A worker's rate is
  (its steps in the window - 1) / (time between its first and last step end there), so
  the window's edges do not bias it; the workers' rates add up. Bytes per worker step are
  the window's bytes over rate x window length (counting the steps that END in the
  window would credit the window with steps whose pulls preceded it). `outputs` is in
  node order (one worker per node); the step mix is each worker's rate / their sum."""
  rates, durations = [], []
  for lines in outputs.values():
    inside = [s for s in lines if start[0] < s[1] <= end[0]]
    rates.append((len(inside) - 1) / (inside[-1][1] - inside[0][1]))
    durations += [s[2] / k for s in inside]
  rate = sum(rates)
  steps_between = rate * (end[0] - start[0])
  moved = [(b[0] - a[0], b[1] - a[1]) for a, b in zip(start[1], end[1])]
  use = max(max(m) for m in moved) / ((end[0] - start[0]) * link_bytes_per_second)
  return Measurement(rate * k, durations, [m[0] / steps_between for m in moved],
                     [m[1] / steps_between for m in moved], use, [r / rate for r in rates])

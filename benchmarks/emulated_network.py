"""Per-node network namespaces joined by shaped veth links on one bridge.

    with EmulatedNetwork(nodes=4, link_mbit=100.0) as net:
      subprocess.Popen([*net.enter(2), 'python3', ...])   # a process on node 2
      net.link_bytes()                                     # [(sent, received)] per node

Must run inside a private network namespace where this process is root (the emulator
re-executes itself under `unshare --net --map-root-user`). Node n is a namespace held by
a `sleep` process, with loopback up and one veth end `eth0` at 198.18.0.(n + 2)/24
(198.18.0.0/15 is reserved for network benchmarks, RFC 2544; these addresses exist only
inside the namespaces created here). The other end, `node<n>`, sits on bridge `emu0` in
the emulator's namespace. Each node's link is full duplex at `link_mbit` per direction:
a token bucket (tc tbf) on the egress of BOTH veth ends, so the node's uploads and its
downloads are each shaped. Processes of one node (a ps and a worker) talk over that
node's loopback, unshaped, as co-located tasks do on a real node. `link_latency_ms`
adds a one-way delay per direction (tc netem), when the kernel has netem.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import time
from typing import Sequence

BRIDGE = 'emu0'
SUBNET = '198.18.0'
PR_SET_PDEATHSIG = 1


def node_address(node: int) -> str:
  return f'{SUBNET}.{node + 2}'


class NetworkSetupError(RuntimeError):
  """The namespaces or links could not be made; the message says what to change."""


def _die_with_parent() -> None:
  ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _run(command: Sequence[str]) -> None:
  result = subprocess.run(list(command), capture_output=True, text=True, check=False,
                          timeout=30)
  if result.returncode != 0:
    message = result.stderr.strip() or result.stdout.strip()
    if 'netem' in command and 'unknown' in message:
      raise NetworkSetupError('this kernel has no netem qdisc, so links cannot be given a '
                              'latency: rerun with --link_latency_ms=0')
    raise NetworkSetupError(f'{" ".join(command)} failed: {message}')


def shaping_commands(device: str, link_mbit: float, latency_ms: float) -> list[list[str]]:
  """tc commands that shape `device`'s egress to `link_mbit` Mbit/s (tbf, burst of at
  least 64 KiB so that a segmentation-offloaded packet fits) and, with `latency_ms` > 0,
  delay it (netem as the root, tbf below it)."""
  rate_bytes = link_mbit * 1e6 / 8
  burst = max(64 * 1024, int(rate_bytes / 1000))  # >= 1 ms at the rate
  tbf = ['tbf', 'rate', f'{link_mbit * 1000:.0f}kbit', 'burst', str(burst), 'latency', '50ms']
  if latency_ms <= 0:
    return [['tc', 'qdisc', 'replace', 'dev', device, 'root', 'handle', '1:', *tbf]]
  return [['tc', 'qdisc', 'replace', 'dev', device, 'root', 'handle', '1:', 'netem', 'delay',
           f'{latency_ms}ms'],
          ['tc', 'qdisc', 'replace', 'dev', device, 'parent', '1:', 'handle', '2:', *tbf]]


class EmulatedNetwork:
  """`nodes` namespaces on shaped links; a context manager that removes them on exit."""

  def __init__(self, nodes: int, link_mbit: float, link_latency_ms: float = 0.0) -> None:
    if nodes < 1:
      raise ValueError('nodes must be >= 1')
    if link_mbit <= 0:
      raise ValueError('link_mbit must be > 0')
    self.nodes = nodes
    self.link_mbit = link_mbit
    self.link_latency_ms = link_latency_ms
    self._holders: list[subprocess.Popen] = []

  def __enter__(self) -> EmulatedNetwork:
    try:
      self._create()
    except BaseException:
      self.close()
      raise
    return self

  def __exit__(self, *exc) -> None:
    self.close()

  def _create(self) -> None:
    _run(['ip', 'link', 'add', BRIDGE, 'type', 'bridge'])
    _run(['ip', 'link', 'set', BRIDGE, 'up'])
    for n in range(self.nodes):
      holder = subprocess.Popen(['unshare', '--net', 'sleep', 'infinity'],
                                preexec_fn=_die_with_parent)
      self._holders.append(holder)
      outside, inside = f'node{n}', f'eth{n}'
      _run(['ip', 'link', 'add', outside, 'type', 'veth', 'peer', 'name', inside])
      _wait_for_namespace(holder)
      _run(['ip', 'link', 'set', inside, 'netns', str(holder.pid)])
      _run(['ip', 'link', 'set', outside, 'master', BRIDGE, 'up'])
      enter = self.enter(n)
      _run([*enter, 'ip', 'link', 'set', inside, 'name', 'eth0'])
      _run([*enter, 'ip', 'link', 'set', 'lo', 'up'])
      _run([*enter, 'ip', 'addr', 'add', f'{node_address(n)}/24', 'dev', 'eth0'])
      _run([*enter, 'ip', 'link', 'set', 'eth0', 'up'])
      for command in shaping_commands(outside, self.link_mbit, self.link_latency_ms):
        _run(command)  # the node's download
      for command in shaping_commands('eth0', self.link_mbit, self.link_latency_ms):
        _run([*enter, *command])  # the node's upload

  def enter(self, node: int) -> list[str]:
    """The command prefix that runs a program in node `node`'s namespace."""
    return ['nsenter', f'--net=/proc/{self._holders[node].pid}/ns/net', '--']

  def link_bytes(self) -> list[tuple[int, int]]:
    """(bytes sent, bytes received) by each node over its link so far, Ethernet headers
    included: the bridge side's receive and transmit counters in /proc/net/dev (this
    namespace's view; /sys/class/net shows the namespace sysfs was mounted in)."""
    counters = {}
    with open('/proc/net/dev') as f:
      for line in f:
        name, sep, fields = line.partition(':')
        if sep:
          values = fields.split()
          counters[name.strip()] = (int(values[0]), int(values[8]))
    return [counters[f'node{n}'] for n in range(self.nodes)]

  def close(self) -> None:
    """Ends the namespace holders (their veth ends vanish with them) and the bridge."""
    for holder in self._holders:
      if holder.poll() is None:
        holder.kill()
        holder.wait()
    self._holders.clear()
    for n in range(self.nodes):
      subprocess.run(['ip', 'link', 'del', f'node{n}'], capture_output=True, check=False)
    subprocess.run(['ip', 'link', 'del', BRIDGE], capture_output=True, check=False)


def _wait_for_namespace(holder: subprocess.Popen, attempts: int = 100) -> None:
  """Waits (at most ~5 s) until `holder` runs in a network namespace of its own."""
  own = os.readlink('/proc/self/ns/net')
  for _ in range(attempts):
    try:
      if os.readlink(f'/proc/{holder.pid}/ns/net') != own:
        return
    except FileNotFoundError:
      break
    time.sleep(0.05)
  raise NetworkSetupError('could not create a node network namespace (unshare --net)')

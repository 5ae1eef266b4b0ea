"""Hosts on one machine, for the specs and benchmarks that need several: each host a network
namespace with address <subnet>.(i + 2)/24 on one bridge, held by a `sleep` process and
entered with nsenter.

With `hosts_dir`, each host also has a UTS and a mount namespace: its name as hostname and,
bind-mounted over /etc/hosts, a file (written in `hosts_dir`) naming every host and its
`aliases`, as `ip netns exec` mounts /etc/netns/<ns>/hosts. With `hub`, the bridge sits in a
namespace of its own, host `hub` at <subnet>.1 (where e.g. Slurm's controller runs), so
nothing global is created: bridge and veths carry this process's pid and exist only in these
namespaces. Without `hub` the bridge is made in the caller's own namespace, which must then be
a private one where it is root (the cluster emulator re-executes itself under `unshare --net
--map-root-user`). `link_mbit` > 0 shapes each host's link, full duplex: a token bucket on
the egress of both veth ends (and `link_latency_ms`, a delay per direction, with netem).
Addresses come from 198.18.0.0/15, reserved for network benchmarks (RFC 2544).

    with Hosts(['n1', 'n2'], '198.18.0', hub='controller', hosts_dir=tmp) as hosts:
      subprocess.Popen([*hosts.enter('n1'), 'python3', ...])   # a process on n1
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import time
from typing import Mapping, Sequence

PR_SET_PDEATHSIG = 1
TOOLS = ('unshare', 'nsenter', 'ip', 'mount', 'hostname')


class NamespaceError(RuntimeError):
  """The namespaces or links could not be made; the message says what failed or what to
  change."""


def missing_reason() -> str | None:
  """Why hosts cannot be made here (not root, a tool missing), or None."""
  if os.geteuid() != 0:
    return 'network namespaces need root'
  for tool in TOOLS:
    if not shutil.which(tool):
      return f'{tool} is not installed'
  return None


class Hosts:
  """`names` hosts (and the `hub`, when named) on one bridge; a context manager, or
  `start()` and `stop()`."""

  def __init__(self, names: Sequence[str], subnet: str, hub: str | None = None,
               hosts_dir: str | None = None, aliases: Mapping[str, Sequence[str]] | None = None,
               link_mbit: float = 0.0, link_latency_ms: float = 0.0) -> None:
    self.names = list(names)
    self.subnet = subnet
    self.hub = hub
    self.link_mbit = link_mbit
    self.link_latency_ms = link_latency_ms
    self._hosts_file = os.path.join(hosts_dir, 'hosts') if hosts_dir else None
    self._aliases = dict(aliases or {})
    self._suffix = str(os.getpid())
    self._holders: dict[str, subprocess.Popen] = {}

  def __enter__(self) -> Hosts:
    self.start()
    return self

  def __exit__(self, *exc) -> None:
    self.stop()

  def address(self, name: str) -> str:
    """Host `name`'s address (the hub's is <subnet>.1)."""
    return f'{self.subnet}.{1 if name == self.hub else self.names.index(name) + 2}'

  def enter(self, name: str, mount: bool = True, working_dir: str | None = None) -> list[str]:
    """The command prefix that runs a program on host `name` (its network, and with
    `hosts_dir` its UTS and, with `mount`, mount namespace), in `working_dir` if given
    (entering a mount namespace otherwise starts it in /)."""
    pid = self._holders[name].pid
    namespaces = [f'--net=/proc/{pid}/ns/net']
    if self._hosts_file:
      namespaces.append(f'--uts=/proc/{pid}/ns/uts')
      if mount:
        namespaces.append(f'--mount=/proc/{pid}/ns/mnt')
    where = [f'--wd={working_dir}'] if working_dir else []
    return ['nsenter', *namespaces, *where, '--']

  def pids(self, name: str) -> list[int]:
    """Every process on host `name` (in its network namespace), its holder excepted."""
    return namespace_pids(self._holders[name].pid)

  def link_bytes(self) -> list[tuple[int, int]]:
    """(bytes sent, bytes received) by each host over its link so far, Ethernet headers
    included: the bridge side's receive and transmit counters in /proc/net/dev, read in the
    bridge's namespace."""
    text = subprocess.run([*self._bridge_side(), 'cat', '/proc/net/dev'], capture_output=True,
                          text=True, check=True, timeout=30).stdout
    counters = {}
    for line in text.splitlines():
      name, sep, fields = line.partition(':')
      if sep:
        values = fields.split()
        counters[name.strip()] = (int(values[0]), int(values[8]))
    return [counters[self._outside(i)] for i in range(len(self.names))]

  def start(self) -> None:
    """Makes the hosts and their links; on failure removes what it made and raises
    `NamespaceError`."""
    try:
      self._make()
    except BaseException:
      self.stop()
      raise

  def stop(self) -> None:
    """Kills every process left on a host, then the holders (bridge and veths vanish with
    their namespaces; a bridge in the caller's namespace is deleted): all by pid."""
    for holder in self._holders.values():
      if holder.poll() is None:
        for pid in namespace_pids(holder.pid):
          try:
            os.kill(pid, signal.SIGKILL)
          except ProcessLookupError:
            pass
    for holder in self._holders.values():
      if holder.poll() is None:
        holder.kill()
        holder.wait()
    self._holders.clear()
    if self.hub is None:
      subprocess.run(['ip', 'link', 'del', self._bridge()], capture_output=True, check=False)

  def _bridge(self) -> str:
    return f'b{self._suffix}'

  def _outside(self, i: int) -> str:
    return f'v{self._suffix}o{i}'

  def _bridge_side(self) -> list[str]:
    return self.enter(self.hub, mount=False) if self.hub else []

  def _make(self) -> None:
    if self._hosts_file:
      everyone = ([self.hub] if self.hub else []) + self.names
      with open(self._hosts_file, 'w', encoding='utf-8') as f:
        f.write('127.0.0.1 localhost\n' + ''.join(
            f'{self.address(n)} {" ".join([*self._aliases.get(n, ()), n])}\n'
            for n in everyone))
    if self.hub:
      self._holders[self.hub] = self._hold(self.hub)
    bridge_side = self._bridge_side()
    bridge = self._bridge()
    if self.hub:
      _run([*bridge_side, 'ip', 'link', 'set', 'lo', 'up'])
    _run([*bridge_side, 'ip', 'link', 'add', bridge, 'type', 'bridge'])
    if self.hub:
      _run([*bridge_side, 'ip', 'addr', 'add', f'{self.address(self.hub)}/24', 'dev', bridge])
    _run([*bridge_side, 'ip', 'link', 'set', bridge, 'up'])
    for i, name in enumerate(self.names):
      holder = self._holders[name] = self._hold(name)
      outside, inside = self._outside(i), f'v{self._suffix}i{i}'
      _run([*bridge_side, 'ip', 'link', 'add', outside, 'type', 'veth', 'peer', 'name', inside])
      _run([*bridge_side, 'ip', 'link', 'set', inside, 'netns', str(holder.pid)])
      _run([*bridge_side, 'ip', 'link', 'set', outside, 'master', bridge, 'up'])
      enter = self.enter(name, mount=False)
      _run([*enter, 'ip', 'link', 'set', 'lo', 'up'])
      _run([*enter, 'ip', 'link', 'set', inside, 'name', 'eth0'])
      _run([*enter, 'ip', 'addr', 'add', f'{self.address(name)}/24', 'dev', 'eth0'])
      _run([*enter, 'ip', 'link', 'set', 'eth0', 'up'])
      if self.link_mbit > 0:
        for command in shaping_commands(outside, self.link_mbit, self.link_latency_ms):
          _run([*bridge_side, *command])  # the host's download
        for command in shaping_commands('eth0', self.link_mbit, self.link_latency_ms):
          _run([*enter, *command])  # the host's upload
    deadline = time.time() + 10
    while not all(_read(f'/proc/{h.pid}/comm') == 'sleep' for h in self._holders.values()):
      if time.time() > deadline:
        raise NamespaceError('a host namespace did not come up (hostname or mount failed)')
      time.sleep(0.05)

  def _hold(self, name: str) -> subprocess.Popen:
    """A process that holds host `name`'s namespaces: its network and, with a hosts file,
    its UTS and mount namespaces, in which the hostname is `name` and /etc/hosts that file."""
    if self._hosts_file:
      script = (f'hostname {name} && mount --bind {self._hosts_file} /etc/hosts && '
                'exec sleep infinity')
      command = ['unshare', '--net', '--uts', '--mount', 'sh', '-c', script]
    else:
      command = ['unshare', '--net', 'sleep', 'infinity']
    holder = subprocess.Popen(command, preexec_fn=_die_with_parent)
    _wait_for_own_namespace(holder)
    return holder


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


def namespace_pids(holder_pid: int) -> list[int]:
  """Every process in the network namespace of process `holder_pid`, itself excepted."""
  mine = os.readlink(f'/proc/{holder_pid}/ns/net')
  pids = []
  for entry in os.listdir('/proc'):
    if entry.isdigit() and int(entry) != holder_pid:
      try:
        if os.readlink(f'/proc/{entry}/ns/net') == mine:
          pids.append(int(entry))
      except OSError:
        continue
  return pids


def _die_with_parent() -> None:
  """The holder dies (SIGKILL) with the process that made it, so no namespace outlives it."""
  ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _read(path: str) -> str:
  try:
    with open(path, encoding='utf-8') as f:
      return f.read().strip()
  except OSError:
    return ''


def _run(command: Sequence[str]) -> None:
  result = subprocess.run(list(command), capture_output=True, text=True, check=False,
                          timeout=30)
  if result.returncode != 0:
    message = result.stderr.strip() or result.stdout.strip()
    if 'netem' in command and 'unknown' in message:
      raise NamespaceError('this kernel has no netem qdisc, so links cannot be given a '
                           'latency: rerun with --link_latency_ms=0')
    raise NamespaceError(f'{" ".join(command)} failed: {message}')


def _wait_for_own_namespace(holder: subprocess.Popen, timeout_secs: float = 10.0) -> None:
  """Waits until `holder` runs in a network namespace other than this process's."""
  own = os.readlink('/proc/self/ns/net')
  deadline = time.time() + timeout_secs
  while time.time() < deadline:
    try:
      if os.readlink(f'/proc/{holder.pid}/ns/net') != own:
        return
    except FileNotFoundError:
      break
    time.sleep(0.05)
  raise NamespaceError(f'could not create a network namespace (unshare exited '
                       f'{holder.poll()})')

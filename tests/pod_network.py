"""Pods of a Kubernetes job on one machine, for tests: each pod its own network, UTS and
mount namespace, as `tests/slurm_testing.py`'s nodes are.

Pod i has address 198.18.1.(i + 2) on a bridge that lives in a namespace of its own, its
pod name as hostname, and an /etc/hosts (bind-mounted in its own mount namespace, as
`ip netns exec` mounts /etc/netns/<ns>/hosts) that gives every pod's service DNS name, as
Kubernetes' headless services do (`<pod>.<namespace>.svc`). Nothing global is created: the
bridge and veths carry this process's pid and exist only inside these namespaces. Needs
root (unshare, nsenter, ip).

    network = PodNetwork(tmpdir, {'job-chief-0': ['job-chief-0.default.svc'], ...})
    network.start()
    subprocess.Popen([*network.prefix('job-chief-0', cwd), 'python3', ...])
    network.stop()
"""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Mapping, Sequence

from tests.slurm_testing import MultiNodeSlurm, _run, enter_prefix, namespace_pids

SUBNET = '198.18.1'


def missing_reason() -> str | None:
  """Why pods cannot be made here (not root, a tool missing), or None."""
  if os.geteuid() != 0:
    return 'network namespaces need root'
  for tool in ('unshare', 'nsenter', 'ip', 'mount', 'hostname'):
    if not any(os.access(os.path.join(d, tool), os.X_OK)
               for d in os.environ.get('PATH', '/usr/sbin:/usr/bin:/sbin:/bin').split(':')):
      return f'{tool} is not installed'
  return None


class PodNetwork:
  """`pods` maps each pod name to the DNS names other pods reach it by."""

  def __init__(self, root: str, pods: Mapping[str, Sequence[str]]) -> None:
    self.root = root
    self.pods = dict(pods)
    self._suffix = str(os.getpid())
    self._holders: dict[str, subprocess.Popen] = {}

  def address(self, pod: str) -> str:
    return f'{SUBNET}.{list(self.pods).index(pod) + 2}'

  def start(self) -> None:
    try:
      self._make()
    except BaseException:
      self.stop()
      raise

  def _make(self) -> None:
    hosts = os.path.join(self.root, 'hosts')
    with open(hosts, 'w') as f:
      f.write('127.0.0.1 localhost\n' + ''.join(
          f'{self.address(pod)} {" ".join(names)} {pod}\n' for pod, names in self.pods.items()))
    self._holders['hub'] = MultiNodeSlurm._hold('hub', hosts)  # pylint: disable=protected-access
    enter_hub = self._enter('hub', mount=False)
    bridge = f'kb{self._suffix}'
    for command in (['ip', 'link', 'set', 'lo', 'up'],
                    ['ip', 'link', 'add', bridge, 'type', 'bridge'],
                    ['ip', 'addr', 'add', f'{SUBNET}.1/24', 'dev', bridge],
                    ['ip', 'link', 'set', bridge, 'up']):
      _run([*enter_hub, *command])
    for i, pod in enumerate(self.pods):
      holder = self._holders[pod] = MultiNodeSlurm._hold(pod, hosts)  # pylint: disable=protected-access
      outside, inside = f'kv{self._suffix}p{i}', f'kv{self._suffix}e{i}'
      _run([*enter_hub, 'ip', 'link', 'add', outside, 'type', 'veth', 'peer', 'name', inside])
      _run([*enter_hub, 'ip', 'link', 'set', inside, 'netns', str(holder.pid)])
      _run([*enter_hub, 'ip', 'link', 'set', outside, 'master', bridge, 'up'])
      enter = self._enter(pod, mount=False)
      _run([*enter, 'ip', 'link', 'set', 'lo', 'up'])
      _run([*enter, 'ip', 'link', 'set', inside, 'name', 'eth0'])
      _run([*enter, 'ip', 'addr', 'add', f'{self.address(pod)}/24', 'dev', 'eth0'])
      _run([*enter, 'ip', 'link', 'set', 'eth0', 'up'])

  def _enter(self, name: str, mount: bool = True) -> list[str]:
    return enter_prefix(self._holders[name].pid, mount)

  def prefix(self, pod: str, working_dir: str) -> list[str]:
    """The command prefix that runs a program in pod `pod`, in `working_dir` (entering a
    mount namespace would otherwise start it in /)."""
    return self._enter(pod)[:-1] + [f'--wd={working_dir}', '--']

  def stop(self) -> None:
    """Kills every process left in a pod, then the namespace holders, by pid."""
    for pod, holder in self._holders.items():
      if holder.poll() is None and pod != 'hub':
        for pid in namespace_pids(holder.pid):
          try:
            os.kill(pid, signal.SIGKILL)
          except ProcessLookupError:
            pass
    for holder in self._holders.values():
      if holder.poll() is None:
        holder.kill()
        holder.wait()

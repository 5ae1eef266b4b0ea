"""A private, real Slurm for tests: munged, slurmctld and slurmd started from a generated
slurm.conf in a temporary directory (own spool, state, pid and log paths, own ports, own
munge socket and key), stopped by PID. Needs Debian's slurmctld, slurmd, slurm-client and
munge (`tools/setup.sh` installs them) and root (slurmd launches jobs as their user).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

from absl.testing import absltest

from tools.namespaces import Hosts
from towers.cluster.supervision import die_with_parent
from towers.cluster.spec import pick_free_ports

PROGRAMS = ('munged', 'slurmctld', 'slurmd', 'sbatch', 'scontrol', 'sinfo', 'srun')
NODE_CPUS = 8  # declared, not real: the node runs more tasks than this machine has cores
KILL_WAIT = 5  # seconds between scancel's SIGTERM and its SIGKILL


def missing_reason() -> str | None:
  """Why a private Slurm cannot run here, or None when it can."""
  missing = [p for p in PROGRAMS if not shutil.which(p) and not os.path.exists(f'/usr/sbin/{p}')]
  if missing:
    return (f'Slurm is not installed ({", ".join(missing)} missing); `bash tools/setup.sh` '
            'installs slurmctld, slurmd, slurm-client and munge')
  if os.geteuid() != 0:
    return 'slurmd must run as root to start jobs (CI and these machines run as root)'
  return None


class SlurmTestCase(absltest.TestCase):
  """A spec run against its own private Slurm, shared by its cases: `setUpClass` starts it as
  `cls.slurm` (skipping, with the reason, where `missing_reason` says it cannot run),
  `tearDownClass` stops it and removes its directory. `NODES` = 0: one node called
  `localhost` (`PrivateSlurm`); n: n nodes in namespaces of their own (`MultiNodeSlurm`).
  `CRED_EXPIRE`: seconds before a requeued job restarts (None: the class's default)."""
  NODES = 0
  CRED_EXPIRE: int | None = None

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    reason = missing_reason()
    if reason:
      raise unittest.SkipTest(reason)
    # Short: munged's socket path must fit a unix socket name (108 bytes); TEST_TMPDIR
    # under Bazel does not.
    cls.slurm_dir = tempfile.mkdtemp(prefix='slurm', dir='/tmp')
    cls.slurm = (MultiNodeSlurm(cls.slurm_dir, nodes=cls.NODES) if cls.NODES else
                 PrivateSlurm(cls.slurm_dir))
    if cls.CRED_EXPIRE is not None:
      cls.slurm.cred_expire = cls.CRED_EXPIRE
    try:
      cls.slurm.start()
    except BaseException:
      cls.slurm.stop()
      shutil.rmtree(cls.slurm_dir, ignore_errors=True)
      raise

  @classmethod
  def tearDownClass(cls):
    cls.slurm.stop()
    shutil.rmtree(cls.slurm_dir, ignore_errors=True)
    super().tearDownClass()


def _program(name: str) -> str:
  return shutil.which(name) or f'/usr/sbin/{name}'


class PrivateSlurm:
  """One controller and one slurmd on this machine. The node is called `localhost` so
  that the names Slurm hands to the job (SLURM_STEP_NODELIST, `scontrol show hostnames`)
  resolve, as real node names do. E.g.

      slurm = PrivateSlurm(tmpdir); slurm.start()
      job, code = slurm.sbatch(['--wrap=hostname'])
      slurm.job_state(job)   # ('COMPLETED', '0:0')
      slurm.stop()
  """

  def __init__(self, root: str) -> None:
    self.root = root
    self.node_names = ['localhost']
    self.conf = os.path.join(root, 'slurm.conf')
    self.env = dict(os.environ, SLURM_CONF=self.conf)
    for name in ('SLURM_JOB_ID', 'SLURM_JOBID', 'TF_CONFIG'):
      self.env.pop(name, None)
    self._processes: dict[str, subprocess.Popen] = {}
    self._logs = []
    self.client: list[str] = []  # prefix of commands that talk to slurmctld (sbatch, ...)
    self.slurmd_timeout = 60  # seconds before slurmctld declares a silent node DOWN
    self.cred_expire = 120  # seconds; also how long a requeued job waits before it restarts

  # --- daemons ------------------------------------------------------------------------------

  def start(self, timeout_secs: float = 60.0) -> None:
    """Starts munged, slurmctld and the slurmd daemons; returns once every node is idle."""
    os.makedirs(os.path.join(self.root, 'munge'), mode=0o700, exist_ok=True)
    key = os.path.join(self.root, 'munge', 'munge.key')
    with open(key, 'wb') as f:
      f.write(os.urandom(1024))
    os.chmod(key, 0o600)
    self.munge_socket = os.path.join(self.root, 'munge', 'munge.socket')
    m = os.path.join(self.root, 'munge')
    self._spawn('munged', [_program('munged'), '--foreground', '--force',
                           f'--socket={self.munge_socket}', f'--key-file={key}',
                           f'--pid-file={m}/munged.pid', f'--log-file={m}/munged.log',
                           f'--seed-file={m}/munged.seed'])
    self._wait(lambda: os.path.exists(self.munge_socket), timeout_secs, 'munged socket')
    self._write_conf()
    self._spawn('slurmctld', [*self.client, _program('slurmctld'), '-D', '-i', '-f', self.conf])
    for name in self.node_names:
      self.start_node(name)
    self._wait(self._all_idle, timeout_secs, 'every node idle (sinfo)')

  def start_node(self, name: str) -> None:
    """Starts (or restarts) node `name`'s slurmd."""
    self._spawn(f'slurmd-{name}', [*self.node_prefix(name), _program('slurmd'), '-D', '-f',
                                   self.conf, '-N', name])

  def node_prefix(self, name: str) -> list[str]:
    """The command prefix that runs a program on node `name` (here: this machine)."""
    del name
    return []

  def _write_conf(self) -> None:
    ctld_port, *node_ports = pick_free_ports(1 + len(self.node_names))
    host = socket.gethostname().split('.')[0]
    lines = self._common_conf(f'{host}(127.0.0.1)', ctld_port, f'towers{os.getpid()}')
    for name, port in zip(self.node_names, node_ports):
      lines.append(f'NodeName={name} NodeHostname={host} NodeAddr=127.0.0.1 Port={port} '
                   f'CPUs={NODE_CPUS} RealMemory=1000 State=UNKNOWN')
    self._finish_conf(lines)

  def _finish_conf(self, lines: list[str]) -> None:
    lines.append(f'PartitionName=test Nodes={",".join(self.node_names)} Default=YES '
                 'MaxTime=INFINITE State=UP OverSubscribe=NO')
    for d in ['state', 'spool', *[f'spool/{n}' for n in self.node_names]]:
      os.makedirs(os.path.join(self.root, d), exist_ok=True)
    with open(self.conf, 'w') as f:
      f.write('\n'.join(lines) + '\n')

  def _common_conf(self, ctld_host: str, ctld_port: int, cluster_name: str) -> list[str]:
    return [
        f'ClusterName={cluster_name}',
        f'SlurmctldHost={ctld_host}',
        f'SlurmctldPort={ctld_port}',
        'SlurmUser=root', 'SlurmdUser=root',
        'AuthType=auth/munge', 'CredType=cred/munge',
        f'AuthInfo=socket={self.munge_socket},cred_expire={self.cred_expire}',
        'ProctrackType=proctrack/linuxproc', 'TaskPlugin=task/none',
        'JobAcctGatherType=jobacct_gather/none', 'AccountingStorageType=accounting_storage/none',
        'SelectType=select/cons_tres', 'SelectTypeParameters=CR_CPU',
        'SchedulerType=sched/builtin', 'MpiDefault=none', 'ReturnToService=2',
        'SlurmdParameters=config_overrides', 'MailProg=/bin/true',
        'SlurmctldTimeout=30', f'SlurmdTimeout={self.slurmd_timeout}', 'InactiveLimit=0',
        f'KillWait={KILL_WAIT}',
        'MinJobAge=600',
        f'StateSaveLocation={self.root}/state',
        f'SlurmctldPidFile={self.root}/slurmctld.pid',
        f'SlurmctldLogFile={self.root}/slurmctld.log',
        f'SlurmdSpoolDir={self.root}/spool/%n',
        f'SlurmdPidFile={self.root}/slurmd.%n.pid',
        f'SlurmdLogFile={self.root}/slurmd.%n.log',
    ]

  def _spawn(self, name: str, command: list[str]) -> None:
    log = open(os.path.join(self.root, f'{name}.out'), 'a', encoding='utf-8')
    self._logs.append(log)
    self._processes[name] = subprocess.Popen(command, env=self.env, stdout=log,
                                             stderr=subprocess.STDOUT,
                                             preexec_fn=die_with_parent)

  def _all_idle(self) -> bool:
    for name, process in self._processes.items():
      if process.poll() is not None:
        raise RuntimeError(f'{name} exited with {process.returncode} at start; see '
                           f'{self.root}/{name}.out and the *.log files there')
    out = subprocess.run([*self.client, 'sinfo', '-h', '-N', '-o', '%N %T'], env=self.env,
                         capture_output=True, text=True, timeout=30, check=False).stdout
    states = dict(line.split() for line in out.splitlines() if line.strip())
    return all(states.get(n) == 'idle' for n in self.node_names)

  @staticmethod
  def _wait(condition, timeout_secs: float, what: str) -> None:
    deadline = time.time() + timeout_secs
    while time.time() < deadline:
      if condition():
        return
      time.sleep(0.5)
    raise RuntimeError(f'private Slurm: timed out after {timeout_secs:.0f} s waiting for {what}')

  def pids(self) -> list[int]:
    return [p.pid for p in self._processes.values()]

  def stop(self) -> None:
    """Stops every daemon it started, by PID: SIGTERM, then SIGKILL after 15 s."""
    for process in reversed(list(self._processes.values())):
      if process.poll() is None:
        process.terminate()
    for process in self._processes.values():
      try:
        process.wait(timeout=15)
      except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    for log in self._logs:
      log.close()

  # --- jobs -----------------------------------------------------------------------------------

  def sbatch(self, args: list[str], cwd: str, env: dict[str, str] | None = None,
             timeout_secs: float = 300.0) -> tuple[str, int]:
    """Submits ARGS and waits for the job to end, as `sbatch --wait` does: (job id, the
    exit code `sbatch --wait` would return: the job's, 1 when a signal ended it). Polls
    every 0.5 s, where `sbatch --wait` sleeps 2, 8, then 32 s between its checks. A job
    still running after `timeout_secs` is cancelled and RuntimeError raised."""
    job = self.submit(args, cwd, env)
    _, exit_code = self.wait_job(job, timeout_secs)
    status, signal_number = (int(n) for n in exit_code.split(':'))
    return job, 1 if signal_number else status

  def submit(self, args: list[str], cwd: str, env: dict[str, str] | None = None) -> str:
    """`sbatch --parsable ARGS` without waiting: the job id."""
    out = subprocess.run([*self.client, 'sbatch', '--parsable', f'--chdir={cwd}', *args], cwd=cwd,
                         env=dict(self.env, **(env or {})), capture_output=True, text=True,
                         timeout=60, check=True).stdout
    return out.strip().split(';')[0]

  def wait_job(self, job: str, timeout_secs: float) -> tuple[str, str]:
    """Waits until the job has ended; its (JobState, ExitCode). A job still running after
    `timeout_secs` is cancelled and RuntimeError raised."""
    deadline = time.time() + timeout_secs
    while time.time() < deadline:
      state = self.job_state(job)
      if state[0] not in ('PENDING', 'RUNNING', 'CONFIGURING', 'COMPLETING', 'REQUEUED',
                          'RESIZING', 'SUSPENDED'):
        return state
      time.sleep(0.5)
    self.scancel(job)
    raise RuntimeError(f'job {job} still running after {timeout_secs:.0f} s: cancelled')

  def job_state(self, job: str) -> tuple[str, str]:
    """(JobState, ExitCode) from `scontrol show job`, e.g. ('COMPLETED', '0:0')."""
    out = subprocess.run([*self.client, 'scontrol', 'show', 'job', '-o', job], env=self.env,
                         capture_output=True, text=True, timeout=30, check=True).stdout
    fields = dict(re.findall(r'(\w+)=(\S+)', out))
    return fields['JobState'], fields['ExitCode']

  def scancel(self, job: str) -> None:
    subprocess.run([*self.client, 'scancel', job], env=self.env, timeout=30, check=True)


class MultiNodeSlurm(PrivateSlurm):
  """`nodes` Slurm nodes on this machine, each a node of its own as far as the job can
  tell: its own network namespace with address 198.18.0.(i + 2) on a bridge, its own
  hostname (UTS namespace) and /etc/hosts naming every node (mount namespace), its own
  slurmd with its own spool, pid and log files and `NodeAddr`. slurmctld sits on the
  bridge at 198.18.0.1, in a network namespace of its own too, where the client commands
  (sbatch, scontrol, ...) also run (`tools/namespaces.py`'s `Hosts`). So nothing global is
  created: the namespaces, the bridge and the veths exist only inside these namespaces, and
  their addresses and ports cannot meet another run's. E.g.

      slurm = MultiNodeSlurm(tmpdir, nodes=3); slurm.start()
      job, code = slurm.sbatch(['--nodes=3', '--wrap=srun hostname'], cwd=tmpdir)
      slurm.lose_node('n3')   # its slurmd and every process of it are killed
      slurm.stop()
  """

  def __init__(self, root: str, nodes: int = 3) -> None:
    super().__init__(root)
    self.node_names = [f'n{i + 1}' for i in range(nodes)]
    self.slurmd_timeout = 5
    self.cred_expire = 5
    self._suffix = str(os.getpid())
    self.hosts = Hosts(self.node_names, '198.18.0', hub='controller', hosts_dir=root)

  def address(self, name: str) -> str:
    return self.hosts.address(name)

  def start(self, timeout_secs: float = 60.0) -> None:
    try:
      self.hosts.start()
      self.client = self.hosts.enter('controller')
      super().start(timeout_secs)
    except BaseException:
      self.stop()
      raise

  def node_prefix(self, name: str) -> list[str]:
    return self.hosts.enter(name)

  def _write_conf(self) -> None:
    ctld_port, *node_ports = pick_free_ports(1 + len(self.node_names))
    lines = self._common_conf('controller(198.18.0.1)', ctld_port,
                              f'towers{self._suffix}')
    lines.append('SchedulerParameters=sched_interval=2')  # a requeued job starts soon
    # A lost node is set DOWN after two rounds of pings that each fail at MessageTimeout
    # (Slurm's default: 10 s): shorter, so a lost node's job requeues sooner.
    lines.append('MessageTimeout=5')
    for name, port in zip(self.node_names, node_ports):
      lines.append(f'NodeName={name} NodeHostname={name} NodeAddr={self.address(name)} '
                   f'Port={port} CPUs={NODE_CPUS} RealMemory=1000 State=UNKNOWN')
    self._finish_conf(lines)

  def ensure_nodes_idle(self, timeout_secs: float = 60.0) -> None:
    """Restarts the slurmd of any node that lost it; returns once every node is idle."""
    for name in self.node_names:
      if self._processes[f'slurmd-{name}'].poll() is not None:
        self.start_node(name)
    self._wait(self._all_idle, timeout_secs, 'every node idle (sinfo)')

  def node_pids(self, name: str) -> list[int]:
    """Every process on node `name` (in its network namespace), its holder excepted."""
    return self.hosts.pids(name)

  def lose_node(self, name: str) -> list[int]:
    """As if node `name` lost power: SIGKILL to its slurmd and every process on it; the
    namespace stays, so `start_node` can bring it back. Returns the pids killed."""
    pids = self.node_pids(name)
    for pid in pids:
      try:
        os.kill(pid, signal.SIGKILL)
      except ProcessLookupError:
        pass
    self._processes[f'slurmd-{name}'].wait()
    return pids

  def stop(self) -> None:
    """Stops the daemons, then every process left on a node, then the namespaces: all by
    PID."""
    super().stop()
    self.hosts.stop()


def consecutive_free_ports(count: int, attempts: int = 50) -> int:
  """A port P such that P .. P+count-1 are all free on this machine now."""
  for _ in range(attempts):
    with socket.socket() as probe:
      probe.bind(('127.0.0.1', 0))
      first = probe.getsockname()[1]
    if first + count >= 65536:
      continue
    sockets = []
    try:
      for port in range(first, first + count):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sockets.append(s)
        s.bind(('', port))
      return first
    except OSError:
      continue
    finally:
      for s in sockets:
        s.close()
  raise RuntimeError(f'no {count} consecutive free ports found')


def leftover_processes(marker: str) -> str:
  """Command lines of processes that mention `marker` (pgrep itself excluded)."""
  out = subprocess.run(['pgrep', '-af', marker], capture_output=True, text=True, check=False)
  return '\n'.join(l for l in out.stdout.splitlines() if 'pgrep' not in l)

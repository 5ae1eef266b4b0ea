"""A private, real Slurm for tests: munged, slurmctld and slurmd started from a generated
slurm.conf in a temporary directory (own spool, state, pid and log paths, own ports, own
munge socket and key), stopped by PID. Needs Debian's slurmctld, slurmd, slurm-client and
munge (`tools/setup.sh` installs them) and root (slurmd launches jobs as their user).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import time

from towers.cluster.local_cluster import _die_with_parent
from towers.cluster.spec import pick_free_ports

PROGRAMS = ('munged', 'slurmctld', 'slurmd', 'sbatch', 'scontrol', 'sinfo', 'srun')
NODE_CPUS = 8  # declared, not real: the node runs more tasks than this machine has cores


def missing_reason() -> str | None:
  """Why a private Slurm cannot run here, or None when it can."""
  missing = [p for p in PROGRAMS if not shutil.which(p) and not os.path.exists(f'/usr/sbin/{p}')]
  if missing:
    return (f'Slurm is not installed ({", ".join(missing)} missing); `bash tools/setup.sh` '
            'installs slurmctld, slurmd, slurm-client and munge')
  if os.geteuid() != 0:
    return 'slurmd must run as root to start jobs (CI and these machines run as root)'
  return None


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
    self._spawn('slurmctld', [_program('slurmctld'), '-D', '-i', '-f', self.conf])
    for name in self.node_names:
      self._spawn(f'slurmd-{name}', [_program('slurmd'), '-D', '-f', self.conf, '-N', name])
    self._wait(self._all_idle, timeout_secs, 'every node idle (sinfo)')

  def _write_conf(self) -> None:
    ctld_port, *node_ports = pick_free_ports(1 + len(self.node_names))
    host = socket.gethostname().split('.')[0]
    lines = [
        'ClusterName=towers_test',
        f'SlurmctldHost={host}(127.0.0.1)',
        f'SlurmctldPort={ctld_port}',
        'SlurmUser=root', 'SlurmdUser=root',
        'AuthType=auth/munge', 'CredType=cred/munge',
        f'AuthInfo=socket={self.munge_socket}',
        'ProctrackType=proctrack/linuxproc', 'TaskPlugin=task/none',
        'JobAcctGatherType=jobacct_gather/none', 'AccountingStorageType=accounting_storage/none',
        'SelectType=select/cons_tres', 'SelectTypeParameters=CR_CPU',
        'SchedulerType=sched/builtin', 'MpiDefault=none', 'ReturnToService=2',
        'SlurmdParameters=config_overrides', 'MailProg=/bin/true',
        'SlurmctldTimeout=30', 'SlurmdTimeout=60', 'InactiveLimit=0', 'KillWait=5',
        'MinJobAge=600',
        f'StateSaveLocation={self.root}/state',
        f'SlurmctldPidFile={self.root}/slurmctld.pid',
        f'SlurmctldLogFile={self.root}/slurmctld.log',
        f'SlurmdSpoolDir={self.root}/spool/%n',
        f'SlurmdPidFile={self.root}/slurmd.%n.pid',
        f'SlurmdLogFile={self.root}/slurmd.%n.log',
    ]
    for name, port in zip(self.node_names, node_ports):
      lines.append(f'NodeName={name} NodeHostname={host} NodeAddr=127.0.0.1 Port={port} '
                   f'CPUs={NODE_CPUS} RealMemory=1000 State=UNKNOWN')
    lines.append(f'PartitionName=test Nodes={",".join(self.node_names)} Default=YES '
                 'MaxTime=INFINITE State=UP OverSubscribe=NO')
    for d in ['state', 'spool', *[f'spool/{n}' for n in self.node_names]]:
      os.makedirs(os.path.join(self.root, d), exist_ok=True)
    with open(self.conf, 'w') as f:
      f.write('\n'.join(lines) + '\n')

  def _spawn(self, name: str, command: list[str]) -> None:
    log = open(os.path.join(self.root, f'{name}.out'), 'w', encoding='utf-8')
    self._logs.append(log)
    self._processes[name] = subprocess.Popen(command, env=self.env, stdout=log,
                                             stderr=subprocess.STDOUT,
                                             preexec_fn=_die_with_parent)

  def _all_idle(self) -> bool:
    for name, process in self._processes.items():
      if process.poll() is not None:
        raise RuntimeError(f'{name} exited with {process.returncode} at start; see '
                           f'{self.root}/{name}.out and the *.log files there')
    out = subprocess.run(['sinfo', '-h', '-N', '-o', '%N %T'], env=self.env,
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
    """`sbatch --wait --parsable ARGS`: (job id, sbatch's exit code = the job's). A job
    still running after `timeout_secs` is cancelled and RuntimeError raised."""
    process = subprocess.Popen(['sbatch', '--wait', '--parsable', *args], cwd=cwd,
                               env=dict(self.env, **(env or {})), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    first = process.stdout.readline().strip()
    match = re.match(r'(\d+)', first)
    if not match:
      process.kill()
      raise RuntimeError(f'sbatch did not submit: {first} {process.communicate()[1]}')
    job = match.group(1)
    try:
      process.communicate(timeout=timeout_secs)
    except subprocess.TimeoutExpired:
      self.scancel(job)
      process.kill()
      process.communicate()
      raise RuntimeError(f'job {job} still running after {timeout_secs:.0f} s: cancelled')
    return job, process.returncode

  def job_state(self, job: str) -> tuple[str, str]:
    """(JobState, ExitCode) from `scontrol show job`, e.g. ('COMPLETED', '0:0')."""
    out = subprocess.run(['scontrol', 'show', 'job', '-o', job], env=self.env,
                         capture_output=True, text=True, timeout=30, check=True).stdout
    fields = dict(re.findall(r'(\w+)=(\S+)', out))
    return fields['JobState'], fields['ExitCode']

  def scancel(self, job: str) -> None:
    subprocess.run(['scancel', job], env=self.env, timeout=30, check=True)

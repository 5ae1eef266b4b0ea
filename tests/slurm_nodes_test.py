"""Specification: training on 3 real Slurm nodes (network, UTS and mount namespaces on one
machine: tests/slurm_testing.py's MultiNodeSlurm), and the faults a long job meets.

- The batch script with NUM_PS=2, and the node program under a plain srun: COMPLETED 0:0, the final
  checkpoint at max_steps, no process left on any node. The batch script's evaluator
  lags (a checkpoint every few steps, 2 kept) and still evaluates the final checkpoint.
- `scancel` mid-run: every process ends within KillWait, the latest checkpoint stays
  readable, and the same submission resumes from it and completes.
- A lost node (its slurmd and processes killed): Slurm cancels the job naming the node
  ("Node failure on n3"); the batch script's --requeue runs it again once the node is
  back, and it resumes from the latest checkpoint and completes.
- A chief killed for good: ps and workers end within --chief_lost_secs, each with a line
  naming the chief.
- The time limit: on the SIGUSR1 the batch script asks Slurm for (`--signal`), the chief
  stops at a checkpoint, every process ends, the job requeues itself and completes.

One Slurm cluster serves every case. Skips, with the reason, only where Slurm is not
installed (`bash tools/setup.sh`) or this is not root.
"""

import os
import signal
import subprocess
import sys
import time

import tensorflow as tf

from command_line import status_file
from tests.cluster_testing import TRAIN_ARGS, wait_until
from tests.slurm_testing import (KILL_WAIT, SlurmTestCase, consecutive_free_ports,
                                 leftover_processes)
from towers.checkpoints import checkpoint_step

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, 'docs', 'cluster', 'train_ucf101.sbatch')
MAX_STEPS = 60
LIMIT = 240  # seconds one job may take on a loaded 2-core machine


class SlurmNodesTest(SlurmTestCase):

  NODES = 3

  def setUp(self):
    super().setUp()
    self.slurm.ensure_nodes_idle()
    self.work = self.create_tempdir().full_path
    self.model_dir = os.path.join(self.work, 'model')
    self.output = os.path.join(self.work, 'job.out')
    self.flagfile = os.path.join(self.work, 'train.flags')
    self.write_flags()
    # Every task of the job appends its status events to this one file.
    self.status = os.path.join(self.work, 'events.jsonl')
    self.env = {'PYTHON': sys.executable, 'PYTHONUNBUFFERED': '1', 'PYTHONPATH': ROOT,
                status_file.STATUS_FILE_ENV: self.status}

  def write_flags(self, *extra):
    with open(self.flagfile, 'w') as f:
      f.write('\n'.join([*TRAIN_ARGS, f'--max_steps={MAX_STEPS}', '--export_savedmodel=false',
                         '--worker_lost_secs=30', '--ps_unreachable_secs=30',
                         '--chief_lost_secs=30', *extra]) + '\n')

  def log(self):
    """The job's output so far ('' before it starts)."""
    try:
      with open(self.output) as f:
        return f.read()
    except FileNotFoundError:
      return ''

  def events(self, event):
    """The job's tasks' status events of kind `event` so far, in order."""
    return [e for e in status_file.read(self.status) if e['event'] == event]

  def batch_script(self, num_ps):
    ps_port = consecutive_free_ports(2)
    self.env.update(NUM_PS=str(num_ps), FLAGFILE=self.flagfile, MODEL_DIR=self.model_dir,
                    PS_PORT=str(ps_port), TRAINER_PORT=str(ps_port + 1))
    return ['--nodes=3', '--gres=none', f'--output={self.output}', SCRIPT]

  def node_program(self, *srun_args, num_ps=1):
    """The job that runs the node program under a plain srun, one task per node."""
    port = consecutive_free_ports(2)
    command = (f'srun --ntasks-per-node=1 {" ".join(srun_args)} {sys.executable} -m '
               f'towers.cluster.node_main --num_ps={num_ps} --ps_port={port} '
               f'--trainer_port={port + 1} --flagfile={self.flagfile} '
               f'--model_dir={self.model_dir}')
    return ['--nodes=3', f'--output={self.output}', f'--wrap={command}']

  def run_job(self, args):
    job = self.slurm.submit(args, cwd=ROOT, env=self.env)
    return job, self.slurm.wait_job(job, LIMIT)

  def assert_no_process_left(self, within_secs=5.0):
    deadline = time.time() + within_secs
    while leftover_processes(self.model_dir) and time.time() < deadline:
      time.sleep(0.2)
    self.assertEqual(leftover_processes(self.model_dir), '', 'no task outlives the job')

  def assert_resumed_from(self, step, max_steps):
    """The rerun's training session started at `step`, the latest checkpoint's (restored,
    not fresh variables): a session_ready event {step, max_steps} of the job's tasks."""
    rerun = [e['step'] for e in self.events('session_ready') if e['max_steps'] == max_steps]
    self.assertIn(step, rerun, self.log()[-4000:])

  def assert_completed(self, state):
    self.assertEqual(state, ('COMPLETED', '0:0'), self.log()[-4000:])
    self.assertGreaterEqual(checkpoint_step(self.model_dir), MAX_STEPS)
    self.assert_no_process_left()

  def test_the_batch_script_with_two_ps_on_three_nodes_completes_despite_a_lagging_evaluator(self):
    self.write_flags('--save_checkpoints_steps=5', '--keep_checkpoint_max=2',
                     '--synthetic_eval_examples=512', '--max_steps=300')
    _, state = self.run_job(self.batch_script(num_ps=2))
    self.assertEqual(state, ('COMPLETED', '0:0'), self.log()[-4000:])
    self.assertGreaterEqual(checkpoint_step(self.model_dir), 300)
    self.assert_no_process_left()
    log = self.log()
    nodes = {(e['source'], e['task_type'], e['index']): e['address'].split(':')[0]
             for e in self.events('cluster_task') if e['address']}
    self.assertEqual({key: nodes.get(key) for key in (('flags', 'ps', 0), ('flags', 'ps', 1),
                                                      ('flags', 'worker', 1))},
                     {('flags', 'ps', 0): 'n1', ('flags', 'ps', 1): 'n2',
                      ('flags', 'worker', 1): 'n3'}, log[-4000:])
    final = checkpoint_step(self.model_dir)
    evaluated = [e['step'] for e in self.events('evaluation')]
    self.assertNotEmpty(evaluated, log[-4000:])
    self.assertEqual(evaluated[-1], final, 'the evaluator evaluated the final checkpoint last')
    # It lagged: of the checkpoints written every 5 steps it skipped some, not the last.
    self.assertLess(len(set(evaluated)), final // 5, evaluated)
    ended = {e['task']: e['exit_code'] for e in self.events('task_ended')}
    self.assertEqual(ended.get('evaluator'), 0, log[-4000:])  # the evaluator did not fail

  def test_the_node_program_on_three_nodes_completes(self):
    _, state = self.run_job(self.node_program('--kill-on-bad-exit=1'))
    self.assert_completed(state)
    log = self.log()
    nodes = {(e['source'], e['task_type'], e['index']): e['address'].split(':')[0]
             for e in self.events('cluster_task') if e['address']}
    self.assertEqual((nodes.get(('flags', 'ps', 0)), nodes.get(('flags', 'chief', 0)),
                      nodes.get(('flags', 'worker', 1))), ('n1', 'n1', 'n3'), log[-4000:])
    self.assertLen(self.events('workers_finished'), 1,
                   'the chief heard from every worker before the final checkpoint')

  def test_scancel_stops_every_node_and_a_resubmission_resumes(self):
    args = self.batch_script(num_ps=1)
    self.write_flags('--save_checkpoints_steps=10', '--max_steps=100000')  # cancelled mid-run
    job = self.slurm.submit(args, cwd=ROOT, env=self.env)
    wait_until(lambda: (checkpoint_step(self.model_dir) or 0) >= 20, LIMIT,
               'a checkpoint at step >= 20')
    self.slurm.scancel(job)
    cancelled = time.time()
    self.assertEqual(self.slurm.wait_job(job, LIMIT)[0], 'CANCELLED')
    self.assert_no_process_left(within_secs=KILL_WAIT + 5 - (time.time() - cancelled))
    saved = checkpoint_step(self.model_dir)  # readable: a complete checkpoint
    self.write_flags('--save_checkpoints_steps=10', f'--max_steps={saved + 30}')
    _, state = self.run_job(args)
    self.assertEqual(state, ('COMPLETED', '0:0'), self.log()[-4000:])
    self.assertGreaterEqual(checkpoint_step(self.model_dir), saved + 30)
    self.assert_resumed_from(saved, saved + 30)
    self.assert_no_process_left()

  def test_a_lost_node_is_named_and_the_requeued_job_resumes(self):
    args = self.batch_script(num_ps=1)
    self.write_flags('--save_checkpoints_steps=10', '--max_steps=100000')
    job = self.slurm.submit(args, cwd=ROOT, env=self.env)
    wait_until(lambda: (checkpoint_step(self.model_dir) or 0) >= 20, LIMIT,
               'a checkpoint at step >= 20')
    self.slurm.lose_node('n3')  # its worker and the evaluator
    wait_until(lambda: 'Node failure on n3' in self.log(), LIMIT, 'Slurm to see n3 lost')
    wait_until(lambda: self.slurm.job_state(job)[0] == 'PENDING', LIMIT, 'the job requeued')
    self.assert_no_process_left(within_secs=KILL_WAIT + 5)
    saved = checkpoint_step(self.model_dir)
    self.write_flags('--save_checkpoints_steps=10', f'--max_steps={saved + 30}')
    self.slurm.start_node('n3')  # the node comes back: the requeued job runs again
    state = self.slurm.wait_job(job, LIMIT)
    self.assertEqual(state, ('COMPLETED', '0:0'), self.log()[-4000:])
    log = self.log()
    self.assertRegex(log, r'JOB \d+ ON n1 CANCELLED AT \S+ DUE TO NODE FAILURE')
    self.assert_resumed_from(saved, saved + 30)
    self.assertGreaterEqual(checkpoint_step(self.model_dir), saved + 30)
    self.assert_no_process_left()

  def test_the_time_limit_signal_stops_at_a_checkpoint_and_the_job_requeues_itself(self):
    with open(SCRIPT) as f:
      self.assertRegex(f.read(), r'#SBATCH --signal=USR1@\d+')
    args = self.batch_script(num_ps=1)
    # No periodic checkpoint after step 0: the one at the stop is the chief's doing.
    self.write_flags('--save_checkpoints_steps=100000', '--max_steps=100000')
    job = self.slurm.submit(args, cwd=ROOT, env=self.env)
    wait_until(lambda: [e for e in self.events('progress')
                        if e['max_steps'] == 100000 and e['step'] >= 20],
               LIMIT, 'training past step 20')
    # What Slurm sends before the time limit (--signal=USR1@N), sent now.
    subprocess.run([*self.slurm.client, 'scancel', '--signal=USR1', job], env=self.slurm.env,
                   check=True, timeout=30)
    # The script requeues the job once every process has ended; the chief's checkpoint at
    # the stop is the latest then.
    wait_until(lambda: self.events('requeue'), LIMIT, 'the job to requeue itself')
    saved = checkpoint_step(self.model_dir)
    self.assertGreaterEqual(saved, 20)
    self.assertIn(('trainer 0', 75), [(e['task'], e['exit_code'])
                                      for e in self.events('task_ended')])  # the time limit
    self.write_flags('--save_checkpoints_steps=100000', f'--max_steps={saved + 30}')
    state = self.slurm.wait_job(job, LIMIT)
    self.assertEqual(state, ('COMPLETED', '0:0'), self.log()[-4000:])
    self.assertEqual([(e['job'], e['stopped']) for e in self.events('requeue')],
                     [(job, 'chief')])
    self.assert_resumed_from(saved, saved + 30)  # the checkpoint the chief wrote at the stop
    self.assertEqual({e['exit_code'] for e in self.events('task_ended')} - {0, 75}, set(),
                     self.log()[-4000:])  # no process failed
    self.assertGreaterEqual(checkpoint_step(self.model_dir), saved + 30)
    self.assert_no_process_left()

  def test_a_chief_killed_for_good_ends_the_ps_and_workers_naming_it(self):
    self.write_flags('--max_steps=100000', '--chief_lost_secs=6')
    # Without --kill-on-bad-exit Slurm would let the others run on: they must see it.
    # ps 0 and the chief share n1 (its node program stops that ps); ps 1 is on n2.
    job = self.slurm.submit(self.node_program('--kill-on-bad-exit=0', num_ps=2), cwd=ROOT,
                            env=self.env)
    wait_until(lambda: (checkpoint_step(self.model_dir) or 0) >= 1, LIMIT, 'a checkpoint')
    chief = [pid for pid in self.slurm.node_pids('n1') if self.model_dir in _cmdline(pid)
             and '--task_index=0' in _cmdline(pid) and '--task_type=worker' in _cmdline(pid)]
    self.assertLen(chief, 1)
    os.kill(chief[0], signal.SIGKILL)
    killed = time.time()
    state = self.slurm.wait_job(job, LIMIT)
    self.assertLess(time.time() - killed, 6 + 60,
                    'within --chief_lost_secs=6 and a minute of checks and process exits')
    self.assertEqual(state[0], 'FAILED')
    lost = [e['address'].split(':')[0] for e in self.events('peer_lost')]
    # Workers 0 and 1, and ps 1 unless its node program stopped it first (worker 0 failed).
    self.assertIn(len(lost), (2, 3), self.log()[-3000:])
    self.assertEqual(set(lost), {'n1'}, self.log()[-3000:])
    self.assert_no_process_left()


def _cmdline(pid: int) -> str:
  try:
    with open(f'/proc/{pid}/cmdline', 'rb') as f:
      return f.read().replace(b'\0', b' ').decode()
  except OSError:
    return ''


if __name__ == '__main__':
  tf.test.main()

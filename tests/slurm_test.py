"""Specification: on a real Slurm (a private munged, slurmctld and slurmd started by this
test), a training job ends by itself when training ends: COMPLETED with exit code 0, the
checkpoint at max_steps, and no process of it left behind. Both launch paths: the batch
script of docs/cluster/ and the node program it runs (towers/cluster/node_main.py) under a
plain `srun`. A failing task makes the job FAILED with one line naming it; a failing
evaluator is named, but the job still completes; an evaluator stopped for the time limit
after training is over makes the job requeue itself to evaluate the final checkpoint.

Skips, with the reason, only where Slurm is not installed (`bash tools/setup.sh`
installs it) or this is not root.
"""

import os
import sys
import time

import tensorflow as tf

from command_line import status_file
from tests.cluster_testing import TRAIN_ARGS
from tests.slurm_testing import SlurmTestCase, consecutive_free_ports, leftover_processes
from towers.checkpoints import checkpoint_step

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, 'docs', 'cluster', 'train_ucf101.sbatch')
MAX_STEPS = 30
LIMIT = 480  # seconds one job may take on a loaded 2-core machine


class RealSlurmTest(SlurmTestCase):

  CRED_EXPIRE = 5  # a requeued job restarts after it (as MultiNodeSlurm's)

  def setUp(self):
    super().setUp()
    self.work = self.create_tempdir().full_path
    self.model_dir = os.path.join(self.work, 'model')
    self.flagfile = os.path.join(self.work, 'train.flags')
    with open(self.flagfile, 'w') as f:
      f.write('\n'.join([*TRAIN_ARGS, f'--max_steps={MAX_STEPS}', '--export_savedmodel=false',
                         '--worker_lost_secs=60', '--ps_unreachable_secs=60']) + '\n')
    # Every task of the job appends its status events to this one file.
    self.status = os.path.join(self.work, 'events.jsonl')
    self.env = {'PYTHON': sys.executable, 'PYTHONUNBUFFERED': '1',
                status_file.STATUS_FILE_ENV: self.status}

  def events(self, event):
    """The job's tasks' status events of kind `event`, in order."""
    return [e for e in status_file.read(self.status) if e['event'] == event]

  def assert_final_checkpoint_evaluated(self, log):
    evaluated = [e['step'] for e in self.events('evaluation')]
    self.assertNotEmpty(evaluated, log[-4000:])
    self.assertEqual(evaluated[-1], checkpoint_step(self.model_dir),
                     'the evaluator evaluated the final checkpoint last')

  def submit(self, args):
    output = os.path.join(self.work, 'job.out')
    job, code = self.slurm.sbatch([f'--output={output}', *args], cwd=ROOT, env=self.env,
                                  timeout_secs=LIMIT)
    with open(output) as f:
      log = f.read()
    return job, code, log

  def use_batch_script(self, failing: tuple[str, int] | None = None, once: bool = False
                       ) -> None:
    """Sets the batch script's variables: one ps, free ports. `failing` = (task type, exit
    code): a PYTHON under which tasks of that type exit at once with that code (with
    `once`, only the first time)."""
    ps_port = consecutive_free_ports(2)
    self.env.update(NUM_PS='1', FLAGFILE=self.flagfile, MODEL_DIR=self.model_dir,
                    PS_PORT=str(ps_port), TRAINER_PORT=str(ps_port + 1))
    if failing:
      task_type, code = failing
      self.env['PYTHON'] = os.path.join(self.work, 'python')
      first = os.path.join(self.work, 'failed_once')
      exit_line = f'[ -e {first} ] || {{ touch {first}; exit {code}; }}' if once else \
          f'exit {code}'
      with open(self.env['PYTHON'], 'w') as f:
        f.write(f'#!/bin/sh\ncase "$*" in *task_type={task_type}*) {exit_line};; esac\n'
                f'exec {sys.executable} "$@"\n')
      os.chmod(self.env['PYTHON'], 0o755)

  def assert_ended_cleanly(self, job, code, log):
    self.assertEqual(self.slurm.job_state(job), ('COMPLETED', '0:0'), log[-4000:])
    self.assertEqual(code, 0)
    self.assertGreaterEqual(checkpoint_step(self.model_dir), MAX_STEPS)
    time.sleep(1)
    self.assertEqual(leftover_processes(self.model_dir), '', 'no task outlives the job')

  def test_the_batch_script_on_one_node_completes(self):
    self.use_batch_script()
    job, code, log = self.submit(['--nodes=1', '--gres=none', SCRIPT])
    self.assert_ended_cleanly(job, code, log)
    self.assertEqual([e['message'] for e in self.events('training_over')], ['every worker done'])
    self.assert_final_checkpoint_evaluated(log)

  def test_the_node_program_under_srun_completes(self):
    # The node program as docs/cluster.md runs it inside an allocation, without the script.
    port = consecutive_free_ports(2)
    command = (f'srun --ntasks-per-node=1 --kill-on-bad-exit=1 {sys.executable} -m '
               f'towers.cluster.node_main --num_ps=1 --ps_port={port} --trainer_port={port + 1} '
               f'--flagfile={self.flagfile} --model_dir={self.model_dir}')
    job, code, log = self.submit(['--nodes=1', '--gres=none', f'--wrap={command}'])
    self.assert_ended_cleanly(job, code, log)
    roles = sorted((e['source'], e['task_type'], e['index'])
                   for e in self.events('cluster_task'))
    self.assertEqual(roles, [('flags', 'chief', 0), ('flags', 'evaluator', 0),
                             ('flags', 'ps', 0)], log[-4000:])
    self.assertEqual(sorted((e['task'], e['exit_code']) for e in self.events('task_ended')),
                     [('evaluator', 0), ('ps 0', 0), ('trainer 0', 0)], log[-4000:])

  def test_a_failing_task_fails_the_job_and_is_named(self):
    # A trainer that fails at once (as a bad flag would); ps and evaluator are real.
    self.use_batch_script(failing=('worker', 7))
    job, code, log = self.submit(['--nodes=1', '--gres=none', SCRIPT])
    self.assertEqual(self.slurm.job_state(job), ('FAILED', '7:0'), log[-3000:])
    self.assertNotEqual(code, 0)
    failed = [(e['task'], e['exit_code']) for e in self.events('task_ended')
              if e['exit_code'] != 0]
    self.assertEqual(failed[0], ('trainer 0', 7), log[-3000:])  # the one the job names
    time.sleep(1)
    self.assertEqual(leftover_processes(self.model_dir), '', 'no task outlives the job')

  def test_a_failing_evaluator_does_not_stop_training(self):
    # An evaluator that fails at once (as a crash would); ps and trainer are real.
    self.use_batch_script(failing=('evaluator', 5))
    job, code, log = self.submit(['--nodes=1', '--gres=none', SCRIPT])
    self.assert_ended_cleanly(job, code, log)
    ended = {e['task']: e['exit_code'] for e in self.events('task_ended')}
    self.assertEqual(ended, {'ps 0': 0, 'trainer 0': 0, 'evaluator': 5}, log[-3000:])

  def test_an_evaluator_stopped_for_the_time_limit_after_training_evaluates_on_requeue(self):
    # Training completes; the evaluator stops for the time limit (exit 75) before the final
    # evaluation, the first time only: the job requeues itself, and its next run only
    # evaluates the final checkpoint.
    self.use_batch_script(failing=('evaluator', 75), once=True)
    job, code, log = self.submit(['--nodes=1', '--gres=none', SCRIPT])
    self.assert_ended_cleanly(job, code, log)
    self.assertEqual([(e['job'], e['stopped']) for e in self.events('requeue')],
                     [(job, 'evaluator')], log[-3000:])
    self.assert_final_checkpoint_evaluated(log)
    evaluator = [e['exit_code'] for e in self.events('task_ended') if e['task'] == 'evaluator']
    self.assertEqual(evaluator, [75, 0], log[-3000:])  # stopped, then evaluated on requeue


if __name__ == '__main__':
  tf.test.main()

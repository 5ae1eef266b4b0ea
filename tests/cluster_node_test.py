"""Specification: the Slurm node program (towers/cluster/node.py, node_main.py) applies the one
supervisor policy to its node's processes: a trainer or ps that fails ends the others and
gives the node its exit code; an evaluator that fails does not; exit 75 (the time limit) is no
failure and leaves the marker the batch script requeues on; each end is a task_ended event
(killed by signal N: 128 + N). A --num_ps the job's nodes cannot hold stops it before any
process starts, naming the option. Processes are stood for by a fake interpreter that sleeps
and exits as its role's arguments say."""

import os
import stat
import time

from absl.testing import absltest

from tests import program_runs
from towers.cluster.node import Role, run_node

FAKE_PYTHON = ('#!/bin/sh\n'
               'for a in "$@"; do case $a in sleep=*) sleep "${a#sleep=}";; '
               'kill) kill -9 $$;; exit=*) exit "${a#exit=}";; esac; done\n')


def _write_executable(path, text):
  with open(path, 'w') as f:
    f.write(text)
  os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)


class NodePolicyTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.work = self.create_tempdir().full_path
    self.python = os.path.join(self.work, 'python')
    _write_executable(self.python, FAKE_PYTHON)
    self.marker = os.path.join(self.work, 'stopped')

  def run_node(self, *roles):
    """(exit code, {task: exit code} of the task_ended events, seconds taken)."""
    began = time.time()
    with program_runs.recorded_events() as events:
      code = run_node(roles, [], self.python, self.marker, poll_secs=0.05)
    ended = {e['task']: e['exit_code'] for e in events if e['event'] == 'task_ended'}
    return code, ended, time.time() - began

  def test_a_failing_trainer_ends_the_others_with_its_code(self):
    code, ended, took = self.run_node(Role('ps 0', 'ps', ('sleep=60',), gpu=False),
                                      Role('trainer 0', 'chief', ('exit=7',), gpu=True))
    self.assertEqual((code, ended), (7, {'trainer 0': 7}))
    self.assertLess(took, 30, 'the ps was stopped, not waited for')

  def test_a_failing_ps_ends_the_others(self):
    code, ended, _ = self.run_node(Role('ps 1', 'ps', ('sleep=0.2', 'exit=3'), gpu=False),
                                   Role('trainer 1', 'worker', ('sleep=60',), gpu=True))
    self.assertEqual((code, ended), (3, {'ps 1': 3}))

  def test_a_killed_trainer_is_reported_as_the_shell_does(self):
    code, ended, _ = self.run_node(Role('trainer 2', 'worker', ('kill',), gpu=True))
    self.assertEqual((code, ended), (137, {'trainer 2': 137}))

  def test_a_failing_evaluator_never_ends_training(self):
    code, ended, _ = self.run_node(Role('evaluator', 'evaluator', ('exit=5',), gpu=False),
                                   Role('trainer 9', 'worker', ('sleep=0.5',), gpu=True))
    self.assertEqual((code, ended), (0, {'evaluator': 5, 'trainer 9': 0}))

  def test_a_stop_for_the_time_limit_is_no_failure_and_marks_who_stopped(self):
    code, ended, _ = self.run_node(Role('ps 0', 'ps', ('sleep=0.3',), gpu=False),
                                   Role('trainer 0', 'chief', ('exit=75',), gpu=True))
    self.assertEqual((code, ended), (0, {'trainer 0': 75, 'ps 0': 0}))
    self.assertTrue(os.path.exists(f'{self.marker}.chief'))
    self.assertFalse(os.path.exists(f'{self.marker}.evaluator'))

  def test_the_ps_and_evaluator_see_no_gpu(self):
    record = os.path.join(self.work, 'visible')
    _write_executable(self.python, f'#!/bin/sh\necho "$1 ${{CUDA_VISIBLE_DEVICES-unset}}" '
                      f'>> {record}\n')
    with absltest.mock.patch.dict(os.environ, {'CUDA_VISIBLE_DEVICES': '0'}):
      self.run_node(Role('ps 0', 'ps', (), gpu=False), Role('evaluator', 'evaluator', (), gpu=False),
                    Role('trainer 0', 'chief', (), gpu=True))
    with open(record) as f:
      self.assertCountEqual(f.read().split('\n')[:-1], ['-m ', '-m ', '-m 0'])


class NodeProgramRefusesTest(absltest.TestCase):

  def test_more_ps_than_nodes_is_refused_before_any_process_starts(self):
    bin_dir = self.create_tempdir().full_path
    _write_executable(os.path.join(bin_dir, 'scontrol'), '#!/bin/sh\nprintf "n1\\nn2\\n"\n')
    started = os.path.join(bin_dir, 'started')
    _write_executable(os.path.join(bin_dir, 'python'), f'#!/bin/sh\ntouch {started}\n')
    done = program_runs.run(
        'towers.cluster.node_main', '--num_ps=3', f'--python={bin_dir}/python',
        env={'PATH': f'{bin_dir}:{os.environ["PATH"]}', 'SLURM_JOB_NODELIST': 'n[1-2]',
             'SLURM_NODEID': '0'}, timeout=120)
    self.assertEqual((done.code, done.error_options), (2, ['num_ps']), done.output())
    self.assertFalse(os.path.exists(started))

  def test_outside_a_slurm_job_step_is_refused_naming_the_variable(self):
    done = program_runs.run('towers.cluster.node_main', env={'SLURM_JOB_NODELIST': 'n1'},
                            timeout=120)
    self.assertEqual(done.code, 2, done.output())
    self.assertIn('SLURM_NODEID', done.error['message'])


if __name__ == '__main__':
  absltest.main()

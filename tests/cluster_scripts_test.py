"""Specification: the Slurm batch script in docs/cluster/ starts, on 10 nodes, exactly one
chief, nine workers, a ps on every node and one evaluator, and every command it runs resolves to
a valid cluster role. Slurm itself is faked: `scontrol` lists nodes, `srun` runs the step
(towers/cluster/node_main.py) once per node, and the `python` of the processes it starts records
their arguments."""

import os
import stat
import subprocess
import sys

import tensorflow as tf
from absl import flags

from towers import flags as towers_flags
from towers.cluster import spec as cluster

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, 'docs', 'cluster', 'train_ucf101.sbatch')
NODES = [f'node{i:02d}' for i in range(1, 11)]


def _write_executable(path, text):
  with open(path, 'w') as f:
    f.write(text)
  os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)


class SlurmScriptTest(tf.test.TestCase):

  def run_script(self):
    bin_dir = self.create_tempdir().full_path
    record = os.path.join(bin_dir, 'commands.txt')
    _write_executable(os.path.join(bin_dir, 'scontrol'),
                      '#!/bin/sh\nprintf "%s\\n" ' + ' '.join(NODES) + '\n')
    _write_executable(os.path.join(bin_dir, 'srun'),
                      '#!/bin/bash\nwhile [[ $1 == --* ]]; do shift; done\n'
                      'for i in $(seq 0 9); do SLURM_NODEID=$i "$@"; done\n')
    # The node program runs; the training processes it starts only record their arguments.
    _write_executable(os.path.join(bin_dir, 'fake_python'),
                      f'#!/bin/sh\ncase "$2" in towers.cluster.node_main) exec {sys.executable} '
                      f'"$@";; esac\necho "$*" >> {record}\n')
    env = dict(os.environ, PATH=f'{bin_dir}:{os.environ["PATH"]}', SLURM_JOB_NODELIST='x',
               SLURM_JOB_NUM_NODES='10',
               PYTHON=os.path.join(bin_dir, 'fake_python'))
    result = subprocess.run(['bash', SCRIPT], env=env, capture_output=True, text=True,
                            timeout=120, cwd=ROOT, check=False)
    self.assertEqual(result.returncode, 0, result.stderr)
    with open(record) as f:
      return [line.split()[2:] for line in f.read().splitlines()]  # drop "-m towers.train_main"

  def test_every_node_gets_a_valid_role(self):
    roles = []
    for argv in self.run_script():
      flag_values = flags.FlagValues()
      towers_flags.define_flags(flag_values)
      flag_values(['train'] + [a for a in argv if not a.startswith('--flagfile')])
      task = cluster.resolve_cluster(towers_flags.params_from_flags(flag_values, '/'), {})
      roles.append((task.task_type, task.task_index, task.address))
    types = [r[0] for r in roles]
    self.assertEqual(types.count('chief'), 1)
    self.assertEqual(types.count('worker'), 9)
    self.assertEqual(types.count('ps'), 10)  # one per node by default
    self.assertEqual(types.count('evaluator'), 1)
    self.assertIn(('chief', 0, 'node01:2223'), roles)
    self.assertIn(('ps', 1, 'node02:2222'), roles)
    self.assertIn(('worker', 8, 'node10:2223'), roles)


if __name__ == '__main__':
  tf.test.main()

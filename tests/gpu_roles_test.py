"""Specification: on every launch path (flags, TF_CONFIG, the Slurm node program, local_cluster,
the Slurm batch script) a ps sees no GPU, the evaluator none unless --evaluator_gpu, each
trainer only its own GPUs; every role's session config lets processes share a GPU
(allow_growth, --gpu_memory_fraction) and the ps and the CPU evaluator create no GPU
device. GPUs are stood for by CUDA_VISIBLE_DEVICES ids: no GPU is needed."""

import json
import os
import stat
import subprocess
import sys

import tensorflow as tf

from benchmarks.program_cluster import ProgramCluster
from tests import program_runs
from tests.cluster_testing import params_from_argv
from towers.cluster import gpus, node, spec
from towers.cluster.base_runner import server_config
from towers.cluster.local_cluster import LocalCluster
from towers.estimator import run_config
from towers.params import make_params
from towers.training import cluster_recipe

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, 'docs', 'cluster', 'train_ucf101.sbatch')


def visible(params, task, environ):
  return gpus.plan_role_gpus(params, task, environ, gpus.machine_gpus(environ, '/nonexistent'))


def _write_executable(path, text):
  with open(path, 'w') as f:
    f.write(text)
  os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)


class RolesSeeTheirGpusTest(tf.test.TestCase):

  def test_flags_two_trainers_sharing_a_machine_each_get_their_gpus(self):
    hosts = ['--ps_hosts=a:1,b:1', '--worker_hosts=a:2,a:3,b:2', '--num_towers=2']
    env = {'CUDA_VISIBLE_DEVICES': '4,5,6,7'}
    seen = {}
    for role in (['--task_type=ps', '--task_index=0'], ['--task_type=ps', '--task_index=1'],
                 ['--task_type=worker', '--task_index=0'], ['--task_type=worker', '--task_index=1'],
                 ['--task_type=worker', '--task_index=2'], ['--task_type=evaluator']):
      params = params_from_argv(hosts + role)
      task = spec.resolve_cluster(params, {})
      seen[task.name] = visible(params, task, env).visible
    self.assertEqual(seen, {'ps 0 (a:1)': (), 'ps 1 (b:1)': (), 'chief 0 (a:2)': ('4', '5'),
                            'worker 0 (a:3)': ('6', '7'), 'worker 1 (b:2)': ('4', '5'),
                            'evaluator 0': ()})

  def test_the_evaluator_shares_a_gpu_only_when_asked(self):
    params = params_from_argv(['--ps_hosts=a:1', '--worker_hosts=a:2', '--task_type=evaluator',
                               '--evaluator_gpu'])
    task = spec.resolve_cluster(params, {})
    self.assertIsNone(visible(params, task, {'CUDA_VISIBLE_DEVICES': '0'}).visible)

  def test_tf_config_gives_the_same_roles(self):
    cluster = {'chief': ['n1:2'], 'worker': ['n1:3', 'n2:2'], 'ps': ['n1:1']}
    env = {'CUDA_VISIBLE_DEVICES': '0,1'}
    params = make_params(num_towers=1)
    seen = {}
    for task_type, index in (('ps', 0), ('chief', 0), ('worker', 0), ('worker', 1),
                             ('evaluator', 0)):
      task = spec.resolve_cluster(params, {'TF_CONFIG': json.dumps(
          {'cluster': cluster, 'task': {'type': task_type, 'index': index}})})
      seen[(task_type, index)] = visible(params, task, env).visible
    self.assertEqual(seen, {('ps', 0): (), ('chief', 0): ('0',), ('worker', 0): ('1',),
                            ('worker', 1): ('0',), ('evaluator', 0): ()})

  def test_slurm_node_program_roles(self):
    # The node program on two nodes of one GPU each: ps 0 and the chief on n0, worker 0 and
    # the evaluator on n1; the ps and the evaluator start with no GPU visible.
    params = make_params(num_towers=1)
    seen = {}
    for node_id in (0, 1):
      for role in node.node_roles(['n0', 'n1'], node_id, 1, 8888, 8889):
        env = {'SLURM_JOB_ID': '7', 'CUDA_VISIBLE_DEVICES': '0' if role.gpu else ''}
        task = spec.resolve_cluster(params_from_argv(['--num_towers=1', *role.args]), {})
        seen[task.name] = visible(params, task, env).visible
    self.assertEqual(seen, {'ps 0 (n0:8888)': (), 'chief 0 (n0:8889)': ('0',),
                            'worker 0 (n1:8889)': ('0',), 'evaluator 0': ()})

  def test_slurm_per_task_gpus_are_kept(self):
    # srun --gpus-per-task=1: Slurm already gave each of a node's two trainers its own GPU
    # (this is the second trainer on n0).
    params = params_from_argv(['--num_towers=1', '--ps_hosts=n1:1', '--worker_hosts=n0:2,n0:3',
                               '--task_type=worker', '--task_index=1'])
    env = {'SLURM_JOB_ID': '7', 'CUDA_VISIBLE_DEVICES': '1'}
    task = spec.resolve_cluster(params, env)
    self.assertEqual(visible(params, task, env).visible, ('1',))

  def test_local_cluster_gpus_per_worker(self):
    env = {'CUDA_VISIBLE_DEVICES': '0,1,2,3'}
    for cluster in (LocalCluster(1, 2, [], echo=None),
                    ProgramCluster(1, 2, [], program=(), echo=None, tf_config_role=True)):
      seen = {}
      for task in cluster.tasks.values():
        params = params_from_argv(['--gpus_per_worker=2'] + cluster.role_args(task))
        resolved = spec.resolve_cluster(params, {})
        seen[task.name] = visible(params, resolved, env).visible
      self.assertEqual(seen, {'ps0': (), 'chief': ('0', '1'), 'worker1': ('2', '3'),
                              'evaluator': ()})

  def test_trainers_that_cannot_each_get_their_gpus_stop_with_the_fix(self):
    cluster = LocalCluster(1, 2, [], echo=None)
    worker = cluster.tasks['worker1']
    params = params_from_argv(cluster.role_args(worker))  # num_towers=-1: every GPU
    task = spec.resolve_cluster(params, {})
    with self.assertRaises(spec.ClusterError) as caught:  # 2 trainers share every GPU
      visible(params, task, {'CUDA_VISIBLE_DEVICES': '0,1'})
    self.assertEqual((caught.exception.option, caught.exception.value), ('gpus_per_worker', 2))
    params = params_from_argv(['--num_towers=1'] + cluster.role_args(worker))
    with self.assertRaises(spec.ClusterError) as caught:  # the machine gives 1 GPU
      visible(params, task, {'CUDA_VISIBLE_DEVICES': '0'})
    self.assertEqual((caught.exception.option, caught.exception.value), ('gpus_per_worker', 1))
    params = params_from_argv(['--num_towers=2', '--gpus_per_worker=1'] +
                              cluster.role_args(worker))
    with self.assertRaises(spec.ClusterError) as caught:  # 1 GPU per trainer for 2 towers
      visible(params, task, {'CUDA_VISIBLE_DEVICES': '0,1'})
    self.assertEqual((caught.exception.option, caught.exception.value), ('gpus_per_worker', 1))
    params = params_from_argv(['--num_towers=1'] + cluster.role_args(worker))
    # Without any GPU there is nothing to share: CPU clusters start as before.
    self.assertIsNone(visible(params, task, {'CUDA_VISIBLE_DEVICES': ''}).visible)

  def test_batch_script_every_process_sees_its_gpus(self):
    bin_dir = self.create_tempdir().full_path
    record = os.path.join(bin_dir, 'commands.txt')
    _write_executable(os.path.join(bin_dir, 'scontrol'),
                      '#!/bin/sh\nprintf "%s\\n" ' + ' '.join(f'node{i}' for i in range(10)) + '\n')
    _write_executable(os.path.join(bin_dir, 'srun'),
                      '#!/bin/bash\nwhile [[ $1 == --* ]]; do shift; done\n'
                      'for i in $(seq 0 9); do SLURM_NODEID=$i "$@"; done\n')
    # The node program runs; the training processes it starts only record what they see.
    _write_executable(os.path.join(bin_dir, 'fake_python'),
                      f'#!/bin/sh\ncase "$2" in towers.cluster.node_main) exec {sys.executable} '
                      f'"$@";; esac\necho "${{CUDA_VISIBLE_DEVICES-unset}} $*" >> {record}\n')
    env = dict(os.environ, PATH=f'{bin_dir}:{os.environ["PATH"]}', SLURM_JOB_NODELIST='x',
               SLURM_JOB_NUM_NODES='10',
               PYTHON=os.path.join(bin_dir, 'fake_python'), CUDA_VISIBLE_DEVICES='0')
    result = subprocess.run(['bash', SCRIPT], env=env, capture_output=True, text=True,
                            timeout=120, cwd=ROOT, check=False)
    self.assertEqual(result.returncode, 0, result.stderr)
    with open(record) as f:
      lines = [line.split(' ') for line in f.read().splitlines()]
    seen = {}
    for line in lines:
      given, argv = line[0], line[3:]  # drop "-m towers.train_main"
      params = params_from_argv([a for a in argv if not a.startswith('--flagfile')])
      task = spec.resolve_cluster(params, {})
      role = visible(params, task, {'CUDA_VISIBLE_DEVICES': given})
      seen.setdefault(task.task_type, set()).add(
          ','.join(role.visible) if role.visible is not None else given)
    self.assertEqual(seen, {'ps': {''}, 'evaluator': {''}, 'chief': {'0'}, 'worker': {'0'}})


class SessionConfigPerRoleTest(tf.test.TestCase):

  def test_trainers_grow_gpu_memory_and_take_the_fraction_asked(self):
    cluster = LocalCluster(1, 2, [], echo=None)
    for fraction in (0.0, 0.45):
      for name in ('chief', 'worker1'):
        params = params_from_argv([f'--gpu_memory_fraction={fraction}', '--num_towers=2'] +
                                  cluster.role_args(cluster.tasks[name]))
        task = spec.resolve_cluster(params, {})
        for config in (server_config(cluster_recipe(params), task),
                       run_config(params, task).session_config):
          self.assertTrue(config.gpu_options.allow_growth)
          self.assertAlmostEqual(config.gpu_options.per_process_gpu_memory_fraction, fraction)
          self.assertNotIn('GPU', config.device_count)

  def test_ps_and_cpu_evaluator_create_no_gpu_device(self):
    cluster = LocalCluster(1, 1, [], echo=None)
    ps = params_from_argv(cluster.role_args(cluster.tasks['ps0']))
    self.assertEqual(server_config(cluster_recipe(ps), spec.resolve_cluster(ps, {})).device_count['GPU'], 0)
    for extra, gpu_devices in (([], 0), (['--evaluator_gpu'], None)):
      params = params_from_argv(extra + cluster.role_args(cluster.tasks['evaluator']))
      config = run_config(params, spec.resolve_cluster(params, {})).session_config
      self.assertTrue(config.gpu_options.allow_growth)
      self.assertEqual(config.device_count.get('GPU'), gpu_devices)

  def test_single_machine_training_grows_gpu_memory(self):
    config = run_config(make_params(model_dir=self.get_temp_dir())).session_config
    self.assertTrue(config.gpu_options.allow_growth)
    self.assertNotIn('GPU', config.device_count)


class TrainBinarySetsVisibilityFirstTest(tf.test.TestCase):

  def test_the_evaluator_hides_gpus_before_preflight(self):
    # The train binary decides visibility as soon as it knows the role: an evaluator whose
    # data is missing stops at preflight, with its visibility already decided.
    data_dir = os.path.join(self.get_temp_dir(), 'missing')
    done = program_runs.run(
        'towers.train_main', '--ps_hosts=localhost:1', '--worker_hosts=localhost:2',
        '--task_type=evaluator',
        '--data_source=tfrecord', f'--data_dir={data_dir}', f'--model_dir={self.get_temp_dir()}',
        env={'CUDA_VISIBLE_DEVICES': '0,1'}, timeout=300)
    self.assertEqual(done.code, 2, done.output())
    names = [e['event'] for e in done.events]
    self.assertEqual(names, ['gpus', 'error'], done.output())
    self.assertEqual((done.events[0]['task'], done.events[0]['visible']), ('evaluator 0', []))
    self.assertEqual((done.error['error'], done.error_options),
                     ('PreflightError', ['data_dir']), done.output())

  def test_visibility_set_after_tensorflow_initialised_is_refused(self):
    code = ('import sys\n'
            'import tensorflow as tf\n'
            'tf.constant(1)\n'
            'from towers.cluster import gpus\n'
            'try:\n'
            '  gpus.apply_role_gpus(gpus.RoleGpus((), "test"))\n'
            'except gpus.VisibilityTooLate:\n'
            '  sys.exit(7)\n')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    result = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True,
                            text=True, timeout=300, check=False)
    self.assertEqual(result.returncode, 7, result.stderr)


if __name__ == '__main__':
  tf.test.main()

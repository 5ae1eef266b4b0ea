"""Specification: a cluster comes from flags, TF_CONFIG or SLURM, and any malformed or
inconsistent description is an error that names the field."""

import json
import socket

import tensorflow as tf

from towers.cluster import spec as cluster
from towers.cluster.spec import ClusterError
from towers.params import make_params


def tf_config(cluster_spec, task_type='chief', index=0):
  return json.dumps({'cluster': cluster_spec, 'task': {'type': task_type, 'index': index}})


GOOD = {'chief': ['h0:2222'], 'worker': ['h1:2222', 'h2:2222'], 'ps': ['h3:2222', 'h4:2222']}


class TfConfigTest(tf.test.TestCase):

  def test_a_kubeflow_style_tf_config_is_read(self):
    task = cluster.from_tf_config(tf_config(GOOD, 'worker', 1))
    self.assertEqual((task.task_type, task.task_index, task.address), ('worker', 1, 'h2:2222'))
    self.assertEqual(task.num_workers, 3)
    self.assertEqual(task.tf_config['cluster'], GOOD)

  def test_no_chief(self):
    with self.assertRaisesRegex(ClusterError, r'TF_CONFIG.cluster.chief: lists 0 tasks'):
      cluster.from_tf_config(tf_config({'worker': ['h1:1'], 'ps': ['h2:1']}, 'worker', 0))

  def test_two_chiefs(self):
    with self.assertRaisesRegex(ClusterError, r'TF_CONFIG.cluster.chief: lists 2 tasks'):
      cluster.from_tf_config(tf_config({'chief': ['h0:1', 'h1:1']}))

  def test_index_out_of_range(self):
    with self.assertRaisesRegex(ClusterError,
                                r'task.index=2 is out of range: TF_CONFIG.cluster.worker has 2'):
      cluster.from_tf_config(tf_config(GOOD, 'worker', 2))

  def test_evaluator_inside_the_training_cluster(self):
    spec = dict(GOOD, evaluator=['h9:1'])
    with self.assertRaisesRegex(ClusterError, r'TF_CONFIG.cluster.evaluator: the evaluator must '
                                'not be part of the training cluster'):
      cluster.from_tf_config(tf_config(spec, 'evaluator', 0))

  def test_the_evaluator_task_outside_the_cluster_is_fine(self):
    self.assertIsNone(cluster.from_tf_config(tf_config(GOOD, 'evaluator', 0)).address)

  def test_malformed_address_json_and_task(self):
    with self.assertRaisesRegex(ClusterError, r"TF_CONFIG.cluster.ps\[1\]='h4' is not"):
      cluster.from_tf_config(tf_config(dict(GOOD, ps=['h3:1', 'h4'])))
    with self.assertRaisesRegex(ClusterError, 'TF_CONFIG is not valid JSON'):
      cluster.from_tf_config('{cluster:')
    with self.assertRaisesRegex(ClusterError, "task.type='boss' is not one of"):
      cluster.from_tf_config(tf_config(GOOD, 'boss'))
    with self.assertRaisesRegex(ClusterError, r'cluster.ps\[0\] and TF_CONFIG.cluster.chief\[0\]'
                                ' both use h0:2222'):
      cluster.from_tf_config(tf_config(dict(GOOD, ps=['h0:2222'])))

  def test_a_taken_port_is_named(self):
    with socket.socket() as busy:
      busy.bind(('127.0.0.1', 0))
      busy.listen()
      port = busy.getsockname()[1]
      task = cluster.from_tf_config(tf_config({'chief': [f'localhost:{port}']}))
      with self.assertRaisesRegex(ClusterError, f'chief\\[0\\]=localhost:{port}: port {port} is '
                                  'already in use'):
        cluster.check_port_free(task)


class FlagsAndSlurmTest(tf.test.TestCase):

  def test_flags_make_the_first_worker_the_chief(self):
    params = make_params(ps_hosts=['p:1'], worker_hosts=['w0:1', 'w1:1', 'w2:1'],
                         task_type='worker', task_index=2)
    task = cluster.resolve_cluster(params, environ={})
    self.assertEqual((task.task_type, task.task_index, task.source), ('worker', 1, 'flags'))
    self.assertEqual(task.cluster['chief'], ('w0:1',))
    chief = cluster.resolve_cluster(make_params(worker_hosts=['w0:1'], task_type='worker'), {})
    self.assertEqual(chief.task_type, 'chief')

  def test_flags_errors_name_the_flag(self):
    with self.assertRaisesRegex(ClusterError, '--worker_hosts: empty'):
      cluster.from_flags(make_params(ps_hosts=['p:1'], task_type='ps'))
    with self.assertRaisesRegex(ClusterError, '--task_index=5 is out of range'):
      cluster.from_flags(make_params(worker_hosts=['w:1'], task_type='worker', task_index=5))

  def test_flags_win_over_tf_config_and_nothing_means_local(self):
    params = make_params(worker_hosts=['w0:1'], task_type='chief')
    env = {'TF_CONFIG': tf_config(GOOD)}
    self.assertEqual(cluster.resolve_cluster(params, env).source, 'flags')
    self.assertEqual(cluster.resolve_cluster(make_params(), env).source, 'TF_CONFIG')
    self.assertIsNone(cluster.resolve_cluster(make_params(), {}))

  def test_slurm_job_step(self):
    env = {'SLURM_JOB_ID': '7', 'SLURM_PROCID': '2', 'SLURM_STEP_NUM_TASKS': '4',
           'SLURM_STEP_NODELIST': 'node[01-03]', 'SLURM_STEP_TASKS_PER_NODE': '2,1(x2)'}
    task = cluster.resolve_cluster(make_params(slurm_num_ps=1, slurm_port=9000), env)
    self.assertEqual(task.source, 'SLURM')
    self.assertEqual(task.cluster, {'ps': ('node01:9000',), 'chief': ('node01:9001',),
                                    'worker': ('node02:9000', 'node03:9000')})
    self.assertEqual((task.task_type, task.task_index), ('worker', 0))

  def test_slurm_outside_a_job_step(self):
    with self.assertRaisesRegex(ClusterError, 'SLURM_PROCID: not set'):
      cluster.resolve_cluster(make_params(), {'SLURM_JOB_ID': '7'})


if __name__ == '__main__':
  tf.test.main()

"""Specification: a cluster comes from flags, TF_CONFIG or, under Slurm, the node program's
layout of the job's nodes (towers/cluster/node.py), and any malformed or inconsistent
description is an error that names the field."""

import json
import socket

import tensorflow as tf

from tests.cluster_testing import params_from_argv
from towers.cluster import node, spec as cluster
from towers.cluster.spec import ClusterError
from towers.params import make_params


def tf_config(cluster_spec, task_type='chief', index=0):
  return json.dumps({'cluster': cluster_spec, 'task': {'type': task_type, 'index': index}})


GOOD = {'chief': ['h0:2222'], 'worker': ['h1:2222', 'h2:2222'], 'ps': ['h3:2222', 'h4:2222']}


class ClusterErrorTestCase(tf.test.TestCase):

  def assertFault(self, caught, field, value):
    """The ClusterError caught names `field` and its offending `value`."""
    self.assertEqual((caught.exception.field, caught.exception.value), (field, value),
                     str(caught.exception))


class TfConfigTest(ClusterErrorTestCase):

  def test_a_kubeflow_style_tf_config_is_read(self):
    task = cluster.from_tf_config(tf_config(GOOD, 'worker', 1))
    self.assertEqual((task.task_type, task.task_index, task.address), ('worker', 1, 'h2:2222'))
    self.assertEqual(task.num_workers, 3)
    self.assertEqual(task.tf_config['cluster'], GOOD)

  def test_no_chief(self):
    with self.assertRaises(ClusterError) as caught:
      cluster.from_tf_config(tf_config({'worker': ['h1:1'], 'ps': ['h2:1']}, 'worker', 0))
    self.assertFault(caught, 'TF_CONFIG.cluster.chief', 0)

  def test_two_chiefs(self):
    with self.assertRaises(ClusterError) as caught:
      cluster.from_tf_config(tf_config({'chief': ['h0:1', 'h1:1']}))
    self.assertFault(caught, 'TF_CONFIG.cluster.chief', 2)

  def test_index_out_of_range(self):
    with self.assertRaises(ClusterError) as caught:
      cluster.from_tf_config(tf_config(GOOD, 'worker', 2))
    self.assertFault(caught, 'task.index', 2)

  def test_an_evaluator_listed_in_the_cluster_is_left_out_of_training(self):
    # Kubeflow's operator lists every replica type in the cluster, the evaluator included.
    spec = dict(GOOD, evaluator=['h9:1'])
    for task_type, index in (('chief', 0), ('worker', 1), ('ps', 1), ('evaluator', 0)):
      task = cluster.from_tf_config(tf_config(spec, task_type, index))
      self.assertEqual(task.cluster, {job: tuple(hosts) for job, hosts in GOOD.items()})
      self.assertEqual(task.tf_config['cluster'], GOOD)
      self.assertEqual((task.task_type, task.task_index), (task_type, index))
    with self.assertRaises(ClusterError) as caught:
      cluster.from_tf_config(tf_config(dict(GOOD, evaluator=['h9']), 'evaluator', 0))
    self.assertFault(caught, 'TF_CONFIG.cluster.evaluator[0]', 'h9')

  def test_the_evaluator_task_outside_the_cluster_is_fine(self):
    self.assertIsNone(cluster.from_tf_config(tf_config(GOOD, 'evaluator', 0)).address)

  def test_an_index_that_is_not_a_non_negative_integer_is_named(self):
    # JSON's 0.7, "1", true and -1: none is a task of the cluster (0.7 ran as worker 0).
    for index in (0.7, 1.0, '1', True, -1, None):
      with self.subTest(index=index), self.assertRaises(ClusterError) as caught:
        cluster.from_tf_config(tf_config(GOOD, 'worker', index))
      self.assertFault(caught, 'TF_CONFIG.task.index', index)

  def test_a_task_without_index_is_named(self):
    # Defaulted to 0 here, while TensorFlow's RunConfig refused it with a traceback.
    with self.assertRaises(ClusterError) as caught:
      cluster.from_tf_config(json.dumps({'cluster': GOOD, 'task': {'type': 'worker'}}))
    self.assertFault(caught, 'TF_CONFIG.task.index', None)

  def test_a_role_name_other_than_the_four_is_named(self):
    # Kubeflow's operator writes the replica type in lower case; other spellings are refused.
    for task_type in ('Worker', 'master', 'trainer', '', None, ['worker']):
      with self.subTest(task_type=task_type), self.assertRaises(ClusterError) as caught:
        cluster.from_tf_config(tf_config(GOOD, task_type, 0))
      self.assertFault(caught, 'TF_CONFIG.task.type', task_type)

  def test_malformed_address_json_and_task(self):
    with self.assertRaises(ClusterError) as caught:
      cluster.from_tf_config(tf_config(dict(GOOD, ps=['h3:1', 'h4'])))
    self.assertFault(caught, 'TF_CONFIG.cluster.ps[1]', 'h4')
    with self.assertRaises(ClusterError) as caught:
      cluster.from_tf_config('{cluster:')
    self.assertFault(caught, 'TF_CONFIG', None)
    with self.assertRaises(ClusterError) as caught:
      cluster.from_tf_config(tf_config(GOOD, 'boss'))
    self.assertFault(caught, 'TF_CONFIG.task.type', 'boss')
    # The chief is listed first: the ps reusing its address is the one named.
    with self.assertRaises(ClusterError) as caught:
      cluster.from_tf_config(tf_config(dict(GOOD, ps=['h0:2222'])))
    self.assertFault(caught, 'TF_CONFIG.cluster.ps[0]', 'h0:2222')

  def test_a_chief_alone_is_refused_naming_the_missing_ps(self):
    # Its variables would go to a ps job that does not exist: TensorFlow's placement error,
    # after the run started, was all the user saw.
    with self.assertRaises(ClusterError) as caught:
      cluster.from_tf_config(tf_config({'chief': ['h0:1']}))
    self.assertFault(caught, 'TF_CONFIG.cluster.ps', 0)
    with self.assertRaises(ClusterError) as caught:
      cluster.resolve_cluster(make_params(worker_hosts=['h0:1'], task_type='chief'), environ={})
    self.assertFault(caught, 'cluster (from flags).ps', 0)

  def test_a_taken_port_is_named(self):
    with socket.socket() as busy:
      busy.bind(('127.0.0.1', 0))
      busy.listen()
      port = busy.getsockname()[1]
      task = cluster.from_tf_config(tf_config({'chief': [f'localhost:{port}'],
                                               'ps': ['localhost:1']}))
      with self.assertRaises(ClusterError) as caught:
        cluster.check_port_free(task)
      self.assertFault(caught, 'chief[0]', port)


class FlagsAndSlurmTest(ClusterErrorTestCase):

  def test_each_trainer_reads_its_own_share_of_the_data(self):
    config = {'chief': ['a:1'], 'worker': ['b:1', 'c:1'], 'ps': ['d:1']}
    want = {('chief', 0): (3, 0), ('worker', 0): (3, 1), ('worker', 1): (3, 2),
            ('ps', 0): None, ('evaluator', 0): None}
    for (kind, index), shard in want.items():
      task = cluster.from_tf_config(json.dumps({'cluster': config,
                                                'task': {'type': kind, 'index': index}}))
      context = task.input_context()
      got = context and (context.num_input_pipelines, context.input_pipeline_id)
      self.assertEqual(got, shard, (kind, index))

  def test_flags_make_the_first_worker_the_chief(self):
    params = make_params(ps_hosts=['p:1'], worker_hosts=['w0:1', 'w1:1', 'w2:1'],
                         task_type='worker', task_index=2)
    task = cluster.resolve_cluster(params, environ={})
    self.assertEqual((task.task_type, task.task_index, task.source), ('worker', 1, 'flags'))
    self.assertEqual(task.cluster['chief'], ('w0:1',))
    chief = cluster.resolve_cluster(make_params(ps_hosts=['p:1'], worker_hosts=['w0:1'],
                                                task_type='worker'), {})
    self.assertEqual(chief.task_type, 'chief')

  def test_flags_errors_name_the_flag(self):
    with self.assertRaises(ClusterError) as caught:
      cluster.from_flags(make_params(ps_hosts=['p:1'], task_type='ps'))
    self.assertFault(caught, '--worker_hosts', None)
    self.assertEqual(caught.exception.option, 'worker_hosts')
    with self.assertRaises(ClusterError) as caught:
      cluster.from_flags(make_params(worker_hosts=['w:1'], task_type='worker', task_index=5))
    self.assertFault(caught, '--task_index', 5)
    self.assertEqual(caught.exception.option, 'task_index')

  def test_flags_win_over_tf_config_and_nothing_means_local(self):
    params = make_params(ps_hosts=['p:1'], worker_hosts=['w0:1'], task_type='chief')
    env = {'TF_CONFIG': tf_config(GOOD)}
    self.assertEqual(cluster.resolve_cluster(params, env).source, 'flags')
    self.assertEqual(cluster.resolve_cluster(make_params(), env).source, 'TF_CONFIG')
    self.assertIsNone(cluster.resolve_cluster(make_params(), {}))

  # A Slurm job of 3 nodes, as `scontrol show hostnames node[01-03]` lists them.
  NODE_LIST = {'node[01-03]': ['node01', 'node02', 'node03']}

  def slurm_roles(self, node_id, num_ps=1):
    """Node `node_id`'s processes under the node program, each resolved from its flags."""
    nodes, index = node.job_node({'SLURM_JOB_NODELIST': 'node[01-03]',
                                  'SLURM_NODEID': str(node_id)}, self.NODE_LIST.get)
    return [cluster.resolve_cluster(params_from_argv(role.args), {})
            for role in node.node_roles(nodes, index, num_ps, 9000, 9001)]

  def test_slurm_roles_are_one_cluster_on_every_node(self):
    want_cluster = {'ps': ('node01:9000',), 'chief': ('node01:9001',),
                    'worker': ('node02:9001', 'node03:9001')}
    tasks = [task for node_id in range(3) for task in self.slurm_roles(node_id)]
    for task in tasks:
      self.assertEqual(task.source, 'flags')
      self.assertEqual(task.cluster, want_cluster)
    self.assertEqual([(t.task_type, t.task_index, t.address) for t in tasks],
                     [('ps', 0, 'node01:9000'), ('chief', 0, 'node01:9001'),
                      ('worker', 0, 'node02:9001'), ('evaluator', 0, None),
                      ('worker', 1, 'node03:9001')])

  def test_slurm_ps_tasks_spread_over_the_first_nodes(self):
    roles = self.slurm_roles(1, num_ps=2)
    self.assertEqual(roles[0].cluster['ps'], ('node01:9000', 'node02:9000'))
    self.assertEqual((roles[0].task_type, roles[0].task_index), ('ps', 1))
    self.assertEqual(self.slurm_roles(2, num_ps=2)[0].task_type, 'evaluator')

  def test_slurm_a_ps_count_that_cannot_be_honoured_is_named(self):
    with self.assertRaises(ClusterError) as caught:
      self.slurm_roles(0, num_ps=4)
    self.assertFault(caught, '--num_ps', 4)
    self.assertEqual(caught.exception.option, 'num_ps')

  def test_slurm_a_node_outside_the_job_is_named(self):
    with self.assertRaises(ClusterError) as caught:
      self.slurm_roles(3)
    self.assertFault(caught, 'SLURM_NODEID', '3')

  def test_slurm_outside_a_job_step(self):
    with self.assertRaises(ClusterError) as caught:
      node.job_node({'SLURM_JOB_ID': '7', 'SLURM_JOB_NODELIST': 'node[01-03]'},
                    self.NODE_LIST.get)
    self.assertFault(caught, 'SLURM_NODEID', None)


if __name__ == '__main__':
  tf.test.main()

"""Specification: in a cluster, variables live on the ps tasks, each worker's towers run
on that worker's own devices, and a worker pulls each parameter ONCE and pushes ONE
averaged gradient per variable per step, however many towers it has and however many
micro-batches it accumulates (`accumulate_steps`)."""

import json

import numpy as np
import tensorflow as tf

from model_fn import tower_model_fn
from model_fn.gradients import SYNC_SCOPE
from tests import tower_testing
from towers.cluster import spec as cluster
from towers.cluster.base_runner import start_server
from towers.estimator import run_config
from towers.params import make_params
from towers.training import cluster_recipe

tf1 = tf.compat.v1

PARAMS = dict(model='c3d_small', num_classes=3, clip_frames=4, crop_size=16, batch_size=8,
              num_towers=2, model_dir='/tmp/unused_cluster_placement')


def build_training_graph(tf_config, params):
  """The chief's training graph, placed exactly as the Estimator places it."""
  config = run_config(params, cluster.from_tf_config(json.dumps(tf_config)))
  clips = np.random.default_rng(0).uniform(-1, 1, (8, 4, 16, 16, 3)).astype(np.float32)
  labels = (np.arange(8) % 3).astype(np.int64)
  with tf1.device(tower_testing.estimator_device_fn(config)):
    spec = tower_model_fn.make_model_fn()(tf.constant(clips), tf.constant(labels),
                                          tf.estimator.ModeKeys.TRAIN, params, config)
  return spec, config


def job_of(device):
  return tf.DeviceSpec.from_string(device).job


class ClusterGraphTest(tf.test.TestCase):

  def test_one_gradient_per_variable_crosses_to_the_ps(self):
    self._check_one_pull_and_one_push_per_variable(make_params(PARAMS, num_towers=4,
                                                               weight_decay=1e-4))

  def test_micro_batches_pull_and_push_once_per_step(self):
    # 2 micro-batches of 4 clips over 4 towers: 8 towers' gradients, still one push each.
    names = self._check_one_pull_and_one_push_per_variable(make_params(
        PARAMS, num_towers=4, weight_decay=1e-4, batch_size=4, accumulate_steps=2))
    self.assertTrue(any(n.startswith('micro_batch_1/tower_3/') for n in names))

  def _check_one_pull_and_one_push_per_variable(self, params):
    tf_config = {'cluster': {'chief': ['localhost:1'], 'worker': ['localhost:2'],
                             'ps': ['localhost:3', 'localhost:4']},
                 'task': {'type': 'chief', 'index': 0}}
    with tf.Graph().as_default() as graph:
      build_training_graph(tf_config, params)
      trainable = tf1.trainable_variables()
      ps_tasks = {tf.DeviceSpec.from_string(v.device).task for v in trainable}
      self.assertEqual({job_of(v.device) for v in trainable}, {'ps'})
      self.assertEqual(ps_tasks, {0, 1}, 'the placement uses both ps tasks')
      pushed = {}  # tensors produced on the worker and consumed on a ps
      for op in graph.get_operations():
        if job_of(op.device) != 'ps':
          continue
        for tensor in op.inputs:
          if job_of(tensor.op.device) == 'chief':
            pushed[tensor.name] = tensor
      per_tower = [n for n in pushed if n.startswith(('tower_', 'micro_batch_', 'accumulate'))]
      self.assertEqual(per_tower, [], 'no per-tower or per-micro-batch gradient is sent to a ps')
      gradients = [t for n, t in pushed.items() if n.startswith(SYNC_SCOPE)]
      self.assertLen(gradients, len(trainable))
      bn_steps = [n for n in pushed if n.startswith('batch_norm_updates')]
      self.assertLen(bn_steps, 2 * 3)  # moving mean and variance of c3d_small's 3 BN layers
      others = {n: t.shape for n, t in pushed.items()
                if n not in bn_steps and not n.startswith(SYNC_SCOPE)}
      self.assertTrue(all(shape.num_elements() == 1 for shape in others.values()),
                      f'only scalars (learning rate, ...) may cross besides: {others}')
      # Pulls: each variable is read onto ONE worker device, shared by the 4 towers.
      for v in trainable:
        reads = [op for op in v.handle.consumers() if op.type == 'ReadVariableOp']
        pulled_to = [consumer.device for read in reads for consumer in read.outputs[0].consumers()
                     if job_of(consumer.device) == 'chief']
        self.assertEqual(pulled_to, ['/job:chief/task:0/device:CPU:0'], v.op.name)
      # Moving statistics are only assigned in training: each is read and updated on its
      # ps from the one statistic pushed, never read onto the worker.
      moving = [v for v in tf1.global_variables() if 'moving_' in v.op.name]
      self.assertLen(moving, 2 * 3)
      for v in moving:
        reads = [op for op in v.handle.consumers() if op.type == 'ReadVariableOp']
        pulled_to = [consumer.name for read in reads for consumer in read.outputs[0].consumers()
                     if job_of(consumer.device) == 'chief']
        self.assertEqual(pulled_to, [], v.op.name)
      gradient_bytes = sum(t.shape.num_elements() * 4 for t in gradients)
      variable_bytes = sum(v.shape.num_elements() * 4 for v in trainable)
      self.assertEqual(gradient_bytes, variable_bytes)  # not 4x: one push, not one per tower
      return {op.name for op in graph.get_operations()}

  def test_chief_and_workers_filter_devices_to_ps_and_themselves(self):
    tf_config = {'cluster': {'chief': ['localhost:1'], 'worker': ['localhost:2'],
                             'ps': ['localhost:3']}, 'task': {'type': 'worker', 'index': 0}}
    config = run_config(make_params(PARAMS), cluster.from_tf_config(json.dumps(tf_config)))
    self.assertEqual(list(config.session_config.device_filters), ['/job:ps', '/job:worker/task:0'])
    self.assertEqual(config.session_config.device_count['CPU'], 2)
    self.assertEqual(config.session_config.inter_op_parallelism_threads, 2 * 2 + 2)

  def test_one_tower_keeps_tensorflow_s_default_threads(self):
    tf_config = {'cluster': {'chief': ['localhost:1'], 'ps': ['localhost:3']},
                 'task': {'type': 'chief', 'index': 0}}
    config = run_config(make_params(PARAMS, num_towers=1),
                        cluster.from_tf_config(json.dumps(tf_config)))
    self.assertEqual(config.session_config.inter_op_parallelism_threads, 0)  # one per core


class ClusterDevicesTest(tf.test.TestCase):

  def test_each_tower_runs_on_its_own_device_of_the_worker_server(self):
    ps_port, chief_port = cluster.pick_free_ports(2)
    spec = {'chief': [f'localhost:{chief_port}'], 'ps': [f'localhost:{ps_port}']}
    params = make_params(PARAMS)
    ps = cluster.validate(spec, 'ps', 0, 'test')
    chief = cluster.validate(spec, 'chief', 0, 'test')
    start_server(cluster_recipe(params), ps)
    chief_server = start_server(cluster_recipe(params), chief)
    tf_config = {'cluster': spec, 'task': {'type': 'chief', 'index': 0}}
    with tf.Graph().as_default():
      train_op = build_training_graph(tf_config, params)[0].train_op
      metadata = tf1.RunMetadata()
      config = tf1.ConfigProto(allow_soft_placement=True)  # as the Estimator's session
      with tf1.Session(chief_server.target, config=config) as sess:
        sess.run(tf1.global_variables_initializer())
        sess.run(train_op, options=tower_testing.full_trace(), run_metadata=metadata)
    ran_on = {}
    for device_stats in metadata.step_stats.dev_stats:
      spec_ = tf.DeviceSpec.from_string(device_stats.device)
      for node in device_stats.node_stats:
        ran_on.setdefault(node.node_name, set()).add(
            f'{spec_.job}:{spec_.device_type}:{spec_.device_index}')
    for i in range(2):
      convs = [n for n in ran_on if n.startswith(f'tower_{i}/') and n.endswith('Conv3D')]
      self.assertNotEmpty(convs)
      for name in convs:
        self.assertEqual(ran_on[name], {f'chief:CPU:{i}'}, name)
    applies = [n for n in ran_on if 'Apply' in n]
    self.assertNotEmpty(applies)
    self.assertTrue(all(ran_on[n] == {'ps:CPU:0'} for n in applies), applies)


if __name__ == '__main__':
  tf.test.main()

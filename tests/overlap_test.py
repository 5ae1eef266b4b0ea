"""Specification: a worker pushes each gradient as soon as backprop has computed it.

In the real training graph of a cluster (the chief's graph, placed by the Estimator's
device setter on two ps tasks, 2 towers), the op on the ps that takes the LAST layer's
kernel gradient (the optimizer's apply, or `SyncReplicasOptimizer`'s accumulator
apply_grad) does not depend, through data or control inputs, on the gradient ops of
the FIRST convolution: TensorFlow can push and apply the late layers' gradients while
backprop still runs through the early layers. That holds for asynchronous and
synchronous training, float32 and bfloat16 transfers. Clipping by global norm needs
every gradient first, so with `clip_gradient_norm` > 0 it does depend (no overlap).

The emulator's per-layer compute chunks (`emulated_task.compute_waits`) have the same
shape: the last variable's gradient is ready after one backward chunk, the first's
after all of them.
"""

import json
import os

import tensorflow as tf

from benchmarks import emulated_task
from model_fn import tower_model_fn
from tests import tower_testing
from towers.cluster import spec as cluster
from towers.estimator import run_config
from towers.params import make_params

tf1 = tf.compat.v1

TF_CONFIG = {'cluster': {'chief': ['localhost:1'], 'worker': ['localhost:2'],
                         'ps': ['localhost:3', 'localhost:4']},
             'task': {'type': 'chief', 'index': 0}}
PARAMS = dict(model='c3d_small', num_classes=3, clip_frames=4, crop_size=16, batch_size=8,
              num_towers=2, weight_decay=1e-4, model_dir='/tmp/unused_overlap_test')
FIRST_CONV = 'c3d_small/block1/conv_3d/w'
LAST_KERNEL = 'c3d_small/logits/kernel'


def training_graph(**overrides) -> tf.Graph:
  """The chief's training graph, placed as the Estimator places it."""
  params = make_params(PARAMS, **overrides)
  config = run_config(params, cluster.from_tf_config(json.dumps(TF_CONFIG)))
  graph = tf.Graph()
  with graph.as_default():
    with tf1.device(tower_testing.estimator_device_fn(config)):
      tower_model_fn.make_model_fn()(tf.zeros([8, 4, 16, 16, 3]), tf.zeros([8], tf.int64),
                                     tf.estimator.ModeKeys.TRAIN, params, config)
  return graph


def gradient_consumer(graph: tf.Graph, variable_name: str) -> tf.Operation:
  """The op on the ps that takes `variable_name`'s pushed gradient: its accumulator's
  apply_grad under SyncReplicasOptimizer, else the optimizer's apply op."""
  variable = next(v for v in graph.get_collection(tf1.GraphKeys.TRAINABLE_VARIABLES)
                  if v.op.name == variable_name)
  accumulated = [op for op in graph.get_operations()
                 if op.type == 'ResourceAccumulatorApplyGradient'
                 and op.inputs[0].op.get_attr('shared_name').decode() ==
                 f'{variable.name}/grad_accum']
  applied = [op for op in graph.get_operations() if op.type.startswith('ResourceApply')
             and op.inputs[0] is variable.handle]
  found = accumulated or applied
  if len(found) != 1:
    raise AssertionError(f'{variable_name}: expected one op taking its gradient, got {found}')
  assert found[0].device.startswith('/job:ps/'), found[0].device
  return found[0]


def first_conv_gradient_ops(graph: tf.Graph) -> set[str]:
  """Every tower's op computing the first convolution's kernel gradient."""
  scope = FIRST_CONV.rsplit('/', 1)[0] + '/'
  names = {op.name for op in graph.get_operations()
           if op.type == 'Conv3DBackpropFilterV2' and scope in op.name}
  assert len(names) == PARAMS['num_towers'], names
  return names


class PushOverlapTest(tf.test.TestCase):

  def check(self, overlaps: bool, **overrides):
    graph = training_graph(**overrides)
    first_conv_grads = first_conv_gradient_ops(graph)
    # The test can fail: the first conv's own gradient consumer needs them.
    self.assertContainsSubset(first_conv_grads,
                              tower_testing.ancestors(gradient_consumer(graph, FIRST_CONV)))
    late = tower_testing.ancestors(gradient_consumer(graph, LAST_KERNEL)) & first_conv_grads
    if overlaps:
      self.assertEmpty(late, f'{LAST_KERNEL}\'s push waits for the first conv\'s backprop')
    else:
      self.assertEqual(late, first_conv_grads)

  def test_async_pushes_late_layers_during_backprop(self):
    self.check(overlaps=True)

  def test_sync_replicas_accumulates_late_layers_during_backprop(self):
    self.check(overlaps=True, sync_replicas=True)

  def test_bfloat16_transfers_overlap(self):
    self.check(overlaps=True, transfer_dtype='bfloat16', sync_replicas=True)

  def test_clipping_by_global_norm_waits_for_every_gradient(self):
    self.check(overlaps=False, clip_gradient_norm=1.0, sync_replicas=True)


class EmulatedComputeTest(tf.test.TestCase):
  """`compute_waits`: forward chunks after each pull in creation order, backward chunks
  in reverse, each variable's gradient ready after its own backward chunk."""

  SHARES = [emulated_task.ComputeShare('a', 0.1, 0.2), emulated_task.ComputeShare('b', 0.3, 0.4)]

  def test_shares_counted_once_reach_every_worker_unchanged(self):
    path = os.path.join(self.get_temp_dir(), 'compute.json')
    self.assertEqual(emulated_task.write_compute_shares(self.SHARES, path), path)
    self.assertEqual(emulated_task.read_compute_shares(path), self.SHARES)

  def build(self, shares):
    graph = tf.Graph()
    with graph.as_default():
      pulled = {name: tf.identity(tf.zeros([2]), name=f'pulled_{name}') for name in 'ab'}
      done = emulated_task.compute_waits(pulled, shares, 1.0)
    return graph, done

  def chunks(self, names: set[str]) -> list[str]:
    return sorted(n for n in names if n.startswith('emulated_'))

  def test_last_variable_is_ready_after_one_backward_chunk(self):
    _, done = self.build(self.SHARES)
    self.assertEqual(self.chunks(tower_testing.ancestors(done['b'].op)),
                     ['emulated_forward', 'emulated_forward_1'])  # + done['b'] itself
    self.assertEqual(done['b'].op.name, 'emulated_backward')
    self.assertEqual(self.chunks(tower_testing.ancestors(done['a'].op)),
                     ['emulated_backward', 'emulated_forward', 'emulated_forward_1'])
    # The first forward chunk waits for its own pull only, the second for both.
    first, second = (self.graph_op(done, n) for n in ('emulated_forward', 'emulated_forward_1'))
    self.assertEqual(sorted(n for n in tower_testing.ancestors(first) if n.startswith('pulled')),
                     ['pulled_a'])
    self.assertEqual(sorted(n for n in tower_testing.ancestors(second) if n.startswith('pulled')),
                     ['pulled_a', 'pulled_b'])

  def graph_op(self, done, name):
    return done['a'].graph.get_operation_by_name(name)

  def test_accumulation_chunks_one_micro_batch_each_side(self):
    graph = tf.Graph()
    with graph.as_default():
      pulled = {name: tf.identity(tf.zeros([2]), name=f'pulled_{name}') for name in 'ab'}
      done = emulated_task.compute_waits(pulled, self.SHARES, 4.0, micro_batches=4)
    self.assertEqual(self.chunks(tower_testing.ancestors(done['b'].op)),
                     ['emulated_forward', 'emulated_forward_1',
                      'emulated_other_micro_batches'])

  def test_one_block_without_shares(self):
    _, done = self.build(None)
    self.assertIs(done['a'], done['b'])
    self.assertEqual(sorted(n for n in tower_testing.ancestors(done['a'].op) if n.startswith('pulled')),
                     ['pulled_a', 'pulled_b'])

  def test_chunks_of_i3d_add_up_to_the_step(self):
    shares = emulated_task.compute_shares('i3d', 101)
    self.assertAlmostEqual(sum(s.forward + s.backward for s in shares), 1.0)
    names = [name for name, _ in emulated_task.variable_shapes('i3d', 101)]
    self.assertEqual([s.name for s in shares], names)
    # I3D's last block (Mixed_5c, 7x7 pixels at 224) holds 22% of the parameters and
    # 1.1% of the FLOPs at 64x224x224: its pushes can hide behind earlier layers.
    late = sum(s.forward + s.backward for s in shares if '/Mixed_5c/' in s.name)
    self.assertLess(late, 0.05)


if __name__ == '__main__':
  tf.test.main()

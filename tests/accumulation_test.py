"""Specification: `--accumulate_steps=k` runs k micro-batches per step, one update.

* One step with k micro-batches of b clips equals one step without accumulation on the
  same k*b clips (network without batch norm; weight decay on), for 1 and 2 towers; with
  batch norm it equals a step whose k*T towers each take one micro-batch tower's clips,
  moving statistics included (each micro-batch tower is normalised by its own batch).
* On each tower device micro-batch j+1's forward pass waits for micro-batch j's backward
  pass there (peak activation memory of one micro-batch), and only there.
* With 16-bit transfers every micro-batch reads the one pulled copy of each variable.
* A step reads k*b clips from the input function.
(Traffic per step in a cluster: tests/cluster_placement_test.py; the learning-rate
scaling: tests/optimization_test.py.)
"""

import numpy as np
import tensorflow as tf

from command_line.options import OptionsError
from model_fn import accumulation, tower_model_fn
from input_fn import factory
from model_fn.layers import TowerContext
from model_fn.networks import c3d_small
from tests import tower_testing
from towers.params import make_params

tf1 = tf.compat.v1

CLASSES = 5


def _params(batch_norm=False, **overrides):
  values = dict(model='c3d_small', num_classes=CLASSES, clip_frames=4, crop_size=16,
                batch_norm=batch_norm, optimizer='sgd', lr_schedule='constant',
                lr_values=[0.5], weight_decay=0.01, model_dir='/tmp/unused_accumulation')
  values.update(overrides)
  return make_params(values)


def _data(batch, seed=0):
  rng = np.random.default_rng(seed)
  clips = rng.uniform(-1, 1, size=(batch, 4, 16, 16, 3)).astype(np.float32)
  labels = rng.integers(0, CLASSES, size=batch).astype(np.int64)
  return clips, labels


def _initial_values(batch_norm):
  with tf.Graph().as_default():
    tf1.set_random_seed(1)
    c3d_small.build(CLASSES, use_batch_norm=batch_norm)(tf.zeros([2, 4, 16, 16, 3]),
                                                         TowerContext(is_training=True))
    with tf1.Session() as sess:
      sess.run(tf1.global_variables_initializer())
      return {v.op.name: sess.run(v) for v in tf1.global_variables()}


def step(clips, labels, init, params):
  """Every global variable after one training step of the tower model_fn from `init`."""
  return tower_testing.model_fn_step(tower_model_fn.make_model_fn(), clips, labels, init,
                                     params, trainable_only=False)


class AccumulationEquivalenceTest(tf.test.TestCase):

  def _check(self, expected, actual, init):
    self.assertCountEqual(expected.keys(), actual.keys())
    for name, value in expected.items():
      if name == 'global_step':
        self.assertEqual(value, 1)
        self.assertEqual(actual[name], 1, 'one update per step, not one per micro-batch')
        continue
      self.assertGreater(np.abs(value - init[name]).max(), 0.0, f'{name} did not move')
      self.assertAllClose(value, actual[name], rtol=1e-5, atol=1e-6, msg=name)

  def _check_against_one_big_batch(self, towers, k, b):
    clips, labels = _data(k * b)
    init = _initial_values(batch_norm=False)
    expected = step(clips, labels, init, _params(num_towers=towers, batch_size=k * b))
    actual = step(clips, labels, init, _params(num_towers=towers, batch_size=b,
                                               accumulate_steps=k))
    self._check(expected, actual, init)

  def test_one_tower_two_micro_batches(self):
    self._check_against_one_big_batch(towers=1, k=2, b=4)

  def test_two_towers_three_micro_batches(self):
    self._check_against_one_big_batch(towers=2, k=3, b=4)

  def test_batch_norm_micro_batches_are_towers(self):
    # k=2 micro-batches of 4 on one device = 2 towers of 4 on two devices: same batch
    # statistics per group of 4 clips, moving averages from the first group (bn_update=main).
    clips, labels = _data(8)
    init = _initial_values(batch_norm=True)
    expected = step(clips, labels, init, _params(True, num_towers=2, batch_size=8))
    actual = step(clips, labels, init, _params(True, num_towers=1, batch_size=4,
                                               accumulate_steps=2))
    self.assertTrue(any('moving_mean' in name for name in expected))
    self._check(expected, actual, init)


class MicroBatchOrderTest(tf.test.TestCase):

  def test_each_micro_batch_starts_after_the_previous_ones_backward_on_its_device(self):
    k, towers = 3, 2
    params = _params(True, num_towers=towers, batch_size=4, accumulate_steps=k)
    clips, labels = _data(k * 4)
    with tf.Graph().as_default() as graph:
      tower_model_fn.make_model_fn()(tf.constant(clips), tf.constant(labels),
                                     tf.estimator.ModeKeys.TRAIN, params)
      ops = graph.get_operations()
    device = lambda op: tf.DeviceSpec.from_string(op.device).device_index  # noqa: E731
    scope = lambda j: f'micro_batch_{j}/' if j else ''  # noqa: E731

    def of(j, d, op_type):
      found = [op for op in ops if op.type == op_type and device(op) == d and
               op.name.startswith(f'{scope(j)}tower_{d}')]
      self.assertNotEmpty(found, (j, d, op_type))
      return found

    for j in range(k - 1):
      for d in range(towers):
        backward = {op.name for op in of(j, d, 'Conv3DBackpropFilterV2')}
        other_device = {op.name for op in of(j, 1 - d, 'Conv3DBackpropFilterV2')}
        for conv in of(j + 1, d, 'Conv3D'):
          before = tower_testing.ancestors(conv)
          self.assertTrue(backward <= before, f'{conv.name} may run before micro-batch {j}'
                          f'\'s backward on device {d}: {sorted(backward - before)[:2]}')
          self.assertFalse(other_device & before, f'{conv.name} waits for another device')


class SixteenBitTransferTest(tf.test.TestCase):

  def test_micro_batches_share_one_pull_per_variable(self):
    params = _params(num_towers=2, batch_size=4, accumulate_steps=2, transfer_dtype='bfloat16')
    clips, labels = _data(8)
    with tf.Graph().as_default() as graph:
      tower_model_fn.make_model_fn()(tf.constant(clips), tf.constant(labels),
                                     tf.estimator.ModeKeys.TRAIN, params)
      names = [op.name.split('/')[-1] for op in graph.get_operations() if op.type == 'Cast']
      trainable = len(tf1.trainable_variables())
    self.assertEqual(sum(n.startswith('pull_cast') for n in names), trainable)
    self.assertEqual(sum(n.startswith('push_cast') for n in names), trainable)


class MirroredRefusesAccumulationTest(tf.test.TestCase):

  def test_the_tf_distribute_model_fn_stops_instead_of_ignoring_it(self):
    params = _params(batch_size=4, accumulate_steps=2)  # strategy=towers, as the peers pass
    clips, labels = _data(8)
    with tf.Graph().as_default():
      with self.assertRaises(OptionsError) as caught:
        tower_model_fn.make_model_fn(strategy='mirrored')(tf.constant(clips), tf.constant(labels),
                                                          tf.estimator.ModeKeys.TRAIN, params)
    self.assertEqual(caught.exception.option, 'accumulate_steps')


class AccumulationInputTest(tf.test.TestCase):

  def test_a_batch_of_batch_size_alone_is_refused(self):
    clips, labels = _data(4)
    with tf.Graph().as_default():
      with self.assertRaises(accumulation.InputBatchError) as caught:
        tower_model_fn.make_model_fn()(tf.constant(clips), tf.constant(labels),
                                       tf.estimator.ModeKeys.TRAIN,
                                       _params(batch_size=4, accumulate_steps=2))
    self.assertEqual((caught.exception.expected, caught.exception.given), (8, 4))

  def test_a_dynamic_batch_of_batch_size_alone_fails_its_step(self):
    # dataset.batch(4) without drop_remainder: the batch dimension is None in the graph.
    with tf.Graph().as_default():
      clips = tf.compat.v1.placeholder(tf.float32, [None, 2, 3])
      parts = accumulation.micro_batches(clips, 2, 4)
      with tf.compat.v1.Session() as session:
        self.assertLen(session.run(parts, {clips: np.zeros((8, 2, 3))}), 2)
        with self.assertRaisesRegex(tf.errors.InvalidArgumentError, 'accumulate_steps=2 needs'):
          session.run(parts, {clips: np.zeros((4, 2, 3))})

  def test_a_step_reads_k_micro_batches(self):
    params = _params(batch_size=4, accumulate_steps=3, synthetic_train_examples=32)
    dataset = factory.make_input_fn(params, tf.estimator.ModeKeys.TRAIN)()
    clips_spec = dataset.element_spec[0]
    clips_spec = clips_spec['clips'] if isinstance(clips_spec, dict) else clips_spec
    self.assertEqual(clips_spec.shape[0], 12)
    self.assertEqual(params.examples_per_step, 12)


if __name__ == '__main__':
  tf.test.main()

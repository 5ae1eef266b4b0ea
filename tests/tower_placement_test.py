"""Specification: tower i's ops really execute on device i, and variables live where the
placement policy says (checked from the executed step's trace, not the requested device)."""

import numpy as np
import tensorflow as tf

from command_line.options import options_named
from model_fn import tower_model_fn
from model_fn.gradients import SYNC_SCOPE
from model_fn.variable_placement import GreedyBytesPlacement, SingleDevicePlacement, make_placement
from tests import tower_testing
from towers.params import make_params

tf1 = tf.compat.v1


def _run_traced_step(num_towers, variable_device, tower_devices=()):
  """One traced training step; returns (node -> devices it ran on, variable -> device).
  `tower_devices` default: CPU:0 .. CPU:num_towers-1."""
  params = make_params(model='c3d_small', num_classes=3, clip_frames=4, crop_size=16,
                       batch_size=8, num_towers=num_towers, variable_device=variable_device,
                       tower_devices=tower_devices, model_dir='/tmp/unused')
  num_cpus = max([num_towers] + [int(d.rsplit(':', 1)[1]) + 1 for d in tower_devices])
  clips = np.random.default_rng(0).uniform(-1, 1, (8, 4, 16, 16, 3)).astype(np.float32)
  labels = np.arange(8, dtype=np.int64) % 3
  with tf.Graph().as_default():
    spec = tower_model_fn.make_model_fn()(tf.constant(clips), tf.constant(labels),
                                          tf.estimator.ModeKeys.TRAIN, params)
    variables = {v.op.name: v.device for v in tf1.global_variables()}
    metadata = tf1.RunMetadata()
    with tf1.Session(config=tower_testing.cpu_session_config(num_cpus)) as sess:
      sess.run(tf1.global_variables_initializer())
      sess.run(spec.train_op, options=tower_testing.full_trace(), run_metadata=metadata)
  return tower_testing.devices_that_ran(metadata), variables


class TowerPlacementTest(tf.test.TestCase):

  def test_each_towers_convolutions_run_on_its_own_device(self):
    ran, _ = _run_traced_step(num_towers=3, variable_device='cpu')
    for i in range(3):
      convs = {n: d for n, d in ran.items()
               if n.startswith(f'tower_{i}/') and n.endswith('Conv3D')}
      self.assertLen(convs, 3, f'tower {i} should run 3 forward convolutions: {convs}')
      for name, devices in convs.items():
        self.assertEqual(devices, {f'CPU:{i}'}, name)
      backprop = [n for n in ran if n.startswith(f'tower_{i}/gradients/') and 'Conv3D' in n]
      self.assertNotEmpty(backprop)
      for name in backprop:
        self.assertEqual(ran[name], {f'CPU:{i}'}, name)

  def test_gradient_average_runs_on_the_variables_device(self):
    ran, variables = _run_traced_step(num_towers=2, variable_device='balanced')
    averages = [n for n in ran if n.startswith(SYNC_SCOPE) and n.endswith('AddN')]
    self.assertNotEmpty(averages)
    used = set().union(*(ran[n] for n in averages))
    self.assertEqual(used, {'CPU:0', 'CPU:1'}, 'balanced placement averages on both devices')

  # Towers on CPU:1 and CPU:2, so that the host (CPU:0) and the first tower differ.
  TOWERS = ('/device:CPU:1', '/device:CPU:2')

  def _check_variables_on(self, variable_device, expected):
    ran, variables = _run_traced_step(2, variable_device, self.TOWERS)
    network_variables = {n: d for n, d in variables.items() if n.startswith('c3d_small/')}
    # 3 blocks x (w, beta, moving_mean, moving_variance) + the logits' kernel and bias,
    # and the Momentum slot of each of the 8 trainable ones.
    self.assertLen(network_variables, 14 + 8)
    for name, device in network_variables.items():
      self.assertEqual(device, f'/device:{expected}', name)
    updates = [n for n in ran if n.endswith('ResourceApplyMomentum')]
    self.assertLen(updates, 8)  # the trainable ones: 3 x (w, beta) + kernel and bias
    for name in updates:
      self.assertEqual(ran[name], {expected}, name)

  def test_host_placement_puts_every_variable_on_the_host(self):
    self._check_variables_on('cpu', 'CPU:0')

  def test_gpu0_placement_puts_every_variable_on_the_first_tower_device(self):
    self._check_variables_on('gpu0', 'CPU:1')

  def test_balanced_placement_spreads_bytes_over_tower_devices(self):
    _, variables = _run_traced_step(num_towers=2, variable_device='balanced')
    kernels = [d for n, d in variables.items() if n.startswith('c3d_small') and n.endswith('/w')]
    self.assertEqual({('CPU:1' in d) for d in kernels}, {True, False})


class PlacementStrategyTest(tf.test.TestCase):

  def test_greedy_assigns_each_new_variable_to_the_lightest_device(self):
    placement = GreedyBytesPlacement(['/a', '/b'])
    self.assertEqual(placement.device_for('big', [1000], tf.float32), '/a')
    self.assertEqual(placement.device_for('small1', [10], tf.float32), '/b')
    self.assertEqual(placement.device_for('small2', [10], tf.float32), '/b')
    self.assertEqual(placement.bytes_per_device, {'/a': 4000, '/b': 80})

  def test_a_variable_keeps_its_device_when_another_tower_asks_again(self):
    placement = GreedyBytesPlacement(['/a', '/b'])
    first = placement.device_for('v', [100], tf.float32)
    self.assertEqual(placement.device_for('v', [100], tf.float32), first)
    self.assertEqual(sum(placement.bytes_per_device.values()), 400)

  def test_single_device_and_factory(self):
    self.assertEqual(SingleDevicePlacement('/cpu:0').device_for('v', [3], tf.float32), '/cpu:0')
    self.assertEqual(make_placement('gpu0', ['/gpu:0', '/gpu:1']).device_for('v', [1], tf.float32),
                     '/gpu:0')
    with self.assertRaises(ValueError) as caught:  # no ps task to place on
      make_placement('ps', ['/gpu:0'])
    self.assertEqual(options_named(caught.exception), ['variable_device'])


if __name__ == '__main__':
  tf.test.main()

"""Specification: a cluster spreads the trainable variables over the ps tasks largest first.

The model_fn lists the network's variables first (a throw-away build) and places them
largest first, each on the least-loaded ps: for I3D's real variables (the names and
shapes of DeepMind's checkpoint) over 10 ps the busiest ps holds exactly the largest
variable, 8.0 MB, where the same rule in creation order would put 10.3 MB on one. In a
real cluster graph every trainable variable lands where that plan says; variables the
plan does not know (batch-norm moving statistics, the global step) go to the
least-loaded ps as created. There is no flag: every task computes the same plan."""

import dataclasses
import json

import numpy as np
import tensorflow as tf

from model_fn import tower_model_fn
from model_fn.network_variables import network_variables
from model_fn.networks import build_network
from model_fn.variable_placement import make_placement
from tests import i3d_test_lib, tower_testing
from towers.cluster import spec as cluster
from towers.estimator import run_config
from towers.params import make_params

tf1 = tf.compat.v1

PS_10 = [f'/job:ps/task:{i}' for i in range(10)]


def per_ps_bytes(variables, ps_devices, planned) -> list[int]:
  """Bytes per ps after placing `variables` (VariableInfo, creation order)."""
  placement = make_placement('ps', ['/device:CPU:0'], ps_devices=ps_devices, planned=planned)
  load = dict.fromkeys(ps_devices, 0)
  for v in variables:
    load[placement.device_for(v.name, v.shape, tf.float32)] += v.num_bytes
  return [load[d] for d in ps_devices]


def greedy_reference(sizes, num_ps) -> list[int]:
  """The greedy rule written out: each size to the first least-loaded ps."""
  load = [0] * num_ps
  for size in sizes:
    load[load.index(min(load))] += size
  return load


class I3dOverTenPsTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    params = make_params(model='i3d', num_classes=101, clip_frames=8, crop_size=64)
    cls.variables = [v for v in network_variables(build_network(params), (8, 64, 64, 3))
                     if v.trainable]

  def test_the_listed_variables_are_those_of_deepminds_checkpoint(self):
    checkpoint = dict(i3d_test_lib.fixture('rgb_imagenet'))  # 400 classes: Logits differ
    self.assertLen(self.variables, 116)
    for v in self.variables:
      self.assertIn(v.name, checkpoint)
      if '/Logits/' not in v.name:
        self.assertEqual(list(v.shape), checkpoint[v.name], v.name)

  def test_largest_first_holds_the_largest_variable_on_the_busiest_ps(self):
    sizes = [v.num_bytes for v in self.variables]
    planned = [(v.name, v.num_bytes) for v in self.variables]
    largest_first = per_ps_bytes(self.variables, PS_10, planned)
    in_creation_order = greedy_reference(sizes, 10)
    self.assertEqual(sum(largest_first), sum(sizes))
    self.assertEqual(max(largest_first), max(sizes))  # the floor: one ps holds the largest
    self.assertEqual(largest_first, greedy_reference(sorted(sizes, reverse=True), 10))
    # Without a plan (the fallback for unplanned variables) the library follows the rule
    # in creation order.
    self.assertEqual(per_ps_bytes(self.variables, PS_10, ()), in_creation_order)
    # The figures docs/scaling.md and docs/cluster.md quote (MB = 1e6 bytes).
    self.assertEqual(round(max(largest_first) / 1e6, 1), 8.0)
    self.assertEqual(round(max(in_creation_order) / 1e6, 1), 10.3)
    self.assertEqual(round(sum(sizes) / 10 / 1e6, 2), 4.95)

  def test_creation_order_does_not_matter_to_largest_first(self):
    planned = [(v.name, v.num_bytes) for v in self.variables]
    forward = per_ps_bytes(self.variables, PS_10, planned)
    backward = per_ps_bytes(self.variables[::-1], PS_10, planned)
    self.assertEqual(forward, backward)


PARAMS = dict(model='c3d_small', num_classes=3, clip_frames=4, crop_size=16, batch_size=8,
              num_towers=2, model_dir='/tmp/unused_ps_placement')
NUM_PS = 3
TF_CONFIG = {'cluster': {'chief': ['localhost:1'], 'worker': ['localhost:2'],
                         'ps': [f'localhost:{3 + i}' for i in range(NUM_PS)]},
             'task': {'type': 'chief', 'index': 0}}


def cluster_variables(network=None) -> dict[str, str]:
  """variable name -> device in the chief's training graph, placed as the Estimator does
  (`network` None: the registered `params.model`)."""
  params = make_params(PARAMS)
  config = run_config(params, cluster.from_tf_config(json.dumps(TF_CONFIG)))
  clips = np.zeros((8, 4, 16, 16, 3), np.float32)
  with tf.Graph().as_default():
    with tf1.device(tower_testing.estimator_device_fn(config)):
      tower_model_fn.make_model_fn(network)(
          tf.constant(clips), tf.constant(np.zeros(8, np.int64)), tf.estimator.ModeKeys.TRAIN,
          params, config)
    return {v.op.name: v.device for v in tf1.global_variables()}


def ps_task(device: str) -> int:
  spec = tf.DeviceSpec.from_string(device)
  assert spec.job == 'ps', device
  return spec.task


class ClusterGraphPlacementTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.trainable = [v for v in network_variables(build_network(make_params(PARAMS)),
                                                  (4, 16, 16, 3)) if v.trainable]
    cls.placed = cluster_variables()

  def bytes_per_ps(self, placed) -> list[int]:
    """The trainable variables' bytes on each ps task of `placed`."""
    load = [0] * NUM_PS
    for v in self.trainable:
      load[ps_task(placed[v.name])] += v.num_bytes
    return load

  def test_the_trainable_variables_are_placed_largest_first(self):
    sizes = [v.num_bytes for v in self.trainable]
    self.assertEqual(self.bytes_per_ps(self.placed),
                     greedy_reference(sorted(sizes, reverse=True), NUM_PS))
    plan = make_placement('ps', ['/device:CPU:0'], ps_devices=[
        f'/job:ps/task:{i}' for i in range(NUM_PS)], planned=[(v.name, v.num_bytes)
                                                              for v in self.trainable])
    for v in self.trainable:
      self.assertEqual(ps_task(self.placed[v.name]),
                       ps_task(plan.device_for(v.name, v.shape, tf.float32)), v.name)

  def test_the_busiest_ps_holds_less_than_in_creation_order(self):
    sizes = [v.num_bytes for v in self.trainable]
    self.assertLess(max(self.bytes_per_ps(self.placed)), max(greedy_reference(sizes, NUM_PS)))

  def test_variables_the_plan_does_not_know_go_to_the_ps_tasks_too(self):
    others = set(self.placed) - {v.name for v in self.trainable}
    self.assertIn('global_step', others)
    self.assertTrue([name for name in others if 'moving_' in name], sorted(others))
    for name in others:  # moving statistics, global step
      self.assertIn(ps_task(self.placed[name]), range(NUM_PS), name)

  def test_every_graph_of_a_run_places_from_one_throw_away_build(self):
    # Training, each evaluation and the export build their own graph with the same
    # params: the variables are listed once (I3D's throw-away build costs ~2.7 s).
    remembered = tower_model_fn._remembered_trainable_sizes  # pylint: disable=protected-access
    before = remembered.cache_info()
    placed_again = cluster_variables()
    after = remembered.cache_info()
    self.assertEqual(placed_again, self.placed)
    self.assertEqual(after.misses, before.misses)
    self.assertEqual(after.hits, before.hits + 1)

  def test_an_unhashable_network_object_is_placed_too(self):
    # A user's network may be an object that cannot be a cache key (a dataclass with
    # eq=True has no hash): its variables are listed for every graph instead.
    params = make_params(PARAMS)

    @dataclasses.dataclass
    class UserNetwork:
      model: str

      def __call__(self, clips, ctx):
        return build_network(params)(clips, ctx)

    network = UserNetwork('c3d_small')
    with self.assertRaises(TypeError):
      hash(network)
    self.assertEqual(tower_model_fn.trainable_sizes(params, network),
                     tower_model_fn.trainable_sizes(params))
    self.assertEqual(cluster_variables(network), self.placed)


if __name__ == '__main__':
  tf.test.main()

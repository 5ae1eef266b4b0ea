"""Specification: `--ps_placement` spreads the trainable variables over the ps tasks.

largest_first (default) lists the network's variables first (a throw-away build) and
places them largest first, each on the least-loaded ps: for I3D's real variables (the
names and shapes of DeepMind's checkpoint) over 10 ps the busiest ps holds exactly the
largest variable, 8.0 MB, where greedy in creation order holds 10.3 MB. In a real
cluster graph every variable lands where the placement says, names unchanged; variables
the plan does not know (batch-norm moving statistics, the global step) go greedily."""

import dataclasses
import json

import numpy as np
import tensorflow as tf
from tensorflow_estimator.python.estimator import estimator as estimator_lib

from model_fn import tower_model_fn
from model_fn.network_variables import network_variables
from model_fn.networks import build_network
from model_fn.variable_placement import make_placement
from tests import i3d_test_lib
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
    greedy = per_ps_bytes(self.variables, PS_10, ())
    self.assertEqual(sum(largest_first), sum(sizes))
    self.assertEqual(max(largest_first), max(sizes))  # the floor: one ps holds the largest
    self.assertEqual(greedy, greedy_reference(sizes, 10))
    self.assertEqual(largest_first, greedy_reference(sorted(sizes, reverse=True), 10))
    # The figures docs/scaling.md quotes (MB = 1e6 bytes).
    self.assertEqual(round(max(largest_first) / 1e6, 1), 8.0)
    self.assertEqual(round(max(greedy) / 1e6, 1), 10.3)
    self.assertEqual(round(sum(sizes) / 10 / 1e6, 2), 4.95)

  def test_creation_order_does_not_matter_to_largest_first(self):
    planned = [(v.name, v.num_bytes) for v in self.variables]
    forward = per_ps_bytes(self.variables, PS_10, planned)
    backward = per_ps_bytes(self.variables[::-1], PS_10, planned)
    self.assertEqual(forward, backward)


PARAMS = dict(model='c3d_small', num_classes=3, clip_frames=4, crop_size=16, batch_size=8,
              num_towers=2, model_dir='/tmp/unused_ps_placement')
TF_CONFIG = {'cluster': {'chief': ['localhost:1'], 'worker': ['localhost:2'],
                         'ps': ['localhost:3', 'localhost:4', 'localhost:5']},
             'task': {'type': 'chief', 'index': 0}}


def cluster_variables(ps_placement: str, network=None) -> dict[str, str]:
  """variable name -> device in the chief's training graph, placed as the Estimator does
  (`network` None: the registered `params.model`)."""
  params = make_params(PARAMS, ps_placement=ps_placement)
  config = run_config(params, cluster.from_tf_config(json.dumps(TF_CONFIG)))
  clips = np.zeros((8, 4, 16, 16, 3), np.float32)
  with tf.Graph().as_default():
    with tf1.device(estimator_lib._get_replica_device_setter(config)):  # pylint: disable=protected-access
      tower_model_fn.make_model_fn(network)(
          tf.constant(clips), tf.constant(np.zeros(8, np.int64)), tf.estimator.ModeKeys.TRAIN,
          params, config)
    return {v.op.name: v.device for v in tf1.global_variables()}


class ClusterGraphPlacementTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.trainable = [v for v in network_variables(build_network(make_params(PARAMS)),
                                                  (4, 16, 16, 3)) if v.trainable]
    cls.placed = {policy: cluster_variables(policy) for policy in ('largest_first', 'greedy')}

  def test_variables_land_where_the_placement_says(self):
    trainable = self.trainable
    expected = make_placement('ps', ['/device:CPU:0'], ps_devices=[
        f'/job:ps/task:{i}' for i in range(3)], planned=[(v.name, v.num_bytes) for v in trainable])
    placed = self.placed['largest_first']
    for v in trainable:
      self.assertEqual(tf.DeviceSpec.from_string(placed[v.name]).task,
                       tf.DeviceSpec.from_string(expected.device_for(v.name, v.shape,
                                                                     tf.float32)).task, v.name)
    greedy = self.placed['greedy']
    self.assertEqual(set(placed), set(greedy), 'names do not depend on the placement')
    moved = [v.name for v in trainable if placed[v.name] != greedy[v.name]]
    self.assertNotEmpty(moved, 'the flag must change where some variable lives')
    for name in set(placed) - {v.name for v in trainable}:  # moving statistics, global step
      self.assertEqual(tf.DeviceSpec.from_string(placed[name]).job, 'ps', name)

  def test_largest_first_evens_the_bytes_per_ps(self):
    sizes = {v.name: v.num_bytes for v in self.trainable}

    def busiest(placed):
      load = {}
      for name, size in sizes.items():
        load[placed[name]] = load.get(placed[name], 0) + size
      return max(load.values())

    self.assertLess(busiest(self.placed['largest_first']), busiest(self.placed['greedy']))

  def test_every_graph_of_a_run_places_from_one_throw_away_build(self):
    # Training, each evaluation and the export build their own graph with the same
    # params: the variables are listed once (I3D's throw-away build costs ~2.7 s).
    remembered = tower_model_fn._remembered_trainable_sizes  # pylint: disable=protected-access
    before = remembered.cache_info()
    placed_again = cluster_variables('largest_first')
    after = remembered.cache_info()
    self.assertEqual(placed_again, self.placed['largest_first'])
    self.assertEqual(after.misses, before.misses)
    self.assertEqual(after.hits, before.hits + 1)

  def test_an_unhashable_network_object_is_placed_too(self):
    # A user's network may be an object that cannot be a cache key (a dataclass with
    # eq=True has no hash): its variables are listed for every graph instead.
    params = make_params(PARAMS, ps_placement='largest_first')

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
    self.assertEqual(cluster_variables('largest_first', network), self.placed['largest_first'])


if __name__ == '__main__':
  tf.test.main()

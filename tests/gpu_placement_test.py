"""Specification: the 6 GB recipes' training graphs (gtx1060.flags, gtx1060_flow.flags) put
every op where it belongs on GPU towers, checked without a GPU.

Each graph is built by the project's model_fn with GPU tower devices, on one machine or as
a cluster's chief under the Estimator's device function, never run. In each:
- every op placed on a GPU has a kernel for its dtypes in the CUDA build of the pinned
  TensorFlow (tests/testdata/cuda_kernels.json, written by tools/cuda_kernels_main.py from
  the pip wheel; the matching rule is checked against this TensorFlow's own on CPU);
- every op on a ps task is on its CPU, named in full (a ps that sees a GPU keeps the model
  in host memory; soft placement is not needed);
- each tower's ops are on its GPU (a weight's read on the weight's device), and what
  reaches them from another device is the input (clips and labels, split on the host),
  the weights, or a scalar;
- the EMA of each weight updates on the weight's device; a cast to 16 bits runs where its
  value was computed, a cast back where its value is used (16-bit values cross, and
  nothing goes to another device and back).
"""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import re

import tensorflow as tf
from tensorflow.python.framework import kernels
from tensorflow.python.util import _pywrap_kernel_registry

from benchmarks.i3d_memory import recipe_params
from model_fn import tower_model_fn
from tests import tower_testing
from tools import cuda_kernels
from tools.cuda_kernels_main import pinned_version
from towers.cluster import spec as cluster
from towers.estimator import run_config
from towers.params import make_params

tf1 = tf.compat.v1

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SNAPSHOT = os.path.join(ROOT, 'tests', 'testdata', 'cuda_kernels.json')
TF_CONFIG = {'cluster': {'chief': ['localhost:1'], 'worker': ['localhost:2'],
                         'ps': ['localhost:3', 'localhost:4']},
             'task': {'type': 'chief', 'index': 0}}
SIXTEEN_BITS = (tf.bfloat16, tf.float16)
TOWER_OP = re.compile(r'(micro_batch_\d+/)?tower_(\d+)/')


def recipe_graph(model: str, recipe: str, gpus: int, in_cluster: bool, **changes
                 ) -> tf.Graph:
  """The TRAIN graph of `recipe` (a flagfile) for `model` on `gpus` GPU towers, on one
  machine or as TF_CONFIG's chief, with `changes` to the recipe's params."""
  cwd = os.getcwd()
  os.chdir(ROOT)  # where the recipe's nested flagfile resolves, as for the user
  try:
    values = dataclasses.asdict(recipe_params(recipe))
  finally:
    os.chdir(cwd)
  values.update(num_towers=gpus, tower_devices=tuple(f'/device:GPU:{i}' for i in range(gpus)),
                batch_size=values['batch_size'] * gpus, warm_start_from='', model=model)
  if model == 'c3d_small':
    values.update(clip_frames=16, crop_size=112)
  params = make_params({**values, **changes})
  config = None
  if in_cluster:
    config = run_config(params, cluster.from_tf_config(json.dumps(TF_CONFIG)))
  graph = tf.Graph()
  with graph.as_default(), tf1.device(config and tower_testing.estimator_device_fn(config)):
    batch = params.batch_size * params.accumulate_steps
    channels = 3 if params.stream == 'rgb' else 2
    clips = tf1.placeholder(tf.uint8, [batch, params.clip_frames, params.crop_size,
                                       params.crop_size, channels], name='clips')
    labels = tf1.placeholder(tf.int64, [batch], name='labels')
    tower_model_fn.make_model_fn()(clips, labels, tf.estimator.ModeKeys.TRAIN, params, config)
  return graph


def device_of(op: tf.Operation, known: dict[tf.Operation, tuple]) -> tuple:
  """(job, task, device type, index) where `op` runs: a colocated op's target's device; an
  op reading or writing a resource variable, the variable's (the placer puts it there).
  `known` remembers each op's answer (one dict per graph: most ops are asked many times)."""
  if op not in known:
    known[op] = _placement(op, known)
  return known[op]


def _placement(op: tf.Operation, known: dict[tf.Operation, tuple]) -> tuple:
  """`device_of(op)`, worked out."""
  if '_class' in op.node_def.attr and op.type != 'VarHandleOp':
    target = op.node_def.attr['_class'].list.s[0].decode()[len('loc:@'):]
    if target != op.name:
      return device_of(op.graph.get_operation_by_name(target), known)
  resources = [t.op for t in op.inputs if t.dtype == tf.resource and t.op is not op]
  if resources:
    return device_of(resources[0], known)
  spec = tf.DeviceSpec.from_string(op.device)
  return (spec.job, spec.task, (spec.device_type or '').upper() or None,
          spec.device_index or 0 if spec.device_type else None)


def variable_device(op: tf.Operation, known: dict[tf.Operation, tuple]) -> tuple | None:
  """The device of the variable whose value `op` reads (through identities and reads)."""
  while op.type in ('ReadVariableOp', 'Identity', 'Cast') and op.inputs:
    op = op.inputs[0].op
    if op.type == 'VarHandleOp':
      return device_of(op, known)
  return None


def is_input(op: tf.Operation) -> bool:
  """Whether `op` is the clips or labels placeholder, or a split of it (micro-batches,
  towers)."""
  while op.type == 'SplitV':
    op = op.inputs[0].op
  return op.name in ('clips', 'labels')


def is_scalar(tensor: tf.Tensor) -> bool:
  return tensor.shape.rank == 0


class KernelRuleTest(tf.test.TestCase):

  def test_the_snapshot_is_of_the_pinned_tensorflow(self):
    version, gpu = cuda_kernels.read_snapshot(SNAPSHOT)
    self.assertEqual(version, pinned_version(os.path.join(ROOT, 'requirements.txt')))
    self.assertEqual(version, tf.__version__)
    self.assertIn('Conv3D', gpu)

  def test_the_rule_finds_the_kernels_tensorflow_finds_on_cpu(self):
    # Every node of a recipe graph, as is and with each type attr set to a quantized type
    # few kernels take, placed on the CPU: the rule and this TensorFlow agree on each.
    cpu = cuda_kernels.registry(kernels.get_all_registered_kernels(), 'CPU')
    graph = recipe_graph('c3d_small', 'gtx1060.flags', 2, True, ema_decay=0.99)
    found = collections.Counter()
    for op in graph.get_operations():
      for node_def in (op.node_def, _with_types(op.node_def, tf.quint8)):
        node_def.device = '/job:localhost/replica:0/task:0/device:CPU:0'
        theirs = bool(_pywrap_kernel_registry.TryFindKernelClass(node_def.SerializeToString()))
        ours = cuda_kernels.find_kernel(node_def, cpu) is not None
        self.assertEqual(ours, theirs, f'{node_def.op} {node_def.attr}')
        found[ours] += 1
    self.assertGreater(min(found[True], found[False]), 100, found)


def _with_types(node_def, dtype: tf.DType):
  copy = type(node_def)()
  copy.CopyFrom(node_def)
  for value in copy.attr.values():
    if value.WhichOneof('value') == 'type':
      value.type = dtype.as_datatype_enum
  return copy


class RecipeGraphTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.gpu_kernels = cuda_kernels.read_snapshot(SNAPSHOT)[1]
    cls.kernels_found = {}

  def check(self, *args, **changes) -> tf.Graph:
    graph = recipe_graph(*args, **changes)
    ops = graph.get_operations()
    known: dict[tf.Operation, tuple] = {}
    where = {op: device_of(op, known) for op in ops}
    self.assertEqual([op.name for op in ops if where[op][0] == 'ps' and where[op][2] != 'CPU'],
                     [], 'ops on a ps, not on its CPU')
    self.assertEqual([f'{op.name} ({op.type})' for op in ops if where[op][2] == 'GPU'
                      and self.gpu_kernel(op.node_def) is None],
                     [], 'GPU ops without a GPU kernel for their dtypes')
    self._check_towers(ops, where, known)
    self._check_ema(ops, where)
    self._check_casts(ops, where)
    return graph

  def gpu_kernel(self, node_def) -> cuda_kernels.Kernel | None:
    """`cuda_kernels.find_kernel` in the snapshot, remembered per op type and attrs (all it
    reads): a graph holds thousands of ops of a few hundred kinds."""
    key = (node_def.op, tuple(sorted((name, value.SerializeToString(deterministic=True))
                                     for name, value in node_def.attr.items())))
    if key not in self.kernels_found:
      self.kernels_found[key] = cuda_kernels.find_kernel(node_def, self.gpu_kernels)
    return self.kernels_found[key]

  def _check_towers(self, ops, where: dict[tf.Operation, tuple],
                    known: dict[tf.Operation, tuple]) -> None:
    strays, crossings = [], []
    for op in ops:
      match = TOWER_OP.match(op.name)
      if not match:
        continue
      here = where[op]
      if here[2:] != ('GPU', int(match.group(2))) and op.type != 'ReadVariableOp':
        strays.append(f'{op.name} on {here}')
      for tensor in op.inputs:
        source = tensor.op
        if where[source] == here or is_scalar(tensor):
          continue
        if is_input(source) and (source.type != 'SplitV' or where[source][2] == 'CPU') \
            or variable_device(source, known) is not None:
          continue
        crossings.append(f'{source.name} -> {op.name}')
    self.assertEqual(strays, [], 'tower ops off their GPU')
    self.assertEqual(crossings, [], 'copies into a tower besides the input and the weights')

  def _check_ema(self, ops, where: dict[tf.Operation, tuple]) -> None:
    scopes = collections.defaultdict(set)
    for op in ops:
      top = op.name.split('/')[0]
      if top.startswith('ExponentialMovingAverage'):
        scopes[top].add(where[op])
    for scope, devices in scopes.items():
      self.assertLen(devices, 1, f'{scope} runs on {devices}')

  def _check_casts(self, ops, where: dict[tf.Operation, tuple]) -> None:
    for op in ops:
      if op.type != 'Cast':
        continue
      source, target = op.inputs[0].dtype, op.outputs[0].dtype
      here, before = where[op], where[op.inputs[0].op]
      if target in SIXTEEN_BITS:
        self.assertEqual(here, before, f'{op.name}: narrowed away from its value')
      elif source in SIXTEEN_BITS:
        used = {where[c] for c in op.outputs[0].consumers()}
        if len(used) == 1:
          self.assertEqual({here}, used, f'{op.name}: widened away from its use')
        if before in used:
          self.assertEqual(here, before, f'{op.name}: 16-bit value sent away and back')


def _add_case(name: str, *args, **changes) -> None:
  setattr(RecipeGraphTest, f'test_{name}', lambda self: self.check(*args, **changes))


for _model in ('c3d_small', 'i3d'):
  for _recipe, _stream in (('gtx1060.flags', 'rgb'), ('gtx1060_flow.flags', 'flow')):
    for _gpus in (1, 2):
      for _in_cluster, _site in ((False, 'machine'), (True, 'cluster')):
        _add_case(f'{_model}_{_stream}_{_gpus}gpu_{_site}', _model, _recipe, _gpus, _in_cluster)
for _in_cluster, _site in ((False, 'machine'), (True, 'cluster')):
  for _gpus in (1, 2):
    _args = ('c3d_small', 'gtx1060.flags', _gpus, _in_cluster)
    _add_case(f'ema_{_gpus}gpu_{_site}', *_args, ema_decay=0.999)
    _add_case(f'float16_clipped_{_gpus}gpu_{_site}', *_args, transfer_dtype='float16',
              clip_gradient_norm=5.0)
    _add_case(f'float32_no_accumulation_{_gpus}gpu_{_site}', *_args, transfer_dtype='float32',
              accumulate_steps=1)
    for _optimizer in ('sgd', 'adam', 'rmsprop'):
      _add_case(f'{_optimizer}_{_gpus}gpu_{_site}', *_args, optimizer=_optimizer)
for _variables in ('cpu', 'gpu0', 'balanced'):
  for _gpus in (1, 2):
    _add_case(f'variables_{_variables}_ema_{_gpus}gpu_machine', 'c3d_small', 'gtx1060.flags',
              _gpus, False, variable_device=_variables, ema_decay=0.999)
_add_case('i3d_rgb_ema_2gpu_cluster', 'i3d', 'gtx1060.flags', 2, True, ema_decay=0.999)


if __name__ == '__main__':
  tf.test.main()

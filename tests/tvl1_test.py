"""TV-L1 in TensorFlow (data_tools/tvl1.py) against OpenCV's DualTVL1 itself:

- each step it ports (pyramid resize down and up, cubic remap on the 1/32 grid with a zero
  border, the 5x5 median) gives OpenCV's numbers on a random image;
- on real UCF101 frames (../shared/i3d/v_CricketShot_g04_c01_rgb.gif at 341x256, gray as
  extract_flow makes them), one pair with OpenCV's default settings: mean end-point
  difference <= 0.05 px and >= 99% of the 8-bit codes within one gray level;
- a batch gives each pair what it gives alone (each pair stops on its own);
- the loop stays on the device (as built for a GPU): the same bits as the loop that read
  its stop rule after every inner iteration (run on testdata/tvl1_golden.npz's pair); host
  syncs per batch, counted on the executed graph, at most one per 5 inner iterations (two
  under XLA); no int32 tensor bigger than a shape or padding constant (a GPU keeps int32
  in host memory);
- //data_tools:extract_flow --backend=tensorflow writes what --backend=opencv writes: the
  same files, manifest, flow.txt and source records, codes within one gray level.
"""

import collections
import json
import os
import shutil
import tempfile
import unittest

import cv2
import numpy as np
import tensorflow as tf

from data_tools import extract_flow, tvl1
from input_fn import flow, flow_shards, video_io
from tests.flow_testing import dataset_with_a_broken_video
from tests.i3d_test_lib import TESTDATA, shared_i3d_dir


def real_gray_frames(indices, width=341, height=256):
  """uint8 [len(indices), height, width]: the clip's frames, resized and gray (skips the
  calling spec where ../shared is absent)."""
  shared = shared_i3d_dir()
  if shared is None:
    raise unittest.SkipTest('../shared/i3d (the real UCF101 clip) is absent; set '
                            'I3D_SHARED_DIR to its folder')
  frames = video_io.decode_video(os.path.join(shared, 'v_CricketShot_g04_c01_rgb.gif'), 256)
  return np.stack([cv2.resize(flow.grayscale(frames[i:i + 1])[0], (width, height),
                              interpolation=cv2.INTER_AREA) for i in indices])


def agreement(reference: np.ndarray, flow_xy: np.ndarray) -> tuple[float, float]:
  """(mean end-point difference in px, share of 8-bit codes within one gray level)."""
  epe = float(np.sqrt(((reference - flow_xy) ** 2).sum(-1)).mean())
  codes = np.abs(flow.to_uint8(reference).astype(int) - flow.to_uint8(flow_xy).astype(int))
  return epe, float((codes <= 1).mean())


class StepsTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.image = (np.random.default_rng(0).random((61, 83)) * 255).astype(np.float32)

  def test_pyramid_resize_down_and_up_is_opencvs_inter_linear(self):
    (h0, w0), (h1, w1) = tvl1.pyramid_sizes(61, 83, tvl1.Tvl1Parameters())[:2]
    down = cv2.resize(self.image, None, fx=0.8, fy=0.8, interpolation=cv2.INTER_LINEAR)
    self.assertEqual(down.shape, (h1, w1))
    ours = tvl1.resize(self.image[None], tvl1.linear_resize_matrix(h0, h1, 1 / 0.8),
                       tvl1.linear_resize_matrix(w0, w1, 1 / 0.8))[0]
    self.assertAllClose(ours, down, atol=1e-3, rtol=0)
    up = cv2.resize(down, (w0, h0), interpolation=cv2.INTER_LINEAR)
    ours = tvl1.resize(down[None], tvl1.linear_resize_matrix(h1, h0, h1 / h0),
                       tvl1.linear_resize_matrix(w1, w0, w1 / w0))[0]
    self.assertAllClose(ours, up, atol=5e-3, rtol=0)

  def test_warp_is_opencvs_cubic_remap_with_a_zero_border(self):
    rng = np.random.default_rng(1)
    map_x = (np.arange(83)[None, :] + rng.normal(0, 4, (61, 83))).astype(np.float32)
    map_y = (np.arange(61)[:, None] + rng.normal(0, 4, (61, 83))).astype(np.float32)
    expected = cv2.remap(self.image, map_x, map_y, cv2.INTER_CUBIC)
    ours = tvl1.remap_cubic(self.image[None, ..., None], map_x[None], map_y[None])[0, ..., 0]
    self.assertAllClose(ours, expected, atol=1e-3, rtol=0)

  def test_median_is_opencvs_5x5_median_blur(self):
    self.assertAllEqual(tvl1.median5(self.image[None])[0], cv2.medianBlur(self.image, 5))


class AgreementTest(tf.test.TestCase):

  def test_agrees_with_opencv_on_real_ucf101_frames(self):
    gray = real_gray_frames([30, 31])
    solver = flow.tvl1()
    cv2.setNumThreads(1)
    reference = solver.calc(gray[0], gray[1], None)
    ours = tvl1.Tvl1(256, 341).flow(gray[:1].astype(np.float32),
                                     gray[1:].astype(np.float32)).numpy()[0]
    epe, within_one = agreement(reference, ours)
    self.assertLessEqual(epe, 0.05)
    self.assertGreaterEqual(within_one, 0.99)
    self.assertGreater(np.abs(reference).mean(), 0.05)  # the pair does move

  def test_a_batch_gives_each_pair_what_it_gives_alone(self):
    gray = real_gray_frames([10, 11, 40, 41], width=64, height=48).astype(np.float32)
    graph = tvl1.Tvl1(48, 64, tvl1.Tvl1Parameters(scales=3, warps=2))
    together = graph.flow(gray[[0, 2]], gray[[1, 3]]).numpy()
    for i, first in enumerate((0, 2)):
      alone = graph.flow(gray[first:first + 1], gray[first + 1:first + 2]).numpy()[0]
      self.assertAllClose(together[i], alone, atol=1e-4, rtol=0)
    solver = cv2.optflow.DualTVL1OpticalFlow_create(nscales=3, warps=2)
    epe, _ = agreement(solver.calc(gray[0].astype(np.uint8), gray[1].astype(np.uint8), None),
                       together[0])
    self.assertLessEqual(epe, 0.05)


def executed_graph(graph: tvl1.Tvl1, first: np.ndarray, second: np.ndarray
                   ) -> tuple[list[np.ndarray], dict[str, tf.compat.v1.NodeDef],
                              collections.Counter]:
  """Runs `graph.flow_and_work` (without XLA) in a session that traces it: (its outputs, the
  nodes of the graph the runtime executed (loops lowered to LoopCond / Switch), the times
  each node ran)."""
  concrete = graph.flow_and_work.get_concrete_function()
  imported = tf.Graph()
  with imported.as_default():
    tf.graph_util.import_graph_def(concrete.graph.as_graph_def(), name='')
  metadata = tf.compat.v1.RunMetadata()
  options = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE,
                                    output_partition_graphs=True)
  with tf.compat.v1.Session(graph=imported) as session:
    outputs = session.run([t.name for t in concrete.outputs],
                          {concrete.inputs[0].name: first, concrete.inputs[1].name: second},
                          options=options, run_metadata=metadata)
  nodes = {n.name: n for part in metadata.partition_graphs for n in part.node}
  runs = collections.Counter(s.node_name for device in metadata.step_stats.dev_stats
                             for s in device.node_stats)
  return outputs, nodes, runs


def _source(name: str) -> str:
  return name.lstrip('^').split(':')[0]


def control_predicates(nodes: dict[str, tf.compat.v1.NodeDef]) -> tuple[set[str], set[str]]:
  """(loop conditions: the inputs of LoopCond nodes, branch conditions: the predicates of
  Switch nodes that no LoopCond feeds, i.e. of lowered tf.cond) of an executed graph."""
  loops = {_source(n.input[0]) for n in nodes.values() if n.op == 'LoopCond'}
  branches = {_source(n.input[1]) for n in nodes.values()
              if n.op == 'Switch' and nodes[_source(n.input[1])].op != 'LoopCond'}
  return loops, branches


def computed_from_device_data(name: str, nodes: dict[str, tf.compat.v1.NodeDef]) -> bool:
  """Whether node `name`'s value is computed from a tensor a GPU holds in device memory:
  anything but int32 (TensorFlow places int32 in host memory on a GPU, so counters and
  their comparisons stay on the host). Follows data inputs (a Switch's data, not its
  predicate); bool plumbing is followed to where it was computed."""
  seen, stack = {name}, [name]
  while stack:
    node = nodes[stack.pop()]
    types = [node.attr[a].type for a in ('T', 'dtype', 'SrcT') if a in node.attr]
    if any(t not in (tf.int32.as_datatype_enum, tf.bool.as_datatype_enum) for t in types):
      return True
    inputs = [_source(i) for i in node.input if not i.startswith('^')]
    for source in inputs[:1] if node.op == 'Switch' else inputs:
      if source not in seen:
        seen.add(source)
        stack.append(source)
  return False


def nested_graphs(graph: tf.Graph):
  """`graph` and, recursively, the bodies and conditions of its while loops and conds."""
  yield graph
  for op in graph.get_operations():
    for attribute in ('_cond_graph', '_body_graph', '_true_graph', '_false_graph'):
      if getattr(op, attribute, None) is not None:
        yield from nested_graphs(getattr(op, attribute))


class DeviceLoopTest(tf.test.TestCase):
  """The loop stays on the device: same bits, few host syncs, no int32 arrays."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    golden = np.load(os.path.join(TESTDATA, 'tvl1_golden.npz'))
    cls.first, cls.second = (golden[k].astype(np.float32) for k in ('first', 'second'))
    # The loop that reads its stop rule after every inner iteration, run here: oneDNN's
    # CPU kernels round sums their own way per instruction set (AVX2, AVX-512), and the
    # stop rule turns a last-bit difference into another iteration count, so stored flow
    # of another machine is no reference.
    cls.every_iteration_flow = tvl1.Tvl1(*cls.first.shape[1:], check_every=1).flow(
        cls.first, cls.second).numpy()
    # The loop as built for a GPU, traced once: the bits of its run and the tensors of its
    # graph are checked on the same function.
    cls.device_loop = tvl1.Tvl1(*cls.first.shape[1:], check_every=tvl1.GPU_CHECK_EVERY)

  def test_the_same_bits_as_the_loop_that_checked_every_iteration(self):
    ours = self.device_loop.flow(self.first, self.second).numpy()
    differ = ours != self.every_iteration_flow
    self.assertFalse(differ.any(), f'{differ.sum()} of {differ.size} values differ, by up '
                     f'to {np.abs(ours - self.every_iteration_flow).max()} px')
    self.assertGreater(np.abs(ours).max(), 0.3)  # the pairs do move

  def test_host_syncs_per_batch_with_and_without_xla(self):
    height, width = self.first.shape[1:]
    parameters = tvl1.Tvl1Parameters(scales=1)  # one scale: the batch's work / pixels is
    every = tvl1.GPU_CHECK_EVERY                  # the inner iterations of its warps
    graph = tvl1.Tvl1(height, width, parameters, check_every=every)
    (_, _, batch_work), nodes, runs = executed_graph(graph, self.first, self.second)
    iterations = float(batch_work) / (height * width)
    loops, branches = control_predicates(nodes)
    self.assertLen(loops, 2)  # the warps, the inner iterations
    device = [p for p in loops | branches if computed_from_device_data(p, nodes)]
    without_xla = sum(runs[p] for p in device)
    self.assertLessEqual(without_xla, iterations / every + parameters.warps)
    self.assertGreater(without_xla, parameters.warps)
    # Under XLA nothing lives in host memory: the GPU copies every loop condition and every
    # branch condition to the host each time it is evaluated (WhileThunk / ConditionalThunk,
    # tensorflow/tensorflow third_party/xla/xla/service/gpu/runtime3/while_thunk.cc at
    # 2f1050a109b859d3a3797185de496ac5730887b0). Its program holds the same loops and conds.
    hlo = tvl1.Tvl1(height, width, parameters, jit_compile=True).flow_and_work \
        .experimental_get_compiler_ir(self.first, self.second)(stage='hlo')
    self.assertEqual(hlo.count(' while('), len(loops))
    self.assertEqual(hlo.count(' conditional('), len(branches))
    with_xla = sum(runs[p] for p in loops | branches)
    self.assertLessEqual(with_xla, 2 * iterations / every + 2 * parameters.warps + 1)

  def test_no_int32_array_that_a_gpu_would_copy_to_the_host(self):
    graph = self.device_loop.flow.get_concrete_function().graph
    for g in nested_graphs(graph):
      for op in g.get_operations():
        for tensor in op.inputs:
          if tensor.dtype == tf.int32:
            shape = tensor.shape
            self.assertTrue(shape.is_fully_defined() and shape.num_elements() <= 16,
                            f'{op.name} reads {tensor}')


class BackendTest(tf.test.TestCase):

  def test_tensorflow_backend_writes_what_the_opencv_backend_writes(self):
    root = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, root)
    data = os.path.join(root, 'ucf')
    dataset_with_a_broken_video(data, width=40, height=32, min_frames=3, max_frames=5,
                                object_size=10)
    outs = {}
    for backend in ('opencv', 'tensorflow'):
      outs[backend] = os.path.join(root, backend)
      extract_flow.extract(extract_flow.ExtractFlowOptions(
          data_dir=data, out=outs[backend], short_side=0, workers=1, tvl1_scales=3,
          tvl1_warps=2, backend=backend, tvl1_batch=2), log=lambda line: None)
    listing = {b: sorted(os.path.relpath(os.path.join(d, f), o) for o in [outs[b]]
                         for d, _, files in os.walk(o) for f in files) for b in outs}
    self.assertEqual(listing['opencv'], listing['tensorflow'])
    for name in (extract_flow.MANIFEST, 'flow.txt'):
      with open(os.path.join(outs['opencv'], name)) as a, \
           open(os.path.join(outs['tensorflow'], name)) as b:
        self.assertEqual(a.read(), b.read(), name)

    def sources(out: str) -> list[dict]:
      """The source records, with the u and v files written but not their bytes (JPEGs of
      flow a few codes apart differ in size)."""
      with open(os.path.join(out, flow_shards.SOURCES)) as f:
        rows = [json.loads(line) for line in f]
      return [dict(row, written=row['written'][:2]) for row in rows]
    self.assertEqual(sources(outs['opencv']), sources(outs['tensorflow']))
    with open(os.path.join(outs['tensorflow'], extract_flow.MANIFEST)) as f:
      self.assertEqual(json.load(f)['skipped_by_kind'], {'undecodable video': 1})
    codes = {b: np.stack([cv2.imread(os.path.join(outs[b], path), cv2.IMREAD_GRAYSCALE)
                          for path in listing[b] if path.endswith('.jpg')]).astype(int)
             for b in outs}
    self.assertGreaterEqual(np.mean(np.abs(codes['opencv'] - codes['tensorflow']) <= 1), 0.99)


if __name__ == '__main__':
  tf.test.main()

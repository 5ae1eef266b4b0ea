"""Specification on NVIDIA GPUs (the GPU tier); every spec is skipped, with the reason
printed, where TensorFlow sees no GPU (the parts that need none run in `WithoutGpuTest`).
Sessions run with soft placement off: an op without a GPU kernel on a GPU fails the spec
instead of moving to the CPU. With one or more GPUs:

  * each tower's ops run on its own GPU (from the executed step's RunMetadata);
  * the step over every GPU's tower equals one plain step on one device;
  * uint8 clips read from TFRecords (the training input path) train, converted to float
    on each tower's GPU;
  * with 2 GPUs or more: 2 towers with bfloat16 transfers and 2 micro-batches per step;
  * a ps task holds no GPU memory and has no GPU device;
  * a trainer and an evaluator (--evaluator_gpu) share one GPU through a whole run;
  * I3D with the 6 GB recipes, RGB and Flow (gtx1060.flags, gtx1060_flow.flags), trains
    under a 5 GiB memory cap (per_process_gpu_memory_fraction on a larger card), with its
    step time and peak memory;
  * towers against MirroredStrategy on the same GPUs, side by side in one run;
  * TV-L1 flow in TensorFlow (data_tools/tvl1.py) on one GPU, with and without XLA, each
    reported: >= 30 frame pairs/s at 341x256 with OpenCV's default settings for the faster
    (benchmarks/flow_benchmark.py's measurement), each agreeing with OpenCV (mean
    end-point difference <= 0.05 px).

`tools/gpu_check.sh` runs `GpuTierTest` and prints its table; with GPU_TIER_RESULTS set, each
spec appends its measurements there as one JSON line (spec, gpu, towers, examples/s,
peak MiB), and the tier's report lines as {'note': line} (with `skipped`: the reason, when
the tier cannot run).
"""

from __future__ import annotations

import collections
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import NamedTuple

import numpy as np
import tensorflow as tf

from command_line import status_file
from input_fn import factory
from model_fn import tower_model_fn
from model_fn.devices import resolve_tower_devices
from model_fn.layers import TowerContext
from model_fn.networks import c3d_small
from tests import gpu_i3d_fit_main, tiny_records, tower_testing
from towers.cluster.local_cluster import LocalCluster
from towers.cluster.spec import pick_free_ports
from towers.estimator import session_config
from towers.params import make_params

tf1 = tf.compat.v1
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO_FLAGS = os.path.join(ROOT, 'towers', 'demo.flags')
CAP_GIB = 5.0  # a 6 GB GTX1060's allocator gets about this much (benchmarks/i3d_memory.py)
MIB = 1 << 20


def no_gpu_reason() -> str | None:
  """Why this tier cannot run here, or None when TensorFlow sees a GPU."""
  if tf.config.list_physical_devices('GPU'):
    return None
  build = tf.sysconfig.get_build_info()
  why = [f'TensorFlow {tf.__version__} sees no GPU']
  if not build.get('is_cuda_build'):
    why.append('it is a CPU-only build (GPU nodes: bash tools/setup.sh --gpu)')
  if shutil.which('nvidia-smi') is None:
    why.append('nvidia-smi not found (no NVIDIA driver)')
  if os.environ.get('CUDA_VISIBLE_DEVICES') is not None:
    why.append(f'CUDA_VISIBLE_DEVICES={os.environ["CUDA_VISIBLE_DEVICES"]!r}')
  return '; '.join(why)


def strict_config(devices, num_towers: int, **options) -> tf1.ConfigProto:
  """The training session's config (`session_config`) with soft placement off."""
  config = session_config(devices, num_towers, **options)
  config.allow_soft_placement = False
  return config


def uint8_records(root: str) -> str:
  """A TFRecord dataset (3 classes, 9 videos of 10-20 frames) prepared as users prepare
  theirs (data_tools/prepare.py): its directory."""
  return tiny_records.make(root, classes=3, groups=9, min_frames=10, max_frames=20,
                           prepare_options={'videos_per_shard': 4}).records['videos']


def records_params(root: str, **overrides):
  """Params that train c3d_small on `uint8_records(root)`."""
  values = dict(model='c3d_small', num_classes=3, clip_frames=4, crop_size=16, batch_size=4,
                data_source='tfrecord', data_dir=uint8_records(root), model_dir=root)
  values.update(overrides)
  return make_params(**values)


class StepRun(NamedTuple):
  """Training steps run with soft placement off: their losses, node -> devices it ran on
  (one traced step), the casts of interest (name -> the device they were placed on) and
  examples/s of the untraced steps."""
  losses: list[float]
  ran: dict[str, set[str]]
  casts: dict[str, tf.DeviceSpec]
  examples_per_s: float


def run_steps(params, features, labels, cast_of_interest, steps: int = 3) -> StepRun:
  """Builds the tower model_fn's train step on `features`, `labels` (a graph is current),
  runs one traced step then `steps` timed ones with `strict_config`; `casts`: those of
  interest that the traced step ran."""
  devices = resolve_tower_devices(params.num_towers, params.tower_devices)
  spec = tower_model_fn.make_model_fn()(features, labels, tf.estimator.ModeKeys.TRAIN, params)
  metadata = tf1.RunMetadata()
  with tf1.Session(config=strict_config(devices, devices.num_towers)) as sess:
    sess.run(tf1.global_variables_initializer())
    sess.run(spec.train_op, options=tower_testing.full_trace(), run_metadata=metadata)
    start = time.perf_counter()
    losses = [float(sess.run([spec.train_op, spec.loss])[1]) for _ in range(steps)]
    rate = steps * params.examples_per_step / (time.perf_counter() - start)
  ran = devices_that_ran(metadata)
  # The casts the training step ran: a summary's casts (train/clip's frames) run only when
  # the Estimator writes summaries, on the host.
  casts = {op.name: tf.DeviceSpec.from_string(op.device)
           for op in tf1.get_default_graph().get_operations()
           if op.type == 'Cast' and cast_of_interest(op) and op.name in ran}
  return StepRun(losses, ran, casts, rate)


def records_step(root: str, num_towers: int) -> StepRun:
  """c3d_small trained on uint8 clips read from `uint8_records(root)` by the training input
  (input_fn/factory.py); casts: those from uint8."""
  params = records_params(root, num_towers=num_towers, batch_size=4 * num_towers)
  with tf.Graph().as_default():
    dataset = factory.make_input_fn(params, tf.estimator.ModeKeys.TRAIN)()
    features, labels = tf1.data.make_one_shot_iterator(dataset).get_next()
    if features['clips'].dtype != tf.uint8:
      raise AssertionError(f'the records give {features["clips"].dtype} clips, not uint8')
    return run_steps(params, features, labels, lambda op: op.inputs[0].dtype == tf.uint8)


def bfloat16_micro_batch_step(params) -> StepRun:
  """`params`' step (towers, micro-batches, transfers) on constant float clips of
  c3d_small's shape; casts: those to bfloat16."""
  rng = np.random.default_rng(0)
  shape = (params.examples_per_step, params.clip_frames, params.crop_size, params.crop_size, 3)
  clips = rng.uniform(-1, 1, shape).astype(np.float32)
  labels = (np.arange(shape[0]) % params.num_classes).astype(np.int64)
  with tf.Graph().as_default():
    return run_steps(params, tf.constant(clips), tf.constant(labels),
                     lambda op: op.outputs[0].dtype == tf.bfloat16, steps=5)


def gpu_names() -> list[str]:
  return [tf.config.experimental.get_device_details(g).get('device_name', g.name)
          for g in tf.config.list_physical_devices('GPU')]


def record(test: tf.test.TestCase, spec: str, **values) -> None:
  """Appends one measurement row of `test` for tools/gpu_check.sh (when GPU_TIER_RESULTS
  is set): spec, gpu, and any of towers, examples_per_s, peak_mib, step_seconds."""
  path = os.environ.get('GPU_TIER_RESULTS')
  if path:
    with open(path, 'a', encoding='utf-8') as f:
      f.write(json.dumps({'test': test._testMethodName, 'spec': spec,  # pylint: disable=protected-access
                          'gpu': ', '.join(sorted(set(gpu_names()))), **values}) + '\n')


def note(line: str, **values) -> None:
  """Prints a line of the tier's report and, when GPU_TIER_RESULTS is set, appends it there
  for tools/gpu_check.sh as {'note': line, **values} (`skipped`: the reason the tier
  cannot run here)."""
  print(line, flush=True)
  path = os.environ.get('GPU_TIER_RESULTS')
  if path:
    with open(path, 'a', encoding='utf-8') as f:
      f.write(json.dumps({'note': line, **values}) + '\n')


def gpu_pids() -> dict[int, int]:
  """pid -> GPU MiB of every process holding GPU memory (nvidia-smi)."""
  out = subprocess.run(['nvidia-smi', '--query-compute-apps=pid,used_memory',
                        '--format=csv,noheader,nounits'], capture_output=True, text=True,
                       check=False).stdout
  pids = {}
  for line in out.splitlines():
    parts = [p.strip() for p in line.split(',')]
    if len(parts) == 2 and parts[0].isdigit():
      pids[int(parts[0])] = int(parts[1]) if parts[1].isdigit() else 0
  return pids


def devices_that_ran(metadata: tf1.RunMetadata) -> dict[str, set[str]]:
  """Node name -> devices ('GPU:1') it executed on, from the executors' step stats (the
  GPU tracer's stream and memcpy timelines, '.../device:GPU:0/stream:7', are skipped)."""
  ran = collections.defaultdict(set)
  for device_stats in metadata.step_stats.dev_stats:
    found = re.search(r'device:([A-Za-z_]+):(\d+)$', device_stats.device)
    if found:
      for node in device_stats.node_stats:
        ran[node.node_name].add(f'{found[1].upper()}:{found[2]}')
  return ran


def gpu_used_mib() -> int:
  """Memory in use over every GPU, MiB (nvidia-smi)."""
  out = subprocess.run(['nvidia-smi', '--query-gpu=memory.used', '--format=csv,noheader,nounits'],
                       capture_output=True, text=True, check=False).stdout
  return sum(int(v) for v in out.split() if v.isdigit())


def child_env(**changes: str | None) -> dict[str, str]:
  env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), PYTHONUNBUFFERED='1')
  env.pop('TF_CONFIG', None)
  for name, value in changes.items():
    if value is None:
      env.pop(name, None)
    else:
      env[name] = value
  return env


class GpuTierTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.reason = no_gpu_reason()
    if cls.reason:
      note(f'GPU tier skipped: {cls.reason}', skipped=cls.reason)
    else:
      # Float32 arithmetic as on the CPU (Ampere and later would use TF32 otherwise).
      tf.config.experimental.enable_tensor_float_32_execution(False)
      # This process takes GPU memory only as needed, so that the processes the specs
      # start find room: set before its first session creates the GPU allocators. (The
      # specs that start processes sort first, before this one holds any GPU memory.)
      for gpu in tf.config.list_physical_devices('GPU'):
        tf.config.experimental.set_memory_growth(gpu, True)
      cls.num_gpus = len(tf.config.list_physical_devices('GPU'))
      note(f'GPU tier on {cls.num_gpus} GPU(s): {", ".join(gpu_names())}')

  def setUp(self):
    super().setUp()
    if self.reason:
      self.skipTest(f'no GPU: {self.reason}')

  # --- Towers on GPUs ---------------------------------------------------------------------

  def _params(self, **overrides):
    values = dict(model='c3d_small', num_classes=5, clip_frames=4, crop_size=16,
                  batch_size=4 * self.num_gpus, num_towers=self.num_gpus,
                  model_dir=self.get_temp_dir())
    values.update(overrides)
    return make_params(**values)

  def _traced_step(self, params, clips, labels):
    """(node -> devices it ran on, graph) of one traced training step. The batch is fed
    (not a constant, which Grappler would fold the clips' conversion into)."""
    devices = resolve_tower_devices(params.num_towers, params.tower_devices)
    with tf.Graph().as_default() as graph:
      clips_in = tf1.placeholder(tf.as_dtype(clips.dtype), clips.shape)
      labels_in = tf1.placeholder(tf.int64, labels.shape)
      spec = tower_model_fn.make_model_fn()(clips_in, labels_in, tf.estimator.ModeKeys.TRAIN,
                                            params)
      metadata = tf1.RunMetadata()
      with tf1.Session(config=strict_config(devices, devices.num_towers)) as sess:
        sess.run(tf1.global_variables_initializer())
        sess.run(spec.train_op, {clips_in: clips, labels_in: labels},
                 options=tower_testing.full_trace(), run_metadata=metadata)
    return devices_that_ran(metadata), graph

  def _data(self, batch, dtype=np.float32):
    rng = np.random.default_rng(0)
    if dtype == np.uint8:
      clips = rng.integers(0, 256, (batch, 4, 16, 16, 3)).astype(np.uint8)
    else:
      clips = rng.uniform(-1, 1, (batch, 4, 16, 16, 3)).astype(np.float32)
    return clips, (np.arange(batch) % 5).astype(np.int64)

  def test_towers_ops_each_run_on_their_own_gpu(self):
    params = self._params()
    ran, _ = self._traced_step(params, *self._data(params.batch_size))
    for i in range(self.num_gpus):
      forward = [n for n in ran if n.startswith(f'tower_{i}/') and n.endswith('Conv3D')]
      backward = [n for n in ran if n.startswith(f'tower_{i}/') and 'Conv3DBackprop' in n
                  and not n.endswith('ReadVariableOp')]
      self.assertNotEmpty(forward, f'tower {i} ran no forward convolution')
      self.assertNotEmpty(backward, f'tower {i} ran no backward convolution')
      for name in forward + backward:
        self.assertEqual(ran[name], {f'GPU:{i}'}, name)
    record(self, 'towers on their GPUs', towers=self.num_gpus)

  def test_uint8_clips_from_records_train_on_each_towers_gpu(self):
    run = records_step(self.create_tempdir().full_path, self.num_gpus)
    self.assertTrue(np.all(np.isfinite(run.losses)), run.losses)
    self.assertEqual({f'GPU:{d.device_index}' for d in run.casts.values()},
                     {f'GPU:{i}' for i in range(self.num_gpus)}, run.casts)
    for name, device in run.casts.items():
      self.assertEqual(run.ran[name], {f'GPU:{device.device_index}'}, name)
    record(self, 'uint8 clips from records, scaled on GPU', towers=self.num_gpus,
           examples_per_s=run.examples_per_s)

  def test_two_gpus_train_with_bfloat16_transfers_and_micro_batches(self):
    if self.num_gpus < 2:
      self.skipTest(f'needs 2 GPUs, TensorFlow sees {self.num_gpus}')
    run = bfloat16_micro_batch_step(self._params(num_towers=2, batch_size=8,
                                                 accumulate_steps=2, transfer_dtype='bfloat16'))
    self.assertTrue(np.all(np.isfinite(run.losses)), run.losses)
    for i in range(2):
      convs = [n for n in run.ran if n.startswith(f'tower_{i}/') and n.endswith('Conv3D')]
      self.assertNotEmpty(convs, f'tower {i} ran no convolution')
      self.assertEqual(set().union(*(run.ran[n] for n in convs)), {f'GPU:{i}'})
    self.assertNotEmpty([n for n in run.casts if n in run.ran], 'no bfloat16 transfer ran')
    record(self, '2 GPUs, bfloat16 transfers, 2 micro-batches', towers=2,
           examples_per_s=run.examples_per_s)

  def test_the_step_over_every_gpu_equals_one_plain_step(self):
    params = self._params(batch_norm=False, optimizer='sgd', lr_schedule='constant',
                          lr_values=[0.5], weight_decay=0.01)
    clips, labels = self._data(params.batch_size)
    with tf.Graph().as_default():
      tf1.set_random_seed(1)
      c3d_small.build(5, use_batch_norm=False)(tf.zeros([1, 4, 16, 16, 3]),
                                               TowerContext(is_training=True))
      with tf1.Session() as sess:
        sess.run(tf1.global_variables_initializer())
        init = {v.op.name: sess.run(v) for v in tf1.global_variables()}
    expected = tower_testing.reference_sgd_step(c3d_small.build(5, use_batch_norm=False), clips,
                                                labels, init, 0.5, 0.01)
    devices = resolve_tower_devices(params.num_towers)
    with tf.Graph().as_default():
      spec = tower_model_fn.make_model_fn()(tf.constant(clips), tf.constant(labels),
                                            tf.estimator.ModeKeys.TRAIN, params)
      with tf1.Session(config=strict_config(devices, devices.num_towers)) as sess:
        sess.run(tf1.global_variables_initializer())
        tower_testing.load_values(sess, init)
        sess.run(spec.train_op)
        got = {v.op.name: sess.run(v) for v in tf1.trainable_variables()}
    self.assertEqual(set(got), set(expected))
    for name, value in expected.items():
      self.assertAllClose(got[name], value, rtol=1e-4, atol=1e-5, msg=name)
    record(self, 'N-tower step = one-device step', towers=self.num_gpus)

  # --- Processes sharing a machine --------------------------------------------------------

  def test_a_ps_holds_no_gpu_memory(self):
    ps_port, worker_port = pick_free_ports(2)
    ps_address = f'127.0.0.1:{ps_port}'
    before = gpu_used_mib()
    status = os.path.join(self.create_tempdir().full_path, 'ps.events.jsonl')
    env = dict(child_env(CUDA_VISIBLE_DEVICES=None), **{status_file.STATUS_FILE_ENV: status})
    process = subprocess.Popen(
        [sys.executable, '-m', 'towers.train_main', f'--ps_hosts={ps_address}',
         f'--worker_hosts=127.0.0.1:{worker_port}', '--task_type=ps',
         f'--model_dir={self.get_temp_dir()}'],
        env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    threading.Thread(target=lambda: lines.extend(process.stdout), daemon=True).start()
    try:
      deadline = time.time() + 300
      while time.time() < deadline and process.poll() is None:
        with socket.socket() as probe:
          if probe.connect_ex(('127.0.0.1', ps_port)) == 0:
            break
        time.sleep(0.5)
      self.assertIsNone(process.poll(), ''.join(lines))
      config = tf1.ConfigProto(device_filters=['/job:ps'])
      with tf1.Session(f'grpc://{ps_address}', config=config) as sess:
        ps_devices = [d.name for d in sess.list_devices() if '/job:ps' in d.name]
      self.assertNotEmpty(ps_devices)
      self.assertEqual([d for d in ps_devices if 'GPU' in d.upper()], [])
      self.assertNotIn(process.pid, gpu_pids(), 'the ps holds GPU memory (nvidia-smi)')
      # A process that initialised a GPU holds a CUDA context (>= ~100 MiB) on it; this
      # also holds where nvidia-smi cannot name processes by pid (a container).
      self.assertLess(gpu_used_mib() - before, 64, 'GPU memory grew while the ps started')
    finally:
      process.send_signal(signal.SIGKILL)
      process.wait()
      process.stdout.close()
    gpus = [(e['task'], e['visible']) for e in status_file.read(status) if e['event'] == 'gpus']
    self.assertEqual(gpus, [(f'ps 0 ({ps_address})', [])], ''.join(lines))  # none visible
    record(self, 'ps holds no GPU memory', towers=0)

  def test_a_trainer_and_an_evaluator_share_one_gpu(self):
    cluster = LocalCluster(1, 1, [f'--flagfile={DEMO_FLAGS}', '--num_towers=1',
                                  '--max_steps=40', '--save_checkpoints_steps=20',
                                  f'--model_dir={self.get_temp_dir()}/shared', '--evaluator_gpu'],
                           echo=None)
    seen: dict[int, int] = {}
    used = {'before': gpu_used_mib()}
    used['max'] = used['before']
    done = threading.Event()

    def poll():
      while not done.is_set():
        for pid, mib in gpu_pids().items():
          seen[pid] = max(seen.get(pid, 0), mib)
        used['max'] = max(used['max'], gpu_used_mib())
        time.sleep(0.5)

    previous = os.environ.get('CUDA_VISIBLE_DEVICES')
    os.environ['CUDA_VISIBLE_DEVICES'] = '0'  # the children's, read when each starts
    threading.Thread(target=poll, daemon=True).start()
    try:
      code = cluster.run(timeout_secs=900)
    finally:
      done.set()
      if previous is None:
        os.environ.pop('CUDA_VISIBLE_DEVICES')
      else:
        os.environ['CUDA_VISIBLE_DEVICES'] = previous
    logs = {name: '\n'.join(cluster.output(name)) for name in cluster.tasks}
    self.assertEqual(code, 0, logs)
    # The chief sees GPU 0 as its own; the evaluator keeps the GPU it was given (0).
    self.assertEqual(status_file.values(cluster.events('chief'), 'gpus', 'visible'), [['0']])
    self.assertEqual(status_file.values(cluster.events('evaluator'), 'gpus', 'visible'),
                     [None])
    self.assertIn(40, [e['step'] for e in cluster.events('evaluator', 'evaluation')],
                  logs['evaluator'])
    ours = {task.process.pid for task in cluster.tasks.values()}
    if not ours & set(seen):
      # nvidia-smi names none of this run's processes by the pids seen here (a container
      # without the host's pid namespace): the GPU memory in use must still have grown by
      # at least two processes' CUDA contexts.
      print('nvidia-smi names no process of this run by its pid: checking the GPU memory in use '
            f'instead ({used["max"] - used["before"]} MiB more during the run)', flush=True)
      self.assertGreater(used['max'] - used['before'], 150)
      record(self, 'trainer + evaluator share a GPU', towers=1,
             peak_mib=used['max'] - used['before'])
      return
    for name in ('chief', 'evaluator'):
      self.assertIn(cluster.tasks[name].process.pid, seen, f'{name} never held GPU memory')
    self.assertNotIn(cluster.tasks['ps0'].process.pid, seen, 'the ps held GPU memory')
    record(self, 'trainer + evaluator share a GPU', towers=1,
           peak_mib=max(seen[cluster.tasks[n].process.pid] for n in ('chief', 'evaluator')))

  # --- The 6 GB recipe and the strategies side by side ------------------------------------

  def test_i3d_6gb_recipe_fits_under_the_cap(self):
    self._fits_under_the_cap('gtx1060.flags')

  def test_i3d_6gb_flow_recipe_fits_under_the_cap(self):
    self._fits_under_the_cap('gtx1060_flow.flags')

  def _fits_under_the_cap(self, recipe: str) -> None:
    result = subprocess.run([sys.executable, '-m', 'tests.gpu_i3d_fit_main', recipe,
                             str(CAP_GIB)], env=child_env(CUDA_VISIBLE_DEVICES='0'), cwd=ROOT,
                            capture_output=True, text=True, timeout=1800, check=False)
    rows = [line for line in result.stdout.splitlines() if line.startswith('{')]
    self.assertNotEmpty(rows, result.stdout + result.stderr)
    fit = json.loads(rows[-1])
    record(self, f'I3D {recipe} under a 5 GiB cap', towers=1,
           examples_per_s=(fit['examples_per_step'] / fit['step_seconds']
                           if fit['step_seconds'] else None),
           step_seconds=fit['step_seconds'],
           peak_mib=fit['peak_bytes'] / MIB if fit['peak_bytes'] else None)
    self.assertTrue(fit['fits'], fit['error'])
    self.assertEqual(result.returncode, 0, result.stderr[-2000:])
    if fit['peak_bytes'] is not None:
      self.assertLessEqual(fit['peak_bytes'], fit['cap_bytes'])

  def test_towers_and_mirrored_side_by_side(self):
    # As //benchmarks:towers_benchmark measures: both steps open at once, repeats interleaved.
    from benchmarks import benchmark_graphs  # pylint: disable=g-import-not-at-top
    params = make_params(model='c3d_small', num_classes=101, clip_frames=16, crop_size=112,
                         batch_size=16 * self.num_gpus, num_towers=self.num_gpus,
                         weight_decay=1e-4, lr_schedule='constant', lr_values=(1e-3,),
                         lr_boundaries=(), model_dir=self.get_temp_dir())
    steps = {'towers': benchmark_graphs.towers_step(params),
             'mirrored': benchmark_graphs.mirrored_step(params)}
    sessions = {}
    for name, step in steps.items():
      config = tf1.ConfigProto()
      config.CopyFrom(step.config)
      config.allow_soft_placement = False
      sessions[name] = tf1.Session(graph=step.graph, config=config)
      sessions[name].run(step.init_op)
      for _ in range(3):
        sessions[name].run(step.train_op)
    rates = {name: [] for name in steps}
    for _ in range(5):
      for name, step in steps.items():
        start = time.perf_counter()
        for _ in range(5):
          sessions[name].run(step.train_op)
        rates[name].append(5 * params.batch_size / (time.perf_counter() - start))
    for session in sessions.values():
      session.close()
    median = {name: float(np.median(r)) for name, r in rates.items()}
    for name, rate in median.items():
      self.assertGreater(rate, 0.0, name)
      record(self, f'c3d_small {name}', towers=self.num_gpus, examples_per_s=rate)
    note(f'towers / mirrored examples/s on {self.num_gpus} GPU(s): '
         f'{median["towers"] / median["mirrored"]:.2f}x')
  # --- TV-L1 flow on one GPU -------------------------------------------------------------

  def test_tvl1_flow_runs_30_frame_pairs_per_second_at_341x256(self):
    from benchmarks import flow_benchmark  # pylint: disable=import-outside-toplevel
    try:
      first, second = flow_benchmark.real_pairs(flow_benchmark.find_clip(''), 8)
    except ValueError:  # no ../shared here: a real-looking texture moved by a known motion
      rng = np.random.default_rng(0)
      texture = cv2_blur(rng.integers(0, 256, (256, 341)).astype(np.uint8))
      first, second = (np.stack([p] * 8) for p in flow_benchmark.shifted_pair(texture,
                                                                             (1.3, -0.7)))
    first, second = np.concatenate([first] * 8), np.concatenate([second] * 8)  # 64 pairs
    reference, _ = flow_benchmark.opencv_flow(first[:1], second[:1])
    rates = {}
    for xla in (False, True):  # --tvl1_xla: which pays on this GPU
      with tf.device('/GPU:0'):
        ours, timing, _, device = flow_benchmark.tensorflow_flow(first, second, 32, xla)
      self.assertEqual(device, 'GPU')
      epe = flow_benchmark.agreement(reference, ours[:1]).endpoint_px
      rates[xla] = timing.pairs_per_second
      print(f'TV-L1 on the GPU{" (XLA)" if xla else ""}: {timing.pairs_per_second:.1f} frame '
            f'pairs/s at 341x256, EPE to OpenCV {epe:.4f} px', flush=True)
      record(self, f'TV-L1 flow{" with XLA" if xla else ""}, frame pairs/s at 341x256',
             examples_per_s=timing.pairs_per_second)
      self.assertLessEqual(epe, 0.05)
    self.assertGreaterEqual(max(rates.values()), 30.0)


class WithoutGpuTest(tf.test.TestCase):
  """What the GPU specs compute that needs no GPU, on this machine's CPU with soft
  placement off: the records' uint8 clips train (cast on the tower's CPU), 2 towers with
  bfloat16 transfers and micro-batches train, and the recipes' fit steps are built from
  their flagfiles as tests/gpu_i3d_fit_main.py builds them."""

  def test_uint8_clips_from_records_train(self):
    run = records_step(self.create_tempdir().full_path, 1)
    self.assertTrue(np.all(np.isfinite(run.losses)), run.losses)
    self.assertNotEmpty(run.casts)
    for name in run.casts:
      self.assertEqual(run.ran[name], {'CPU:0'}, name)

  def test_two_towers_train_with_bfloat16_transfers_and_micro_batches(self):
    params = make_params(model='c3d_small', num_classes=5, clip_frames=4, crop_size=16,
                         batch_size=8, num_towers=2, accumulate_steps=2,
                         transfer_dtype='bfloat16', model_dir=self.get_temp_dir())
    run = bfloat16_micro_batch_step(params)
    self.assertTrue(np.all(np.isfinite(run.losses)), run.losses)
    self.assertNotEmpty([n for n in run.casts if n in run.ran], 'no bfloat16 transfer ran')

  def test_the_fit_step_of_each_6gb_recipe(self):
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
      for recipe, channels in (('gtx1060.flags', 3), ('gtx1060_flow.flags', 2)):
        params = gpu_i3d_fit_main.recipe_params(recipe)
        self.assertEqual((params.batch_size, params.accumulate_steps), (3, 2), recipe)
        clips, labels = gpu_i3d_fit_main.global_batch(params)
        self.assertEqual(clips.shape, (6, 64, 224, 224, channels), recipe)
        self.assertEqual(labels.shape, (6,), recipe)
    finally:
      os.chdir(cwd)


def cv2_blur(image: np.ndarray) -> np.ndarray:
  import cv2  # pylint: disable=import-outside-toplevel
  return cv2.GaussianBlur(image, (0, 0), 2.0)


if __name__ == '__main__':
  tf.test.main()

"""One task of the emulated cluster, as a library: its options (`TaskOptions`), the variables'
shapes and their ps placement (`variable_shapes`, `ps_shares`), the compute shares a worker
waits for (`compute_shares`, `compute_waits`), and the task's step and run (`run`).
The program and its whole description: benchmarks/emulated_task_main.py.
"""

from __future__ import annotations

import dataclasses
import json
import time

import tensorflow as tf

from benchmarks import flop_count
from model_fn import transfer
from model_fn import networks
from model_fn.networks import build_network, input_channels
from model_fn.network_variables import network_variables
from model_fn.variable_placement import largest_first, make_placement
from command_line import status_file
from command_line.options import Options, above, at_least, option
from towers.params import make_params

tf1 = tf.compat.v1

STEP_EVENT = 'emulated_step'  # status event {index, end (s since the epoch), seconds}
PS_PLACEMENTS = ('greedy', 'largest_first')
FLOP_CLIP = (64, 224, 224)  # frames, height, width of the recipe's training clip


@dataclasses.dataclass(frozen=True)
class EmulatedModelOptions(Options):
  """The network an emulated task transfers and the compute it waits for, as every emulated
  task (this module's and benchmarks/emulated_peer_task.py's) is told."""
  model: str = option('i3d', 'Network whose trainable variables are transferred.',
                      choices=networks.names())
  num_classes: int = option(101, 'Classes of the network head.', valid=at_least(1))
  emulate_compute: float = option(2.1, 'GPU seconds of one forward + backward step.',
                                  valid=at_least(0))
  time_scale: float = option(1.0, 'The compute wait is multiplied by this.', valid=above(0))


@dataclasses.dataclass(frozen=True)
class TaskOptions(EmulatedModelOptions):
  """What every emulated task is told (the emulator passes the same to all)."""
  accumulate_steps: int = option(1, 'Micro-batches computed per pull and push.', valid=at_least(1))
  transfer_dtype: str = option('float32', 'Type of pulled parameters and pushed gradients.',
                               choices=tuple(transfer.TRANSFER_DTYPES))
  ps_placement: str = option('greedy', 'greedy: each variable in creation order on the '
                             'least loaded ps; largest_first: biggest variables first, each '
                             'on the least loaded ps (what training in a cluster does).',
                             choices=PS_PLACEMENTS)
  sync_replicas: bool = option(False, 'Synchronous steps over all workers.')
  overlap: bool = option(True, 'Split the compute wait per layer (by FLOPs): a layer\'s '
                         'forward starts once its variables are pulled, its gradient is '
                         'pushed as soon as its backward ends (as training without '
                         '--clip_gradient_norm does). false: one wait between all pulls '
                         'and all pushes.')
  compute_shares_file: str = option('', 'JSON of every variable\'s compute share '
                                    '(`write_compute_shares`), written once by the emulator; '
                                    'empty: count the FLOPs here (~8 s CPU for I3D).',
                                    path=True)
  steps: int = option(1000000, 'Steps each worker runs, then exits (the emulator stops '
                      'the workers itself once it has measured).', valid=at_least(1))
  max_seconds: float = option(900.0, 'A worker gives up after this long.', valid=above(0))
  ps_hosts: tuple[str, ...] = option((), 'host:port of every ps task.')
  worker_hosts: tuple[str, ...] = option((), 'host:port of every worker (the first is the '
                                         'chief).')
  task_type: str = option('worker', 'This task\'s job.', choices=('ps', 'worker'))
  task_index: int = option(0, 'This task\'s index in its job.', valid=at_least(0))


def variable_shapes(model: str, num_classes: int) -> list[tuple[str, tuple[int, ...]]]:
  """(name, shape) of the network's trainable variables in creation order. Parameter
  shapes do not depend on the clip size, so a small clip is built."""
  params = make_params(model=model, num_classes=num_classes, clip_frames=8, crop_size=64,
                       warm_start_from='')
  clip = (8, 64, 64, input_channels(params))
  return [(v.name, v.shape) for v in network_variables(build_network(params), clip)
          if v.trainable]


def placement_order(shapes: list[tuple[str, tuple[int, ...]]], ps_placement: str
                    ) -> list[tuple[str, tuple[int, ...]]]:
  """The order in which variables meet the greedy placement: creation order, or for
  largest_first the library's order (`variable_placement.largest_first`), in which the
  greedy rule assigns exactly what training's `LargestFirstPlacement` does."""
  if ps_placement == 'largest_first':
    by_name = dict(shapes)
    order = largest_first([(name, _elements(shape) * 4) for name, shape in shapes])
    return [(name, by_name[name]) for name, _ in order]
  return list(shapes)


def ps_shares(shapes: list[tuple[str, tuple[int, ...]]], num_ps: int, ps_placement: str,
              bytes_per_value: int) -> list[float]:
  """Bytes on the wire per pull (or push) held by each of `num_ps` ps tasks, as training
  places the variables (`make_placement('ps', ...)`, with the variables planned up front
  for largest_first) and so as `build_step` does."""
  devices = [f'/job:ps/task:{i}' for i in range(num_ps)]
  planned = ([(name, _elements(shape) * 4) for name, shape in shapes]
             if ps_placement == 'largest_first' else ())
  placement = make_placement('ps', ['/device:CPU:0'], ps_devices=devices, planned=planned)
  load = dict.fromkeys(devices, 0.0)
  for name, shape in shapes:
    load[placement.device_for(name, shape, tf.float32)] += _elements(shape) * bytes_per_value
  return [load[d] for d in devices]


def _elements(shape: tuple[int, ...]) -> int:
  count = 1
  for d in shape:
    count *= d
  return count


@dataclasses.dataclass(frozen=True)
class ComputeShare:
  """A trainable variable's share of one training step's FLOPs: its layer's forward and
  backward ops (`flop_count.variable_flops`), as fractions of the sum over all
  variables (so that all shares add up to 1)."""
  name: str
  forward: float
  backward: float


def compute_shares(model: str, num_classes: int) -> list[ComputeShare]:
  """Per trainable variable, in creation order, its share of the step's FLOPs on one
  `FLOP_CLIP` clip. The FLOPs of ops in no variable's scope (pooling, concat, loss:
  0.2% for I3D) are spread over all by the normalisation."""
  params = make_params(model=model, num_classes=num_classes, clip_frames=FLOP_CLIP[0],
                       crop_size=FLOP_CLIP[1], warm_start_from='')
  clip = (*FLOP_CLIP, input_channels(params))
  per_variable, _ = flop_count.variable_flops(build_network(params), clip)
  total = sum(v.forward + v.backward for v in per_variable)
  return [ComputeShare(v.name, v.forward / total, v.backward / total) for v in per_variable]


def write_compute_shares(shares: list[ComputeShare], path: str) -> str:
  """Writes `shares` to `path` as JSON for `read_compute_shares`; returns `path`."""
  with open(path, 'w') as f:
    json.dump([dataclasses.astuple(share) for share in shares], f)
  return path


def read_compute_shares(path: str) -> list[ComputeShare]:
  """The shares `write_compute_shares` wrote."""
  with open(path) as f:
    return [ComputeShare(name, forward, backward) for name, forward, backward in json.load(f)]


def compute_waits(pulled: dict[str, tf.Tensor], shares: list[ComputeShare] | None,
                  seconds: float, micro_batches: int = 1) -> dict[str, tf.Tensor]:
  """Variable name -> a float32 scalar (0.0) that exists once that variable's gradient
  would: after one wait of `seconds` that follows every pull (`shares` None), or (shares
  in creation order) after the forward chunks of all variables, and the backward chunks
  of this variable and every later one (see the module docstring). With `micro_batches`
  k (gradient accumulation) only the first micro-batch's forward and the last one's
  backward can overlap transfers: the chunks last `seconds` / k x their share, and one
  wait for the rest of the `seconds` runs between the forward and backward chunks.
  Runs on the caller's device."""

  def chunk(duration: float, name: str, after: list[tf.Tensor]) -> tf.Tensor:
    def wait() -> float:
      time.sleep(duration)
      return 0.0
    with tf.control_dependencies(after):
      return tf.py_function(wait, [], tf.float32, name=name)

  if shares is None:  # compute starts once every parameter is here
    done = chunk(seconds, 'emulated_compute', list(pulled.values()))
    return dict.fromkeys(pulled, done)
  per_chunk = seconds / micro_batches
  previous = []
  for share in shares:
    previous = [chunk(per_chunk * share.forward, 'emulated_forward', [pulled[share.name]]
                      + previous)]
  if micro_batches > 1:
    previous = [chunk(seconds - per_chunk, 'emulated_other_micro_batches', previous)]
  done = {}
  for share in reversed(shares):
    previous = [chunk(per_chunk * share.backward, 'emulated_backward', previous)]
    done[share.name] = previous[0]
  return done


def build_step(options: TaskOptions, cluster: dict, task_type: str, task_index: int):
  """(train op, sync hook or None) of one emulated worker step."""
  worker = f'/job:{task_type}/task:{task_index}/device:CPU:0'
  num_ps = len(cluster['ps'])
  num_workers = len(cluster['worker'])
  placement = make_placement('ps', [worker], host_device=worker,
                             ps_devices=[f'/job:ps/task:{i}' for i in range(num_ps)])
  dtype = transfer.transfer_dtype(options.transfer_dtype)
  shapes = placement_order(variable_shapes(options.model, options.num_classes),
                           options.ps_placement)
  variables = []
  for name, shape in shapes:
    with tf.device(placement.device_for(name, shape, tf.float32)):
      variables.append(tf1.get_variable(name, shape, tf.float32, tf1.zeros_initializer()))
  with tf.device('/job:ps/task:0'):
    global_step = tf1.train.get_or_create_global_step()
  pulled = {v.op.name: transfer.pull(v, worker, dtype) for v in variables}
  shares = None
  if options.overlap:
    shares = (read_compute_shares(options.compute_shares_file) if options.compute_shares_file
              else compute_shares(options.model, options.num_classes))
    if {share.name for share in shares} != set(pulled):
      raise ValueError(f'--compute_shares_file={options.compute_shares_file} names other '
                       f'variables than {options.model} has')
  with tf.device(worker):
    done = compute_waits(pulled, shares, options.emulate_compute * options.accumulate_steps
                         * options.time_scale, options.accumulate_steps)
    # Each gradient is computed on the worker from the whole pulled tensor, so only the
    # worker can make it: a gradient built from a scalar alone (tf.fill) would let
    # TensorFlow's graph optimizer compute a 16-bit push on the ps side, and the pushes
    # would not cross the link.
    grads = [tf.add(pulled[v.op.name], 1e-6 + done[v.op.name], name='emulated_gradient')
             for v in variables]
  pairs = [(transfer.push(g, v, dtype), v) for g, v in zip(grads, variables)]
  optimizer = tf1.train.MomentumOptimizer(1e-6, 0.9)
  hook = None
  if options.sync_replicas and num_workers > 1:
    optimizer = tf1.train.SyncReplicasOptimizer(
        optimizer, replicas_to_aggregate=num_workers, total_num_replicas=num_workers)
    hook = optimizer.make_session_run_hook(task_index == 0)
  return optimizer.apply_gradients(pairs, global_step=global_step), hook


def run_worker(options: TaskOptions, server: tf.distribute.Server, cluster: dict,
               task_type: str, task_index: int) -> None:
  train_op, hook = build_step(options, cluster, task_type, task_index)
  is_chief = task_index == 0
  deadline = time.time() + options.max_seconds
  with tf1.train.MonitoredTrainingSession(
      master=server.target, is_chief=is_chief, hooks=[hook] if hook else [],
      save_checkpoint_secs=None, save_summaries_steps=None, save_summaries_secs=None,
      log_step_count_steps=None, config=_session_config(task_type, task_index)) as session:
    if is_chief:  # what LocalCluster.start_all waits for before starting the workers
      status_file.record('session_ready', step=0, max_steps=options.steps)
    for index in range(options.steps):
      if time.time() > deadline:
        print(f'emulated_task: {task_type} {task_index} stopped at --max_seconds', flush=True)
        return
      start = time.time()
      session.run(train_op)
      end = time.time()
      status_file.record(STEP_EVENT, index=index, end=end, seconds=end - start)


def _session_config(task_type: str, task_index: int) -> tf1.ConfigProto:
  """Sees only the ps tasks and itself (no waiting on the other workers)."""
  return tf1.ConfigProto(device_filters=['/job:ps', f'/job:{task_type}/task:{task_index}'])


def run(options: TaskOptions) -> None:
  """Serves (ps) or runs the emulated worker until the emulator stops this task."""
  tf1.disable_eager_execution()
  cluster = {'ps': list(options.ps_hosts), 'worker': list(options.worker_hosts)}
  server = tf.distribute.Server(tf.train.ClusterSpec(cluster), job_name=options.task_type,
                                task_index=options.task_index,
                                config=tf1.ConfigProto(device_count={'CPU': 1}), start=True)
  if options.task_type == 'ps':
    print(f'emulated_task: ps {options.task_index} serving', flush=True)
    server.join()
    return
  run_worker(options, server, cluster, options.task_type, options.task_index)

"""Trains a recipe's I3D step on GPU 0 under a memory cap; prints one JSON line.

    python -m tests.gpu_i3d_fit_main RECIPE.flags CAP_GIB

Run in its own process by tests/gpu_tier_test.py, because the cap
(`per_process_gpu_memory_fraction` = CAP_GIB / the GPU's memory) takes effect only in the
process's first session. The step is the recipe's own (`model_fn.tower_model_fn` with its
towers, micro-batches and transfer type) on one global batch of synthetic clips held on
the host (`global_batch`), with soft placement off. The JSON: fits (no out-of-memory in 2 untimed + 3 timed steps), step_seconds
(median of the timed steps), peak_bytes (the GPU allocator's peak, null if TensorFlow
cannot say), cap_bytes, examples_per_step, error (the first line, when it failed).
Exit 0 when it fits, 1 when not.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import tensorflow as tf
from absl import flags

from model_fn import tower_model_fn
from model_fn.devices import resolve_tower_devices
from model_fn.networks import input_channels
from towers import flags as towers_flags
from towers.estimator import session_config

tf1 = tf.compat.v1
GIB = 1 << 30


def recipe_params(path: str):
  values = flags.FlagValues()
  towers_flags.define_flags(values)
  values(['gpu_i3d_fit', f'--flagfile={path}', '--model_dir=/tmp/unused',
          '--warm_start_from='])
  return towers_flags.params_from_flags(values)


def main(recipe: str, cap_gib: float) -> int:
  params = recipe_params(recipe)
  total = gpu_memory_bytes()
  result = {'recipe': recipe, 'examples_per_step': params.examples_per_step,
            'cap_bytes': int(cap_gib * GIB), 'fits': False, 'step_seconds': None,
            'peak_bytes': None, 'error': None}
  devices = resolve_tower_devices(params.num_towers, params.tower_devices)
  fraction = min(1.0, cap_gib * GIB / total)
  clips, labels = global_batch(params)
  with tf.Graph().as_default():
    with tf.device('/device:CPU:0'):
      clips_var = tf1.get_local_variable('clips', initializer=clips, trainable=False)
      labels_var = tf1.get_local_variable('labels', initializer=labels, trainable=False)
    spec = tower_model_fn.make_model_fn()(clips_var.read_value(), labels_var.read_value(),
                                          tf.estimator.ModeKeys.TRAIN, params)
    init = tf.group(tf1.global_variables_initializer(), tf1.local_variables_initializer())
    config = session_config(devices, devices.num_towers, gpu_memory_fraction=fraction)
    config.allow_soft_placement = False
    try:
      with tf1.Session(config=config) as sess:
        sess.run(init)
        for _ in range(2):
          sess.run(spec.train_op)
        times = []
        for _ in range(3):
          start = time.perf_counter()
          sess.run(spec.train_op)
          times.append(time.perf_counter() - start)
        result.update(fits=True, step_seconds=statistics.median(times))
    except tf.errors.ResourceExhaustedError as e:
      result['error'] = str(e).splitlines()[0]
  try:
    result['peak_bytes'] = int(tf.config.experimental.get_memory_info('GPU:0')['peak'])
  except (ValueError, RuntimeError):
    pass
  print(json.dumps(result), flush=True)
  return 0 if result['fits'] else 1


def global_batch(params) -> tuple[np.ndarray, np.ndarray]:
  """One step's clips (float32 in [-1, 1], [examples_per_step, T, S, S, C]) and labels."""
  shape = (params.examples_per_step, params.clip_frames, params.crop_size, params.crop_size,
           input_channels(params))
  clips = np.random.default_rng(0).uniform(-1, 1, shape).astype(np.float32)
  return clips, (np.arange(shape[0]) % params.num_classes).astype(np.int64)


def gpu_memory_bytes() -> float:
  """The memory of the process's first GPU (first CUDA_VISIBLE_DEVICES id, else 0), from
  nvidia-smi, without initialising TensorFlow's devices (the cap must come first)."""
  first = os.environ.get('CUDA_VISIBLE_DEVICES', '0').split(',')[0].strip() or '0'
  out = subprocess.run(['nvidia-smi', '--query-gpu=memory.total', '--format=csv,noheader,nounits',
                        f'--id={first}'], capture_output=True, text=True, check=True).stdout
  return float(out.strip().splitlines()[0]) * (1 << 20)


if __name__ == '__main__':
  sys.exit(main(sys.argv[1], float(sys.argv[2])))

"""What a cluster's model should move per step, and what the loopback interface moved.

Shared by `cluster_traffic` and `cluster_peers`, which run their clusters in a private
network namespace where the loopback counter sees only the cluster's traffic.
"""

from __future__ import annotations

from typing import Sequence

import tensorflow as tf

from model_fn.layers import TowerContext
from model_fn.networks import build_network, input_channels
from towers.params import make_params

tf1 = tf.compat.v1


def model_bytes(train_args: Sequence[str]) -> tuple[int, int]:
  """(trainable parameter bytes, batch-norm moving-statistic bytes) of the network that
  the train flags `train_args` (--model, --num_classes, --clip_frames, --crop_size) name."""
  values = {}
  for arg in train_args:
    name, _, value = arg[2:].partition('=')
    if name in ('model', 'num_classes', 'clip_frames', 'crop_size', 'warm_start_from'):
      values[name] = int(value) if value.isdigit() else value
  params = make_params(values)
  with tf.Graph().as_default():
    clips = tf.zeros([1, params.clip_frames, params.crop_size, params.crop_size,
                      input_channels(params)])
    build_network(params)(clips, TowerContext(is_training=False))
    nbytes = lambda v: v.shape.num_elements() * v.dtype.size
    trainable = sum(nbytes(v) for v in tf1.trainable_variables())
    moving = sum(nbytes(v) for v in tf1.global_variables() if 'moving_' in v.op.name)
  return trainable, moving


def loopback_received_bytes() -> int:
  """Bytes received so far on this network namespace's loopback interface."""
  with open('/proc/net/dev') as f:
    for line in f:
      if line.strip().startswith('lo:'):
        return int(line.split(':', 1)[1].split()[0])
  raise RuntimeError('no loopback interface in /proc/net/dev')

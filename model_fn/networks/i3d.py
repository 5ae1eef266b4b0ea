"""I3D (Inception-v1 inflated to 3-D), variable for variable DeepMind's `InceptionI3d`.

The graph reproduces `kinetics-i3d/i3d.py` (Carreira & Zisserman, 2017) with this
project's layers, so DeepMind's published Kinetics checkpoints load without conversion:

  * scopes `RGB/inception_i3d/...` (3 input channels) or `Flow/inception_i3d/...`
    (2 channels); under them the endpoints `ENDPOINTS`, each Mixed block with
    `Branch_0..3`, and the one irregular name `Mixed_5b/Branch_2/Conv3d_0a_3x3`;
  * Unit3D = conv3d (SAME, no bias: `conv_3d/w`) + batch norm with offset only
    (`batch_norm/{beta,moving_mean,moving_variance}`, epsilon 1e-3, decay 0.999) + ReLU;
  * Logits = average pool 2x7x7 VALID, dropout, 1x1x1 conv with bias
    (`Logits/Conv3d_0c_1x1/conv_3d/{w,b}`), then mean over time; Predictions = softmax.

With a 400-way Logits layer the variables equal the `rgb_imagenet` / `flow_imagenet`
checkpoint index one to one: 230 names, same shapes (`tests/testdata/i3d_*_variables.json`).

Smaller inputs than 64x224x224 work: when the Mixed_5c feature map is smaller than the
2x7x7 logits pool, the pool kernel shrinks to the feature size (per axis); the 224 path is
unchanged. The logits are then averaged over time and space, which for the standard
input (1x1 spatial after the pool) is exactly DeepMind's squeeze + mean over time.
Any input of at least 1 frame and 1 pixel works; useful minimums are 8 frames and 32x32.

Input: `[batch, frames, height, width, channels]` float32, scaled to [-1, 1].
"""

from __future__ import annotations

from typing import Callable, Sequence

import tensorflow as tf

from command_line.options import Problem
from model_fn import layers
from model_fn.networks.i3d_names import (ENDPOINTS, HEADS, KINETICS_CLASSES, LOGITS_CONV,
                                          NETWORK_SCOPE, STACKED_HEAD, STREAMS, stream_parts)

tf1 = tf.compat.v1

# Mixed block widths: (Branch_0 1x1, Branch_1 1x1 -> 3x3, Branch_2 1x1 -> 3x3,
# Branch_3 maxpool -> 1x1), as in DeepMind's i3d.py.
_MIXED: dict[str, tuple[int, tuple[int, int], tuple[int, int], int]] = {
    'Mixed_3b': (64, (96, 128), (16, 32), 32),
    'Mixed_3c': (128, (128, 192), (32, 96), 64),
    'Mixed_4b': (192, (96, 208), (16, 48), 64),
    'Mixed_4c': (160, (112, 224), (24, 64), 64),
    'Mixed_4d': (128, (128, 256), (24, 64), 64),
    'Mixed_4e': (112, (144, 288), (32, 64), 64),
    'Mixed_4f': (256, (160, 320), (32, 128), 128),
    'Mixed_5b': (256, (160, 320), (32, 128), 128),
    'Mixed_5c': (384, (192, 384), (48, 128), 128),
}
# Max pools: (ksize, strides) over (frames, height, width).
_POOLS: dict[str, tuple[tuple[int, int, int], tuple[int, int, int]]] = {
    'MaxPool3d_2a_3x3': ((1, 3, 3), (1, 2, 2)),
    'MaxPool3d_3a_3x3': ((1, 3, 3), (1, 2, 2)),
    'MaxPool3d_4a_3x3': ((3, 3, 3), (2, 2, 2)),
    'MaxPool3d_5a_2x2': ((2, 2, 2), (2, 2, 2)),
}
LOGITS_POOL = (2, 7, 7)


def _unit3d(x: tf.Tensor, ctx: layers.TowerContext, filters: int, kernel: Sequence[int],
            name: str, strides: Sequence[int] = (1, 1, 1)) -> tf.Tensor:
  """DeepMind's Unit3D: conv (SAME, no bias) + offset-only batch norm + ReLU."""
  with tf1.variable_scope(name):
    x = layers.conv3d(x, filters, kernel, strides, use_bias=False, padding='SAME')
    x = layers.batch_norm(x, ctx, use_scale=False)
    return tf.nn.relu(x)


def _max_pool(x: tf.Tensor, name: str) -> tf.Tensor:
  ksize, strides = _POOLS[name]
  return tf.nn.max_pool3d(x, [1, *ksize, 1], [1, *strides, 1], 'SAME', name=name)


def _mixed(x: tf.Tensor, ctx: layers.TowerContext, name: str) -> tf.Tensor:
  b0, (b1a, b1b), (b2a, b2b), b3 = _MIXED[name]
  # DeepMind's checkpoint names this one layer 0a instead of 0b.
  b2b_name = 'Conv3d_0a_3x3' if name == 'Mixed_5b' else 'Conv3d_0b_3x3'
  with tf1.variable_scope(name):
    with tf1.variable_scope('Branch_0'):
      branch_0 = _unit3d(x, ctx, b0, (1, 1, 1), 'Conv3d_0a_1x1')
    with tf1.variable_scope('Branch_1'):
      branch_1 = _unit3d(x, ctx, b1a, (1, 1, 1), 'Conv3d_0a_1x1')
      branch_1 = _unit3d(branch_1, ctx, b1b, (3, 3, 3), 'Conv3d_0b_3x3')
    with tf1.variable_scope('Branch_2'):
      branch_2 = _unit3d(x, ctx, b2a, (1, 1, 1), 'Conv3d_0a_1x1')
      branch_2 = _unit3d(branch_2, ctx, b2b, (3, 3, 3), b2b_name)
    with tf1.variable_scope('Branch_3'):
      branch_3 = tf.nn.max_pool3d(x, [1, 3, 3, 3, 1], [1, 1, 1, 1, 1], 'SAME',
                                  name='MaxPool3d_0a_3x3')
      branch_3 = _unit3d(branch_3, ctx, b3, (1, 1, 1), 'Conv3d_0b_1x1')
    return tf.concat([branch_0, branch_1, branch_2, branch_3], axis=4)


def logits_pool_kernel(feature_shape: Sequence[int | None]) -> list[int]:
  """The logits average-pool kernel for a Mixed_5c map of `feature_shape` (T, H, W).

  DeepMind's 2x7x7, shrunk per axis to the feature size when that is smaller (unknown
  sizes keep the standard kernel).
  """
  return [k if size is None else max(1, min(k, int(size)))
          for k, size in zip(LOGITS_POOL, feature_shape)]


def inception_i3d(clips: tf.Tensor, ctx: layers.TowerContext, num_classes: int = KINETICS_CLASSES,
                  stream: str = 'rgb', dropout_keep: float = 1.0,
                  final_endpoint: str = 'Logits') -> tuple[tf.Tensor, dict[str, tf.Tensor]]:
  """Builds I3D up to `final_endpoint` under `<Stream>/inception_i3d`.

  Returns `(net, end_points)`: `net` is the `final_endpoint` tensor (for `Logits` the
  time-averaged logits `[batch, num_classes]`, for `Predictions` their softmax);
  `end_points` maps every endpoint built so far to its tensor. Must be called inside the
  caller's variable scope root (the stream scope is opened here). Raises ValueError for
  an unknown stream or endpoint, or clips whose channel count does not fit the stream.
  """
  if final_endpoint not in ENDPOINTS:
    raise ValueError(Problem('final_endpoint', f'final_endpoint={final_endpoint!r} is not one '
                             f'of {", ".join(ENDPOINTS)}'))
  top_scope, channels = stream_parts(stream)
  if clips.shape.rank != 5 or clips.shape[-1] != channels:
    raise ValueError(Problem('stream', f'I3D {stream} stream needs clips [batch, frames, '
                             f'height, width, {channels}], got shape {clips.shape}'))
  end_points: dict[str, tf.Tensor] = {}
  net = clips
  with tf1.variable_scope(top_scope), tf1.variable_scope(NETWORK_SCOPE):
    for name in ENDPOINTS:
      if name == 'Conv3d_1a_7x7':
        net = _unit3d(net, ctx, 64, (7, 7, 7), name, strides=(2, 2, 2))
      elif name == 'Conv3d_2b_1x1':
        net = _unit3d(net, ctx, 64, (1, 1, 1), name)
      elif name == 'Conv3d_2c_3x3':
        net = _unit3d(net, ctx, 192, (3, 3, 3), name)
      elif name in _POOLS:
        net = _max_pool(net, name)
      elif name in _MIXED:
        net = _mixed(net, ctx, name)
      elif name == 'Logits':
        with tf1.variable_scope(name):
          kernel = logits_pool_kernel(net.shape[1:4].as_list())
          net = tf.nn.avg_pool3d(net, [1, *kernel, 1], [1, 1, 1, 1, 1], 'VALID')
          net = layers.dropout(net, ctx, dropout_keep)
          with tf1.variable_scope(LOGITS_CONV):
            net = layers.conv3d(net, num_classes, (1, 1, 1), use_bias=True)
          # [batch, t, h, w, classes]: h = w = 1 at 224, so this is DeepMind's mean over time.
          net = tf.reduce_mean(net, axis=[1, 2, 3])
      elif name == 'Predictions':
        net = tf.nn.softmax(net)
      end_points[name] = net
      if name == final_endpoint:
        break
  return net, end_points


def build(num_classes: int, stream: str = 'rgb', dropout_keep: float = 1.0,
          head: str = 'replace', pretrained_classes: int = KINETICS_CLASSES
          ) -> Callable[[tf.Tensor, layers.TowerContext], tf.Tensor]:
  """Returns `network(clips, ctx) -> logits [batch, num_classes]` (the c3d_small contract).

  `head`:
    * 'replace' (fine-tuning default): the Logits conv has `num_classes` outputs and is
      left freshly initialised by the warm start;
    * 'keep': the same layer, but restored too (`num_classes` must equal the
      checkpoint's class count, e.g. 400 to evaluate on Kinetics);
    * 'stack': the Logits conv keeps the checkpoint's `pretrained_classes` outputs
      (restored), and a dense layer `<Stream>/stacked_head/{kernel,bias}` maps them to
      `num_classes` logits.
  """
  stream_parts(stream)
  if head not in HEADS:
    raise ValueError(f'head={head!r} is not one of {", ".join(HEADS)}')

  def network(clips: tf.Tensor, ctx: layers.TowerContext) -> tf.Tensor:
    i3d_classes = pretrained_classes if head == 'stack' else num_classes
    logits, _ = inception_i3d(clips, ctx, i3d_classes, stream, dropout_keep, 'Logits')
    if head == 'stack':
      with tf1.variable_scope(STREAMS[stream][0]):
        logits = layers.dense(logits, num_classes, name=STACKED_HEAD)
    return logits

  return network

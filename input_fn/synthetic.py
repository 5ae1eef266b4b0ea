"""A built-in, learnable clip source that needs no files (`--data_source=synthetic`).

Clip i of a split shows a bright Gaussian blob on a noisy background, moving in a straight
line; its class is the direction of motion (num_classes directions evenly spread over the
circle). Every frame alone is uninformative about the class (the start is random), so a
network must use time. Clips are computed in the graph from (seed, split, i), so they are
deterministic and the source costs no memory.

Yields (clips float32 [batch, clip_frames, crop_size, crop_size, 3] in [-1, 1], labels int64 [batch]).
"""

from __future__ import annotations

import math

import tensorflow as tf

from input_fn.pipeline import replica_batch_size, worker_shard

NOISE_STDDEV = 0.1
BLOB_SIGMA = 0.12  # fraction of the frame side


def make_clip(index: tf.Tensor, split_seed: int, params) -> tuple[tf.Tensor, tf.Tensor]:
  """Clip and label of example `index` (int64 scalar)."""
  frames, size = params.clip_frames, params.crop_size
  seed = tf.stack([tf.cast(split_seed, tf.int64), index])
  # A pseudo-random label, so that any shard of the indices holds every class.
  label = tf.random.stateless_uniform([], seed + 2, 0, params.num_classes, dtype=tf.int64)
  start = tf.random.stateless_uniform([2], seed, minval=0.25, maxval=0.75)
  angle = 2.0 * math.pi * tf.cast(label, tf.float32) / params.num_classes
  speed = 0.4 / max(frames - 1, 1)  # the blob travels 0.4 of the frame over the clip
  velocity = speed * tf.stack([tf.cos(angle), tf.sin(angle)])
  t = tf.range(frames, dtype=tf.float32)[:, None]
  centres = start[None, :] + t * velocity[None, :]                     # [T, 2]
  grid = (tf.range(size, dtype=tf.float32) + 0.5) / size
  dx = grid[None, None, :] - centres[:, 0, None, None]                 # [T, 1, W]
  dy = grid[None, :, None] - centres[:, 1, None, None]                 # [T, H, 1]
  blob = tf.exp(-(dx ** 2 + dy ** 2) / (2 * BLOB_SIGMA ** 2))          # [T, H, W]
  noise = NOISE_STDDEV * tf.random.stateless_normal([frames, size, size], seed + 1)
  image = tf.clip_by_value(2.0 * blob - 1.0 + noise, -1.0, 1.0)
  clip = tf.tile(image[..., None], [1, 1, 1, 3])
  return clip, label


def input_fn(mode: str, params, input_context: tf.distribute.InputContext | None = None
             ) -> tf.data.Dataset:
  """Training: an endless shuffled stream over this worker's share of the
  `synthetic_train_examples` clips (see `worker_shard`), batched with drop_remainder.
  Evaluation: all `synthetic_eval_examples` other clips, once."""
  training = mode == tf.estimator.ModeKeys.TRAIN
  count = params.synthetic_train_examples if training else params.synthetic_eval_examples
  split_seed = params.random_seed * 2 + (0 if training else 1) + 1000
  dataset = tf.data.Dataset.range(count)
  if training:  # each worker of a cluster trains on its own share
    num_shards, shard_index = worker_shard(input_context)
    dataset = dataset.shard(num_shards, shard_index)
    dataset = dataset.shuffle(count, seed=params.random_seed).repeat()
  dataset = dataset.map(lambda i: make_clip(i, split_seed, params),
                        num_parallel_calls=tf.data.AUTOTUNE)
  batch = replica_batch_size(params, training, input_context)
  return dataset.batch(batch, drop_remainder=training).prefetch(tf.data.AUTOTUNE)

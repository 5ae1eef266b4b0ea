"""Helpers shared by the tower tests: virtual CPU sessions and where ops really ran."""

from __future__ import annotations

import collections

import tensorflow as tf

tf1 = tf.compat.v1


def cpu_session_config(num_cpus: int) -> tf1.ConfigProto:
  """A session with `num_cpus` virtual CPU devices; soft placement stays OFF so that a
  request for a missing device fails instead of silently collapsing onto CPU:0."""
  return tf1.ConfigProto(device_count={'CPU': num_cpus}, allow_soft_placement=False,
                         inter_op_parallelism_threads=2 * num_cpus + 2)


def devices_that_ran(run_metadata: tf1.RunMetadata) -> dict[str, set[str]]:
  """Node name -> set of devices it executed on, from a FULL_TRACE run's step stats."""
  ran = collections.defaultdict(set)
  for device_stats in run_metadata.step_stats.dev_stats:
    device = tf.DeviceSpec.from_string(device_stats.device)
    short = f'{device.device_type}:{device.device_index}'
    for node in device_stats.node_stats:
      ran[node.node_name].add(short)
  return ran


def full_trace() -> tf1.RunOptions:
  return tf1.RunOptions(trace_level=tf1.RunOptions.FULL_TRACE)

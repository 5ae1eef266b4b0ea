"""Measures the bytes a local cluster moves per global step, against the traffic model.

    bazel run //benchmarks:cluster_traffic

The model (docs/scaling.md): every worker step pulls each trainable parameter from its ps
task once and pushes one averaged gradient per variable, plus the main tower's
batch-norm statistics, so one global step moves about

    2 x parameter bytes + batch-norm statistic bytes

whatever the number of towers, workers or ps tasks. The cluster runs in its own network
namespace (as `local_cluster` does), so the namespace's loopback counter (`lo` received
bytes in /proc/net/dev) counts exactly the cluster's traffic, gRPC framing and TCP/IP
headers included. Bytes are sampled when the chief records a progress event, at two steps
after warm-up, and divided by the global steps between them.

The library: benchmarks/cluster_traffic.py.
"""

from __future__ import annotations

# First: its signal handlers (command_line/signals.py), before anything slow.
from command_line import entry
# pylint: disable=wrong-import-position
from command_line import console

console.quiet_native_logs()  # before TensorFlow is imported: it reads the level once

from benchmarks.cluster_traffic import run, TrafficOptions


PROGRAM = entry.Program('cluster_traffic', run, TrafficOptions)


if __name__ == '__main__':
  PROGRAM.start()

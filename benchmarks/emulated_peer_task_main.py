"""One task of an emulated TensorFlow peer (`//benchmarks:cluster_emulator --systems=...`).

    python -m benchmarks.emulated_peer_task_main --peer=multi_worker_mirrored --model=i3d ...

The peers' counterpart of `benchmarks/emulated_task.py`, through TensorFlow's own
multi-node machinery instead of this library's:

  ps_strategy            tf.compat.v1.distribute.experimental.ParameterServerStrategy
                         (asynchronous; variables round robin over the ps tasks)
  multi_worker_mirrored  tf.distribute.experimental.MultiWorkerMirroredStrategy
                         (synchronous; gradients summed by collective all-reduce)

Its role comes from TF_CONFIG (`LocalCluster(tf_config_role=True)` sets it per task), as
for any tf.distribute program, and `tf.estimator.train_and_evaluate` runs it: a ps task
serves, the chief and workers train with the strategy as `train_distribute`, so the
strategy's own variable placement, reads, updates and all-reduces move the bytes. The
model_fn creates the network's trainable variables (names and shapes of
`emulated_task.variable_shapes`, float32, zeros), reads each once, waits
`emulate_compute x time_scale` seconds once every value has arrived (instead of the
forward and backward passes), and returns a loss whose gradient is one float32 [shape]
tensor per variable, computed after the wait; momentum applies them (the same optimizer
as `emulated_task`). No checkpoints, summaries or evaluation. Each finished step appends
an `emulated_step` event {index, end, seconds} to the task's status file (as
`emulated_task`), and each training task a `session_ready` event once its session exists;
once its graph is built, it prints the variables' bytes on each device where the strategy
placed them.

The library: benchmarks/emulated_peer_task.py.
"""

from __future__ import annotations

from benchmarks.emulated_peer_task import PeerTaskOptions, run
from command_line import entry


PROGRAM = entry.Program('emulated_peer_task', run, PeerTaskOptions)


if __name__ == '__main__':
  PROGRAM.start()

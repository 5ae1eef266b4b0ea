"""One task of the emulated cluster (`//benchmarks:cluster_emulator` starts these).

    python -m benchmarks.emulated_task_main --model=i3d --emulate_compute=2.1 --time_scale=10 ...

Its role comes from `--ps_hosts`, `--worker_hosts`, `--task_type` and `--task_index`
(set per task by `LocalCluster`, as for `towers.train`; worker 0 is the chief). A ps task serves. A
worker builds the real network's trainable variables (names, shapes, float32; created on
the ps tasks by the project's `ParameterServerPlacement`, or largest first with
`--ps_placement=largest_first`), and runs steps through TensorFlow's parameter-server
runtime: pull every variable once (`model_fn/transfer.pull`), wait
`emulate_compute x accumulate_steps x time_scale` seconds instead of the forward and
backward passes, push one float32 [shape] gradient per variable (`transfer.push`), and
apply them with momentum on the ps (`SyncReplicasOptimizer` across all workers with
`--sync_replicas`).

The wait (`compute_waits`): with `--overlap` (the default, as training without
`--clip_gradient_norm` runs) it is split per trainable variable in proportion to the
FLOPs of that variable's layer at the recipe clip `FLOP_CLIP` (`compute_shares`):
forward chunks in the network's creation order, each starting once its variable is
pulled and the previous chunk ended; then backward chunks in reverse order, each
variable's gradient pushed as soon as its backward chunk ends, so the pushes of late
layers overlap the backward chunks of earlier ones. With `--overlap=false` it is one
wait after every pull and before every push (the worst case). With
`--accumulate_steps` k only the first micro-batch's forward and the last one's backward
are chunked; the other k - 1 micro-batches' worth is one wait between them. Each
finished step appends one event to the task's status file (`command_line/status_file.py`):

    emulated_step {index, end: s since the epoch, seconds: its duration}

The library: benchmarks/emulated_task.py.
"""

from __future__ import annotations

from benchmarks.emulated_task import TaskOptions, run
from command_line import entry


PROGRAM = entry.Program('emulated_task', run, TaskOptions)


if __name__ == '__main__':
  PROGRAM.start()

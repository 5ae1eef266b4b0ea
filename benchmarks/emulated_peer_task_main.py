"""The emulated-peer task program (`python -m benchmarks.emulated_peer_task_main`, started by
//benchmarks:cluster_emulator --systems=...): reads its `PeerTaskOptions` and runs the task
(benchmarks/emulated_peer_task.py)."""

from __future__ import annotations

from benchmarks.emulated_peer_task import PeerTaskOptions, run
from command_line import entry


PROGRAM = entry.Program('emulated_peer_task', run, PeerTaskOptions)


if __name__ == '__main__':
  PROGRAM.start()

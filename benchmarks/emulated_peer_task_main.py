"""One task of an emulated TensorFlow peer (`//benchmarks:cluster_emulator --systems=...`).

  python -m benchmarks.emulated_peer_task_main --peer=multi_worker_mirrored ...

The task itself: benchmarks/emulated_peer_task.py.
"""

from __future__ import annotations

from benchmarks.emulated_peer_task import PeerTaskOptions, run
from command_line import entry


PROGRAM = entry.Program('emulated_peer_task', run, PeerTaskOptions)


if __name__ == '__main__':
  PROGRAM.start()

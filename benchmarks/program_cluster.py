"""`ProgramCluster`: a `LocalCluster` whose tasks run another program than `towers.train_main`
(the cluster emulator's tasks, a benchmark's peers), optionally each on its own host (an
emulated node) and told its role by TF_CONFIG, as programs built on tf.distribute strategies
read it.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Callable, Sequence

from towers.cluster.local_cluster import LocalCluster, Task


class ProgramCluster(LocalCluster):
  """`program` is what follows the interpreter (e.g. ('-m', 'benchmarks.emulated_task_main')),
  given `args` and, unless `tf_config_role`, the role's flags; `hosts` gives each ps then each
  worker its host (default: loopback); `launcher(task)` is a command prefix (e.g. entering an
  emulated node's network namespace). Other keywords as `LocalCluster`'s."""

  def __init__(self, num_ps: int, num_workers: int, args: Sequence[str],
               program: Sequence[str], hosts: Sequence[str] | None = None,
               launcher: Callable[[Task], list[str]] | None = None,
               tf_config_role: bool = False, **kwargs: Any) -> None:
    self._program = list(program)
    self._hosts = list(hosts) if hosts else None
    self._launcher = launcher or (lambda task: [])
    self._tf_config_role = tf_config_role
    super().__init__(num_ps, num_workers, args, **kwargs)

  def hosts(self, count: int) -> list[str]:
    return self._hosts or super().hosts(count)

  def command(self, task: Task) -> list[str]:
    role = [] if self._tf_config_role else self.role_args(task)
    return [*self._launcher(task), sys.executable, *self._program, *self._train_args, *role]

  def environment(self, task: Task) -> dict[str, str]:
    env = super().environment(task)
    if self._tf_config_role:
      env['TF_CONFIG'] = json.dumps({'cluster': self.cluster,
                                     'task': {'type': task.task_type, 'index': task.task_index}})
    return env

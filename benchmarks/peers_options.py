"""The options of //benchmarks:cluster_peers (`PeersOptions`) and the systems it compares
(`SYSTEMS`). No TensorFlow here: the program refuses options that cannot work before
TensorFlow loads (benchmarks/cluster_peers_main.py); the comparison is
benchmarks/cluster_peers.py.
"""

from __future__ import annotations

import dataclasses

from command_line.options import Options, Problem, above, at_least, option

SYSTEMS = ('ours_async', 'ours_sync', 'ps_strategy', 'multi_worker_mirrored',
           'replica_device_setter')
OURS = ('ours_async', 'ours_sync')


def _some_system(o: PeersOptions) -> Problem | None:
  return None if o.systems else Problem('systems', '--systems is empty: choose from '
                                        f'{",".join(SYSTEMS)}')


@dataclasses.dataclass(frozen=True)
class PeersOptions(Options):
  rules = (_some_system,)

  systems: tuple[str, ...] = option(SYSTEMS, f'Systems to run, from {",".join(SYSTEMS)}.',
                                    choices=SYSTEMS)
  repeats: int = option(2, 'Runs per system, interleaved.', valid=at_least(1))
  replica_batch: int = option(8, 'Clips per worker step (one replica per worker); the '
                              'global batch is twice this.', valid=at_least(1))
  max_steps: int = option(500, 'Global steps each run trains to (enough for a throughput '
                          'window after a worker that waited 30 s).', valid=at_least(1))
  settle_secs: float = option(5.0, 'Seconds after both chief and worker made their first '
                              'step before the throughput window starts.', valid=at_least(0))
  window_secs: float = option(20.0, 'Length of the throughput window (shorter when the '
                              'chief reaches max_steps first).', valid=above(0))
  timeout_secs: float = option(600.0, 'A run that has not ended after this is an error.',
                               valid=above(0))
  task_logs: str = option('', 'If set, every task\'s output goes to TASK_LOGS/<system>_<repeat>/'
                        '<task>.log.', path=True)

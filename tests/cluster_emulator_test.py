"""Specification: the cluster emulator honours its links and moves the model's bytes.

Two emulated nodes on 8 Mbit/s links run the small C3D's variables, with a compute wait
short enough that the links are the bottleneck: through this library's ps runtime (one
ps and one worker per node, asynchronous) and through TensorFlow's
MultiWorkerMirroredStrategy (one worker per node, synchronous ring all-reduce). The
busiest link's measured bytes per worker step must be those of the traffic model (pull
of the remote ps share + push of the gradient, at the measured mix of the two workers'
steps, which differ when their remote shares do; for the ring 2 (N - 1) / N x P per
global step; plus framing: between 0.8x and 1.6x), and its measured rate may not exceed the
shaped rate (a bound the kernel enforces; an unshaped veth would run ~100x faster). No
timing threshold on how fast this machine is.
"""

import os
import subprocess
import sys

from absl.testing import absltest

from command_line import status_file
from towers.cluster.local_cluster import isolation_command

EMULATOR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        'benchmarks', 'cluster_emulator_main.py')
SMALL = ['--model=c3d_small', '--num_classes=4', '--nodes=2', '--link_mbit=8',
         '--emulate_compute=0.05', '--time_scale=1', '--untimed_steps=1', '--steps=6',
         '--timeout_secs=400']


@absltest.skipIf(isolation_command() is None, 'this machine allows no network namespaces')
class ClusterEmulatorTest(absltest.TestCase):

  def check_two_nodes_on_shaped_links(self, system: str, mode: str) -> None:
    events = os.path.join(self.create_tempdir().full_path, 'events.jsonl')
    result = subprocess.run(
        [sys.executable, EMULATOR, *SMALL, f'--systems={system}', f'--modes={mode}'],
        capture_output=True, text=True, timeout=600, check=False,
        env=dict(os.environ, **{status_file.STATUS_FILE_ENV: events}))
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    rows = [e for e in status_file.read(events) if e['event'] == 'emulator_row']
    self.assertEqual([(r['system'], r['mode'], r['nodes']) for r in rows], [(system, mode, 2)],
                     result.stdout)
    cells = rows[0]
    out_mb, in_mb, model_mb = cells['sent_mb'], cells['received_mb'], cells['model_mb']
    link_use = cells['link_use']
    for measured in (out_mb, in_mb):
      self.assertGreaterEqual(measured / model_mb, 0.8, cells)
      self.assertLessEqual(measured / model_mb, 1.6, cells)
    self.assertLessEqual(link_use, 1.05, cells)
    self.assertGreater(link_use, 0.0, cells)

  def test_ours_asynchronous(self):
    self.check_two_nodes_on_shaped_links('ours', 'async')

  def test_multi_worker_mirrored(self):
    self.check_two_nodes_on_shaped_links('multi_worker_mirrored', 'sync')


if __name__ == '__main__':
  absltest.main()

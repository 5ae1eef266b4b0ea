"""Specification: the cluster emulator honours its links and moves the model's bytes.

Two emulated nodes (one ps and one worker each) on 8 Mbit/s links run the small C3D's
variables through the real ps runtime, with a compute wait short enough that the links
are the bottleneck. The busiest link's measured bytes per worker step must be those of
the traffic model (pull of the remote ps share + push of the gradient, plus framing:
between 0.8x and 1.6x), and its measured rate may not exceed the shaped rate (a bound
the kernel enforces; an unshaped veth would run ~100x faster). No timing threshold on
how fast this machine is.
"""

import os
import re
import subprocess
import sys
import unittest

from towers.cluster.local_cluster import isolation_command

EMULATOR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        'benchmarks', 'cluster_emulator.py')
ROW = re.compile(r'^\| ours \| async \| 2 \|')


def table_row(output: str) -> list[str]:
  rows = [line for line in output.splitlines() if ROW.match(line)]
  if len(rows) != 1:
    raise AssertionError(f'expected one async row for 2 nodes in:\n{output}')
  return [cell.strip() for cell in rows[0].strip('|').split('|')]


@unittest.skipIf(isolation_command() is None, 'this machine allows no network namespaces')
class ClusterEmulatorTest(unittest.TestCase):

  def test_two_nodes_on_shaped_links(self):
    result = subprocess.run(
        [sys.executable, EMULATOR, '--model=c3d_small', '--num_classes=4', '--nodes=2',
         '--modes=async', '--link_mbit=8', '--emulate_compute=0.05', '--time_scale=1',
         '--untimed_steps=1', '--steps=6', '--timeout_secs=400'],
        capture_output=True, text=True, timeout=600, check=False)
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    cells = table_row(result.stdout)
    out_mb, in_mb = (float(v) for v in cells[8].split('/'))
    model_mb = float(cells[9])
    link_use = float(cells[10].rstrip('%')) / 100
    for measured in (out_mb, in_mb):
      self.assertGreaterEqual(measured / model_mb, 0.8, cells)
      self.assertLessEqual(measured / model_mb, 1.6, cells)
    self.assertLessEqual(link_use, 1.05, cells)
    self.assertGreater(link_use, 0.0, cells)


if __name__ == '__main__':
  unittest.main()

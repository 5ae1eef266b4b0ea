"""Specification: `LocalCluster.stop_all` gives running tasks `grace_secs` after SIGTERM,
then kills those still running.

A ps that ignores SIGTERM (as MultiWorkerMirrored's tasks outlive it) and a chief that
does not: with `grace_secs=0` both are gone at once, the ps killed (SIGKILL), the chief
terminated (SIGTERM); with a grace, the ps lives it out before it is killed. Once the chief
has stopped for the time limit, a task that fails (one still starting) is no failure of
the run: exit 75.
"""

import signal
import time
from unittest import mock

from absl.testing import absltest

from benchmarks.program_cluster import ProgramCluster
from towers.cluster import local_cluster
from towers.cluster.time_limit import STOPPED_EXIT_CODE

# Role flags follow the program's code; `python -c` leaves them in sys.argv.
TASK = ('import signal, sys, time\n'
        'if "--task_type=ps" in sys.argv: signal.signal(signal.SIGTERM, signal.SIG_IGN)\n'
        'print("up", flush=True)\n'
        'time.sleep(120)\n')


class StopAllTest(absltest.TestCase):

  def started(self) -> ProgramCluster:
    cluster = ProgramCluster(1, 1, [], program=('-c', TASK), evaluator=False)
    for name in cluster.tasks:
      cluster.start(name)
    deadline = time.time() + 60
    while not all(cluster.output(name) == ['up'] for name in cluster.tasks):
      self.assertLess(time.time(), deadline, {n: cluster.output(n) for n in cluster.tasks})
      time.sleep(0.05)
    return cluster

  def stop(self, cluster: ProgramCluster, grace_secs: float) -> float:
    """Seconds `stop_all(grace_secs)` took; asserts the ps was killed, the chief ended."""
    start = time.monotonic()
    cluster.stop_all(grace_secs=grace_secs)
    took = time.monotonic() - start
    self.assertEqual(cluster.tasks['ps0'].process.returncode, -signal.SIGKILL)
    self.assertIsNotNone(cluster.tasks['chief'].process.returncode)
    return took

  def test_no_grace_kills_a_task_that_ignores_sigterm_at_once(self):
    self.assertLess(self.stop(self.started(), grace_secs=0), 2.0)

  def test_a_task_that_ignores_sigterm_lives_out_the_grace(self):
    cluster = self.started()
    self.assertGreaterEqual(self.stop(cluster, grace_secs=3), 3.0)
    self.assertEqual(cluster.tasks['chief'].process.returncode, -signal.SIGTERM)


# The chief reports a ready session and stops for the time limit (exit 75); worker 1 fails
# a moment later (as one still starting fails waiting for the ps the chief sent home); the
# ps runs on until stopped.
STOPPING = ('import sys, time\n'
            'from command_line import status_file\n'
            'if "--task_index=0" in sys.argv and "--task_type=worker" in sys.argv:\n'
            '  status_file.record("session_ready", step=0, max_steps=9)\n'
            '  time.sleep(0.5)\n'
            '  sys.exit(75)\n'
            'if "--task_type=worker" in sys.argv:\n'
            '  time.sleep(1.5)\n'
            '  sys.exit(3)\n'
            'time.sleep(120)\n')


class TimeLimitStopTest(absltest.TestCase):

  def test_a_task_that_fails_after_the_chief_stopped_for_the_time_limit_is_no_failure(self):
    cluster = ProgramCluster(1, 2, [], program=('-c', STOPPING), evaluator=False)
    with mock.patch.object(local_cluster, 'STOP_GRACE_SECS', 5.0):
      self.assertEqual(cluster.run(timeout_secs=120), STOPPED_EXIT_CODE)
    self.assertEqual(cluster.tasks['worker1'].process.returncode, 3)  # it did fail


if __name__ == '__main__':
  absltest.main()

"""Specification: every cluster role has its runner, and the one watchdog ends its process
with the exit code it was given once its peer has refused connections for its limit, and
never while the peer answers."""

import socket
import subprocess
import sys
import time

from absl.testing import absltest

from towers.cluster import runners, spec, watchdog


class RunnersTest(absltest.TestCase):

  def test_each_task_type_has_one_runner_of_its_job(self):
    self.assertEqual(set(runners.RUNNERS), set(spec.TASK_TYPES))
    for job, runner in runners.RUNNERS.items():
      self.assertEqual(runner.job, job)
      self.assertTrue(issubclass(runner, runners.Runner))


class WatchdogTest(absltest.TestCase):

  def test_a_peer_gone_for_the_limit_ends_the_process_with_the_exit_code(self):
    (port,) = spec.pick_free_ports(1)
    code = ('import time\n'
            'from towers.cluster.watchdog import Watchdog\n'
            f'Watchdog("test", ["127.0.0.1:{port}"], 0.3, lambda a, d, l: "gone " + a, 7,\n'
            '         period_secs=0.05).start()\n'
            'time.sleep(60)\n')
    start = time.time()
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, timeout=120,
                            check=False)
    self.assertEqual(result.returncode, 7, result.stderr.decode()[-2000:])
    self.assertLess(time.time() - start, 60)

  def test_a_peer_that_answers_is_waited_for(self):
    with socket.socket() as server:
      server.bind(('127.0.0.1', 0))
      server.listen()
      address = f'127.0.0.1:{server.getsockname()[1]}'
      # Were it to fire, its exit code would end this spec's process: a failure.
      dog = watchdog.Watchdog('test', [address], 0.2, lambda a, d, l: 'gone', 9,
                              period_secs=0.05)
      dog.start()
      time.sleep(1.0)
      self.assertTrue(dog.is_alive())

  def test_the_roles_watchdogs_keep_their_exit_codes(self):
    self.assertEqual(watchdog.ps_watchdog(['127.0.0.1:1'], 5).exit_code, 3)
    self.assertEqual(watchdog.chief_watchdog('worker0', '127.0.0.1:1', 5).exit_code, 4)


if __name__ == '__main__':
  absltest.main()

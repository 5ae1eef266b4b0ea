"""Specification: one writer per model_dir.

A second training on a model_dir that a live process trains is refused before any work
(exit 2, its `error` event naming model_dir; `ModelDirBusy` holds that process's host and
pid). A lock left behind
by a process that died (on this host: its pid is gone; on another host sharing the
storage: its lease ran out) does not block a rerun, nor does one of the same Slurm job
(a requeued job's earlier run), nor one without a writer's record (empty, damaged,
binary: taken over; one that cannot be read at all is refused, naming it). Of a cluster only the chief holds the lock
(cluster_shutdown_test checks it while the chief waits for a worker).
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time

from absl.testing import absltest

from tests import program_runs
from towers import model_dir_lock

LIMIT = 240
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, PYTHONPATH=ROOT)
for name in ('TF_CONFIG', 'SLURM_JOB_ID'):
  ENV.pop(name, None)
TINY = ['--model=c3d_small', '--num_classes=3', '--clip_frames=4', '--crop_size=16',
        '--batch_size=2', '--max_steps=1', '--num_towers=1']
HOLD = ('import sys, time\n'
        'from towers import model_dir_lock\n'
        'model_dir_lock.acquire(sys.argv[1])\n'
        'print("held", flush=True)\n'
        'time.sleep(600)\n')


class ModelDirLockTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.model_dir = os.path.join(self.create_tempdir().full_path, 'run')
    self.lock_path = os.path.join(self.model_dir, model_dir_lock.LOCK_FILE)

  def hold_in_another_process(self) -> subprocess.Popen:
    holder = subprocess.Popen([sys.executable, '-c', HOLD, self.model_dir], env=ENV,
                              stdout=subprocess.PIPE, text=True)
    self.addCleanup(holder.stdout.close)
    self.addCleanup(lambda: holder.poll() is None and holder.kill())
    self.assertEqual(holder.stdout.readline().strip(), 'held')
    return holder

  def write_lock(self, age_secs: float, **holder) -> None:
    os.makedirs(self.model_dir, exist_ok=True)
    with open(self.lock_path, 'w') as f:
      json.dump(holder, f)
    then = time.time() - age_secs
    os.utime(self.lock_path, (then, then))

  def test_a_second_training_is_refused_naming_the_writer_and_a_dead_writer_blocks_nothing(self):
    holder = self.hold_in_another_process()
    done = program_runs.run('towers.train_main', *TINY, f'--model_dir={self.model_dir}',
                            timeout=LIMIT)
    self.assertEqual(done.code, 2, done.output())
    self.assertEqual(done.error['error'], 'ModelDirBusy', done.output())
    self.assertEqual(done.error_options, ['model_dir'])
    with open(self.lock_path) as f:  # the writer it names, still holding the lock
      self.assertEqual((json.load(f)['pid'], holder.poll()), (holder.pid, None))
    self.assertFalse(os.path.exists(os.path.join(self.model_dir, 'checkpoint')))
    # Killed without a chance to clean up: its lock stays, and blocks nothing.
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    self.assertTrue(os.path.exists(self.lock_path))
    lock = model_dir_lock.acquire(self.model_dir)
    with self.assertRaises(model_dir_lock.ModelDirBusy) as caught:
      model_dir_lock.acquire(self.model_dir)  # a second run in the same process too
    self.assertEqual((caught.exception.holder['pid'], caught.exception.holder['host']),
                     (os.getpid(), socket.gethostname()))
    lock.release()
    self.assertFalse(os.path.exists(self.lock_path))

  def test_another_host_s_lock_holds_for_its_lease(self):
    self.write_lock(5, host='other-node', pid=4242, token='x')
    with self.assertRaises(model_dir_lock.ModelDirBusy) as caught:
      model_dir_lock.acquire(self.model_dir)
    self.assertEqual((caught.exception.holder['pid'], caught.exception.holder['host']),
                     (4242, 'other-node'))
    self.assertAlmostEqual(caught.exception.age, 5, delta=2)
    self.write_lock(model_dir_lock.LEASE_SECS + 1, host='other-node', pid=4242, token='x')
    model_dir_lock.acquire(self.model_dir).release()

  def test_a_lock_of_the_same_slurm_job_is_its_earlier_run(self):
    self.write_lock(1, host='other-node', pid=4242, token='x', slurm_job='77')
    os.environ['SLURM_JOB_ID'] = '78'
    self.addCleanup(os.environ.pop, 'SLURM_JOB_ID')
    with self.assertRaises(model_dir_lock.ModelDirBusy):
      model_dir_lock.acquire(self.model_dir)
    os.environ['SLURM_JOB_ID'] = '77'
    model_dir_lock.acquire(self.model_dir).release()

  def write_bytes(self, data: bytes, age_secs: float) -> None:
    os.makedirs(self.model_dir, exist_ok=True)
    with open(self.lock_path, 'wb') as f:
      f.write(data)
    then = time.time() - age_secs
    os.utime(self.lock_path, (then, then))

  def test_a_lock_without_a_writer_s_record_is_taken_over(self):
    # Empty, garbage, binary, JSON that names no writer: no live writer can be shown.
    for data in (b'', b'garbage', b'\xff\xfe\x00\x81', b'[]', b'{"pid": "?"}',
                 b'{"host": "n1", "pid": 1.5}'):
      for age in (model_dir_lock.WRITE_SECS + 1, 0):  # the fresh one: waited for, then taken
        with self.subTest(data=data, age=age):
          self.write_bytes(data, age)
          lock = model_dir_lock.acquire(self.model_dir)
          with open(self.lock_path) as f:
            self.assertEqual(json.load(f)['pid'], os.getpid())
          lock.release()
          self.assertFalse(os.path.exists(self.lock_path))

  def test_a_binary_lock_does_not_stop_training_and_an_unreadable_one_is_named(self):
    self.write_bytes(b'\x80\x81\x82', model_dir_lock.WRITE_SECS + 1)
    done = program_runs.run('towers.train_main', *TINY, f'--model_dir={self.model_dir}',
                            timeout=LIMIT)
    self.assertEqual((done.code, done.error), (0, None), done.output())
    self.assertTrue(os.path.exists(os.path.join(self.model_dir, 'checkpoint')))
    # A lock that cannot be read at all is no lock to ignore: refused, naming model_dir.
    model_dir = os.path.join(self.create_tempdir().full_path, 'run')
    os.makedirs(os.path.join(model_dir, model_dir_lock.LOCK_FILE))
    done = program_runs.run('towers.train_main', *TINY, f'--model_dir={model_dir}',
                            timeout=LIMIT)
    self.assertEqual(done.code, 2, done.output())
    self.assertEqual((done.error['error'], done.error_options), ('ModelDirBusy', ['model_dir']))
    self.assertIn(os.path.join(model_dir, model_dir_lock.LOCK_FILE), done.error['message'])
    self.assertFalse(os.path.exists(os.path.join(model_dir, 'checkpoint')))

  def test_a_held_lock_stays_fresh(self):
    beat = model_dir_lock.HEARTBEAT_SECS
    model_dir_lock.HEARTBEAT_SECS = 0.1
    self.addCleanup(setattr, model_dir_lock, 'HEARTBEAT_SECS', beat)
    lock = model_dir_lock.acquire(self.model_dir)
    self.addCleanup(lock.release)
    then = time.time() - model_dir_lock.LEASE_SECS
    os.utime(self.lock_path, (then, then))
    time.sleep(1.0)
    self.assertLess(time.time() - os.stat(self.lock_path).st_mtime, 1.0)

if __name__ == '__main__':
  absltest.main()

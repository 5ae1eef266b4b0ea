"""Specification: a non-chief worker waits for the chief's initialisation checking every
0.5 s (ModelReadyHook), not TensorFlow's 30 s; the chief gets no such wait.

The checks run against a real in-process gRPC server; time is injected, so nothing here
depends on how fast the machine is."""

import tensorflow as tf

from towers.cluster import runners
from towers.cluster.model_ready import POLL_SECS, ModelReadyHook
from towers.cluster.spec import ClusterTask
from towers.estimator import build_estimator
from towers.params import make_params

tf1 = tf.compat.v1


class FakeTime:
  """A clock that moves only when slept on; `on_sleep(n)` runs at the n-th sleep."""

  def __init__(self, on_sleep=lambda n: None):
    self.now = 0.0
    self.sleeps = []
    self._on_sleep = on_sleep

  def sleep(self, secs):
    self.sleeps.append(secs)
    self.now += secs
    self._on_sleep(len(self.sleeps))

  def clock(self):
    return self.now


class ModelReadyHookTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.server = tf.distribute.Server.create_local_server()

  def model(self):
    """A graph with one variable shared on the server (a fresh name per test)."""
    graph = tf.Graph()
    with graph.as_default():
      variable = tf1.get_variable(f'w_{self.id().rsplit(".", 1)[-1]}', [3],
                                  initializer=tf1.ones_initializer())
    return graph, variable

  def initialise(self, graph, variable):
    with tf1.Session(self.server.target, graph=graph) as session:
      session.run(variable.initializer)

  def test_waits_in_half_second_checks_until_the_chief_has_initialised(self):
    graph, variable = self.model()
    # The "chief" initialises during the worker's 3rd wait.
    fake = FakeTime(lambda n: self.initialise(graph, variable) if n == 3 else None)
    hook = ModelReadyHook(self.server.target, sleep=fake.sleep, clock=fake.clock)
    with graph.as_default():
      hook.begin()
    self.assertEqual(hook.checks, 4)
    self.assertEqual(fake.sleeps, [POLL_SECS] * 3)
    self.assertEqual(POLL_SECS, 0.5)

  def test_an_initialised_model_needs_one_check_and_no_wait(self):
    graph, variable = self.model()
    self.initialise(graph, variable)
    fake = FakeTime()
    hook = ModelReadyHook(self.server.target, sleep=fake.sleep, clock=fake.clock)
    with graph.as_default():
      hook.begin()
    self.assertEqual((hook.checks, fake.sleeps), (1, []))

  def test_gives_up_after_max_wait_and_leaves_the_rest_to_tensorflow(self):
    graph, _ = self.model()
    fake = FakeTime()
    hook = ModelReadyHook(self.server.target, max_wait_secs=2.0, sleep=fake.sleep,
                          clock=fake.clock)
    with graph.as_default():
      hook.begin()  # returns, never initialised
    self.assertEqual(fake.sleeps, [POLL_SECS] * 4)
    self.assertEqual(hook.checks, 5)


CLUSTER = {'chief': ('127.0.0.1:1',), 'worker': ('127.0.0.1:2',), 'ps': ('127.0.0.1:3',)}


class WorkerHooksTest(tf.test.TestCase):

  def estimator_as(self, task_type):
    task = ClusterTask(CLUSTER, task_type, 0, 'flags')
    return build_estimator(make_params({'model_dir': self.get_temp_dir(), 'num_towers': 1}),
                           cluster=task)

  def test_the_non_chief_worker_waits_on_its_own_server_with_its_device_filters(self):
    estimator = self.estimator_as('worker')
    (hook,) = runners.worker_hooks(estimator)
    self.assertIsInstance(hook, ModelReadyHook)
    self.assertEqual(hook.master, 'grpc://127.0.0.1:2')
    self.assertEqual(list(hook.config.device_filters), ['/job:ps', '/job:worker/task:0'])
    self.assertEqual(hook.poll_secs, 0.5)

  def test_the_chief_initialises_and_needs_no_wait(self):
    self.assertEqual(runners.worker_hooks(self.estimator_as('chief')), [])


if __name__ == '__main__':
  tf.test.main()

"""Specification: `read_ps_variables` reads a live ps task's variables by their shared
names, resource variables (this library's) and ref variables (some peers') alike, and
says when the ps holds no such variable."""

import numpy as np
import tensorflow as tf

from towers.cluster.ps_variables import NOT_HELD, read_ps_variables
from towers.cluster.spec import pick_free_ports

tf1 = tf.compat.v1


class PsVariablesTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    port, = pick_free_ports(1)
    cls.server = tf.distribute.Server(tf.train.ClusterSpec({'ps': [f'localhost:{port}']}),
                                      job_name='ps', task_index=0)
    with tf1.Graph().as_default(), tf.device('/job:ps/task:0'):
      tf1.Variable(7, dtype=tf.int64, name='global_step', use_resource=False)
      tf1.Variable([1.5, 2.5], name='dense/kernel', use_resource=True)
      with tf1.Session(cls.server.target) as session:
        session.run(tf1.global_variables_initializer())

  def test_reads_ref_and_resource_variables_by_name(self):
    self.assertEqual(read_ps_variables(self.server.target, 0,
                                       {'global_step': (tf.int64, [])}), {'global_step': 7})
    kernel = read_ps_variables(self.server.target, 0, {'dense/kernel': (tf.float32, [2])})
    np.testing.assert_array_equal(kernel['dense/kernel'], [1.5, 2.5])

  def test_a_name_the_ps_does_not_hold_raises_not_held(self):
    with self.assertRaises(NOT_HELD):
      read_ps_variables(self.server.target, 0, {'missing': (tf.float32, [2])})


if __name__ == '__main__':
  tf.test.main()

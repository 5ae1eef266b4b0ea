"""Specification: the evaluator cannot hurt training. It evaluates a pinned copy of each
checkpoint (the chief may delete the original meanwhile), says how many checkpoints it fell
behind, always evaluates the final one, and a failed evaluator never stops the trainers.
"""

import contextlib
import io
import os

import tensorflow as tf

from benchmarks.program_cluster import ProgramCluster
from tests.cluster_testing import TRAIN_ARGS, make_cluster
from towers.checkpoints import checkpoint_step
from towers.cluster import evaluator

LIMIT = 300  # seconds a whole cluster run may take on a loaded 2-core machine


def save_checkpoints(model_dir: str, *steps: int) -> list[str]:
  """Checkpoints of one variable `w` (= the step) and the global step, one per step, as the
  chief's saver writes them; their prefixes."""
  graph = tf.Graph()
  with graph.as_default():
    step_var = tf.compat.v1.train.create_global_step()
    w = tf.compat.v1.get_variable('w', initializer=0.0)
    saver = tf.compat.v1.train.Saver()
    with tf.compat.v1.Session() as session:
      prefixes = []
      for step in steps:
        session.run([tf.compat.v1.assign(step_var, step), tf.compat.v1.assign(w, float(step))])
        prefixes.append(saver.save(session, os.path.join(model_dir, 'model.ckpt'),
                                   global_step=step))
      return prefixes


class PinTest(tf.test.TestCase):

  def test_a_pinned_checkpoint_stays_readable_when_the_chief_deletes_it(self):
    model_dir = self.create_tempdir().full_path
    (prefix,) = save_checkpoints(model_dir, 30)
    pinned = evaluator.pin(evaluator.Checkpoint(prefix, 30), os.path.join(model_dir, 'pin'))
    for name in os.listdir(model_dir):
      if name.startswith('model.ckpt-30'):
        os.remove(os.path.join(model_dir, name))
    self.assertEqual(tf.train.load_variable(pinned, 'w'), 30.0)

  def test_a_checkpoint_deleted_before_it_is_pinned_gives_none(self):
    model_dir = self.create_tempdir().full_path
    (prefix,) = save_checkpoints(model_dir, 30)
    os.remove(prefix + '.index')
    pin_dir = os.path.join(model_dir, 'pin')
    self.assertIsNone(evaluator.pin(evaluator.Checkpoint(prefix, 30), pin_dir))
    self.assertFalse(os.path.exists(pin_dir))

  def test_checkpoints_behind_count_the_listed_and_the_deleted_ones(self):
    listed = [evaluator.Checkpoint(f'm-{s}', s) for s in (60, 70, 80)]
    # Evaluated 20; 30, 40, 50 deleted, 60 and 70 listed, 80 is next.
    self.assertEqual(evaluator.behind(listed, 20, listed[-1], 10), 5)
    self.assertEqual(evaluator.behind(listed, 70, listed[-1], 10), 0)
    self.assertEqual(evaluator.behind(listed, None, listed[-1], 10), 0)

  def test_listed_checkpoints_are_read_from_the_checkpoint_file_oldest_first(self):
    model_dir = self.create_tempdir().full_path
    save_checkpoints(model_dir, 10, 20)
    self.assertEqual([c.step for c in evaluator.listed_checkpoints(model_dir)], [10, 20])

  def test_the_initial_weights_are_never_evaluated(self):
    model_dir = self.create_tempdir().full_path
    save_checkpoints(model_dir, 0)
    self.assertEqual(evaluator.candidates(model_dir), [])
    save_checkpoints(model_dir, 0, 4)
    self.assertEqual([c.step for c in evaluator.candidates(model_dir)], [4])


class LaggingEvaluatorTest(tf.test.TestCase):

  def test_a_lagging_evaluator_skips_ahead_and_evaluates_the_final_checkpoint(self):
    # A checkpoint every 4 steps, 2 kept: each evaluation (512 clips) outlasts several.
    model_dir = os.path.join(self.create_tempdir().full_path, 'model')
    cluster = make_cluster(model_dir, num_ps=1, num_workers=2, max_steps=240, evaluator=True,
                           extra_args=('--save_checkpoints_steps=4', '--keep_checkpoint_max=2',
                                       '--synthetic_eval_examples=512',
                                       '--export_savedmodel=false'))
    self.addCleanup(cluster.stop_all)
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
      code = cluster.run(timeout_secs=LIMIT)
    lines = cluster.output('evaluator')
    self.assertEqual(code, 0, stderr.getvalue() + '\n'.join(lines[-30:]))
    self.assertEqual(cluster.failed_tasks(), [])
    self.assertEqual(cluster.events('evaluator', 'error'), [])
    skips = cluster.events('evaluator', 'checkpoints_skipped')
    self.assertNotEmpty(skips, 'the evaluator lagged and said so')
    evaluated = [e['step'] for e in cluster.events('evaluator', 'evaluation')]
    evaluated_checkpoints = [e['checkpoint_step']
                             for e in cluster.events('evaluator', 'evaluation')]
    for skip in skips:  # it went on from its last evaluation to a newer checkpoint
      self.assertGreater(skip['skipped'], 0)
      self.assertIn(skip['last_step'], evaluated_checkpoints)
      self.assertGreater(skip['step'], skip['last_step'])
    self.assertEqual(evaluated[-1], checkpoint_step(model_dir), 'the final one was evaluated')
    self.assertEqual(cluster.tasks['evaluator'].process.returncode, 0,
                     'the evaluator ended by itself after the final checkpoint')
    self.assertFalse(os.path.exists(os.path.join(model_dir, evaluator.PIN_DIR)))

  def test_an_evaluator_that_fails_does_not_stop_training(self):
    model_dir = os.path.join(self.create_tempdir().full_path, 'model')
    # The evaluator's process exits 5 at once, as a crash would; the rest is real.
    cluster = ProgramCluster(
        1, 2, TRAIN_ARGS + [f'--model_dir={model_dir}', '--max_steps=60'],
        program=('-m', 'towers.train_main'), evaluator=True, echo=None,
        launcher=lambda t: ['sh', '-c', 'exit 5'] if t.name == 'evaluator' else [])
    self.addCleanup(cluster.stop_all)
    stderr, stdout = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(stdout):
      code = cluster.run(timeout_secs=LIMIT)
    self.assertEqual(code, 0, stderr.getvalue())
    self.assertGreaterEqual(checkpoint_step(model_dir), 60)
    self.assertEqual(cluster.failed_tasks(), ['evaluator'])  # the only one, named
    self.assertEqual(cluster.tasks['evaluator'].process.returncode, 5)
    for name in ('chief', 'worker1', 'ps0'):
      self.assertEqual(cluster.tasks[name].process.returncode, 0, name)


if __name__ == '__main__':
  tf.test.main()

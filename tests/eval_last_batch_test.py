"""Specification: an evaluation covers every clip, whatever the batch and tower count.

The last evaluation batch may hold fewer clips than there are towers (42 clips in batches
of 8 leave 2 for 4 towers; an eval batch of 1 on 2 towers always does). Those towers get
no clip: the evaluation still runs, and each clip is counted exactly once, as on one
tower. The towers run on virtual CPU devices.
"""

import tempfile

import numpy as np
import tensorflow as tf

from input_fn import factory
from model_fn.eval_spec import CLIP_LOSS
from towers import build_estimator
from towers.params import make_params

CLIPS = 42
TINY = dict(model='c3d_small', num_classes=4, clip_frames=4, crop_size=16, batch_size=8,
            max_steps=1, save_checkpoints_steps=1, lr_schedule='constant', lr_values=[0.01],
            lr_boundaries=[], export_savedmodel=False, synthetic_eval_examples=CLIPS,
            synthetic_train_examples=16)


def _clips() -> np.ndarray:
  rng = np.random.default_rng(0)
  return rng.uniform(-1, 1, (CLIPS, 4, 16, 16, 3)).astype(np.float32)


class EvalLastBatchTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.model_dir = tempfile.mkdtemp()
    params = make_params(model_dir=cls.model_dir, num_towers=2, **TINY)
    build_estimator(params).train(factory.make_input_fn(params, tf.estimator.ModeKeys.TRAIN),
                                  max_steps=1)

  def estimator(self, **overrides):
    params = make_params(model_dir=self.model_dir, **dict(TINY, **overrides))
    return params, build_estimator(params)

  def predictions(self, batch: int, **overrides) -> np.ndarray:
    _, estimator = self.estimator(**overrides)
    clips = _clips()

    def input_fn():
      return tf.data.Dataset.from_tensor_slices({'clips': clips}).batch(batch)
    return np.array([p['logits'] for p in estimator.predict(input_fn)])

  def evaluation(self, **overrides) -> dict:
    params, estimator = self.estimator(**overrides)
    return estimator.evaluate(factory.make_input_fn(params, tf.estimator.ModeKeys.EVAL))

  def test_each_clip_is_predicted_once_whatever_the_towers_and_batch(self):
    # Prediction (the served graph) is one tower whatever num_towers (tower_model_fn).
    one_tower = self.predictions(8, num_towers=1)
    for towers, batch in ((4, 8), (2, 1), (4, 5)):
      with self.subTest(towers=towers, batch=batch):
        logits = self.predictions(batch, num_towers=towers)
        self.assertEqual(logits.shape, (CLIPS, 4))
        self.assertAllClose(logits, one_tower, atol=1e-4)

  def test_evaluation_with_four_towers_and_batch_8_on_42_clips_matches_one_tower(self):
    one = self.evaluation(num_towers=1)
    four = self.evaluation(num_towers=4)
    self.assertEqual(four['global_step'], 1)
    self.assertAllClose(four['loss'], one['loss'], atol=1e-4)
    self.assertAllClose(four['accuracy/top_1'], one['accuracy/top_1'])

  def test_the_loss_is_the_mean_over_clips_whatever_the_eval_batch(self):
    # 42 clips: batches of 8 leave a last batch of 2, which the Estimator's `loss` (a mean of
    # per-batch means) weighs like a full one; batches of 7 divide them.
    eights = self.evaluation(num_towers=1, eval_batch_size=8)
    sevens = self.evaluation(num_towers=1, eval_batch_size=7)
    self.assertAllClose(eights[CLIP_LOSS], sevens[CLIP_LOSS], atol=1e-5)
    self.assertAllClose(sevens['loss'], sevens[CLIP_LOSS], atol=1e-5)  # equal batches
    self.assertNotAllClose(eights['loss'], eights[CLIP_LOSS], atol=1e-5)  # what it mends

  def test_eval_batch_of_one_on_two_towers(self):
    one = self.evaluation(num_towers=1, eval_batch_size=1)
    two = self.evaluation(num_towers=2, eval_batch_size=1)
    self.assertAllClose(two['loss'], one['loss'], atol=1e-4)
    self.assertAllClose(two['accuracy/top_1'], one['accuracy/top_1'])

  def test_the_towers_run_on_their_own_virtual_cpu_devices(self):
    params, _ = self.estimator(num_towers=4)
    from model_fn import tower_model_fn  # pylint: disable=g-import-not-at-top
    with tf.Graph().as_default():
      clips = tf.compat.v1.placeholder(tf.float32, [None, 4, 16, 16, 3])
      labels = tf.compat.v1.placeholder(tf.int64, [None])
      tower_model_fn.make_model_fn()({'clips': clips}, labels, tf.estimator.ModeKeys.EVAL, params)
      devices = {op.name.split('/')[0]: op.device for op in tf.compat.v1.get_default_graph()
                 .get_operations() if op.name.startswith('tower_') and op.type == 'Conv3D'}
    self.assertEqual(sorted(devices), ['tower_0', 'tower_1', 'tower_2', 'tower_3'])
    for i in range(4):
      self.assertIn(f'CPU:{i}', devices[f'tower_{i}'])


if __name__ == '__main__':
  tf.test.main()

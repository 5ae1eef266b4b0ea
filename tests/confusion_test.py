"""Specification: each evaluation counts the confusion matrix and draws it.

`model_fn/confusion.py` counts (row = true class, column = predicted) and draws the matrix and
the per-class accuracy, readable at UCF101's 101 and HMDB51's 51 classes; the evaluation
returns each class's clip top-1 (`accuracy/per_class`, NaN for a class with no clip), writes
both pictures as image summaries in the eval dir and records the per-class accuracy in its
`evaluation` status event.
"""

import glob
import json
import os
import tempfile
import types

import cv2
import numpy as np
import tensorflow as tf

from model_fn import confusion, eval_spec
from tests import program_runs
from towers import training
from towers.params import make_params

CLASSES = 4
TINY = dict(model='c3d_small', num_classes=CLASSES, clip_frames=4, crop_size=16,
            batch_size=8, max_steps=2, save_checkpoints_steps=2, lr_schedule='constant',
            lr_values=[0.01], lr_boundaries=[], export_savedmodel=False,
            synthetic_eval_examples=24, synthetic_train_examples=16)


def decoded(png: bytes) -> np.ndarray:
  return cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_COLOR)


class ConfusionTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.model_dir = tempfile.mkdtemp()
    with program_runs.recorded_events() as cls.events:
      cls.metrics = training.train_and_evaluate(make_params(model_dir=cls.model_dir, **TINY))

  def test_counts_rows_are_true_classes_and_absent_classes_have_no_accuracy(self):
    matrix = confusion.counts(np.array([0, 0, 0, 2]), np.array([0, 1, 0, 1]), 3)
    self.assertAllEqual(matrix, [[2, 1, 0], [0, 0, 0], [0, 1, 0]])
    accuracy = confusion.per_class_accuracy(matrix)
    self.assertAllClose(accuracy[[0, 2]], [2 / 3, 0.0])
    self.assertTrue(np.isnan(accuracy[1]))
    self.assertEqual(confusion.worst_classes(accuracy, ['a', 'b', 'c'], 5),
                     [('c', 0.0), ('a', 2 / 3)])

  def test_pictures_are_readable_at_101_and_51_classes(self):
    rng = np.random.default_rng(0)
    for classes in (101, 51):
      with self.subTest(classes=classes):
        labels = rng.integers(0, classes, 2000)
        matrix = confusion.counts(labels, np.where(rng.random(2000) < .7, labels,
                                                   rng.integers(0, classes, 2000)), classes)
        names = [f'Class{i:03d}' for i in range(classes)]
        picture = confusion.render_matrix(matrix, names)
        bars = confusion.render_per_class(confusion.per_class_accuracy(matrix), names)
        # at least 4 pixels a cell, one 14-pixel text line a class in the sorted chart
        self.assertGreaterEqual(min(picture.shape[:2]), 4 * classes)
        self.assertGreaterEqual(bars.shape[0], confusion.LINE * classes)
        for image in (picture, bars):
          self.assertEqual(image.dtype, np.uint8)
          self.assertGreater(np.std(image), 10)  # not blank
        path = os.path.join(self.get_temp_dir(), f'{classes}.png')
        confusion.write_png(path, picture)
        self.assertEqual(cv2.imread(path).shape, picture.shape)

  def test_the_evaluation_returns_each_class_accuracy(self):
    per_class = self.metrics[eval_spec.PER_CLASS]
    self.assertEqual(per_class.shape, (CLASSES,))
    self.assertAllClose(np.nanmean(per_class), self.metrics['accuracy/mean_per_class'])

  def test_the_eval_dir_holds_both_pictures(self):
    images = {}
    for path in glob.glob(os.path.join(self.model_dir, 'eval', 'events.out.tfevents.*')):
      for event in tf.compat.v1.train.summary_iterator(path):
        for value in event.summary.value:
          if value.HasField('image'):
            images[value.tag] = value.image
    self.assertEqual(set(images), {eval_spec.CONFUSION_IMAGE + '/0',
                                   eval_spec.PER_CLASS_IMAGE + '/0'})
    matrix = decoded(images[eval_spec.CONFUSION_IMAGE + '/0'].encoded_image_string)
    self.assertGreaterEqual(min(matrix.shape[:2]), 4 * CLASSES)
    self.assertGreater(np.std(matrix), 10)
    bars = decoded(images[eval_spec.PER_CLASS_IMAGE + '/0'].encoded_image_string)
    present = int(np.sum(~np.isnan(self.metrics[eval_spec.PER_CLASS])))
    self.assertEqual(bars.shape[0], 2 * confusion.MARGIN + present * confusion.LINE)

  def test_the_evaluation_event_records_per_class_accuracy(self):
    event = [e for e in self.events if e['event'] == 'evaluation'][-1]
    expected = [None if np.isnan(a) else float(a) for a in self.metrics[eval_spec.PER_CLASS]]
    self.assertEqual(event['per_class'], expected)
    self.assertNotIn(eval_spec.CONFUSION_IMAGE, event['metrics'])

  def test_class_names_come_from_the_records_manifest(self):
    data_dir = self.get_temp_dir()
    with open(os.path.join(data_dir, 'test.manifest.json'), 'w', encoding='utf-8') as f:
      json.dump({'classes': ['Archery', 'Biking'], 'shards': []}, f)  # as prepare writes it
    params = types.SimpleNamespace(data_source='tfrecord', data_dir=data_dir, num_classes=2)
    self.assertEqual(eval_spec.class_names(params), ['Archery', 'Biking'])
    self.assertIsNone(eval_spec.class_names(types.SimpleNamespace(
        data_source='tfrecord', data_dir=data_dir, num_classes=3)))
    self.assertIsNone(eval_spec.class_names(types.SimpleNamespace(
        data_source='synthetic', data_dir=data_dir, num_classes=2)))


  def test_class_names_on_the_direct_routes_come_from_the_class_index(self):
    data_dir = self.get_temp_dir()
    os.makedirs(os.path.join(data_dir, 'ucfTrainTestlist'), exist_ok=True)
    with open(os.path.join(data_dir, 'ucfTrainTestlist', 'classInd.txt'), 'w') as f:
      f.write('1 Archery\r\n2 Biking\r\n')
    for source in ('videos', 'frames'):
      params = types.SimpleNamespace(data_source=source, dataset='ucf101', data_dir=data_dir,
                                     num_classes=2)
      self.assertEqual(eval_spec.class_names(params), ['Archery', 'Biking'])

if __name__ == '__main__':
  tf.test.main()

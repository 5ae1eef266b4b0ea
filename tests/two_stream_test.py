"""Two-stream fusion arithmetic on hand-made predictions: per-video averages, the weighting,
video top-1/top-5/mean per-class, matching by canonical name, what is reported, per class
too, and the files written beside the JSON (confusion PNGs, per-class CSV)."""

import csv
import json
import os

import cv2
import numpy as np
import tensorflow as tf

from serving import two_stream, two_stream_outputs


def softmax(logits):
  e = np.exp(np.asarray(logits, np.float64) - np.max(logits, axis=-1, keepdims=True))
  return e / e.sum(axis=-1, keepdims=True)


def stream(name, names, labels, probabilities, skipped=0):
  return two_stream.StreamPredictions(name, f'/models/{name}', tuple(names),
                                      np.array(labels, np.int64),
                                      np.array(probabilities, np.float32), 2, skipped)


class FusionTest(tf.test.TestCase):

  def test_fusion_weights_the_streams(self):
    rgb, flow = np.array([[0.6, 0.4]]), np.array([[0.2, 0.8]])
    self.assertAllClose(two_stream.fuse(rgb, flow), [[0.4, 0.6]])
    self.assertAllClose(two_stream.fuse(rgb, flow, flow_weight=0.25), [[0.5, 0.5]])
    self.assertAllClose(two_stream.fuse(rgb, flow, flow_weight=0.0), rgb)
    with self.assertRaises(two_stream.TwoStreamError) as caught:
      two_stream.fuse(rgb, flow, flow_weight=1.5)
    self.assertEqual(caught.exception.option, 'flow_weight')

  def test_video_metrics(self):
    # 4 videos, 6 classes. Labels 0, 0, 1, 2.
    probabilities = np.array([
        [.50, .10, .10, .10, .10, .10],   # top-1 right
        [.05, .30, .20, .15, .10, .20],   # label 0 ranked last: top-5 wrong
        [.30, .25, .20, .10, .10, .05],   # label 1 second: top-1 wrong, top-5 right
        [.10, .10, .60, .10, .05, .05],   # top-1 right
    ])
    labels = np.array([0, 0, 1, 2])
    metrics = two_stream.video_metrics(probabilities, labels)
    self.assertAlmostEqual(metrics['top_1'], 2 / 4)
    self.assertAlmostEqual(metrics['top_5'], 3 / 4)
    # per class: class 0: 1/2, class 1: 0/1, class 2: 1/1 -> mean 0.5 over the 3 present
    self.assertAlmostEqual(metrics['mean_per_class'], (0.5 + 0.0 + 1.0) / 3)

  def test_streams_that_disagree_per_video_are_fused_into_the_right_answer(self):
    # Hand-made clip logits, 2 clips per video, 3 classes; each video's probability is the
    # mean of its clips' softmax.
    rgb_clips = softmax([[[5, 0, 0], [3, 0, 0]],     # v1 (label 0): rgb says 0 (strongly)
                         [[0, 0, 2], [0, 0, 2]],     # v2 (label 1): rgb says 2
                         [[0, 0, 5], [0, 1, 5]]])    # v3 (label 2): rgb says 2
    flow_clips = softmax([[[0, 2, 0], [0, 2, 0]],    # v1: flow says 1 (weakly)
                          [[0, 6, 0], [0, 5, 0]],    # v2: flow says 1 (strongly)
                          [[0, 0, 3], [1, 0, 3]]])   # v3: flow says 2
    names, labels = ['v_A_g01_c01', 'v_B_g01_c01', 'v_C_g01_c01'], [0, 1, 2]
    rgb = stream('rgb', names, labels, rgb_clips.mean(axis=1))
    # The flow data spells one video otherwise (HandStand vs Handstand), lists another
    # that rgb lacks, and lists the videos in another order.
    flow = stream('flow', ['v_C_g01_c01', 'v_a_G01_c01', 'v_B_g01_c01', 'v_D_g01_c01'],
                  [2, 0, 1, 0], np.concatenate([flow_clips[[2, 0, 1]],
                                                flow_clips[:1]]).mean(axis=1), skipped=1)
    result = two_stream.report(rgb, flow)
    self.assertEqual(result['videos'], 3)
    self.assertEqual(result['only_flow'], ['v_D_g01_c01'])
    self.assertEqual(result['only_rgb'], [])
    rows = result['rows']
    self.assertAlmostEqual(rows['rgb']['top_1'], 2 / 3)   # v1, v3
    self.assertAlmostEqual(rows['flow']['top_1'], 2 / 3)  # v2, v3
    fused = (rgb_clips.mean(axis=1) + flow_clips.mean(axis=1)) / 2
    self.assertEqual(np.argmax(fused, axis=1).tolist(), [0, 1, 2])
    self.assertAlmostEqual(rows['fusion']['top_1'], 1.0)
    self.assertAlmostEqual(rows['fusion']['mean_per_class'], 1.0)
    self.assertEqual(rows['fusion'], {'top_1': 1.0, 'top_5': 1.0, 'mean_per_class': 1.0})
    streams = result['streams']  # the protocol and the counts the rows rest on
    self.assertEqual([(streams[s]['clips_per_video'], streams[s]['crops_per_video'],
                       streams[s]['videos'], streams[s]['skipped_records'])
                      for s in ('rgb', 'flow')], [(2, 1, 3, 0), (2, 1, 4, 1)])

  def test_per_class_rows_put_the_streams_side_by_side(self):
    # 4 videos, 3 classes. rgb gets class 0 right, flow class 1; fused, both; class 2 is
    # lost by fusion (rgb had it).
    names, labels = ['v_A_g01_c01', 'v_A_g02_c01', 'v_B_g01_c01', 'v_C_g01_c01'], [0, 0, 1, 2]
    rgb = stream('rgb', names, labels, [[.9, .1, 0], [.9, .1, 0], [.4, .0, .6], [.3, .2, .5]])
    flow = stream('flow', names, labels, [[.2, .8, 0], [.2, .8, 0], [.0, 1, 0], [.9, .1, 0]])
    result = two_stream.report(rgb, flow, class_names=['Archery', 'Biking', 'Diving'])
    self.assertEqual(result['per_class'], [
        {'class': 'Archery', 'label': 0, 'videos': 2, 'rgb': 1.0, 'flow': 0.0, 'fusion': 1.0,
         'fusion_gain': 0.0},
        {'class': 'Biking', 'label': 1, 'videos': 1, 'rgb': 0.0, 'flow': 1.0, 'fusion': 1.0,
         'fusion_gain': 0.0},
        {'class': 'Diving', 'label': 2, 'videos': 1, 'rgb': 1.0, 'flow': 0.0, 'fusion': 0.0,
         'fusion_gain': -1.0}])
    matrices = two_stream.confusion_matrices(rgb, flow)
    self.assertAllEqual(matrices['fusion'], [[2, 0, 0], [0, 1, 0], [1, 0, 0]])
    self.assertAllEqual(matrices['rgb'], [[2, 0, 0], [0, 0, 1], [0, 0, 1]])
    helps, hurts = two_stream_outputs.fusion_changes(result)
    self.assertEqual((helps, [r['class'] for r in hurts]), ([], ['Diving']))

  def test_the_pictures_and_the_csv_hold_the_report(self):
    names, labels = ['v_A_g01_c01', 'v_B_g01_c01', 'v_C_g01_c01'], [0, 1, 1]
    rgb = stream('rgb', names, labels, [[.9, .1], [.6, .4], [.2, .8]])
    flow = stream('flow', names, labels, [[.4, .6], [.1, .9], [.3, .7]])
    result = two_stream.report(rgb, flow, flow_weight=0.25)
    out = os.path.join(self.get_temp_dir(), 'two_stream_eval')
    files = two_stream_outputs.write(result, two_stream.confusion_matrices(rgb, flow, 0.25),
                                     None, out)
    self.assertEqual(files, [f'{out}_{s}_confusion.png' for s in ('rgb', 'flow', 'fusion')] +
                     [f'{out}_per_class.csv'])
    for path in files[:3]:
      image = cv2.imread(path)
      self.assertGreaterEqual(min(image.shape[:2]), 2 * 4)
      self.assertGreater(np.std(image), 10)
    with open(files[3], newline='') as f:
      rows = list(csv.DictReader(f))
    self.assertEqual(list(rows[0]), list(two_stream_outputs.CSV_COLUMNS))
    self.assertEqual([{k: float(v) if k not in ('class',) else v for k, v in row.items()}
                      for row in rows], result['per_class'])
    self.assertEqual(json.loads(json.dumps(result))['per_class'], result['per_class'])

  def test_streams_that_cannot_be_fused_are_refused(self):
    rgb = stream('rgb', ['v_A_g01_c01'], [0], [[0.5, 0.5]])
    for flow, reason, count in (
        (stream('flow', ['v_A_g01_c01'], [1], [[0.5, 0.5]]), 'labels', 1),
        (stream('flow', ['v_A_g01_c01'], [0], [[0.2, 0.3, 0.5]]), 'classes', 3),
        (stream('flow', ['v_B_g01_c01'], [0], [[0.5, 0.5]]), 'no_shared_video', None)):
      with self.assertRaises(two_stream.TwoStreamError) as caught:
        two_stream.report(rgb, flow)
      self.assertEqual((caught.exception.reason, caught.exception.count), (reason, count))


if __name__ == '__main__':
  tf.test.main()

"""A tiny two-stream run, end to end: synthetic videos -> TV-L1 flow (through the extractor)
-> RGB and flow records -> train both streams (a few steps) -> export -> per-video fusion.

Checks the joints, not accuracy: each stream's row in the two-stream table equals the video
accuracy that stream's own Estimator evaluation reported on the same clips, and every test
video is fused.
"""

import os
import shutil
import tempfile

import tensorflow as tf

from tests import tiny_records
from towers import params as params_lib
from serving import saved_model, two_stream
from towers.training import train_and_evaluate

CLIPS_PER_VIDEO = 2


class TwoStreamEndToEndTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.root = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, self.root)

  def test_rgb_and_flow_train_export_and_fuse_per_video(self):
    made = tiny_records.make(self.root, ('videos', 'flow'), classes=2, groups=9, width=24,
                             height=20, min_frames=6, max_frames=7, object_size=8)
    streams = {}
    for stream, source in (('rgb', 'videos'), ('flow', 'flow')):
      records = made.records[source]
      self.assertEqual(made.manifests[source]['test']['num_records'], 14)  # 2 classes x g1-7
      params = params_lib.make_params(
          model='c3d_small', stream=stream, data_source='tfrecord', data_dir=records,
          num_classes=2, clip_frames=4, crop_size=16, batch_size=4, num_towers=1,
          eval_clips=CLIPS_PER_VIDEO, max_steps=3, save_checkpoints_steps=3,
          log_every_steps=3, model_dir=os.path.join(self.root, stream))
      metrics = train_and_evaluate(params)
      streams[stream] = (params, records, metrics)

    predictions = {
        stream: two_stream.predict_stream(saved_model.load_model(params.model_dir, stream),
                                          records, CLIPS_PER_VIDEO, log=lambda s: None)
        for stream, (params, records, _) in streams.items()}
    result = two_stream.report(predictions['rgb'], predictions['flow'])
    self.assertEqual(result['videos'], 14)
    self.assertEqual((result['only_rgb'], result['only_flow']), ([], []))
    for stream, (_, _, metrics) in streams.items():
      self.assertEqual(result['streams'][stream]['skipped_records'], 0)
      self.assertAllClose(result['rows'][stream]['top_1'], metrics['accuracy/video'],
                          atol=1e-6, msg=stream)
    for row in result['rows'].values():
      for value in row.values():
        self.assertBetween(value, 0.0, 1.0)
    self.assertEqual(set(result['rows']), {'rgb', 'flow', 'fusion'})
    flow_export = saved_model.saved_model_dir(streams['flow'][0].model_dir)
    with self.assertRaises(saved_model.ModelError) as caught:
      saved_model.load_model(streams['flow'][0].model_dir, 'rgb')
    self.assertEqual((caught.exception.reason, caught.exception.path),
                     ('wrong_stream', flow_export))
    with self.assertRaises(two_stream.TwoStreamError) as caught:  # rgb records, flow model
      two_stream.predict_stream(saved_model.load_model(streams['flow'][0].model_dir),
                                streams['rgb'][1], CLIPS_PER_VIDEO, log=lambda s: None)
    self.assertEqual((caught.exception.reason, caught.exception.path),
                     ('wrong_stream', streams['rgb'][1]))


if __name__ == '__main__':
  tf.test.main()

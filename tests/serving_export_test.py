"""Specification: the exported model serves in any TensorFlow client. Models trained on 2 and
on 4 towers are exported with one tower and no device pinned; a plain TF1 client in its own
process, on one CPU with soft placement off (TensorFlow Serving's ConfigProto default),
loads each export and answers exactly as //serving:classify does on the same clips; the
signature returns the class names; raw 0..255 pixels are refused with a message naming
the range.

Data: synthetic UCF101 of 3 motion classes (24x20 frames, .avi), RGB records, a tiny
c3d_small trained 30 steps on 2 and on 4 towers (virtual CPU devices)."""

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from input_fn import pipeline, ucf101
from tests import tiny_records
from serving import classifier, saved_model
from towers import params as params_lib
from towers import train_and_evaluate_loop
from towers.training import train_and_evaluate

T, S, CLIPS = 4, 16, 2
TOWERS = (2, 4)

# A client that knows nothing of this project: TF1 graph mode, one CPU, no GPU, no soft
# placement. argv: export dir, .npy of float32 clips, output JSON.
STRICT_CLIENT = r'''
import json, sys
import numpy as np
import tensorflow as tf
tf1 = tf.compat.v1
tf1.disable_eager_execution()
export, clips_path, out_path = sys.argv[1:4]
clips = np.load(clips_path)
config = tf1.ConfigProto(device_count={'CPU': 1, 'GPU': 0}, allow_soft_placement=False)
result = {}
with tf1.Session(graph=tf.Graph(), config=config) as sess:
  meta = tf1.saved_model.loader.load(sess, ['serve'], export)
  signature = meta.signature_def['serving_default']
  fetch = {k: v.name for k, v in signature.outputs.items()}
  feed_name = signature.inputs['clips'].name
  out = sess.run(fetch, {feed_name: clips})
  result['outputs'] = {k: (v.astype(str) if v.dtype == object else v).tolist()
                       for k, v in out.items()}
  result['devices'] = sorted({d.name for d in sess.list_devices()})
  try:
    sess.run(fetch['classes'], {feed_name: clips * 127.5 + 127.5})
    result['raw_pixels'] = 'accepted'
  except tf.errors.InvalidArgumentError:
    result['raw_pixels'] = 'refused'
with open(out_path, 'w') as f:
  json.dump(result, f)
'''


def export_of(model_dir: str) -> str:
  return sorted(glob.glob(os.path.join(model_dir, 'export', 'best', '*')))[-1]


class ServingExportTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.root = tempfile.mkdtemp()
    made = tiny_records.make(cls.root, classes=3, groups=8, width=24, height=20, min_frames=8,
                             max_frames=10, object_size=10)
    data, records = made.data, made.records['videos']
    cls.class_names = None
    cls.models = {}
    for towers in TOWERS:
      params = params_lib.make_params(
          model='c3d_small', data_source='tfrecord', data_dir=records, num_classes=3,
          clip_frames=T, crop_size=S, batch_size=8, num_towers=towers, eval_clips=CLIPS,
          max_steps=30, save_checkpoints_steps=30, log_every_steps=300,
          lr_schedule='constant', lr_values=(0.003,), model_dir=os.path.join(cls.root,
                                                                             f't{towers}'))
      train_and_evaluate(params)
      cls.models[towers] = params.model_dir
    cls.videos = [v for v in classifier.find_videos([os.path.join(data, 'UCF-101')])
                  if ucf101.parse_video_name(os.path.splitext(os.path.basename(v))[0])[1]
                  in ucf101.test_groups(1)][::3]

  @classmethod
  def tearDownClass(cls):
    shutil.rmtree(cls.root, ignore_errors=True)
    super().tearDownClass()

  def serve_strictly(self, export: str, clips: np.ndarray) -> dict:
    inputs, output = (os.path.join(self.create_tempdir().full_path, n)
                      for n in ('clips.npy', 'out.json'))
    np.save(inputs, clips.astype(np.float32))
    run = subprocess.run([sys.executable, '-c', STRICT_CLIENT, export, inputs, output],
                         capture_output=True, text=True, timeout=300, check=False)
    self.assertEqual(run.returncode, 0, run.stderr[-3000:])
    with open(output) as f:
      return json.load(f)

  def classify_tool(self, model_dir: str) -> dict[str, dict[str, float]]:
    """video -> {class name: probability} from //serving:classify's JSON output."""
    out = os.path.join(self.create_tempdir().full_path, 'results.json')
    run = subprocess.run([sys.executable, '-m', 'serving.classify_main', f'--model={model_dir}',
                          f'--clips={CLIPS}', '--top_k=3', f'--output={out}', *self.videos],
                         capture_output=True, text=True, timeout=300, check=False)
    self.assertEqual(run.returncode, 0, run.stderr[-3000:])
    with open(out) as f:
      return {r['video']: {t['class']: t['probability'] for t in r['top']} for r in json.load(f)}

  def test_an_export_whose_variables_are_missing_or_cut_is_one_refusal(self):
    export = export_of(self.models[TOWERS[0]])
    for damage in ('index', 'data'):
      copy = shutil.copytree(export, os.path.join(self.create_tempdir().full_path, 'export'))
      [target] = glob.glob(os.path.join(copy, 'variables', f'variables.{damage}*'))
      if damage == 'index':
        os.remove(target)
      else:
        os.truncate(target, 100)
      with self.assertRaises(saved_model.ModelError) as caught:
        saved_model.load_model(copy)
      self.assertEqual((caught.exception.reason, caught.exception.path), ('damaged', copy))

  def test_the_serving_graph_is_one_tower_with_no_device_pinned(self):
    for towers, model_dir in self.models.items():
      saved = saved_model_pb2.SavedModel()
      with open(os.path.join(export_of(model_dir), 'saved_model.pb'), 'rb') as f:
        saved.ParseFromString(f.read())
      graph = saved.meta_graphs[0].graph_def
      nodes = list(graph.node) + [n for f in graph.library.function for n in f.node_def]
      # TensorFlow's own Saver puts its save ops on the CPU (they never run in serving).
      pinned = [f'{n.name}@{n.device}' for n in nodes
                if n.device and not n.name.startswith('save/')]
      self.assertEqual(pinned, [], f'trained on {towers} towers')
      self.assertTrue(any(n.name.startswith('tower_0/') for n in nodes))
      self.assertFalse([n.name for n in nodes if n.name.startswith('tower_1/')])

  def test_a_strict_one_cpu_client_answers_as_classify_does(self):
    for towers, model_dir in self.models.items():
      stream = classifier.load_stream(model_dir)
      expected = self.classify_tool(model_dir)
      names = list(stream.class_names)
      views = [np.asarray(pipeline.to_unit_range(
          classifier.views(classifier.read_frames(video), stream, CLIPS, 1)))
               for video in self.videos]
      served = self.serve_strictly(export_of(model_dir), np.concatenate(views))
      self.assertEqual(served['devices'], ['/job:localhost/replica:0/task:0/device:CPU:0'])
      outputs = served['outputs']
      probabilities = np.asarray(outputs['probabilities'])
      for i, video in enumerate(self.videos):
        mean = probabilities[i * CLIPS:(i + 1) * CLIPS].mean(axis=0)
        self.assertAllClose(mean, [expected[video][n] for n in names], atol=1e-5,
                            msg=f'{towers} towers, {video}')
      self.assertEqual(outputs['class_names'], [names] * len(probabilities))
      self.assertEqual(outputs['class_name'], [names[int(np.argmax(p))] for p in probabilities])
      self.assertEqual(served['raw_pixels'], 'refused')  # uint8-range clips, not [-1, 1]

  def test_the_export_still_loads_in_tensorflow_2(self):
    loaded = saved_model.load_model(self.models[2])
    out = loaded.serving(clips=tf.zeros([1, T, S, S, 3]))
    self.assertEqual(out['class_names'].shape, [1, 3])
    with self.assertRaises(tf.errors.InvalidArgumentError):  # outside [-1, 1]
      loaded.serving(clips=tf.fill([1, T, S, S, 3], 255.0))


class DamagedEvaluationEventsTest(tf.test.TestCase):

  def test_an_event_file_cut_short_is_read_up_to_the_cut(self):
    """An evaluation's event file cut by a full disk or a kill: the best export compares the
    evaluations before the cut instead of failing every later export (DataLossError)."""
    eval_dir = self.create_tempdir().full_path
    with tf.Graph().as_default():
      writer = tf.compat.v1.summary.FileWriter(eval_dir)
      for step, top_1 in ((10, 0.5), (20, 0.75)):
        writer.add_summary(tf.compat.v1.Summary(value=[tf.compat.v1.Summary.Value(
            tag='accuracy/top_1', simple_value=top_1)]), step)
        writer.flush()
      writer.close()
    path = glob.glob(os.path.join(eval_dir, 'events.out.tfevents.*'))[0]
    with open(path, 'r+b') as f:
      f.truncate(os.path.getsize(path) - 3)  # the last record cut
    pattern = os.path.join(eval_dir, 'events.out.tfevents.*')
    exporter = train_and_evaluate_loop.CleanBestExporter(
        {}, ['a', 'b'], os.path.join(self.create_tempdir().full_path, 'assets'),
        serving_input_receiver_fn=lambda: None,
        compare_fn=train_and_evaluate_loop._higher_top_1)
    self.assertEqual(exporter._get_best_eval_result(pattern), {'accuracy/top_1': 0.5})


if __name__ == '__main__':
  tf.test.main()

"""Specification: classifying videos with a trained model (`serving.classifier.classify` and
//serving:classify), and evaluation with three crops per clip.

Data: synthetic UCF101 of 4 motion classes (MoveRight, MoveLeft, MoveDown, MoveUp, all
Speed1), 24x20 frames, written as .avi with TV-L1 flow; RGB and flow records prepared from
it; a tiny c3d_small trained on each stream, once for all tests (the export of each is what
is classified). The classes differ only in motion: the flow
model learns them, the RGB one barely in a test's budget. Training's random horizontal flip
turns a MoveRight clip into a MoveLeft one under the same label, so only MoveDown and MoveUp
are told apart reliably; the accuracy check uses those.
"""

import csv
import dataclasses
import json
import os
import shutil
import tempfile

import numpy as np
import tensorflow as tf

from data_tools import make_synthetic_ucf101, prepare

from input_fn import direct, frame_folders, pipeline, records, ucf101
from input_fn import video_io
from command_line import entry
from command_line.options import options_named
from tests import program_runs, tiny_records
from serving import (classifier, classify_options, evaluate_two_stream, export_info, saved_model,
                     two_stream)
from towers import preflight
from towers import params as params_lib
from towers.estimator import build_estimator
from input_fn.factory import make_input_fn
from towers.training import train_and_evaluate

T, S, CLIPS = 4, 16, 2
# Flow names all 14 vertical test videos from 50 steps on (measured); no spec needs the RGB
# model to have learned.
STEPS = {'rgb': 25, 'flow': 150}
CLASSES = ('MoveRightSpeed1', 'MoveLeftSpeed1', 'MoveDownSpeed1', 'MoveUpSpeed1')  # labels


def class_of(path: str) -> str:
  return os.path.basename(os.path.dirname(path))


class ClassifyTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.root = tempfile.mkdtemp()
    made = tiny_records.make(cls.root, ('videos', 'flow'), classes=4, groups=16, width=24,
                             height=20, min_frames=8, max_frames=10, object_size=10)
    cls.data = made.data
    cls.records = {'rgb': made.records['videos'], 'flow': made.records['flow']}
    cls.params = {}
    for stream in ('rgb', 'flow'):
      cls.params[stream] = params_lib.make_params(
          model='c3d_small', stream=stream, data_source='tfrecord',
          data_dir=cls.records[stream], num_classes=4, clip_frames=T, crop_size=S,
          batch_size=8, num_towers=1, eval_clips=CLIPS, max_steps=STEPS[stream],
          save_checkpoints_steps=STEPS[stream], log_every_steps=300, lr_schedule='constant',
          lr_values=(0.003,), warmup_steps=20, model_dir=os.path.join(cls.root, stream))
      train_and_evaluate(cls.params[stream])
    videos = os.path.join(cls.data, 'UCF-101')
    cls.test_videos = [v for v in classifier.find_videos([videos])
                       if ucf101.parse_video_name(os.path.splitext(os.path.basename(v))[0])[1]
                       in ucf101.test_groups(1)]

  @classmethod
  def tearDownClass(cls):
    shutil.rmtree(cls.root, ignore_errors=True)
    super().tearDownClass()

  def model(self, stream):
    return self.params[stream].model_dir

  # --- The export -----------------------------------------------------------------------------

  def test_the_export_carries_class_names_and_input_settings(self):
    for stream in ('rgb', 'flow'):
      export = saved_model.saved_model_dir(self.model(stream))
      info, names = export_info.read(export)
      self.assertEqual(names, list(CLASSES))  # from the records' manifest, label order
      self.assertEqual((info['stream'], info['clip_frames'], info['crop_size']),
                       (stream, T, S))
      self.assertEqual(info['input'], {
          'name': 'clips', 'dtype': 'float32', 'range': [-1.0, 1.0],
          'shape': [None, T, S, S, 3 if stream == 'rgb' else 2], 'from_uint8': 'x / 127.5 - 1'})
      self.assertEqual((info['eval_clips'], info['eval_crops'], info['frame_short_side']),
                       (CLIPS, 1, 0))
    flow_info, _ = export_info.read(saved_model.saved_model_dir(self.model('flow')))
    synthetic = make_synthetic_ucf101.SYNTHETIC_FLOW
    self.assertEqual(flow_info['flow_extraction']['tvl1'],
                     {'scales': synthetic['tvl1_scales'], 'warps': synthetic['tvl1_warps'],
                      'epsilon': synthetic['tvl1_epsilon']})
    self.assertEqual(flow_info['flow_extraction']['short_side'], synthetic['short_side'])

  def test_frames_as_decoded_are_read_at_the_scale_of_the_training_frames(self):
    """Records prepared at --short_side=0 from 24x20 videos: the export records that the
    model saw frames of short side 20, and classify reads a 48x40 video at that scale (as
    if the user had resized it), not at twice the scale it learnt."""
    info, _ = export_info.read(saved_model.saved_model_dir(self.model('rgb')))
    self.assertEqual((info['frame_short_side'], info[export_info.SHORT_SIDE_RANGE]), (0, [20, 20]))
    stream = classifier.load_stream(self.model('rgb'), 'rgb')
    self.assertEqual([stream.short_side_for(40, 48), stream.short_side_for(20, 24),
                      stream.short_side_for(10, 12)], [20, 0, 20])
    small = video_io.decode_video(self.test_videos[0])
    large = np.stack([video_io.resize_short_side(f, 40) for f in small])
    as_trained = np.stack([video_io.resize_short_side(f, 20) for f in large])
    views = classifier.views(large, stream, CLIPS, 1)
    self.assertAllEqual(views, classifier.views(as_trained, stream, CLIPS, 1))
    unknown = dataclasses.replace(stream, short_side_range=None)  # read as decoded
    self.assertNotAllClose(views, classifier.views(large, unknown, CLIPS, 1))

  def damaged_export(self, name, file, data):
    """A copy of the RGB export with assets.extra/`file` replaced by `data`."""
    export = os.path.join(self.root, 'damaged', name)
    shutil.rmtree(export, ignore_errors=True)
    shutil.copytree(saved_model.saved_model_dir(self.model('rgb')), export)
    with open(os.path.join(export, export_info.ASSETS_DIR, file), 'wb') as f:
      f.write(data if isinstance(data, bytes) else data.encode())
    return export

  def test_damaged_or_contradictory_export_metadata_is_refused_naming_the_file(self):
    with open(os.path.join(saved_model.saved_model_dir(self.model('rgb')),
                           export_info.ASSETS_DIR, export_info.INFO_FILE)) as f:
      info = json.load(f)
    names, json_file = export_info.CLASS_NAMES_FILE, export_info.INFO_FILE
    # (name, file replaced, its data, the reason, the field or class name at fault)
    for name, file, data, reason, field in (
        ('twice', names, '\n'.join(CLASSES[:3] + CLASSES[:1]), 'repeated_name', CLASSES[0]),
        ('three', names, '\n'.join(CLASSES[:3]), 'name_count', None),
        ('junk', names, bytes(range(255, -1, -1)) * 8, 'not_text', None),
        ('truncated', json_file, json.dumps(info)[:100], 'not_json', None),
        ('text', json_file, json.dumps(dict(info, eval_clips='three')), 'bad_value',
         'eval_clips'),
        ('other', json_file, json.dumps(dict(info, clip_frames=8, crop_size=32)),
         'not_described', None)):
      export = self.damaged_export(name, file, data)
      with self.assertRaises(classifier.ClassifyError) as caught:
        classifier.classify(self.test_videos[:1], export)
      error = caught.exception
      self.assertEqual((error.reason, error.path, error.option),
                       (reason, os.path.join(export, export_info.ASSETS_DIR, file), 'model'),
                       name)
      if reason == 'not_described':  # the fields that contradict the model
        self.assertEqual(error.fields, ('clip_frames', 'crop_size'))
      else:  # the export's own check, named by its file
        self.assertIsInstance(error.__cause__, export_info.ExportInfoError)
        self.assertEqual(error.__cause__.field, field, name)
    # Copied without assets.extra/ (saved_model.pb and variables/ only): refused, not read
    # as an export older than its class names.
    bare = self.damaged_export('bare', names, '')
    shutil.rmtree(os.path.join(bare, export_info.ASSETS_DIR))
    with self.assertRaises(classifier.ClassifyError) as caught:
      classifier.classify(self.test_videos[:1], bare)
    self.assertEqual((caught.exception.reason, caught.exception.path), ('assets_missing', bare))

  def test_an_export_whose_weights_are_nan_fails_each_video(self):
    """A diverged model's NaN probabilities would rank its first class first."""
    export = os.path.join(self.create_tempdir().full_path, 'diverged')  # not under self.root
    shutil.copytree(saved_model.saved_model_dir(self.model('rgb')), export)
    prefix = os.path.join(export, 'variables', 'variables')
    stored = tf.train.load_checkpoint(prefix)
    with tf.Graph().as_default():
      values = {name: stored.get_tensor(name) for name, _ in tf.train.list_variables(prefix)}
      kept = [tf.compat.v1.Variable(
          value * np.nan if value.dtype.kind == 'f' else value, name=name)
          for name, value in values.items()]
      with tf.compat.v1.Session() as session:
        session.run(tf.compat.v1.global_variables_initializer())
        tf.compat.v1.train.Saver(kept).save(session, prefix, write_meta_graph=False,
                                            write_state=False)
    results = classifier.classify(self.test_videos[:2], export)
    self.assertEqual([r.ok for r in results], [False, False])
    self.assertIn('NaN or infinite', results[0].error)

  # --- classify() -------------------------------------------------------------------------------

  def test_names_the_class_of_synthetic_videos_of_known_classes(self):
    """The flow model names the class of at least 12 of the 14 MoveDown and MoveUp test
    videos (chance: 3.5), by the names of the training data."""
    self.assertLen(self.test_videos, 28)  # 4 classes x test groups 1-7
    vertical = [v for v in self.test_videos if class_of(v) in CLASSES[2:]]
    results = classifier.classify(vertical, self.model('flow'))
    named = [r.top[0][0] for r in results]
    self.assertGreaterEqual(sum(n == class_of(r.video) for n, r in zip(named, results)), 12,
                            named)
    for r in results:
      self.assertEqual([n for n, _ in r.top], sorted(CLASSES, key=lambda c: -dict(r.top)[c]))
      self.assertAlmostEqual(sum(p for _, p in r.top), 1.0, places=5)

  def test_rgb_views_are_those_of_evaluation(self):
    """The views classify cuts from a test video, as its .avi file or as a folder of its
    record's frames, are exactly those evaluation cut from its record (same JPEG bytes,
    decoded and cropped by the same ops), with 1 and with 3 crops."""
    stream = classifier.load_stream(self.model('rgb'))
    self.assertEqual(stream.records_jpeg_quality, prepare.PrepareOptions().jpeg_quality)
    videos = {os.path.splitext(os.path.basename(v))[0]: v for v in self.test_videos}
    files = pipeline.record_files(self.records['rgb'], 'test')
    for serialized in tf.data.TFRecordDataset(files).take(6):
      parsed = records.parse(serialized)
      name = parsed['video'].numpy().decode()
      folder = os.path.join(self.root, 'record_frames', name)
      os.makedirs(folder, exist_ok=True)
      for i, jpeg in enumerate(parsed['frames'].numpy()):
        with open(frame_folders.frame_path(folder, i), 'wb') as f:
          f.write(jpeg)
      for crops in (1, 3):
        evaluated = pipeline.eval_video(serialized, T, S, CLIPS, 4, 'rgb', crops)[0].numpy()
        from_video = classifier.views(classifier.read_frames(videos[name]), stream, CLIPS,
                                      crops)
        from_folder = classifier.views(classifier.read_frames(folder), stream, CLIPS, crops,
                                       classifier.frame_files(folder))
        self.assertEqual(from_video.shape, (CLIPS * crops, T, S, S, 3))
        self.assertAllEqual(from_video, evaluated)
        self.assertAllEqual(from_folder, evaluated)

  def test_flow_is_computed_as_the_training_flow_was_extracted(self):
    """On the fly, the flow model's clips hold the codes //data_tools:extract_flow wrote for
    the same frame pairs (up to its JPEG rounding), with the export's TV-L1 settings."""
    stream = classifier.load_stream(self.model('flow'))
    for video in self.test_videos[:4]:
      frames = classifier.read_frames(video)
      clips = classifier.flow_clips(frames, stream, CLIPS)
      indices = direct.eval_clip_indices(len(frames) - 1, T, CLIPS).reshape(-1)
      name = os.path.splitext(os.path.basename(video))[0]
      extracted = np.stack([frame_folders.read_frames(folder, indices, grayscale=True) for folder in
                            frame_folders.flow_folders(os.path.join(self.data, 'tvl1_flow'), name)],
                           axis=-1).reshape(clips.shape)
      difference = np.abs(clips.astype(int) - extracted.astype(int))
      self.assertLess(difference.mean(), 1.0, video)  # code levels; 1 level = 0.16 px

  def test_two_streams_are_fused_as_evaluation_fuses_them(self):
    videos = self.test_videos[::3]
    fused = classifier.classify(videos, self.model('rgb'), flow_model=self.model('flow'),
                                flow_weight=0.25)
    rgb = classifier.classify(videos, self.model('rgb'))
    flow = classifier.classify(videos, self.model('flow'))
    for f, r, w in zip(fused, rgb, flow):
      self.assertTrue(f.ok, f.error)
      self.assertAllClose(f.probabilities, 0.75 * r.probabilities + 0.25 * w.probabilities,
                          atol=1e-6)
    export_best = os.path.join(self.model('rgb'), 'export', 'best')  # also a model
    self.assertAllClose(classifier.classify(videos[:1], export_best)[0].probabilities,
                        rgb[0].probabilities)
    with self.assertRaises(classifier.ClassifyError) as caught:
      classifier.classify(videos, self.model('flow'), flow_model=self.model('rgb'))
    self.assertEqual((caught.exception.reason, caught.exception.option), ('wrong_stream', 'model'))
    self.assertEqual(caught.exception.path, saved_model.saved_model_dir(self.model('flow')))

  def test_frame_folders_and_list_files_are_videos_too(self):
    video = self.test_videos[0]
    folder = os.path.join(self.root, 'frames', 'one_video')
    os.makedirs(folder, exist_ok=True)
    for i, frame in enumerate(video_io.decode_video(video)):
      with open(frame_folders.frame_path(folder, i), 'wb') as f:
        f.write(video_io.encode_jpeg(frame, 100))
    listing = os.path.join(self.root, 'videos.txt')
    with open(listing, 'w') as f:
      f.write(f'{os.path.relpath(video, self.root)} 1\r\n{self.test_videos[1]}\n')
    self.assertEqual(classifier.find_videos([listing, os.path.join(self.root, 'frames')]),
                     [video, self.test_videos[1], folder])
    split_list = os.path.join(self.data, 'ucfTrainTestlist', 'testlist01.txt')  # UCF-101/..
    self.assertCountEqual(classifier.find_videos([split_list]), self.test_videos)
    decoded, read = video_io.decode_video(video), classifier.read_frames(folder)
    self.assertEqual(read.shape, decoded.shape)
    self.assertLess(np.abs(read.astype(int) - decoded.astype(int)).mean(), 8.0)  # JPEG
    results = classifier.classify([listing, folder], self.model('rgb'))
    self.assertEqual([r.video for r in results], [video, self.test_videos[1], folder])
    self.assertEqual([r.ok for r in results], [True] * 3)
    # '#' starts a comment line, unless the line names a video that exists (HMDB51 names).
    hashed = os.path.join(self.root, '#20_Rhythm_clap.avi')
    shutil.copy(video, hashed)
    with open(listing, 'w') as f:
      f.write(f'# my videos\n{os.path.basename(hashed)}\n')
    self.assertEqual(classifier.find_videos([listing]), [hashed])
    # A frame TensorFlow cannot decode (cut short) fails its video, not the run.
    damaged = os.path.join(self.root, 'frames', 'damaged')
    shutil.copytree(folder, damaged)
    first = frame_folders.frame_path(damaged, 0)
    with open(first, 'r+b') as f:
      f.truncate(os.path.getsize(first) // 3)
    results = classifier.classify([damaged, folder], self.model('rgb'))
    self.assertEqual([r.ok for r in results], [False, True])
    self.assertIn('cannot decode', results[0].error)

  # --- //serving:classify ------------------------------------------------------------------------

  def run_tool(self, *args):
    return program_runs.run('serving.classify_main', *args, timeout=300)

  def test_a_broken_video_among_good_ones_is_named_counted_and_sets_the_exit_code(self):
    bad = os.path.join(self.root, 'bad')
    os.makedirs(bad, exist_ok=True)
    empty, garbage, still = (os.path.join(bad, n) for n in ('empty.avi', 'garbage.avi',
                                                           'one_frame.avi'))
    open(empty, 'wb').close()
    with open(garbage, 'wb') as f:
      f.write(b'not a video' * 100)
    video_io.write_video(still, video_io.decode_video(self.test_videos[0])[:1])
    good = self.test_videos[:2]
    out = os.path.join(self.root, 'results.csv')
    run = self.run_tool(f'--model={self.model("rgb")}', '--top_k=1', f'--output={out}',
                        good[0], empty, garbage, still, good[1])
    self.assertEqual(run.code, 1, run.output())
    with open(out, newline='') as f:
      rows = list(csv.reader(f))
    self.assertEqual(rows[0], ['video', 'status', 'class_1', 'probability_1', 'error'])
    self.assertEqual([r[0] for r in rows[1:]], [good[0], empty, garbage, still, good[1]])
    self.assertEqual([r[1] for r in rows[1:]], ['ok', 'failed', 'failed', 'failed', 'ok'])
    self.assertIn(rows[1][2], CLASSES)
    self.assertEqual([r[4] for r in rows[2:5:2]],  # the reasons, as the file records them
                     ['empty file (0 bytes)', 'too short: 1 frame(s), a video needs 2'])
    self.assertNotEqual(rows[3][4], '')
    self.assertEqual(run.events, [])  # failed videos are results, not an ending error

  def test_ten_good_videos_of_a_list_exit_0_with_json_and_a_progress_line(self):
    listing = os.path.join(self.root, 'ten.txt')
    with open(listing, 'w') as f:
      f.write(''.join(v + '\n' for v in self.test_videos[:10]))
    out = os.path.join(self.root, 'results.json')
    run = self.run_tool(f'--model={self.model("rgb")}', f'--flow_model={self.model("flow")}',
                        '--crops=3', f'--output={out}', listing)
    self.assertEqual(run.code, 0, run.output())
    with open(out) as f:
      written = json.load(f)
    self.assertEqual([w['video'] for w in written], self.test_videos[:10])
    self.assertEqual({t['class'] for t in written[0]['top']}, set(CLASSES))
    self.assertEqual({w['error'] for w in written}, {None})
    self.assertEqual(run.events, [])

  def test_wrong_options_exit_2_with_one_line(self):
    junk = self.damaged_export('junk_names', export_info.CLASS_NAMES_FILE,
                               bytes(range(255, -1, -1)) * 8)
    junk_names = os.path.join(junk, export_info.ASSETS_DIR, export_info.CLASS_NAMES_FILE)
    not_a_folder = os.path.join(self.root, 'results.csv.d')
    open(not_a_folder, 'w').close()
    self.assertTrue(os.path.isfile(junk_names))
    manifest = os.path.join(self.records['rgb'], 'test.manifest.json')
    with open(manifest, 'rb') as f:
      before = f.read()
    foreign = os.path.join(self.root, 'their_table.csv')
    with open(foreign, 'w') as f:
      f.write('name,score\n')
    for args, error, options in (([f'--model={junk}', self.test_videos[0]],
                                  'ClassifyError', ['model']),  # junk class names
                                 ([f'--model={self.model("rgb")}',
                                   f'--output={not_a_folder}/out.csv', self.test_videos[0]],
                                  'Refused', ['output']),
                                 ([self.test_videos[0]], 'Refused', ['model']),
                                 ([f'--model={self.model("rgb")}'], 'Refused', []),  # no video
                                 ([f'--model={self.root}', self.test_videos[0]],
                                  'ClassifyError', ['model']),  # no export there
                                 ([f'--model={self.model("rgb")}', '--crops=2',
                                   self.test_videos[0]], 'OptionsError', ['crops']),
                                 ([f'--model={self.model("rgb")}', '--output=x.txt',
                                   self.test_videos[0]], 'Refused', ['output']),
                                 ([f'--model={self.model("rgb")}',  # prepare's file
                                   f'--output={manifest}', self.test_videos[0]],
                                  'Refused', ['output']),
                                 ([f'--model={self.model("rgb")}', f'--output={foreign}',
                                   self.test_videos[0]], 'Refused', ['output']),
                                 ([f'--model={self.model("rgb")}',  # inside what it reads
                                   f'--output={self.model("rgb")}/out.csv',
                                   self.test_videos[0]], 'Refused', ['output'])):
      run = self.run_tool(*args)
      self.assertEqual(run.code, 2, (args, run.output()))
      self.assertEqual(run.error,  # the program ended through its entry, no traceback
                       dict(run.error, program='classify', exit_code=2, error=error,
                            options=options), args)
      self.assertEqual(run.stdout, '')  # refused before any video was classified
      self.assertFalse(os.path.exists('x.txt'))
    with open(manifest, 'rb') as f:
      self.assertEqual(f.read(), before)
    self.assertFalse(os.path.exists(os.path.join(self.model('rgb'), 'out.csv')))
    earlier = os.path.join(self.root, 'earlier.csv')  # classify's own: written over
    with open(earlier, 'w') as f:
      f.write('video,status,class_1,probability_1,error\n')
    classify_options.check_options(classify_options.ClassifyOptions(model=self.model('rgb'),
                                                                     output=earlier))

  def test_a_dataset_other_than_the_models_is_refused_naming_both(self):
    for stream in ('rgb', 'flow'):
      export = saved_model.saved_model_dir(self.model(stream))
      self.assertEqual(export_info.read(export)[0]['dataset'], 'ucf101')
    self.assertEqual(len(classifier.load(self.model('rgb'), self.model('flow'),
                                         dataset='ucf101').streams), 2)
    run = self.run_tool(f'--model={self.model("rgb")}', f'--flow_model={self.model("flow")}',
                        '--dataset=hmdb51', self.test_videos[0])
    self.assertEqual(run.code, 2, run.output())
    self.assertEqual((run.error['error'], run.error['options']), ('ClassifyError', ['dataset']))
    self.assertEqual(run.stdout, '')

  def test_a_flow_model_trained_on_flow_of_unknown_settings_is_refused_for_that_reason(self):
    # As training exports a model whose flow came from another tool's layout (prepared
    # without extract_flow's record): flow_extraction null.
    export = os.path.join(self.root, 'unknown_flow', 'export')
    shutil.rmtree(os.path.dirname(export), ignore_errors=True)
    shutil.copytree(saved_model.saved_model_dir(self.model('flow')), export)
    path = os.path.join(export, export_info.ASSETS_DIR, export_info.INFO_FILE)
    with open(path) as f:
      info = json.load(f)
    with open(path, 'w') as f:
      json.dump(dict(info, flow_extraction=None), f)
    with self.assertRaises(classifier.ClassifyError) as caught:
      classifier.load(self.model('rgb'), export)
    self.assertEqual((caught.exception.reason, caught.exception.option, caught.exception.path),
                     ('flow_not_extracted', 'flow_model', export))

  # --- Three crops in evaluation --------------------------------------------------------------

  def test_three_crops_of_frames_too_small_for_them_are_refused_before_work(self):
    """24x20 frames: 3 crops of 22 would be windows 20 high stretched to 22 x 22, 3 crops of
    24 the same frame three times. Refused by train's preflight (records and videos alike),
    //serving:evaluate_two_stream and classify, never evaluated as '3 crops'."""
    self.assertIsNone(pipeline.eval_crops_problem(20, 24, 16, 3))
    self.assertIsNone(pipeline.eval_crops_problem(20, 24, 22, 1))  # as training cuts it
    # Short side below the crop (windows, then the same frame), long side too short.
    problems = [pipeline.eval_crops_problem(20, 24, 22, 3),
                pipeline.eval_crops_problem(20, 24, 24, 3),
                pipeline.eval_crops_problem(20, 21, 20, 3)]
    self.assertNotIn(None, problems)
    self.assertLen(set(problems), 3)
    for source, data_dir in (('tfrecord', self.records['rgb']), ('videos', self.data)):
      params = dataclasses.replace(self.params['rgb'], data_source=source, data_dir=data_dir,
                                   crop_size=22, eval_crops=3, frame_short_side=0,
                                   model_dir=os.path.join(self.root, 'crops_22'))
      found = preflight.problems(params)
      self.assertLen(found, 1, found)  # the one problem is --eval_crops=3's:
      self.assertEqual(preflight.problems(dataclasses.replace(params, eval_crops=1)), [])
    with self.assertRaises(entry.Refused) as caught:
      evaluate_two_stream._check_crops(self.records['rgb'], 22, 3)
    self.assertEqual(options_named(caught.exception), ['eval_crops'])
    evaluate_two_stream._check_crops(self.records['rgb'], 16, 3)
    # classify: a model reading frames of a short side below its crop is refused up front,
    # a video whose frames are too small is named with the reason, the others go on.
    with open(os.path.join(saved_model.saved_model_dir(self.model('rgb')),
                           export_info.ASSETS_DIR, export_info.INFO_FILE)) as f:
      info = json.load(f)
    small = self.damaged_export('short_side_12', export_info.INFO_FILE,
                                json.dumps(dict(info, frame_short_side=12)))
    with self.assertRaises(classifier.ClassifyError) as caught:
      classifier.classify(self.test_videos[:1], small, crops=3)
    self.assertEqual((caught.exception.reason, caught.exception.option, caught.exception.path),
                     ('crops_stretched', 'crops', small))
    tiny = os.path.join(self.root, 'tiny_frames', 'v_MoveUpSpeed1_g01_c01')
    os.makedirs(tiny, exist_ok=True)
    for i, frame in enumerate(video_io.decode_video(self.test_videos[0])):
      with open(frame_folders.frame_path(tiny, i), 'wb') as f:
        f.write(video_io.encode_jpeg(frame[:12, :14], 100))
    # Read as decoded (the export does not say what size its training frames were).
    as_decoded = self.damaged_export('as_decoded', export_info.INFO_FILE, json.dumps(
        dict(info, **{export_info.SHORT_SIDE_RANGE: None})))
    results = classifier.classify([tiny, self.test_videos[0]], as_decoded, crops=3)
    self.assertEqual([r.ok for r in results], [False, True])
    self.assertEqual(results[0].error,  # the reason is the frames' own: 12x14 under crop 16
                     f'3 crops: {pipeline.eval_crops_problem(12, 14, S, 3)}; classify it with 1 '
                     'crop')
    self.assertTrue(classifier.classify([tiny], as_decoded, crops=1)[0].ok)
    # Read at the training frames' scale (short side 20), 3 crops fit.
    self.assertTrue(classifier.classify([tiny], self.model('rgb'), crops=3)[0].ok)

  def test_three_crop_evaluation_is_the_mean_of_six_hand_cut_views(self):
    """24x20 frames, crop 16: the three windows of a wide frame are x = 0, 4, 8 at y = 2."""
    self.assertAllEqual(pipeline.eval_crop_windows(20, 24, S, 3),
                        [[2, 0, 16, 16], [2, 4, 16, 16], [2, 8, 16, 16]])
    self.assertAllEqual(pipeline.eval_crop_windows(24, 20, S, 3),
                        [[0, 2, 16, 16], [4, 2, 16, 16], [8, 2, 16, 16]])
    model = saved_model.load_model(self.model('rgb'))
    evaluated = two_stream.predict_stream(model, self.records['rgb'], CLIPS, log=lambda s: None,
                                          crops_per_video=3)
    self.assertEqual(evaluated.crops_per_video, 3)
    files = pipeline.record_files(self.records['rgb'], 'test')
    for i, serialized in enumerate(tf.data.TFRecordDataset(files).take(3)):
      parsed = records.parse(serialized)
      frames = np.stack([tf.io.decode_jpeg(j).numpy() for j in parsed['frames']])
      self.assertEqual(frames.shape[1:3], (20, 24))
      views = []
      for clip in direct.eval_clip_indices(len(frames), T, CLIPS):
        views += [frames[clip, 2:18, x:x + 16] for x in (0, 4, 8)]
      hand = model.serving(clips=pipeline.to_unit_range(np.stack(views)))['probabilities']
      self.assertAllClose(evaluated.probabilities[i], np.mean(hand.numpy(), axis=0), atol=1e-5)

    params = dataclasses.replace(self.params['rgb'], eval_crops=3)
    metrics = build_estimator(params).evaluate(make_input_fn(params, tf.estimator.ModeKeys.EVAL))
    hand_top_1 = two_stream.video_metrics(evaluated.probabilities, evaluated.labels)['top_1']
    self.assertAllClose(metrics['accuracy/video'], hand_top_1, atol=1e-6)


if __name__ == '__main__':
  tf.test.main()

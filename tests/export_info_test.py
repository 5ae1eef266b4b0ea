"""Specification: an export's metadata (assets.extra/class_names.txt and video_model.json,
written by `towers/export_info.py`, read by `serving/export_info.py`) is checked when it is
read, and a damaged or contradictory file is an `ExportInfoError` naming it, never a
traceback nor names used as they are."""

import json
import os
import shutil
import tempfile

import tensorflow as tf

from serving import export_info, saved_model
from towers import export_info as export_writer
from towers import params as params_lib


class ExportInfoReadTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.root = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, self.root, ignore_errors=True)
    self.export = os.path.join(self.root, 'model', 'export', 'best', '1700000000')
    params = params_lib.make_params(data_source='synthetic', num_classes=4, clip_frames=4,
                                    crop_size=16, eval_clips=2, model='c3d_small')
    export_writer.write_assets(*export_writer.describe(params),
                             os.path.join(self.export, export_info.ASSETS_DIR))
    self.info_path = os.path.join(self.export, export_info.ASSETS_DIR, export_info.INFO_FILE)
    self.names_path = os.path.join(self.export, export_info.ASSETS_DIR,
                                   export_info.CLASS_NAMES_FILE)

  def write(self, path, data):
    with open(path, 'wb') as f:
      f.write(data if isinstance(data, bytes) else data.encode())

  def edit_info(self, **changes):
    with open(self.info_path) as f:
      info = json.load(f)
    info.update(changes)
    self.write(self.info_path, json.dumps(info))

  def assertDamaged(self, path, reason, field=None, value=None):
    """Reading the export raises ExportInfoError naming `path`, the `reason`, the `field`
    at fault and the `value` found there."""
    with self.assertRaises(export_info.ExportInfoError) as caught:
      export_info.read(self.export)
    error = caught.exception
    self.assertEqual((error.path, error.reason, error.field, error.value),
                     (path, reason, field, value), str(error))
    self.assertIsNone(error.copy)  # no copy of the assets here

  def test_what_training_writes_reads_back(self):
    info, names = export_info.read(self.export)
    self.assertEqual(names, [f'class_{i}' for i in range(4)])
    self.assertEqual((info['num_classes'], info['eval_clips'], info['eval_crops']), (4, 2, 1))
    self.assertIsNone(info[export_info.TRAIN_VIDEO_NAMES])  # synthetic data: no videos
    self.write(self.names_path, 'A\r\nB\r\nC\r\nD\r\n\r\n')  # CRLF, trailing blank line
    self.assertEqual(export_info.read(self.export)[1], ['A', 'B', 'C', 'D'])
    self.write(self.names_path, b'\xef\xbb\xbfA\r\nB\r\nC\r\nD\r\n')  # saved by Notepad
    self.assertEqual(export_info.read(self.export)[1], ['A', 'B', 'C', 'D'])
    with open(self.info_path, 'rb') as f:
      info = f.read()
    self.write(self.info_path, b'\xef\xbb\xbf' + info)
    self.assertEqual(export_info.read(self.export)[0]['num_classes'], 4)

  def test_an_export_without_metadata_reads_as_none(self):
    os.remove(self.info_path)  # one file without the other: an incomplete copy
    with self.assertRaises(export_info.ExportInfoError) as caught:
      export_info.read(self.export)
    self.assertEqual((caught.exception.path, caught.exception.reason),
                     (self.info_path, 'missing'))
    os.remove(self.names_path)
    self.assertEqual(export_info.read(self.export), (None, None))

  def test_class_names_that_repeat_are_refused(self):
    self.write(self.names_path, 'Run\nJump\nRun\nSwim\n')
    self.assertDamaged(self.names_path, 'repeated_name', 'Run')

  def test_class_names_of_another_count_are_refused(self):
    self.write(self.names_path, 'Run\nJump\nSwim\n')
    self.assertDamaged(self.names_path, 'name_count', value=3)  # num_classes is 4

  def test_an_empty_line_among_the_names_is_refused(self):
    self.write(self.names_path, 'Run\n\nJump\nSwim\nFly\n')
    self.assertDamaged(self.names_path, 'empty_line', value=2)

  def test_binary_class_names_are_refused(self):
    self.write(self.names_path, bytes(range(256)) * 4)
    self.assertDamaged(self.names_path, 'not_text')
    self.write(self.names_path, b'Run\x00\x01\nJump\nSwim\nFly\n')
    self.assertDamaged(self.names_path, 'not_text')  # NUL bytes

  def test_a_file_that_cannot_be_read_is_named(self):
    os.remove(self.names_path)
    os.mkdir(self.names_path)
    with self.assertRaises(export_info.ExportInfoError) as caught:
      export_info.read(self.export)
    self.assertEqual((caught.exception.path, caught.exception.reason),
                     (self.names_path, 'unreadable'))

  def test_truncated_json_is_refused(self):
    with open(self.info_path) as f:
      text = f.read()
    self.write(self.info_path, text[:len(text) // 2])
    self.assertDamaged(self.info_path, 'not_json')
    self.write(self.info_path, b'\xff\xfe{}')
    self.assertDamaged(self.info_path, 'not_json')
    self.write(self.info_path, '[1, 2]')
    self.assertDamaged(self.info_path, 'not_an_object', value='list')

  def test_fields_of_the_wrong_type_are_refused(self):
    for changes, field, value in (({'eval_clips': 'three'}, 'eval_clips', 'three'),
                                  ({'eval_crops': 2}, 'eval_crops', 2),
                                  ({'crop_size': 16.5}, 'crop_size', 16.5),
                                  ({'clip_frames': True}, 'clip_frames', True),
                                  ({'frame_short_side': -1}, 'frame_short_side', -1),
                                  ({'stream': 'depth'}, 'stream', 'depth'),
                                  ({'num_classes': None}, 'num_classes', None),
                                  ({'records_jpeg_quality': 0}, 'records_jpeg_quality', 0),
                                  ({'train_video_names': 'v_a'}, 'train_video_names', 'v_a'),
                                  ({'train_video_names': ['v_a', 3]}, 'train_video_names',
                                   ['v_a', 3]),
                                  ({'frame_short_side_range': [240, 200]},
                                   'frame_short_side_range', [240, 200]),
                                  ({'frame_short_side_range': [0, 240]},
                                   'frame_short_side_range', [0, 240]),
                                  ({'stream': 'flow', 'flow_extraction': {
                                      'short_side': 0, 'bound': 20,
                                      'tvl1': {'scales': 5, 'warps': '5', 'epsilon': 0.01}}},
                                   'flow_extraction.tvl1.warps', '5')):
      self.setUp()
      self.edit_info(**changes)
      self.assertDamaged(self.info_path, 'bad_value', field, value)

  def test_a_missing_field_is_refused(self):
    with open(self.info_path) as f:
      info = json.load(f)
    del info['frame_short_side']
    self.write(self.info_path, json.dumps(info))
    self.assertDamaged(self.info_path, 'missing_field', 'frame_short_side')

  def test_the_message_points_at_the_copy_training_keeps(self):
    os.makedirs(os.path.join(self.root, 'model', 'export_assets'))
    self.write(self.names_path, 'Run\nRun\nSwim\nFly\n')
    with self.assertRaises(export_info.ExportInfoError) as caught:
      export_info.read(self.export)
    self.assertEqual(caught.exception.copy, os.path.join(self.root, 'model', 'export_assets'))


class NewestExportTest(tf.test.TestCase):

  def test_an_unfinished_export_a_killed_run_left_is_never_the_newest(self):
    best = os.path.join(self.create_tempdir().full_path, 'export', 'best')
    for name in ('1796000000', 'temp-1796000100'):
      os.makedirs(os.path.join(best, name))
      with open(os.path.join(best, name, 'saved_model.pb'), 'wb') as f:
        f.write(b'')
    model_dir = os.path.dirname(os.path.dirname(best))
    self.assertEqual(saved_model.saved_model_dir(model_dir), os.path.join(best, '1796000000'))


if __name__ == '__main__':
  tf.test.main()

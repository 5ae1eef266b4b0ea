"""Specification: training on prepared records takes the dataset from their manifest.

`//towers:train --data_source=tfrecord` without --dataset trains on the dataset the records
hold (docs/datasets.md); an explicit other --dataset still stops before any work, its
`error` event naming dataset and its message both datasets.
"""

import os
import shutil
import tempfile

from absl.testing import absltest

from input_fn import data_checks, manifest
from tests import program_runs, tiny_records
from towers import params as params_lib
from towers.checkpoints import checkpoint_step

LIMIT = 240
TINY = ['--model=c3d_small', '--num_classes=3', '--clip_frames=4', '--crop_size=16',
        '--batch_size=2', '--max_steps=1', '--num_towers=1', '--eval_clips=1',
        '--data_source=tfrecord']


class RecordsDatasetTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.root = tempfile.mkdtemp()
    made = tiny_records.make(cls.root, layout='hmdb51', classes=3, groups=8, width=24,
                             height=20, min_frames=6, max_frames=8, object_size=10)
    cls.data, cls.records = made.data, made.records['videos']

  @classmethod
  def tearDownClass(cls):
    shutil.rmtree(cls.root, ignore_errors=True)
    super().tearDownClass()

  def train(self, *args: str) -> tuple[program_runs.ProgramRun, str]:
    model_dir = os.path.join(self.create_tempdir().full_path, 'run')
    return program_runs.run('towers.train_main', *TINY, f'--data_dir={self.records}',
                            f'--model_dir={model_dir}', *args, timeout=LIMIT), model_dir

  def test_without_dataset_the_records_dataset_is_trained(self):
    self.assertEqual(manifest.read(self.records, 'train')['dataset'], 'hmdb51')
    done, model_dir = self.train()
    self.assertEqual((done.code, done.error), (0, None), done.output())
    self.assertEqual(checkpoint_step(model_dir), 1)

  def test_records_read_as_videos_name_the_data_source_that_reads_them(self):
    params = params_lib.make_params(data_source='videos', data_dir=self.records, num_classes=3)
    self.assertEqual([p.option for p in data_checks.problems(params, ('train',))],
                     ['data_source'])

  def test_the_dataset_itself_read_as_records_names_the_data_source_that_reads_it(self):
    params = params_lib.make_params(data_source='tfrecord', data_dir=self.data, num_classes=3)
    found = data_checks.problems(params, ('train',))
    self.assertEqual([p.option for p in found], ['data_source'])
    self.assertIn('hmdb51', str(found[0]))

  def test_an_explicit_other_dataset_is_refused_naming_both(self):
    done, model_dir = self.train('--dataset=ucf101')
    self.assertEqual(done.code, 2, done.output())
    self.assertEqual(done.error_options, ['dataset'])
    self.assertIn('ucf101', done.error['message'])
    self.assertIn('hmdb51', done.error['message'])
    self.assertIsNone(checkpoint_step(model_dir))


if __name__ == '__main__':
  absltest.main()

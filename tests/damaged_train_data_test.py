"""Specification: data whose every record is damaged stops the run with one error.

Damaged records are skipped and counted: the training binary's progress (lines and status
events) says how many of the records read were bad, at the damaged share of the data. When two
passes' worth of training records in a row yield none that can be read, training cannot
make a single step: it stops with an error naming the count (`pipeline.UnreadableInput`;
the binary's exit code 1 and `error` event), instead of waiting forever.
A shard with some damaged records still trains, a truncated one or one whose first record
is corrupt too. An evaluation that could read none of its videos is an error, --strict_eval
or not: no metric is computed on zero videos.
A shard that holds other videos than its manifest lists (a test shard copied over a train
shard, or the reverse) is no damage: the run stops before any work, naming the shard, the
video it holds and the one listed; so does a shard of another preparation of the same
videos (the same first video, another size than prepare wrote, not cut short).
"""

import glob
import os
import shutil
import tempfile

import tensorflow as tf

from input_fn import data_checks, factory, manifest, pipeline
from model_fn.eval_coverage import EvalCoverageError
from tests import program_runs, tiny_records
from towers import build_estimator
from towers.checkpoints import checkpoint_step
from towers.params import make_params

LIMIT = 240
TINY = dict(model='c3d_small', num_classes=3, clip_frames=4, crop_size=16, batch_size=2,
            eval_clips=1, max_steps=2, save_checkpoints_steps=2, lr_schedule='constant',
            lr_values=[0.01], lr_boundaries=[], num_towers=1, export_savedmodel=False,
            data_source='tfrecord')


class DamagedTrainDataTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    made = tiny_records.make(tempfile.mkdtemp(), classes=3, groups=9, min_frames=4,
                             max_frames=5, prepare_options={'videos_per_shard': 4})
    cls.videos, cls.data = made.data, made.records['videos']
    cls.records = manifest.read(cls.data, 'train')['num_records']

  def damaged_copy(self, every_shard: bool, subset: str = 'train') -> str:
    copy = shutil.copytree(self.data, os.path.join(self.create_tempdir().full_path, 'tfr'))
    shards = sorted(glob.glob(os.path.join(copy, f'{subset}-*.tfrecord')))
    for shard in shards if every_shard else shards[:1]:
      size = os.path.getsize(shard)
      with open(shard, 'wb') as f:
        f.write(b'\0' * size)
    return copy

  def copied_over(self, source: str, target: str) -> tuple[str, str]:
    """A copy of the data whose first `target` shard is a copy of its first `source` shard;
    returns the copy and that shard's path."""
    copy = shutil.copytree(self.data, os.path.join(self.create_tempdir().full_path, 'tfr'))
    first = {subset: sorted(glob.glob(os.path.join(copy, f'{subset}-*.tfrecord')))[0]
             for subset in (source, target)}
    shutil.copy(first[source], first[target])
    return copy, first[target]

  def test_a_shard_copied_from_the_other_subset_is_refused_before_work(self):
    for source, target in (('test', 'train'), ('train', 'test')):
      with self.subTest(f'{source} over {target}'):
        data, shard = self.copied_over(source, target)
        held = manifest.read(data, source)['shards'][0]['videos'][0]['name']
        listed = manifest.read(data, target)['shards'][0]['videos'][0]['name']
        model_dir = os.path.join(self.create_tempdir().full_path, 'run')
        flags = [f'--{k}={",".join(map(str, v)) if isinstance(v, list) else v}'
                 for k, v in TINY.items()]
        done = program_runs.run('towers.train_main', *flags, f'--data_dir={data}',
                                f'--model_dir={model_dir}', timeout=LIMIT)
        self.assertEqual(done.code, 2, done.output())
        self.assertEqual(done.error_options, ['data_dir'])
        message = done.error['message']
        for part in (shard, f'starts with {held}, a {source} video', listed, '--overwrite'):
          self.assertIn(part, message)
        self.assertFalse(os.path.exists(model_dir))

  def test_a_shard_of_another_preparation_of_the_same_videos_is_refused(self):
    # Same split and shard plan at another JPEG quality: the same first video, other frames.
    other = self.create_tempdir().full_path
    tiny_records.prepared(self.videos, other, videos_per_shard=4, jpeg_quality=40)
    data = shutil.copytree(self.data, os.path.join(self.create_tempdir().full_path, 'tfr'))
    shard = sorted(glob.glob(os.path.join(data, 'train-*.tfrecord')))[0]
    shutil.copy(os.path.join(other, os.path.basename(shard)), shard)
    listed = manifest.read(data, 'train')['shards'][0]
    found = data_checks.problems(make_params(TINY, data_dir=data,
                                             model_dir=self.create_tempdir().full_path))
    self.assertEqual([p.option for p in found], ['data_dir'])
    self.assertIn(f'{shard} holds {listed["records"]} records in {os.path.getsize(shard)} '
                  f'bytes, but its manifest lists {listed["records"]} records in '
                  f'{listed["bytes"]} bytes', found[0])

  def test_a_truncated_or_corrupt_first_record_is_damage_left_to_the_count(self):
    data = shutil.copytree(self.data, os.path.join(self.create_tempdir().full_path, 'tfr'))
    first, second = sorted(glob.glob(os.path.join(data, 'train-*.tfrecord')))[:2]
    with open(first, 'r+b') as f:  # cut after its first record: the others are lost
      f.truncate(12 + int.from_bytes(f.read(8), 'little') + 4)
    test = sorted(glob.glob(os.path.join(data, 'test-*.tfrecord')))[0]
    with open(test, 'r+b') as f:  # cut inside a record
      f.truncate(os.path.getsize(test) // 2)
    name = manifest.read(data, 'train')['shards'][1]['videos'][0]['name'].encode()
    with open(second, 'r+b') as f:  # another name in the record, which its checksum denies
      content = f.read()
      f.seek(content.index(name) + len(name) - 1)
      f.write(b'X')
    params = make_params(TINY, data_dir=data, model_dir=self.create_tempdir().full_path)
    self.assertEqual(data_checks.problems(params), [])
    build_estimator(params).train(factory.make_input_fn(params, tf.estimator.ModeKeys.TRAIN),
                                  max_steps=2)
    self.assertEqual(checkpoint_step(params.model_dir), 2)

  def test_every_record_damaged_stops_the_library_naming_the_count(self):
    data = self.damaged_copy(every_shard=True)
    params = make_params(TINY, data_dir=data, model_dir=self.create_tempdir().full_path)
    with self.assertRaises(tf.errors.InvalidArgumentError) as caught:
      build_estimator(params).train(factory.make_input_fn(params, tf.estimator.ModeKeys.TRAIN),
                                    max_steps=2)
    unreadable = pipeline.unreadable_input(caught.exception.message)
    self.assertIsNotNone(unreadable)
    self.assertEqual(unreadable.records, self.records)

  def test_every_record_damaged_stops_the_binary_with_one_error(self):
    data = self.damaged_copy(every_shard=True)
    flags = [f'--{k}={",".join(map(str, v)) if isinstance(v, list) else v}'
             for k, v in TINY.items()]
    model_dir = self.create_tempdir().full_path
    done = program_runs.run('towers.train_main', *flags, f'--data_dir={data}',
                            f'--model_dir={model_dir}', timeout=LIMIT)
    self.assertEqual(done.code, 1, done.output())
    self.assertEqual(done.error['error'], 'UnreadableInput', done.output())
    self.assertEqual(done.error_options, ['data_dir'])
    self.assertIn(checkpoint_step(model_dir), (None, 0))  # not a single step trained

  def test_one_damaged_shard_is_skipped_and_training_goes_on(self):
    data = self.damaged_copy(every_shard=False)
    model_dir = self.create_tempdir().full_path
    params = make_params(TINY, data_dir=data, model_dir=model_dir)
    build_estimator(params).train(factory.make_input_fn(params, tf.estimator.ModeKeys.TRAIN),
                                  max_steps=2)
    self.assertEqual(int(tf.train.load_variable(tf.train.latest_checkpoint(model_dir),
                                                'global_step')), 2)

  def test_the_binary_counts_skipped_records_against_those_read_in_its_progress(self):
    data = self.damaged_copy(every_shard=False)
    damaged = manifest.read(data, 'train')['shards'][0]['records']
    flags = [f'--{k}={",".join(map(str, v)) if isinstance(v, list) else v}'
             for k, v in dict(TINY, max_steps=40, log_every_steps=10,
                               save_checkpoints_steps=40).items()]
    done = program_runs.run('towers.train_main', *flags, f'--data_dir={data}',
                            f'--model_dir={self.create_tempdir().full_path}', timeout=LIMIT)
    self.assertEqual(done.code, 0, done.output())
    counts = [(e['skipped_records'], e['records_read']) for e in done.events
              if e['event'] == 'progress' and 'skipped_records' in e]
    self.assertNotEmpty(counts, done.output())
    skipped, read = counts[-1]
    # Every pass reads each record once: the bad share of the records read is the damaged
    # share of the data, give or take the pass in progress.
    self.assertAlmostEqual(skipped / read, damaged / self.records,
                           delta=damaged / self.records / 2 + 2 * damaged / read)

  def test_an_evaluation_of_zero_readable_videos_is_an_error_without_strict_eval(self):
    data = self.damaged_copy(every_shard=True, subset='test')
    model_dir = self.create_tempdir().full_path
    params = make_params(TINY, data_dir=data, model_dir=model_dir)
    estimator = build_estimator(params)
    estimator.train(factory.make_input_fn(params, tf.estimator.ModeKeys.TRAIN), max_steps=1)
    with self.assertRaises(EvalCoverageError) as caught:
      estimator.evaluate(factory.make_input_fn(params, tf.estimator.ModeKeys.EVAL))
    self.assertEqual((caught.exception.evaluated, caught.exception.option), (0, 'data_dir'))


if __name__ == '__main__':
  tf.test.main()

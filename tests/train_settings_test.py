"""Specification: a model_dir is trained with one set of learning settings, never a mix.

Training records its learning settings in model_dir/train_settings.json
(towers/train_settings.py); a resume with other ones (--batch_size, --accumulate_steps,
--lr_values, ...) stops before the first step with one line naming the flag, both values
and the fix, through the library (`build_estimator(...).train`) and `//towers:train`
alike. Continuing for more --max_steps, or on another tower count, is a resume; a change
made on purpose with --resume_changes is kept in the record's history; a model_dir
trained before records existed resumes with a warning and gets one. A model_dir trained by
`build_estimator` on the caller's own input_fn records that (data_source 'input_fn'):
`//towers:train` refuses it before any step, whatever its --data_source, and the caller's
input_fn refuses a model_dir the flags' data trained.
"""

import dataclasses
import json
import os
import shutil
import tempfile

import numpy as np
import tensorflow as tf

from command_line import status_file
from input_fn import factory, manifest
from tests import program_runs, tiny_records
from towers import build_estimator, checkpoints, preflight, run_flags, train_settings, training
from towers.params import make_params

LIMIT = 240  # seconds for one process
TINY = dict(model='c3d_small', num_classes=4, clip_frames=4, crop_size=16, batch_size=2,
            num_towers=1, save_checkpoints_steps=1, lr_schedule='piecewise',
            lr_boundaries=[5], lr_values=[0.01, 0.001], export_savedmodel=False,
            synthetic_train_examples=8)


def train(max_steps: int, **changes) -> None:
  """Trains TINY (with `changes`) to --max_steps=`max_steps` through the library, on the
  input the params name (as `towers.training` does)."""
  params = make_params(TINY, max_steps=max_steps, **changes)
  build_estimator(params, flags_describe_run=True).train(
      factory.make_input_fn(params, tf.estimator.ModeKeys.TRAIN), max_steps=max_steps)


def own_input_fn():
  """A caller's own input: random clips in [-1, 1] of TINY's shape, labels < num_classes."""
  clips = np.random.RandomState(0).uniform(-1, 1, (8, 4, 16, 16, 3)).astype(np.float32)
  labels = np.arange(8, dtype=np.int64) % TINY['num_classes']
  return tf.data.Dataset.from_tensor_slices((clips, labels)).repeat().batch(TINY['batch_size'])


def refusal(params) -> train_settings.ResumeSettingsError | None:
  """What the one decision on a resume (`train_settings.checked_record`) says of `params`:
  its refusal, or None when the run may continue model_dir."""
  try:
    train_settings.checked_record(params)
  except train_settings.ResumeSettingsError as e:
    return e
  return None


def flags_of(params: dict) -> list[str]:
  """`params` as //towers:train flags."""
  return [f'--{name}={",".join(map(str, value)) if isinstance(value, list) else value}'
          for name, value in params.items()]


def record_of(params) -> dict:
  """The record a first run of `params` writes (its settings, videos and class names)."""
  return {'format_version': 1, 'history': [], 'settings': train_settings.settings(params),
          train_settings.TRAIN_VIDEO_NAMES: train_settings.train_video_names(params),
          train_settings.TRAIN_CLASS_NAMES: train_settings.train_class_names(params)}


def remove_meta_graphs(model_dir: str) -> None:
  """Removes model_dir's model.ckpt-*.meta: checkpoints without the mark of a run that
  records its settings (`checkpoints.trained_recording`)."""
  for path in tf.io.gfile.glob(os.path.join(model_dir, 'model.ckpt-*.meta')):
    os.remove(path)


def step_of(model_dir: str) -> int:
  return int(tf.train.load_variable(tf.train.latest_checkpoint(model_dir), 'global_step'))


class TrainSettingsTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.trained = os.path.join(tempfile.mkdtemp(), 'trained')
    train(1, model_dir=cls.trained)

  def setUp(self):
    super().setUp()
    # Each test resumes its own copy of one 1-step model_dir (the `checkpoint` file names
    # the checkpoint by its absolute path).
    self.model_dir = shutil.copytree(self.trained, os.path.join(self.create_tempdir(), 'run'))
    state = os.path.join(self.model_dir, 'checkpoint')
    with open(state) as f:
      text = f.read()
    with open(state, 'w') as f:
      f.write(text.replace(self.trained, self.model_dir))

  def test_training_records_its_settings_and_resumes_with_the_same_for_more_steps(self):
    stored = train_settings.read_record(self.model_dir)
    self.assertEqual(stored['settings']['batch_size'], 2)
    self.assertEqual(stored['settings']['lr_values'], [0.01, 0.001])
    self.assertEqual(stored['history'], [])
    train(3, model_dir=self.model_dir)
    self.assertEqual(step_of(self.model_dir), 3)

  def test_max_steps_cadences_evaluation_and_towers_may_change(self):
    params = make_params(
        TINY, model_dir=self.model_dir, max_steps=50, log_every_steps=7,
        save_checkpoints_steps=9, eval_batch_size=4, eval_clips=2, num_towers=2,
        random_seed=3, input_threads=2)
    self.assertEqual(preflight.problems(params), [])
    self.assertIsNone(refusal(params))

  def test_the_library_on_its_own_input_fn_gets_a_record_but_no_run_flags(self):
    # The flags cannot say what the caller's input_fn (or network) reads, so no flagfile
    # claims to continue the run, and the record says the data was the caller's.
    own = os.path.join(self.create_tempdir(), 'own')
    build_estimator(make_params(TINY, model_dir=own)).train(own_input_fn, max_steps=1)
    self.assertFalse(os.path.exists(run_flags.path(own)))
    settings = train_settings.read_record(own)['settings']
    self.assertEqual(settings['data_source'], train_settings.CALLER_INPUT)
    self.assertNotIn('synthetic_train_examples', settings)
    # //towers:train (its default data_source, or any other) stops before work.
    for data in ({}, {'data_source': 'synthetic', 'synthetic_train_examples': 8}):
      with self.subTest(data=data):
        with self.assertRaises(train_settings.ResumeSettingsError) as caught:
          training.train_and_evaluate(dict(TINY, model_dir=own, max_steps=2, **data))
        self.assertEqual((caught.exception.option, caught.exception.settings,
                          caught.exception.allowable), ('model_dir', ('data_source',), False))
        self.assertIn('your own input_fn', str(caught.exception))
        self.assertNotIn('--data_source=', str(caught.exception))
    self.assertEqual(step_of(own), 1)
    self.assertFalse(os.path.exists(os.path.join(own, 'export')))
    build_estimator(make_params(TINY, model_dir=own)).train(own_input_fn, max_steps=2)
    self.assertEqual(step_of(own), 2)  # the caller's input_fn continues it
    # ... and never continues a model_dir trained on the data the flags name.
    with self.assertRaises(train_settings.ResumeSettingsError) as caught:
      build_estimator(make_params(TINY, model_dir=self.model_dir)).train(own_input_fn,
                                                                         max_steps=2)
    self.assertEqual((caught.exception.option, caught.exception.settings),
                     ('model_dir', ('data_source',)))
    self.assertEqual(step_of(self.model_dir), 1)

  def test_another_batch_size_stops_the_library_before_the_first_step(self):
    with self.assertRaises(train_settings.ResumeSettingsError) as caught:
      train(3, model_dir=self.model_dir, batch_size=4)
    self.assertEqual(caught.exception.option, 'batch_size')
    self.assertEqual(caught.exception.settings, ('batch_size',))
    self.assertTrue(caught.exception.allowable)  # --resume_changes=batch_size would continue
    self.assertEqual(step_of(self.model_dir), 1)
    self.assertEqual(train_settings.read_record(self.model_dir)['settings']['batch_size'], 2)

  def test_another_network_offers_no_override_since_its_variables_differ(self):
    with self.assertRaises(train_settings.ResumeSettingsError) as caught:
      train(3, model_dir=self.model_dir, num_classes=3)
    self.assertEqual((caught.exception.option, caught.exception.settings),
                     ('num_classes', ('num_classes',)))
    self.assertFalse(caught.exception.allowable)
    self.assertEqual(step_of(self.model_dir), 1)
    overridden = refusal(make_params(
        TINY, model_dir=self.model_dir, batch_norm=False, resume_changes=['batch_norm']))
    self.assertEqual((overridden.option, overridden.settings, overridden.allowable),
                     ('resume_changes', ('batch_norm',), False))

  def test_a_cosine_schedule_continued_to_more_steps_is_another_schedule(self):
    cosine = dict(lr_schedule='cosine', lr_values=[0.05], lr_boundaries=[])
    train(2, model_dir=self.model_dir, resume_changes=['lr_schedule', 'lr_values'], **cosine)
    self.assertIsNone(refusal(make_params(TINY, model_dir=self.model_dir, max_steps=2,
                                          **cosine)))
    found = refusal(make_params(TINY, model_dir=self.model_dir, max_steps=4, **cosine))
    self.assertEqual((found.option, found.settings, found.allowable),
                     ('max_steps', ('lr_cosine_steps',), True))
    self.assertIsNone(refusal(make_params(TINY, model_dir=self.model_dir, max_steps=4,
                                          resume_changes=['lr_cosine_steps'], **cosine)))

  def test_accumulate_steps_and_lr_values_are_named_with_old_and_new_values(self):
    found = refusal(make_params(TINY, model_dir=self.model_dir, accumulate_steps=2,
                                lr_values=[0.02, 0.001]))
    self.assertEqual(found.settings, ('lr_values', 'accumulate_steps'))
    self.assertEqual(found.option, 'lr_values')
    self.assertTrue(found.allowable)

  def test_the_train_binary_stops_with_one_error_naming_the_flag(self):
    done = program_runs.run('towers.train_main', *flags_of(TINY), '--batch_size=4', '--max_steps=3',
                            f'--model_dir={self.model_dir}', timeout=LIMIT)
    self.assertEqual(done.code, 2, done.output())
    self.assertEqual(done.error['error'], 'ResumeSettingsError', done.output())
    self.assertEqual(done.error_options, ['batch_size'])
    self.assertEqual(step_of(self.model_dir), 1)
    self.assertEqual(train_settings.read_record(self.model_dir)['settings']['batch_size'], 2)

  def test_resume_changes_continues_and_keeps_the_change_in_the_history(self):
    train(2, model_dir=self.model_dir, lr_values=[0.02, 0.002], resume_changes=['lr_values'])
    self.assertEqual(step_of(self.model_dir), 2)
    stored = train_settings.read_record(self.model_dir)
    self.assertEqual(stored['settings']['lr_values'], [0.02, 0.002])
    self.assertEqual(stored['history'], [
        {'step': 1, 'changed': {'lr_values': [[0.01, 0.001], [0.02, 0.002]]}}])
    unknown = refusal(make_params(TINY, model_dir=self.model_dir,
                                  resume_changes=['learning_rate']))
    self.assertEqual((unknown.option, unknown.settings), ('resume_changes', ('learning_rate',)))

  def test_a_lost_record_of_a_run_that_recorded_one_stops_the_resume(self):
    # run.flags (written after the record), or a final evaluation carrying the lineage only
    # a recording run writes: continuing would compare neither the settings nor the videos
    # it trained on.
    os.remove(train_settings.record_path(self.model_dir))
    flags = os.path.join(self.model_dir, 'run.flags')
    with open(flags, 'w') as f:
      f.write('--model=c3d_small\n')
    found = refusal(make_params(TINY, model_dir=self.model_dir, max_steps=2))
    self.assertEqual(found.option if found else None, 'model_dir')
    self.assertIn(flags, str(found))
    os.remove(flags)
    with open(os.path.join(self.model_dir, 'final_evaluation.json'), 'w') as f:
      json.dump({'step': 1, 'metrics': {}, 'lineage': 'abcdef0123456789'}, f)
    found = refusal(make_params(TINY, model_dir=self.model_dir, max_steps=2))
    self.assertEqual(found.option if found else None, 'model_dir')
    self.assertIn('final_evaluation.json', str(found))
    # Its checkpoint files alone (a bare copy): their .meta holds the mark of a recording run.
    os.remove(os.path.join(self.model_dir, 'final_evaluation.json'))
    found = refusal(make_params(TINY, model_dir=self.model_dir, max_steps=2))
    self.assertEqual(found.option if found else None, 'model_dir')
    self.assertIn('model.ckpt-1.meta', str(found))
    # The export info written with the graph, before the record, is no sign: a run stopped
    # by a full disk at its first checkpoint has it and no record, and goes on when rerun
    # (its step-0 checkpoint learnt nothing; here the checkpoints' .meta files are gone).
    remove_meta_graphs(self.model_dir)
    os.makedirs(os.path.join(self.model_dir, 'export_assets'), exist_ok=True)
    with open(os.path.join(self.model_dir, 'export_assets', 'video_model.json'), 'w') as f:
      json.dump({'train_video_names': []}, f)
    self.assertIsNone(refusal(make_params(TINY, model_dir=self.model_dir, max_steps=2)))

  def test_a_model_dir_without_a_record_resumes_with_one_warning_and_gets_one(self):
    # Trained before records were written: no record, no run.flags (written after it) and
    # no mark of a recording run in its checkpoints' .meta.
    os.remove(train_settings.record_path(self.model_dir))
    remove_meta_graphs(self.model_dir)
    if os.path.exists(os.path.join(self.model_dir, 'run.flags')):
      os.remove(os.path.join(self.model_dir, 'run.flags'))
    with program_runs.recorded_events() as events:
      train(2, model_dir=self.model_dir)
    self.assertEqual(status_file.values(events, 'unrecorded_settings', 'model_dir'),
                     [self.model_dir])
    self.assertEqual(step_of(self.model_dir), 2)
    self.assertEqual(train_settings.read_record(self.model_dir)['settings'],
                     train_settings.settings(make_params(TINY, model_dir=self.model_dir)))

  def test_a_change_that_needs_new_variables_is_never_suggested_nor_allowed(self):
    for changes in (dict(optimizer='adam'), dict(ema_decay=0.9)):
      name = next(iter(changes))
      with self.subTest(name):
        plain = refusal(make_params(TINY, model_dir=self.model_dir, **changes))
        self.assertEqual((plain.option, plain.settings[0]), (name, name))
        self.assertFalse(plain.allowable)  # --resume_changes is not offered
        allowed = refusal(make_params(TINY, model_dir=self.model_dir, resume_changes=[name],
                                      **changes))
        self.assertEqual((allowed.option, allowed.settings, allowed.allowable),
                         ('resume_changes', (name,), False))
        with self.assertRaises(train_settings.ResumeSettingsError):
          train(2, model_dir=self.model_dir, resume_changes=[name], **changes)
        self.assertEqual(step_of(self.model_dir), 1)
        self.assertEqual(train_settings.read_record(self.model_dir)['settings']['optimizer'],
                         'momentum')

  def test_changes_that_keep_the_variables_resume_when_allowed_with_the_settings_they_govern(
      self):
    train(2, model_dir=self.model_dir, optimizer='sgd', resume_changes=['optimizer'])
    self.assertEqual(step_of(self.model_dir), 2)
    train(3, model_dir=self.model_dir, optimizer='sgd', lr_schedule='constant',
          lr_values=[0.01], lr_boundaries=[], resume_changes=['lr_schedule', 'lr_values'])
    self.assertEqual(step_of(self.model_dir), 3)
    self.assertEqual(train_settings.read_record(self.model_dir)['settings']['optimizer'], 'sgd')

  def test_a_resume_that_fails_before_its_first_step_leaves_the_record_as_it_was(self):
    before = train_settings.read_record(self.model_dir)
    checkpoint = tf.train.latest_checkpoint(self.model_dir)
    for data in tf.io.gfile.glob(checkpoint + '.data-*'):
      with open(data, 'r+b') as f:
        f.truncate(8)  # the restore fails
    with self.assertRaises(tf.errors.OpError):
      train(2, model_dir=self.model_dir, lr_values=[0.02, 0.002], resume_changes=['lr_values'])
    self.assertEqual(train_settings.read_record(self.model_dir), before)
    # The binary ends with one error naming the damaged checkpoint.
    done = program_runs.run('towers.train_main', *flags_of(TINY), '--max_steps=2',
                            f'--model_dir={self.model_dir}', timeout=LIMIT)
    self.assertEqual(done.code, 1, done.output())
    self.assertEqual(done.error['error'], 'Failed', done.output())
    self.assertIn(checkpoint, done.error['message'])

  def test_a_latest_checkpoint_whose_files_are_gone_stops_before_training(self):
    train(2, model_dir=self.model_dir)
    for path in tf.io.gfile.glob(os.path.join(self.model_dir, 'model.ckpt-2.*')):
      os.remove(path)
    done = program_runs.run('towers.train_main', *flags_of(TINY), '--max_steps=3',
                            f'--model_dir={self.model_dir}', timeout=LIMIT)
    self.assertEqual(done.code, 2, done.output())
    self.assertEqual((done.error['error'], done.error_options), ('PreflightError', ['model_dir']),
                     done.output())
    self.assertIn('model.ckpt-1', done.error['message'])  # the one to point it at
    self.assertFalse(tf.io.gfile.glob(os.path.join(self.model_dir, 'model.ckpt-3.*')))
    # The `checkpoint` file itself gone, empty or damaged: the same, before any step.
    state = os.path.join(self.model_dir, 'checkpoint')
    for text in (None, '', 'model_checkpoint_path: "model.ckpt-1\n{{{'):
      with self.subTest(text=text):
        if text is None:
          os.remove(state)
        else:
          with open(state, 'w') as f:
            f.write(text)
        found = preflight.problems(make_params(TINY, model_dir=self.model_dir, max_steps=3))
        self.assertEqual([p.option for p in found], ['model_dir'])
        self.assertIn('model.ckpt-1', found[0])

  def test_a_damaged_or_hand_edited_record_stops_naming_the_file(self):
    path = train_settings.record_path(self.model_dir)
    for text in ('{"settings": {', '{}', '[1, 2]', '{"settings": [], "history": []}'):
      with self.subTest(text):
        with open(path, 'w') as f:
          f.write(text)
        found = refusal(make_params(TINY, model_dir=self.model_dir, max_steps=2))
        self.assertEqual((found.option, found.settings), ('model_dir', ()))
        with self.assertRaises(train_settings.ResumeSettingsError) as caught:
          train_settings.read_record(self.model_dir)
        self.assertEqual(caught.exception.option, 'model_dir')
    done = program_runs.run('towers.train_main', *flags_of(TINY), '--max_steps=2',
                            f'--model_dir={self.model_dir}', timeout=LIMIT)
    self.assertEqual(done.code, 2, done.output())
    self.assertEqual(done.error['error'], 'ResumeSettingsError', done.output())
    self.assertEqual(done.error_options, ['model_dir'])
    self.assertEqual(step_of(self.model_dir), 1)
    with open(path) as f:
      self.assertEqual(f.read(), '{"settings": [], "history": []}')  # left as it was
    # Deleting it is no way round: run.flags shows a record was written.
    os.remove(path)
    found = refusal(make_params(TINY, model_dir=self.model_dir, max_steps=2))
    self.assertEqual(found.option if found else None, 'model_dir')

  def test_a_record_naming_a_setting_this_version_no_longer_has_resumes(self):
    # Older runs recorded settings since removed as flags (ps_placement: a cluster now
    # always places largest first); a resume ignores them and the new record drops them.
    path = train_settings.record_path(self.model_dir)
    with open(path) as f:
      stored = json.load(f)
    stored['settings']['ps_placement'] = 'greedy'
    with open(path, 'w') as f:
      json.dump(stored, f)
    self.assertIsNone(refusal(make_params(TINY, model_dir=self.model_dir, max_steps=2)))
    train(2, model_dir=self.model_dir)
    self.assertEqual(step_of(self.model_dir), 2)
    stored = train_settings.read_record(self.model_dir)
    self.assertNotIn('ps_placement', stored['settings'])
    self.assertEqual(stored['history'], [])


class SettingsTest(tf.test.TestCase):

  def test_synchronous_training_counts_the_workers_of_one_step_asynchronous_does_not(self):
    sync = make_params(TINY, sync_replicas=True, backup_workers=1)
    self.assertEqual(train_settings.differences(train_settings.settings(sync, 4),
                                                train_settings.settings(sync, 3)),
                     ['workers_per_step'])
    async_ = make_params(TINY)
    self.assertEqual(train_settings.settings(async_, 4), train_settings.settings(async_, 3))

  def test_prepared_data_is_known_by_its_training_videos_not_its_path(self):
    root = tempfile.mkdtemp()
    ucf = tiny_records.make(root, (), classes=4, groups=9, min_frames=4, max_frames=5).data
    videos = {}
    for split in (1, 2):
      out = os.path.join(root, f'tfr{split}')
      tiny_records.prepared(ucf, out, split=split)
      videos[split] = train_settings.train_videos(
          make_params(TINY, data_source='tfrecord', data_dir=out))
    moved = shutil.copytree(os.path.join(root, 'tfr1'), os.path.join(root, 'moved'))
    self.assertEqual(train_settings.train_videos(
        make_params(TINY, data_source='tfrecord', data_dir=moved)), videos[1])
    self.assertNotEqual(videos[1], videos[2])
    self.assertRegex(videos[1], r'^\d+ videos, sha256 [0-9a-f]{12}$')
    split_1 = train_settings.train_videos(make_params(TINY, data_source='videos', data_dir=ucf))
    split_2 = train_settings.train_videos(make_params(TINY, data_source='videos', data_dir=ucf,
                                                      split=2))
    self.assertNotEqual(split_1, split_2)

  def test_other_data_under_the_same_video_names_is_another_setting(self):
    """Two datasets of the same video names, one of 24x20 frames and one of 32x24: their
    records (and the videos themselves) differ in train_data, a moved copy does not; a resume
    on the other one is refused naming it, and --resume_changes=train_data is the way on."""
    root = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, root, ignore_errors=True)
    params = {}
    for name, (width, height) in (('small', (24, 20)), ('large', (32, 24))):
      made = tiny_records.make(os.path.join(root, name), classes=4, groups=9, min_frames=4,
                               max_frames=5, width=width, height=height)
      ucf, out = made.data, made.records['videos']
      params[name] = make_params(TINY, data_source='tfrecord', data_dir=out,
                                 model_dir=os.path.join(root, 'run'))
      params[name + '_videos'] = make_params(TINY, data_source='videos', data_dir=ucf)
    small, large = (train_settings.settings(params[n]) for n in ('small', 'large'))
    self.assertEqual(small['train_videos'], large['train_videos'])  # the same names
    self.assertEqual(train_settings.differences(small, large), ['train_data'])
    self.assertRegex(small['train_data'], r'^8 videos sampled: frames 20x24, \d+ frames; '
                     r'sources sha256 [0-9a-f]{12}$')
    self.assertIn('frames 24x32', large['train_data'])
    self.assertEqual(train_settings.differences(
        train_settings.settings(params['small_videos']),
        train_settings.settings(params['large_videos'])), ['train_data'])
    moved = shutil.copytree(params['small'].data_dir, os.path.join(root, 'moved'))
    self.assertEqual(train_settings.settings(make_params(TINY, data_source='tfrecord',
                                                         data_dir=moved)), small)

    # A model_dir trained on the small records (its checkpoint and record), resumed on the
    # large ones.
    model_dir = shutil.copytree(self.trained_dir(), params['small'].model_dir)
    train_settings.write_record(model_dir, {'format_version': 1, 'settings': small,
                                            'history': []})
    found = refusal(params['large'])
    self.assertEqual((found.option, found.settings, found.allowable),
                     ('data_dir', ('train_data',), True))
    self.assertIsNone(refusal(params['small']))
    self.assertIsNone(refusal(
        make_params(TINY, data_source='tfrecord', data_dir=params['large'].data_dir,
                    model_dir=model_dir, resume_changes=['train_data'])))
    # A record written before train_data existed resumes as before.
    older = {k: v for k, v in small.items() if k != 'train_data'}
    train_settings.write_record(model_dir, {'format_version': 1, 'settings': older,
                                            'history': []})
    self.assertIsNone(refusal(params['large']))

  def test_the_same_videos_under_other_labels_are_another_setting(self):
    """Records prepared again with the class list reordered (same videos, same frames):
    only train_labels differs, and a resume on them is refused naming it."""
    root = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, root, ignore_errors=True)
    out = tiny_records.make(root, classes=4, groups=9, min_frames=4, max_frames=5
                            ).records['videos']
    relabelled = shutil.copytree(out, os.path.join(root, 'relabelled'))
    for subset in manifest.SUBSETS:
      prepared = manifest.read(relabelled, subset)
      prepared['classes'] = prepared['classes'][1::-1] + prepared['classes'][2:]
      manifest.write(relabelled, prepared)
    model_dir = os.path.join(root, 'run')
    before, after = (make_params(TINY, data_source='tfrecord', data_dir=d, model_dir=model_dir)
                     for d in (out, relabelled))
    self.assertEqual(train_settings.differences(train_settings.settings(before),
                                                train_settings.settings(after)),
                     ['train_labels'])
    self.assertRegex(train_settings.settings(before)['train_labels'],
                     r'^4 classes, sha256 [0-9a-f]{12}$')
    shutil.copytree(self.trained_dir(), model_dir)
    train_settings.write_record(model_dir, record_of(before))
    found = refusal(after)
    self.assertEqual((found.option, found.settings), ('data_dir', ('train_labels',)))
    names = manifest.read(out, 'train')['classes']
    self.assertIn(f'label 0 was {names[0]}, now {names[1]}', str(found))
    self.assertNotIn('sha256', str(found))
    self.assertIsNone(refusal(before))

  def test_the_same_videos_read_by_another_route_are_named_as_such(self):
    """A model_dir trained on records resumed on the videos they were made from: with
    --resume_changes=data_source the settings of one route only (split) follow it, and the
    refusal says the videos are the same ones, read another way."""
    root = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, root, ignore_errors=True)
    made = tiny_records.make(root, classes=4, groups=9, min_frames=4, max_frames=5)
    model_dir = os.path.join(root, 'run')
    records = make_params(TINY, data_source='tfrecord', data_dir=made.records['videos'],
                          model_dir=model_dir)
    shutil.copytree(self.trained_dir(), model_dir)
    train_settings.write_record(model_dir, record_of(records))
    videos = make_params(TINY, data_source='videos', data_dir=made.data, model_dir=model_dir,
                         resume_changes=['data_source'])
    found = refusal(videos)
    # The same frames and source bytes: only the route (the videos' names as read) differs.
    self.assertEqual(found.settings, ('train_videos',))
    count = len(train_settings.train_video_names(records))
    self.assertIn(f'the same {count} videos, read another way', str(found))
    self.assertIsNone(refusal(dataclasses.replace(
        videos, resume_changes=('data_source', 'train_videos', 'train_data'))))

  def test_a_resume_on_other_videos_keeps_every_video_trained_on_and_refuses_them_for_testing(
      self):
    """--resume_changes=train_videos lets a model_dir go on with other training videos; its
    record then lists those of both runs (exports copy that list), and test videos it
    trained on before stop the run, naming data_dir."""
    root = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, root, ignore_errors=True)
    ucf = tiny_records.make(root, (), classes=4, groups=9, min_frames=4, max_frames=5).data
    model_dir = os.path.join(root, 'run')
    params = {}
    for split in (1, 2):
      out = os.path.join(root, f'tfr{split}')
      tiny_records.prepared(ucf, out, split=split)
      params[split] = make_params(TINY, data_source='tfrecord', data_dir=out, split=split,
                                  model_dir=model_dir,
                                  resume_changes=['train_videos', 'train_data'])
    shutil.copytree(self.trained_dir(), model_dir)
    earlier = train_settings.train_video_names(params[1]) + ['v_Gone_g01_c01']
    train_settings.write_record(model_dir, {
        'format_version': 1, 'history': [], 'settings': train_settings.settings(params[1]),
        train_settings.TRAIN_VIDEO_NAMES: earlier})
    record = train_settings.checked_record(params[1])
    self.assertEqual(record[train_settings.TRAIN_VIDEO_NAMES], sorted(earlier))
    # Split 2 tests on videos split 1 trained on.
    with self.assertRaises(train_settings.ResumeSettingsError) as caught:
      train_settings.checked_record(params[2])
    learnt = set(earlier) & set(train_settings.test_video_names(params[2]))
    self.assertTrue(learnt)
    self.assertEqual((caught.exception.option, caught.exception.settings),
                     ('data_dir', ('train_videos',)))
    self.assertIn(f'{len(learnt)} test videos', str(caught.exception))
    # Without --resume_changes the refusal counts the videos never trained on.
    found = refusal(dataclasses.replace(params[2], resume_changes=()))
    self.assertEqual(found.settings[0], 'train_videos')
    fresh = set(train_settings.train_video_names(params[2])) - set(earlier)
    self.assertIn(f'{len(fresh)} of them never trained on', str(found))
    # What an export of a run on split 2 lists (written before that run's record): the
    # videos of both runs while the checkpoint is there, only split 2's once it is gone.
    split_2 = train_settings.train_video_names(params[2])
    self.assertEqual(train_settings.model_dir_video_names(params[2]),
                     sorted(set(earlier) | set(split_2)))
    for path in tf.io.gfile.glob(os.path.join(model_dir, 'model.ckpt-*')) + [
        os.path.join(model_dir, 'checkpoint')]:
      os.remove(path)  # starting over in the same model_dir
    self.assertEqual(train_settings.model_dir_video_names(params[2]), split_2)

  def test_a_warm_start_from_a_model_that_learnt_the_test_videos_is_refused(self):
    # Split 1 trained in one model_dir; a fresh split-2 run warm-started from it would test
    # on videos those weights learnt (split 2's test groups are split 1's training groups).
    root = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, root, ignore_errors=True)
    ucf = tiny_records.make(root, (), classes=4, groups=9, min_frames=4, max_frames=5).data
    params = {}
    for split in (1, 2):
      out = os.path.join(root, f'tfr{split}')
      tiny_records.prepared(ucf, out, split=split)
      params[split] = make_params(TINY, data_source='tfrecord', data_dir=out, split=split,
                                  model_dir=os.path.join(root, f'run{split}'))
    source = shutil.copytree(self.trained_dir(), params[1].model_dir, dirs_exist_ok=True)
    train_settings.write_record(source, record_of(params[1]))
    fresh = dataclasses.replace(params[2], model='i3d', warm_start_from=source)
    with self.assertRaises(train_settings.ResumeSettingsError) as caught:
      train_settings.checked_record(fresh)
    self.assertEqual(caught.exception.option, 'warm_start_from')
    self.assertIn(os.path.join(source, train_settings.RECORD_FILE), str(caught.exception))
    # From that run's export: its video_model.json lists what the weights learnt.
    export = os.path.join(source, 'export', 'best', '123')
    os.makedirs(os.path.join(export, 'variables'))
    os.makedirs(os.path.join(export, 'assets.extra'))
    for path in tf.io.gfile.glob(os.path.join(source, 'model.ckpt-1.*')):
      shutil.copy(path, os.path.join(export, 'variables', 'variables' + path.split('-1', 1)[1]))
    open(os.path.join(export, 'saved_model.pb'), 'wb').close()
    info = os.path.join(export, 'assets.extra', 'video_model.json')
    with open(info, 'w') as f:
      json.dump({train_settings.TRAIN_VIDEO_NAMES: train_settings.train_video_names(params[1])},
                f)
    from_export = dataclasses.replace(
        fresh, warm_start_from=os.path.join(export, 'variables', 'variables'))
    found = refusal(from_export)
    self.assertEqual(found.option if found else None, 'warm_start_from')
    self.assertIn('video_model.json', str(found))
    with open(info, 'w') as f:
      f.write('{damaged')  # what the weights learnt can no longer be read: refused too
    found = refusal(from_export)
    self.assertEqual(found.option if found else None, 'warm_start_from')
    self.assertIn('missing, damaged', str(found))
    # A model_dir whose record is lost, though its run.flags shows one was written.
    with open(os.path.join(source, 'run.flags'), 'w') as f:
      f.write('--model=c3d_small\n')
    os.remove(train_settings.record_path(source))
    found = refusal(fresh)
    self.assertEqual(found.option if found else None, 'warm_start_from')
    self.assertIn('is missing', str(found))
    train_settings.write_record(source, record_of(params[1]))
    # The same warm start for split 1 passes, and its record lists what the weights learnt.
    record = train_settings.checked_record(dataclasses.replace(
        params[1], model='i3d', warm_start_from=source, model_dir=os.path.join(root, 'again')))
    self.assertEqual(record[train_settings.TRAIN_VIDEO_NAMES],
                     train_settings.train_video_names(params[1]))

  def test_a_bare_copy_of_a_recording_runs_checkpoint_is_no_unknown_start(self):
    # checkpoint + model.ckpt-1.* copied into a new folder: what the weights learnt is
    # unknown, so continuing it or warm-starting from it is refused; a step-0 checkpoint
    # (nothing learnt) or one without the mark (.meta gone) is not.
    trained = self.trained_dir()
    copy = os.path.join(self.create_tempdir().full_path, 'copy')
    os.makedirs(copy)
    for path in [os.path.join(trained, 'checkpoint')] + tf.io.gfile.glob(
        os.path.join(trained, 'model.ckpt-1.*')):
      shutil.copy(path, copy)
    found = refusal(make_params(TINY, model_dir=copy, max_steps=2))
    self.assertEqual(found.option if found else None, 'model_dir')
    root = self.create_tempdir().full_path
    ucf = tiny_records.make(root, (), classes=4, groups=9, min_frames=4, max_frames=5).data
    tiny_records.prepared(ucf, os.path.join(root, 'tfr'), split=1)
    found = refusal(make_params(TINY, model='i3d', warm_start_from=copy, data_source='tfrecord',
                                data_dir=os.path.join(root, 'tfr'), split=1,
                                model_dir=os.path.join(root, 'next')))
    self.assertEqual(found.option if found else None, 'warm_start_from')
    self.assertIn('model.ckpt-1.meta', str(found))
    self.assertTrue(checkpoints.trained_recording(os.path.join(copy, 'model.ckpt-1')))
    self.assertFalse(checkpoints.trained_recording(os.path.join(trained, 'model.ckpt-0')))
    remove_meta_graphs(copy)
    self.assertIsNone(refusal(make_params(TINY, model_dir=copy, max_steps=2)))

  def test_weights_that_learnt_other_clips_of_the_test_groups_are_refused(self):
    # The earlier training held clip c09 of every test video's UCF101 group (not the test
    # clips themselves): the same footage, so both a warm start and a resume are refused.
    root = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, root, ignore_errors=True)
    ucf = tiny_records.make(root, (), classes=4, groups=9, min_frames=4, max_frames=5).data
    out = os.path.join(root, 'tfr')
    tiny_records.prepared(ucf, out, split=1)
    params = make_params(TINY, data_source='tfrecord', data_dir=out, split=1,
                         model_dir=os.path.join(root, 'run'),
                         resume_changes=['train_videos', 'train_data'])
    tests = train_settings.test_video_names(params)
    mates = sorted({name.rsplit('_c', 1)[0] + '_c09' for name in tests})
    self.assertFalse(set(mates) & set(tests))
    source = shutil.copytree(self.trained_dir(), os.path.join(root, 'source'))
    train_settings.write_record(source, dict(record_of(params), **{
        train_settings.TRAIN_VIDEO_NAMES: mates}))
    found = refusal(dataclasses.replace(params, model='i3d', warm_start_from=source))
    self.assertEqual(found.option if found else None, 'warm_start_from')
    self.assertIn(f'{len(tests)} test videos', str(found))
    self.assertIn(mates[0].rsplit('/', 1)[-1][:-4], str(found))
    shutil.copytree(source, params.model_dir)
    found = refusal(params)
    self.assertEqual((found.option, found.settings) if found else None,
                     ('data_dir', ('train_videos',)))
    # Other groups' clips are not the test videos' footage.
    others = [name.replace('_g0', '_g9') for name in mates]
    train_settings.write_record(params.model_dir, dict(record_of(params), **{
        train_settings.TRAIN_VIDEO_NAMES: others}))
    self.assertIsNone(refusal(params))

  def trained_dir(self):
    """A model_dir with a 1-step checkpoint (of TINY on synthetic data)."""
    model_dir = os.path.join(self.create_tempdir(), 'trained')
    train(1, model_dir=model_dir)
    return model_dir


class RerunAdviceTest(tf.test.TestCase):

  def test_a_setting_the_model_dir_lacked_is_a_flag_to_leave_out(self):
    self.assertEqual(train_settings._rerun(['data_source', 'split'], {'data_source': 'tfrecord'}),
                     'Rerun with --data_source=tfrecord and without --split')
    self.assertEqual(train_settings._rerun(['split'], {}), 'Rerun without --split')


if __name__ == '__main__':
  tf.test.main()

"""Specification: one machine and the cluster's roles share one training path. A rerun's
decision that a run is finished (`final_evaluation.already_trained`), what follows each
evaluation (`exports.export_all`, which records the final one) and the time-limit stop
(`time_limit.stop_trainer`, `time_limit.stopped_before_the_end`) are each written once:
spied on, every path goes through them, a checkpoint at max_steps alone finishes no run
on either path, and a restarted evaluator keeps a better earlier export, as one machine
does. Exports and final evaluations count only for the model of their lineage: those of
another training run (or written before lineages were recorded) are replaced, and a run
that starts over in a model_dir whose checkpoints were deleted sets aside what the earlier
run left. Test videos of the same names but other content (records of other videos) measure
otherwise: a finished run's final evaluation and its best export are made again on them."""

import dataclasses
import glob
import json
import os
import shutil
import signal
import threading
from unittest import mock

import tensorflow as tf

from command_line import status_file
from model_fn.eval_spec import TOP_1
from tests import tiny_records
from input_fn import frame_sample
from towers import earlier_run, export_info, train_and_evaluate_loop, train_settings, training
from towers.cluster import evaluator, exports, final_evaluation, lineage, runners, time_limit
from towers.cluster.spec import ClusterTask
from towers.params import make_params

TASK = ClusterTask({'chief': ('127.0.0.1:1',), 'ps': ('127.0.0.1:2',)}, 'chief', 0, 'flags')
EVALUATOR = ClusterTask(TASK.cluster, 'evaluator', 0, 'flags')


def small_params(model_dir: str, max_steps: int = 2):
  return make_params(model='c3d_small', data_source='synthetic', num_classes=3, clip_frames=4,
                     crop_size=16, batch_size=8, num_towers=1, lr_schedule='constant',
                     lr_values=[0.02], max_steps=max_steps, save_checkpoints_steps=40,
                     log_every_steps=10, synthetic_eval_examples=16, model_dir=model_dir)


def fake_estimator(model_dir: str) -> mock.Mock:
  """A chief's Estimator whose `train` does nothing (what is asserted comes before)."""
  estimator = mock.Mock()
  estimator.config.save_checkpoints_secs = None
  estimator.config.save_checkpoints_steps = 40
  estimator.config.checkpoint_save_graph_def = False
  estimator.model_dir = model_dir
  return estimator


class OneTrainingPathTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    # One real run on one machine, trained, evaluated and exported to max_steps=2.
    cls.model_dir = os.path.join(tf.compat.v1.test.get_temp_dir(), 'run')
    cls.params = small_params(cls.model_dir)
    with mock.patch.object(exports, 'export_all', wraps=exports.export_all) as spy:
      train_and_evaluate_loop.run(cls.params)
    cls.one_machine_exports = spy.call_args_list

  def setUp(self):
    super().setUp()
    self.events = os.path.join(self.create_tempdir().full_path, 'events.jsonl')
    self.enter_context(mock.patch.dict(os.environ, {status_file.STATUS_FILE_ENV: self.events}))
    handler = signal.getsignal(time_limit.STOP_SIGNAL)
    self.addCleanup(signal.signal, time_limit.STOP_SIGNAL, handler)

  def recorded(self, event: str) -> list[dict]:
    return [e for e in status_file.read(self.events) if e['event'] == event] if (
        os.path.exists(self.events)) else []

  def chief(self, recipe_params) -> runners.ChiefRunner:
    """The chief of `recipe_params` without a server, a ps or a training step."""
    recipe = dataclasses.replace(training.cluster_recipe(recipe_params),
                                 estimator=lambda task: fake_estimator(self.model_dir))
    chief = runners.ChiefRunner(recipe, TASK)
    self.enter_context(mock.patch.object(runners, 'check_port_free'))
    self.enter_context(mock.patch.object(runners, 'ps_watchdog'))
    self.enter_context(mock.patch.object(runners.ChiefRunner, 'start_server'))
    self.enter_context(mock.patch.object(runners.ChiefRunner, 'finish'))
    return chief

  def test_a_restarted_evaluator_keeps_a_better_earlier_export(self):
    best = os.path.join(self.model_dir, 'export', 'best')
    exported = os.listdir(best)
    self.assertLen(exported, 1, 'one machine exported its best')
    info_path = os.path.join(best, exported[0], 'assets.extra', 'video_model.json')
    with open(info_path) as f:
      info = json.load(f)
    self.assertEqual((info['step'], info['evaluation']['eval_clips'], info['lineage']),
                     (2, self.params.eval_clips, lineage.of_model_dir(self.model_dir)))
    self.evaluate_newest_again(info_path, dict(info, top_1=1.01))  # better than any
    self.assertEqual(os.listdir(best), exported, 'the better earlier export is kept')
    # Its top-1 is no measure of this one's when it was measured on other test videos, or
    # is the model of another training run, or of one exported before lineages were
    # recorded (with or without its evaluation's record): this evaluation replaces it.
    unrecorded = {k: v for k, v in info.items() if k != 'lineage'}
    for held in (dict(info, top_1=1.01, evaluation=dict(info['evaluation'],
                                                         test_videos='1 video')),
                 dict(info, top_1=1.01, lineage='0123456789abcdef'),
                 dict(unrecorded, top_1=1.01),
                 {k: v for k, v in unrecorded.items() if k not in ('step', 'top_1')}):
      with self.subTest(held=held):
        self.evaluate_newest_again(info_path, held)
        self.assertNotEqual(os.listdir(best), exported)
        exported = os.listdir(best)
        info_path = os.path.join(best, exported[0], 'assets.extra', 'video_model.json')
        with open(info_path) as f:
          self.assertEqual(json.load(f)['lineage'], lineage.of_model_dir(self.model_dir))

  def evaluate_newest_again(self, info_path: str, held: dict) -> None:
    """A restarted evaluator evaluates the newest checkpoint, export/best holding an export
    whose video_model.json is `held`."""
    with open(info_path, 'w') as f:
      json.dump(held, f)
    task_evaluator = evaluator.Evaluator(training.cluster_recipe(self.params), EVALUATOR)
    newest = evaluator.listed_checkpoints(self.model_dir)[-1]
    pinned = evaluator.pin(newest, os.path.join(self.model_dir, evaluator.PIN_DIR))
    task_evaluator._evaluate(newest, pinned)  # pylint: disable=protected-access
    self.assertIsNone(task_evaluator.last_failure)

  def copy_of_the_run(self) -> str:
    """A copy of the trained model_dir (its `checkpoint` file names the copy's), finished:
    its final evaluation recorded."""
    copy = shutil.copytree(self.model_dir, os.path.join(self.create_tempdir(), 'run'))
    state = os.path.join(copy, 'checkpoint')
    with open(state) as f:
      text = f.read()
    with open(state, 'w') as f:
      f.write(text.replace(self.model_dir, copy))
    final_evaluation.write(copy, 2, {})
    return copy

  def export_infos(self, model_dir: str) -> list[dict]:
    return [json.load(open(path)) for path in
            glob.glob(os.path.join(model_dir, 'export', 'best', '*', 'assets.extra',
                                   'video_model.json'))]

  def test_a_final_evaluation_of_another_run_finishes_nothing(self):
    # A run started over from step 0 in this model_dir and killed after its checkpoint at
    # max_steps, before its final evaluation: the earlier run's final evaluation is not it.
    copy = self.copy_of_the_run()
    params = dataclasses.replace(self.params, model_dir=copy)
    self.assertEqual(final_evaluation.evaluated_step(copy), 2)
    record = train_settings.read_record(copy)
    train_settings.write_record(copy, dict(record, lineage='0123456789abcdef'))
    self.assertIsNone(final_evaluation.evaluated_step(copy))
    metrics = train_and_evaluate_loop.run(params)
    self.assertEqual(int(metrics['global_step']), 2, 'the final checkpoint is evaluated')
    self.assertEqual(final_evaluation.evaluated_step(copy), 2)
    self.assertEqual([i['lineage'] for i in self.export_infos(copy)], ['0123456789abcdef'])
    # Written before lineages were recorded (neither file has one): evaluated once more,
    # the model given a lineage, then finished.
    del record['lineage']
    train_settings.write_record(copy, record)
    with open(os.path.join(copy, final_evaluation.FILE_NAME)) as f:
      final = json.load(f)
    del final['lineage']
    with open(os.path.join(copy, final_evaluation.FILE_NAME), 'w') as f:
      json.dump(final, f)
    evaluated = training.train_and_evaluate(params)
    self.assertTrue(evaluated)
    self.assertIsNotNone(lineage.of_model_dir(copy))
    # Finished: the rerun returns the recorded metrics without evaluating.
    self.assertEqual(training.train_and_evaluate(params),
                     final_evaluation.scalars(evaluated))
    self.assertEqual([e['step'] for e in self.recorded('already_trained')], [2])

  def test_a_final_evaluation_made_otherwise_is_made_again_as_asked(self):
    # The run's final evaluation read 1 batch (--eval_steps=1); a rerun asking for the
    # whole test set evaluates the final checkpoint again, then is finished.
    copy = self.copy_of_the_run()
    partial = dataclasses.replace(self.params, model_dir=copy, eval_steps=1)
    os.remove(os.path.join(copy, final_evaluation.FILE_NAME))
    self.assertTrue(train_and_evaluate_loop.run(partial))
    with open(os.path.join(copy, final_evaluation.FILE_NAME)) as f:
      self.assertEqual(json.load(f)['evaluation']['eval_steps'], 1)
    train_and_evaluate_loop.run(partial)  # measured as asked: finished
    whole = dataclasses.replace(partial, eval_steps=0)
    metrics = train_and_evaluate_loop.run(whole)
    self.assertEqual(int(metrics['global_step']), 2, 'evaluated again')
    with open(os.path.join(copy, final_evaluation.FILE_NAME)) as f:
      self.assertEqual(json.load(f)['evaluation']['eval_steps'], 0)
    train_and_evaluate_loop.run(whole)
    self.assertEqual([e['step'] for e in self.recorded('already_trained')], [2, 2])

  def test_a_final_evaluation_of_part_of_the_test_videos_is_made_again(self):
    # Its records were damaged then (restored since, or not: --strict_eval then fails).
    copy = self.copy_of_the_run()
    params = dataclasses.replace(self.params, model_dir=copy)
    final_evaluation.write(copy, 2, {final_evaluation.VIDEOS_EVALUATED: 18.0,
                                     final_evaluation.VIDEOS_LISTED: 28.0},
                           export_info.evaluation_settings(params))
    metrics = train_and_evaluate_loop.run(params)
    self.assertEqual(int(metrics['global_step']), 2, 'evaluated again')
    self.assertNotIn(final_evaluation.VIDEOS_LISTED, final_evaluation.recorded_metrics(copy))
    self.assertEqual(self.recorded('already_trained'), [])
    # Cut on purpose by --eval_steps, the same record finishes the run.
    cut = dataclasses.replace(params, eval_steps=1)
    final_evaluation.write(copy, 2, {final_evaluation.VIDEOS_EVALUATED: 18.0,
                                     final_evaluation.VIDEOS_LISTED: 28.0},
                           export_info.evaluation_settings(cut))
    self.assertTrue(final_evaluation.already_trained(copy, 2, 2,
                                                     export_info.evaluation_settings(cut)))

  def test_a_test_video_replaced_outside_the_frame_sample_is_another_measurement(self):
    # The direct videos route samples a few test videos' frames; every file's size counts.
    made = tiny_records.make(self.create_tempdir().full_path, classes=3, groups=8, width=24,
                             height=20, min_frames=4, max_frames=6)
    params = dataclasses.replace(self.params, data_source='videos', data_dir=made.data,
                                 frame_short_side=0)
    before = export_info.evaluation_settings(params)
    sampled = {name for name, *_ in frame_sample.frame_sample(params, 'test', decoded=True)}
    [video] = [v for v in glob.glob(os.path.join(made.data, 'UCF-101', '*', '*.avi'))
               if os.path.splitext(os.path.basename(v))[0] in
               train_settings.test_video_names(params) and
               os.path.splitext(os.path.basename(v))[0] not in sampled][:1]
    with open(video, 'ab') as f:
      f.write(b'another video of that name')
    after = export_info.evaluation_settings(params)
    self.assertEqual([k for k in before if before[k] != after[k]], ['test_data'])
    # So do a training video's bytes (a resume refuses other training data); a record of
    # before the sources were part of train_data is compared without them.
    trained = train_settings.settings(params)['train_data']
    [video] = [v for v in glob.glob(os.path.join(made.data, 'UCF-101', '*', '*.avi'))
               if os.path.splitext(os.path.basename(v))[0] in
               train_settings.train_video_names(params)][-1:]
    with open(video, 'ab') as f:
      f.write(b'another video of that name')
    now = train_settings.settings(params)
    self.assertEqual(train_settings.differences(dict(now, train_data=trained), now),
                     ['train_data'])
    old = dict(now, train_data=trained.split('; sources')[0])
    self.assertEqual(train_settings.differences(old, now), [])

  def test_other_test_videos_under_the_same_names_are_evaluated_again(self):
    # Records of two synthetic datasets of the same video names (seeds 0 and 7: other
    # frames): the run finished on the first is no measure of the second. Its final
    # evaluation is made again, and the better-looking export it held is replaced.
    root = self.create_tempdir().full_path
    data = [tiny_records.make(os.path.join(root, str(seed)), classes=3, groups=8, width=24,
                              height=20, min_frames=4, max_frames=6, seed=seed
                              ).records['videos'] for seed in (0, 7)]
    copy = self.copy_of_the_run()
    first, other = (dataclasses.replace(self.params, model_dir=copy, data_source='tfrecord',
                                        data_dir=d) for d in data)
    self.assertEqual(train_settings.test_video_names(first),
                     train_settings.test_video_names(other))
    measured, asked = (export_info.evaluation_settings(p) for p in (first, other))
    self.assertEqual([k for k in measured if measured[k] != asked[k]], ['test_data'])
    os.remove(os.path.join(copy, final_evaluation.FILE_NAME))
    train_and_evaluate_loop.run(first)
    train_and_evaluate_loop.run(first)
    self.assertEqual([e['step'] for e in self.recorded('already_trained')], [2])
    [info] = self.export_infos(copy)
    self.assertEqual(info['evaluation'], measured)
    [info_path] = glob.glob(os.path.join(copy, 'export', 'best', '*', 'assets.extra',
                                         'video_model.json'))
    with open(info_path, 'w') as f:
      json.dump(dict(info, top_1=1.01), f)
    train_and_evaluate_loop.run(other)
    self.assertEqual([e['step'] for e in self.recorded('already_trained')], [2])
    self.assertEqual(final_evaluation.evaluated_step(copy, asked), 2)
    [info] = self.export_infos(copy)
    self.assertEqual((info['evaluation'], info['step']), (asked, 2))
    self.assertLess(info['top_1'], 1.01)
    # A final evaluation recorded before the test videos' content was: made again, once.
    path = os.path.join(copy, final_evaluation.FILE_NAME)
    with open(path) as f:
      final = json.load(f)
    del final['evaluation']['test_data']
    with open(path, 'w') as f:
      json.dump(final, f)
    self.assertIsNone(final_evaluation.evaluated_step(copy, asked))
    train_and_evaluate_loop.run(other)
    train_and_evaluate_loop.run(other)
    self.assertEqual([e['step'] for e in self.recorded('already_trained')], [2, 2])

  def test_an_empty_export_folder_is_nothing_an_earlier_run_left(self):
    # Say a disk mounted at model_dir/export for the exports: a mount point cannot be moved.
    model_dir = self.create_tempdir().full_path
    os.makedirs(os.path.join(model_dir, 'export'))
    self.assertIsNone(earlier_run.set_aside(model_dir))
    self.assertEqual(os.listdir(model_dir), ['export'])

  def test_a_run_started_over_sets_aside_what_the_earlier_run_left(self):
    copy = self.copy_of_the_run()
    earlier = lineage.of_model_dir(copy)
    [info_path] = glob.glob(os.path.join(copy, 'export', 'best', '*', 'assets.extra',
                                         'video_model.json'))
    with open(info_path) as f:
      info = json.load(f)
    with open(info_path, 'w') as f:
      json.dump(dict(info, top_1=1.01), f)  # better than any evaluation of the new run
    for path in glob.glob(os.path.join(copy, 'model.ckpt-*')) + [
        os.path.join(copy, 'checkpoint')]:
      os.remove(path)  # the usual start over
    params = dataclasses.replace(self.params, model_dir=copy, lr_values=(0.001,))
    metrics = training.train_and_evaluate(params)
    self.assertEqual(int(metrics['global_step']), 2)
    [aside] = self.recorded('earlier_run_set_aside')
    self.assertEqual(aside['model_dir'], copy)
    self.assertContainsSubset(['export', 'eval', final_evaluation.FILE_NAME], aside['names'])
    self.assertEqual([i['top_1'] for i in self.export_infos(aside['moved_to'])], [1.01],
                     'the earlier export is kept aside')
    now = lineage.of_model_dir(copy)
    self.assertNotIn(now, (None, earlier))
    [exported] = self.export_infos(copy)
    self.assertEqual((exported['lineage'], exported['top_1']),
                     (now, metrics[TOP_1]), 'this run exported its own model')
    self.assertEqual(final_evaluation.evaluated_step(copy), 2)
    self.assertLen(glob.glob(os.path.join(copy, 'eval', 'events.out.tfevents.*')), 1,
                   'only this run\'s evaluations')

  def test_every_evaluation_goes_through_export_all_on_one_machine_and_the_evaluator(self):
    final = [c for c in self.one_machine_exports if c.args[4]]
    self.assertLen(final, 1, 'one machine: the final evaluation went through export_all')
    self.assertEqual(final_evaluation.evaluated_step(self.model_dir), 2)
    os.remove(os.path.join(self.model_dir, final_evaluation.FILE_NAME))
    recipe = training.cluster_recipe(self.params)
    task_evaluator = evaluator.Evaluator(recipe, EVALUATOR)
    newest = evaluator.listed_checkpoints(self.model_dir)[-1]
    pinned = evaluator.pin(newest, os.path.join(self.model_dir, evaluator.PIN_DIR))
    with mock.patch.object(exports, 'export_all', wraps=exports.export_all) as spy:
      metrics = task_evaluator._evaluate(newest, pinned)  # pylint: disable=protected-access
    self.assertEqual(int(metrics['global_step']), 2)
    self.assertLen([c for c in spy.call_args_list if c.args[4]], 1,
                   'the evaluator: the final evaluation went through export_all')
    self.assertEqual(final_evaluation.evaluated_step(self.model_dir), 2,
                     'the evaluator records the run as finished, as one machine does')

  def test_a_rerun_is_decided_by_already_trained_on_every_path(self):
    final_evaluation.write(self.model_dir, 2, {'accuracy/top_1': 0.5, 'global_step': 2.0})
    recipe = training.cluster_recipe(self.params)
    with mock.patch.object(final_evaluation, 'already_trained',
                           wraps=final_evaluation.already_trained) as spy:
      # One machine returns what the finished run's final evaluation recorded.
      self.assertEqual(train_and_evaluate_loop.run(self.params),
                       {'accuracy/top_1': 0.5, 'global_step': 2.0})
      self.assertEqual(evaluator.evaluate_until_final(recipe, EVALUATOR), {})
      self.assertEqual(self.chief(self.params).start(), {})
    self.assertEqual([c.args for c in spy.call_args_list],  # measured as asked, on each path
                     [(self.model_dir, 2, 2, export_info.evaluation_settings(self.params))] * 3)
    self.assertEqual([(e['step'], e['max_steps']) for e in self.recorded('already_trained')],
                     [(2, 2)] * 3)

  def test_a_checkpoint_at_max_steps_without_its_final_evaluation_finishes_no_run(self):
    os.remove(os.path.join(self.model_dir, final_evaluation.FILE_NAME))
    self.chief(self.params).start()
    self.assertEqual(self.recorded('already_trained'), [],
                     'the chief leaves the final evaluation to the evaluator')

  def test_the_time_limit_stop_is_one_for_one_machine_and_the_cluster(self):
    with mock.patch.object(time_limit, 'stop_trainer', wraps=time_limit.stop_trainer) as spy:
      with mock.patch.object(train_and_evaluate_loop, 'run', return_value={}):
        training.train_and_evaluate(small_params(self.create_tempdir().full_path))
      self.chief(self.params).start()
    self.assertEqual([c.args[0] for c in spy.call_args_list], ['train', TASK.name])
    self.assertEqual([c.args[2] for c in spy.call_args_list], [2, 2])
    stop = threading.Event()
    stop.set()
    one_machine = time_limit.stop_hook(stop, self.create_tempdir().full_path, 100)
    with tf.Graph().as_default():
      tf.compat.v1.train.create_global_step()
      tf.compat.v1.add_to_collection(tf.compat.v1.GraphKeys.SAVERS,
                                     tf.compat.v1.train.Saver())
      with tf.compat.v1.Session() as session:
        session.run(tf.compat.v1.global_variables_initializer())
        context = tf.compat.v1.train.SessionRunContext(None, session)
        with self.assertRaises(time_limit.StoppedBeforeTheEnd) as train_stopped:
          one_machine.after_run(context, None)
    chief = self.chief(dataclasses.replace(self.params, max_steps=100))
    with mock.patch.object(runners.ChiefRunner, 'where_the_checkpoint_is',
                           return_value='checkpoint at step 0 written'):
      with self.assertRaises(time_limit.StoppedBeforeTheEnd) as chief_stopped:
        chief.stopped('target')
    self.assertEqual(str(chief_stopped.exception).replace(TASK.name, 'train', 1),
                     str(train_stopped.exception), 'one message, its task named')


if __name__ == '__main__':
  tf.test.main()

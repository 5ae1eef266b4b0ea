"""Specification: the console of the training-side programs, the lines a person reads.

train, classify, evaluate_two_stream and local_cluster: one refusal line each
(`<program>: error: <message>`), the launcher's help, training's progress line and evaluation line (their numbers
are those of the run's `progress` and `evaluation` status events), the worst classes ending
training's final lines, the two-stream table with where fusion helps and hurts, and the line
a signal ends a run with. The other specs assert on exit codes, files, JSON and status events; this one is
where the wording is pinned, once. Every program runs at once, as a user starts it.
"""

from __future__ import annotations

import concurrent.futures
import os
import re
import signal
import tempfile

import numpy as np
from absl.testing import absltest

from command_line import signals
from input_fn import manifest
from model_fn.devices import resolve_tower_devices
from tests import program_runs
from towers import params as params_lib
from towers import run_summary
from serving import two_stream, two_stream_outputs

TINY_RUN = ('--model=c3d_small', '--data_source=synthetic', '--num_classes=3',
            '--clip_frames=4', '--crop_size=16', '--batch_size=8', '--num_towers=1',
            '--lr_schedule=constant', '--lr_values=0.02', '--max_steps=6',
            '--save_checkpoints_steps=6', '--log_every_steps=3', '--synthetic_eval_examples=8',
            '--export_savedmodel=false')
CLOCK = r'\d\d:\d\d:\d\d '  # the time every line of a training run starts with
# The two-stream lines' RGB stream: 3 videos of 3 classes, the second one wrong.
VIDEOS = ('v_A_g01_c01', 'v_B_g01_c01', 'v_C_g01_c01')
RGB = two_stream.StreamPredictions(
    'rgb', '/models/rgb', VIDEOS, np.array([0, 1, 2]),
    np.array([[.8, .1, .1], [.2, .3, .5], [.1, .1, .8]], np.float32), 2, 0)
TIMEOUT = 240


def lines(done: program_runs.ProgramRun) -> list[str]:
  """Every line the run printed, stdout's then stderr's."""
  return (done.stdout + done.stderr).splitlines()


class TrainingConsoleTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    root = cls.root = tempfile.mkdtemp()
    runs = {
        'train': ('towers.train_main', *TINY_RUN, f'--model_dir={os.path.join(root, "model")}'),
        'train_refused': ('towers.train_main', '--chief_lost_secs=0', '--check_flags'),
        'classify_refused': ('serving.classify_main', os.path.join(root, 'video.avi')),
        'evaluate_refused': ('serving.evaluate_two_stream_main', '--rgb_model=r', '--flow_model=f',
                             '--rgb_data=rd', '--flow_data=fd', '--eval_crops=2'),
        'cluster_refused': ('towers.cluster.local_cluster_main', '--network=host', '--ps=0',
                            '--workers=2'),
        'cluster_help': ('towers.cluster.local_cluster_main', '--helpshort'),
    }
    with concurrent.futures.ThreadPoolExecutor(len(runs)) as pool:
      started = {name: pool.submit(program_runs.run, *args, timeout=TIMEOUT, cwd=root)
                 for name, args in runs.items()}
      cls.runs = {name: future.result() for name, future in started.items()}

  def assertOneErrorLine(self, name: str, line: str) -> None:
    """Run `name` was refused (exit 2) with `line` as its only line on stderr."""
    done = self.runs[name]
    self.assertEqual(done.code, 2, done.output())
    self.assertEqual(done.stderr.splitlines(), [line], done.output())

  def test_each_program_refuses_with_one_line(self):
    self.assertOneErrorLine('train_refused',
                            'train: error: chief_lost_secs must be positive, got 0')
    self.assertOneErrorLine('classify_refused',
                            'classify: error: give --model (an export directory or a model_dir)')
    self.assertOneErrorLine('evaluate_refused',
                            'evaluate_two_stream: error: eval_crops=2 is not one of 1, 3')
    self.assertOneErrorLine('cluster_refused', 'local_cluster: error: ps must be positive, got 0')

  def test_a_signal_at_the_first_instant_is_one_line(self):
    # Started with the signals blocked (as local_cluster starts its tasks): they come before
    # the program's first instruction. Their exit codes and events: signals_test.
    model_dir = os.path.join(self.create_tempdir().full_path, 'run')
    for sig, line in ((signal.SIGINT, 'train: error: interrupted (SIGINT)'),
                      (signal.SIGUSR1, 'train: stopped before max_steps=100000 for the job\'s '
                       'time limit (checkpoint at step 1 written); training continues from it '
                       'when the job is requeued or resubmitted')):
      started = program_runs.start(self, 'towers.train_main', *TINY_RUN, '--max_steps=100000',
                                   f'--model_dir={model_dir}',
                                   preexec_fn=signals.blocked_in_child)
      started.process.send_signal(sig)
      done = started.finish(TIMEOUT)
      self.assertEqual(done.stderr.splitlines()[-1:], [line], done.output())
      self.assertNotIn('Traceback', done.stderr)

  def test_a_time_limit_signal_after_max_steps_says_it_stops_nothing(self):
    # It said "stopping after this step", and then stopped nothing (exit 0).
    started = program_runs.start(self, 'towers.train_main', *TINY_RUN,
                                 f'--model_dir={os.path.join(self.root, "model")}',
                                 preexec_fn=signals.blocked_in_child)
    started.process.send_signal(signal.SIGUSR1)
    done = started.finish(TIMEOUT)
    self.assertEqual(done.code, 0, done.output())
    said = [line for line in lines(done) if 'SIGUSR1' in line]
    self.assertLen(said, 1, done.output())
    self.assertRegex(said[0], CLOCK + re.escape(
        'warning: train: got SIGUSR1 (the job\'s time limit is near) after max_steps: '
        'training is over, nothing to stop'))

  def test_the_launcher_help_lists_its_flags_and_points_to_train_help(self):
    done = self.runs['cluster_help']
    self.assertIn('--workers', done.stdout)
    self.assertIn('//towers:train -- --help', done.stdout)

  def test_the_first_lines_summarize_the_run(self):
    done = self.runs['train']
    self.assertEqual(done.code, 0, done.output())
    logged = [l for l in lines(done) if re.match(CLOCK, l)]
    self.assertEqual([l[len('00:00:00 '):] for l in logged[:7]], [
        'run: c3d_small, stream rgb, 3 classes, clips of 4 frames of 16x16',
        'data: synthetic clips, 512 per epoch',
        'towers: 1 (/device:CPU:0), 8 clips per micro-batch',
        'micro-batches: 1 of 8 clips = 8 clips per step',
        'steps: 0 to 6, checkpoint every 6, progress and summaries every 3',
        'cluster: none (this machine)',
        f'settings: {self.root}/model/run.flags (--flagfile=it continues this run)'],
        done.output())

  def test_the_steps_line_of_a_model_dir_already_trained_past_max_steps(self):
    params = params_lib.make_params(max_steps=10)
    summary = run_summary.lines(params, resolve_tower_devices(1, ()), None, 30)
    self.assertEqual(summary[4], 'steps: none to train (the checkpoint is at step 30, '
                     '--max_steps=10): its final evaluation and export, if not made yet')

  def test_the_data_line_names_the_classes_without_a_training_video(self):
    records = tempfile.mkdtemp()
    manifest.write(records, {'subset': 'train', 'shards': [], 'classes': ['a', 'b', 'c', 'd'],
                             'counts_per_class': {'a': 3, 'b': 0, 'c': 2}})
    params = params_lib.make_params(data_source='tfrecord', data_dir=records, num_classes=4)
    summary = run_summary.lines(params, resolve_tower_devices(1, ()), None, None)
    self.assertEqual(summary[1], f'data: tfrecord from {records} (dataset ucf101 split 1); '
                     '2 of 4 classes have no training video (b, d)')

  def test_the_progress_line_says_the_step_loss_and_speed(self):
    done = self.runs['train']
    self.assertEqual(done.code, 0, done.output())
    event = [e for e in done.events if e['event'] == 'progress'][0]
    self.assertEqual(event['step'], 3)
    line = (f'step 3/6 (50%)  loss {event["loss"]:.4f}  '
            f'{event["examples_per_second"]:.1f} examples/s  '
            f'{event["steps_per_second"]:.2f} steps/s  ETA ')
    found = [l for l in lines(done) if re.fullmatch(CLOCK + re.escape(line) + r'\d+s', l)]
    self.assertLen(found, 1, done.output())

  def test_the_evaluation_line_says_the_step_and_its_metrics(self):
    done = self.runs['train']
    self.assertEqual(done.code, 0, done.output())
    event = [e for e in done.events if e['event'] == 'evaluation'][-1]
    metrics = event['metrics']
    line = (f'evaluation at step 6: top-1 {metrics["accuracy/top_1"]:.4f}  '
            f'top-5 {metrics["accuracy/top_5"]:.4f}  '
            f'mean per class {metrics["accuracy/mean_per_class"]:.4f}  '
            f'loss {metrics["loss/per_clip"]:.4f}')  # the mean over clips
    found = [l for l in lines(done) if re.fullmatch(CLOCK + re.escape(line), l)]
    self.assertLen(found, 1, done.output())

  def test_the_final_lines_name_the_worst_classes(self):
    done = self.runs['train']
    self.assertEqual(done.code, 0, done.output())
    per_class = [e for e in done.events if e['event'] == 'evaluation'][-1]['per_class']
    worst = sorted((a, str(c)) for c, a in enumerate(per_class) if a is not None)[:5]
    self.assertEqual(done.stdout.splitlines()[-1],
                     f'{len(worst)} worst classes (clip top-1): ' +
                     ', '.join(f'{name} {a:.4f}' for a, name in worst))

  def test_the_two_stream_table(self):
    # 3 videos both streams have (every fused prediction right), one only the flow data
    # lists, and one bad flow record: each count the rows rest on is said.
    flow = two_stream.StreamPredictions(
        'flow', '/models/flow', (*VIDEOS, 'v_D_g01_c01'), np.array([0, 1, 2, 0]),
        np.array([[.4, .3, .3], [.1, .8, .1], [.2, .2, .6], [1, 0, 0]], np.float32), 2, 1)
    table = two_stream.format_table(two_stream.report(RGB, flow))
    self.assertEqual(table.splitlines(), [  # 3 of the flow records' 5 videos
        'two-stream evaluation on 3 of 5 test videos (flow_weight 0.5; video = mean softmax '
        'of 2 clips x 1 crop)',
        '| stream | video top-1 | video top-5 | mean per-class |',
        '|---|---|---|---|',
        '| RGB | 0.6667 | 1.0000 | 0.6667 |',
        '| Flow | 1.0000 | 1.0000 | 1.0000 |',
        '| Fusion | 1.0000 | 1.0000 | 1.0000 |',
        'flow: 1 video(s) not in the other stream, left out of every row (e.g. v_D_g01_c01); '
        '1 bad record(s) skipped (damaged shards: run prepare again with the same flags; it '
        'rewrites a shard changed since it wrote it)'])

  def test_the_classes_where_fusion_helps_and_hurts_most(self):
    # Fusion gets Biking right where neither stream did, and Diving wrong where RGB did.
    flow = two_stream.StreamPredictions(
        'flow', '/models/flow', VIDEOS, np.array([0, 1, 2]),
        np.array([[.1, .8, .1], [.5, .45, .05], [.9, .1, 0]], np.float32), 2, 0)
    result = two_stream.report(RGB, flow, class_names=['Archery', 'Biking', 'Diving'])
    self.assertEqual(two_stream_outputs.format_fusion_changes(result).splitlines(), [
        'fusion helps most (video top-1 over the better stream): Biking +1.0000 (rgb 0.0000, '
        'flow 0.0000, fusion 1.0000)',
        'fusion hurts most: Diving -1.0000 (rgb 1.0000, flow 0.0000, fusion 0.0000)'])


if __name__ == '__main__':
  absltest.main()

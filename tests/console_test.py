"""Specification: a training run prints what a person reads (progress lines, one line per
evaluation, the final table, a refusal's one error line); `--verbose` brings back
TensorFlow's own logs. Also the one
progress-line format shared by training and data preparation."""

import importlib.util
import logging
import os
import re
import subprocess
import sys
import tempfile
from unittest import mock

from absl import logging as absl_logging
from absl.testing import absltest

from command_line import console, progress

TINY_RUN = ['--model=c3d_small', '--data_source=synthetic', '--num_classes=3',
            '--clip_frames=4', '--crop_size=16', '--batch_size=8', '--num_towers=2',
            '--lr_schedule=constant', '--lr_values=0.02', '--max_steps=10',
            '--save_checkpoints_steps=10', '--log_every_steps=3',
            '--synthetic_eval_examples=16', '--export_savedmodel=false']
# A training progress line as a person reads it (`progress.progress_line`), any prefix.
PROGRESS_LINE = re.compile(r'\bstep (\d+)/\d+ \(\d+%\)  loss ')
NATIVE_LINE = re.compile(r'^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IW] ', re.MULTILINE)
TIMEOUT = 300


def start_training(model_dir: str, *extra: str) -> subprocess.Popen:
  env = {k: v for k, v in os.environ.items()
         if k not in ('TF_CPP_MIN_LOG_LEVEL', 'TF_CONFIG')}
  return subprocess.Popen([sys.executable, '-m', 'towers.train_main', *TINY_RUN,
                           f'--model_dir={model_dir}', *extra],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


class TrainingOutputTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    root = tempfile.mkdtemp()
    # Both runs at once: one start-up time for the two.
    quiet = start_training(os.path.join(root, 'quiet'))
    verbose = start_training(os.path.join(root, 'verbose'), '--verbose')
    cls.quiet_output = quiet.communicate(timeout=TIMEOUT)[0]
    cls.verbose_output = verbose.communicate(timeout=TIMEOUT)[0]
    cls.codes = (quiet.returncode, verbose.returncode)

  def test_both_runs_succeed(self):
    self.assertEqual(self.codes, (0, 0), self.quiet_output[-3000:] + self.verbose_output[-3000:])

  def test_default_output_is_progress_evaluations_and_the_final_table(self):
    lines = self.quiet_output.splitlines()
    self.assertNotEmpty([line for line in lines if PROGRESS_LINE.search(line)], lines)
    self.assertLen([line for line in lines if 'evaluation at step 10:' in line], 1, lines)
    self.assertTrue(any(re.fullmatch(r'final metrics at step 10 \(accuracy/video: \d+ clips? x '
                                     r'1 crop per video\):', line) for line in lines), lines)
    # Where training starts from (programs read the `session_ready` status event instead).
    self.assertTrue(any(re.search(re.escape(progress.SESSION_READY) + r' 0 to 10\b', line)
                        for line in lines), lines)
    self.assertTrue(any(re.search(r'accuracy/top_1 +[01]\.\d{4}$', line) for line in lines))
    # 10 steps every 3, 1 evaluation, 2 start lines, a 6-row table and the worst classes:
    # nothing else.
    self.assertLess(len(lines), 20, self.quiet_output)

  def test_default_output_hides_tensorflow_chatter(self):
    self.assertIsNone(NATIVE_LINE.search(self.quiet_output), self.quiet_output)
    for noise in ('deprecated', 'Instructions for updating', 'loss = ', 'INFO:tensorflow',
                  'global_step/sec', 'Saving checkpoints'):
      self.assertNotIn(noise, self.quiet_output)

  def test_verbose_brings_everything_back(self):
    self.assertIsNotNone(NATIVE_LINE.search(self.verbose_output))
    for noise in ('Instructions for updating', 'loss = ', 'Saving checkpoints'):
      self.assertIn(noise, self.verbose_output)
    self.assertTrue(any(PROGRESS_LINE.search(line)
                        for line in self.verbose_output.splitlines()))
    self.assertGreater(len(self.verbose_output.splitlines()),
                       3 * len(self.quiet_output.splitlines()))


# Every program a user starts (its py_binary's main module).
BINARIES = ('towers.train_main', 'serving.evaluate_two_stream_main', 'serving.classify_main',
            'towers.cluster.local_cluster_main',
            'data_tools.prepare_main', 'data_tools.make_synthetic_ucf101_main',
            'data_tools.extract_flow_main',
            'benchmarks.towers_benchmark_main', 'benchmarks.input_benchmark_main',
            'benchmarks.time_to_accuracy_main', 'benchmarks.scaling_model_main',
            'benchmarks.cluster_traffic_main', 'benchmarks.i3d_memory_main',
            'benchmarks.cluster_emulator_main', 'benchmarks.cluster_peers_main')


def run_quietly_unless_asked(*args: str) -> subprocess.Popen:
  env = {k: v for k, v in os.environ.items() if k != console.NATIVE_LOG_LEVEL}
  return subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, env=env)


class PreflightRefusalTest(absltest.TestCase):
  """The one error line of a refusal before training, as a person reads it: 'cannot start:'
  and one '- ' line per problem, saying what to fix (other specs read the `error` event)."""

  def test_a_missing_data_dir_is_one_line_saying_what_it_must_hold(self):
    scratch = tempfile.mkdtemp()
    missing = os.path.join(scratch, 'records')
    done = subprocess.run(
        [sys.executable, '-m', 'towers.train_main', '--model=c3d_small', '--num_classes=3',
         '--data_source=tfrecord', f'--data_dir={missing}', '--max_steps=1',
         f'--model_dir={os.path.join(scratch, "run")}'],
        capture_output=True, text=True, timeout=TIMEOUT, check=False)
    self.assertEqual(done.returncode, 2, done.stderr[-3000:])
    self.assertEqual(
        done.stderr.splitlines()[-2:],
        ['train: error: cannot start:',
         f'- data_source=tfrecord reads from --data_dir, but data_dir={missing} is not a '
         'directory: it must hold the TFRecord shards made once with `bazel run '
         '//data_tools:prepare -- --source=videos --data_dir=<dataset root> '
         '--out=<this data_dir>`'])


class EveryBinaryStartsQuietlyTest(absltest.TestCase):
  """TensorFlow prints C++ INFO lines when it loads (cpu_feature_guard, oneDNN); a binary
  whose imports load TensorFlow before it set the log level shows them on every start."""

  def test_no_tensorflow_line_while_a_binary_starts(self):
    started = {module: run_quietly_unless_asked('-m', module, '--helpshort')
               for module in BINARIES}
    for module, process in started.items():
      output = process.communicate(timeout=TIMEOUT)[0]
      self.assertIn('--helpfull', output, module)  # absl's usage: the binary started
      self.assertIsNone(NATIVE_LINE.search(output), f'{module}:\n{output}')

  def test_cli_run_hides_them_for_tensorflow_loaded_by_main(self):
    program = ('from command_line import cli\n'
               'def main(argv):\n'
               '  import tensorflow\n'
               'cli.run(main)\n')
    quiet = run_quietly_unless_asked('-c', program)
    verbose = run_quietly_unless_asked('-c', program, '--v=0')  # absl's INFO: everything
    quiet_output, verbose_output = quiet.communicate(timeout=TIMEOUT)[0], verbose.communicate(
        timeout=TIMEOUT)[0]
    self.assertEqual((quiet.returncode, verbose.returncode), (0, 0), quiet_output + verbose_output)
    self.assertIsNone(NATIVE_LINE.search(quiet_output), quiet_output)
    self.assertIsNotNone(NATIVE_LINE.search(verbose_output), verbose_output)


class MeasuringProgramsRefuseBadFlagsTest(absltest.TestCase):
  """A benchmark given an impossible flag stops before it starts a cluster, with one line
  naming the flag and exit code 2 (a traceback or an empty table was printed before)."""

  def check_refused(self, module: str, flag: str, named: str) -> None:
    process = subprocess.run([sys.executable, '-m', module, flag], capture_output=True,
                             text=True, timeout=TIMEOUT, check=False)
    self.assertEqual(process.returncode, 2, process.stdout + process.stderr)
    lines = process.stderr.strip().splitlines()
    self.assertLen(lines, 1, process.stderr)
    self.assertStartsWith(lines[0], f'{module.rsplit(".", 1)[-1].removesuffix("_main")}: error: ')
    self.assertIn(named, lines[0])

  def test_cluster_peers(self):
    self.check_refused('benchmarks.cluster_peers_main', '--repeats=0',
                       'repeats must be positive, got 0')
    self.check_refused('benchmarks.cluster_peers_main', '--window_secs=-1',
                       'window_secs must be > 0, got -1.0')
    self.check_refused('benchmarks.cluster_peers_main', '--systems=horovod', 'horovod')

  def test_cluster_emulator(self):
    self.check_refused('benchmarks.cluster_emulator_main', '--steps=1',
                       'steps must be >= 2, got 1')


class TrainRefusalLineTest(absltest.TestCase):
  """A training parameter that cannot work ends //towers:train with one line: the program,
  `error:`, the parameter, what it must be and the value given (no traceback, exit 2)."""

  def test_the_refusal_line(self):
    refused = subprocess.run([sys.executable, '-m', 'towers.train_main', '--batch_size=-3'],
                             capture_output=True, text=True, timeout=TIMEOUT, check=False)
    self.assertEqual((refused.returncode, refused.stderr),
                     (2, 'train: error: batch_size must be positive, got -3\n'))
    mirrored = subprocess.run([sys.executable, '-m', 'towers.train_main', '--strategy=mirrored',
                               '--ema_decay=0.99', '--bn_update=mean'],
                              capture_output=True, text=True, timeout=TIMEOUT, check=False)
    self.assertEqual((mirrored.returncode, mirrored.stderr),
                     (2, 'train: error: strategy=mirrored does not apply ema_decay, '
                         'bn_update=mean: leave them unset or use strategy=towers\n'))


class VerboseRequestTest(absltest.TestCase):

  def test_flag_forms(self):
    self.assertFalse(console.verbose_requested(['train']))
    self.assertTrue(console.verbose_requested(['train', '--verbose']))
    self.assertFalse(console.verbose_requested(['train', '--verbose', '--noverbose']))
    self.assertFalse(console.verbose_requested(['train', '--verbose=false']))
    self.assertTrue(console.verbose_requested(['train', '--v=1']))
    self.assertTrue(console.verbose_requested(['train', '-v', '0']))
    self.assertFalse(console.verbose_requested(['train', '--verbosity=-1']))

  def test_a_flagfile_counts(self):
    flagfile = self.create_tempfile(content='--max_steps=3\n--verbose\n').full_path
    self.assertTrue(console.verbose_requested(['train', f'--flagfile={flagfile}']))

  def test_native_level_is_set_unless_the_user_set_it_or_asked_for_verbose(self):
    with mock.patch.dict(os.environ, clear=False):
      os.environ.pop(console.NATIVE_LOG_LEVEL, None)
      console.quiet_native_logs(['train'])
      self.assertEqual(os.environ[console.NATIVE_LOG_LEVEL], '2')
    with mock.patch.dict(os.environ, {console.NATIVE_LOG_LEVEL: '0'}):
      console.quiet_native_logs(['train'])
      self.assertEqual(os.environ[console.NATIVE_LOG_LEVEL], '0')
    with mock.patch.dict(os.environ, clear=False):
      os.environ.pop(console.NATIVE_LOG_LEVEL, None)
      console.quiet_native_logs(['train', '--verbose'])
      self.assertNotIn(console.NATIVE_LOG_LEVEL, os.environ)


class TensorFlowWarningsTest(absltest.TestCase):

  def test_warnings_pass_except_deprecations_and_the_sync_step_counter_notice(self):
    seen = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())
    tf_logger = logging.getLogger('tensorflow')
    try:
      console.configure(verbose=False)  # drops the logger's handlers: add ours after it
      tf_logger.addHandler(handler)
      tf_logger.warning('It seems that global step (tf.train.get_global_step) has not been '
                        'increased. Current value (could be stable): %s vs previous value: %s.',
                        3, 3)
      tf_logger.warning('From x.py: foo is deprecated and will be removed in a future version.')
      tf_logger.warning('No new checkpoint ready for evaluation.')
      tf_logger.info('loss = 0.5, step = 3')
      console.configure(verbose=True)
      tf_logger.warning('It seems that global step (tf.train.get_global_step) has not been '
                        'increased. Current value (could be stable): %s vs previous value: %s.',
                        4, 4)
    finally:
      tf_logger.removeHandler(handler)
    self.assertEqual(seen, ['No new checkpoint ready for evaluation.',
                            'It seems that global step (tf.train.get_global_step) has not been '
                            'increased. Current value (could be stable): 4 vs previous value: 4.'])


class TensorFlowAbslInfoTest(absltest.TestCase):

  def test_tensorflow_modules_info_through_absl_is_hidden_unless_verbose(self):
    seen = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())
    absl_logger = absl_logging.get_absl_logger()
    package = importlib.util.find_spec('tensorflow').submodule_search_locations[0]
    saved_model = os.path.join(package, 'python', 'saved_model', 'load.py')

    def log(message, level=logging.INFO, path=saved_model):
      absl_logger.handle(absl_logger.makeRecord('absl', level, path, 1, message, (), None))

    absl_logger.addHandler(handler)
    try:
      console.configure(verbose=False)
      log('Fingerprint not found. Saved model loading will continue.')
      log('a warning from TensorFlow', logging.WARNING)
      log('training from step 0 to 10', path=os.path.join('towers', 'training.py'))
      log('a checkout in a folder named tensorflow',
          path=os.path.join(os.sep, 'home', 'tensorflow', 'towers', 'training.py'))
      console.configure(verbose=True)
      log('Fingerprint not found, verbose')
    finally:
      absl_logger.removeHandler(handler)
      console.configure(verbose=False)
    self.assertEqual(seen, ['a warning from TensorFlow', 'training from step 0 to 10',
                            'a checkout in a folder named tensorflow',
                            'Fingerprint not found, verbose'])


class ProgressLineTest(absltest.TestCase):

  def test_training_line_reads_back(self):
    line = progress.progress_line('step', 300, 1200, 9.39,
                                  ['loss 1.2345', '150.2 examples/s', '9.39 steps/s'])
    self.assertEqual(line, 'step 300/1200 (25%)  loss 1.2345  150.2 examples/s  '
                           '9.39 steps/s  ETA 1m36s')
    self.assertEqual(PROGRESS_LINE.search('12:00:00 ' + line).group(1), '300')

  def test_preparation_line_and_unknown_eta(self):
    self.assertEqual(progress.progress_line('prepare: train:', 1, 150, 0.0, unit='videos'),
                     'prepare: train: 1/150 videos (1%)  ETA ?')

  def test_durations(self):
    self.assertEqual([progress.format_duration(s) for s in (-3, 6.4, 245, 3723)],
                     ['0s', '6s', '4m05s', '1h02m03s'])


if __name__ == '__main__':
  absltest.main()

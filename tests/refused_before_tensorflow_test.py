"""Specification: //serving:classify, //serving:evaluate_two_stream and
//benchmarks:cluster_peers refuse flags that cannot work before TensorFlow loads, as
//towers:train does: an unknown flag, a value outside its option's domain, a missing or
unwritable path and (classify) no video each end with exit 2 and the `error` event naming
the option, in a process that never imported `tensorflow`. Flags that pass their checks do
load it (the model is read): the probe sees an import."""

import json
import os
import subprocess
import sys
import tempfile

from absl.testing import absltest

from command_line import status_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Runs the program `sys.argv[2]` as `python -m` does with the arguments after it; when it exits
# writes to `sys.argv[1]` whether any `tensorflow` module had been imported.
PROBE = '''
import atexit, json, runpy, sys
out, module = sys.argv[1], sys.argv[2]
def record():
  with open(out, 'w') as f:
    json.dump({'tensorflow': any(m.split('.')[0] == 'tensorflow' for m in sys.modules)}, f)
atexit.register(record)
sys.argv = [module] + sys.argv[3:]
runpy.run_module(module, run_name='__main__', alter_sys=True)
'''


class RefusedBeforeTensorFlowTest(absltest.TestCase):

  def run_probed(self, module: str, *args: str) -> tuple[int, dict, bool]:
    """Runs `python -m module args` under the probe: (exit code, the `error` event or {},
    whether TensorFlow was imported)."""
    scratch = self.create_tempdir().full_path
    events, probe = os.path.join(scratch, 'events.jsonl'), os.path.join(scratch, 'probe.json')
    env = dict(os.environ, PYTHONPATH=ROOT, **{status_file.STATUS_FILE_ENV: events})
    env.pop('TF_CONFIG', None)
    done = subprocess.run([sys.executable, '-c', PROBE, probe, module, *args],
                          capture_output=True, text=True, timeout=300, check=False, env=env,
                          cwd=scratch)
    errors = [e for e in status_file.read(events) if e['event'] == 'error']
    with open(probe) as f:
      loaded = json.load(f)['tensorflow']
    return done.returncode, errors[-1] if errors else {}, loaded

  def assert_refused_without_tensorflow(self, module: str, args: list[str], error: str,
                                        options: list[str]) -> None:
    """Exit 2, the `error` event of type `error` naming `options`, and no TensorFlow
    imported."""
    code, event, loaded = self.run_probed(module, *args)
    self.assertEqual(code, 2, (module, args))
    self.assertEqual((event.get('error'), event.get('options')), (error, options), args)
    self.assertFalse(loaded, f'{module} {args} imported tensorflow before refusing')

  def test_classify_refuses_wrong_flags_before_tensorflow_loads(self):
    video = os.path.join(tempfile.gettempdir(), 'no_such_video.avi')
    model = self.create_tempdir().full_path
    not_a_folder = self.create_tempfile().full_path
    for args, error, options in (
        (['--model=m', '--outputt=x.json', video], 'UnrecognizedFlagError', ['outputt']),
        ([f'--model={model}', '--output=x.txt', video], 'Refused', ['output']),
        ([f'--model={model}', f'--output={not_a_folder}/x.csv', video], 'Refused', ['output']),
        ([f'--model={model}', '--crops=2', video], 'OptionsError', ['crops']),
        ([f'--model={model}', '--flow_weight=1.5', video], 'OptionsError', ['flow_weight']),
        ([f'--model={model}', '--dataset=kinetics', video], 'IllegalFlagValueError', []),
        ([video], 'Refused', ['model']),
        ([f'--model={model}'], 'Refused', [])):  # no video
      with self.subTest(args):
        self.assert_refused_without_tensorflow('serving.classify_main', args, error, options)

  def test_evaluate_two_stream_refuses_wrong_flags_before_tensorflow_loads(self):
    missing = os.path.join(self.create_tempdir().full_path, 'missing')
    paths = [f'--{name}={missing}' for name in ('rgb_model', 'flow_model', 'rgb_data',
                                                 'flow_data')]
    for args, error, options in (
        ([*paths, '--flow_wieght=0.5'], 'UnrecognizedFlagError', ['flow_wieght']),
        ([*paths, '--flow_weight=nan'], 'OptionsError', ['flow_weight']),
        ([*paths, '--flow_weight=-0.5'], 'OptionsError', ['flow_weight']),
        ([*paths, '--eval_crops=2'], 'OptionsError', ['eval_crops']),
        (paths[1:], 'Refused', ['rgb_model']),
        ([*paths, f'--json_out={self.create_tempdir().full_path}'], 'Refused', ['json_out']),
        ([*paths, f'--json_out={self.create_tempdir().full_path}/e.csv'], 'Refused',
         ['json_out']),
        ([*paths, '--splits=1,2'], 'Refused', ['rgb_model'])):
      with self.subTest(args):
        self.assert_refused_without_tensorflow('serving.evaluate_two_stream_main', args, error,
                                               options)

  def test_cluster_peers_refuses_wrong_flags_before_tensorflow_loads(self):
    for args, error, options in ((['--repeats=0'], 'OptionsError', ['repeats']),
                                 (['--window_secs=-1'], 'OptionsError', ['window_secs']),
                                 (['--systems=horovod'], 'OptionsError', ['systems']),
                                 (['--systems='], 'OptionsError', ['systems'])):
      with self.subTest(args):
        self.assert_refused_without_tensorflow('benchmarks.cluster_peers_main', args, error,
                                               options)

  def test_flags_that_pass_their_checks_load_tensorflow(self):
    # The probe sees an import: a model that is not there is found out by reading it.
    model = self.create_tempdir().full_path
    code, event, loaded = self.run_probed('serving.classify_main', f'--model={model}',
                                          'video.avi')
    self.assertEqual((code, event.get('error'), event.get('options')),
                     (2, 'ClassifyError', ['model']))
    self.assertTrue(loaded)


if __name__ == '__main__':
  absltest.main()

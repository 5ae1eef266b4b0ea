"""Specification: the TFJob of docs/cluster/tfjob.yaml, one replica per type (Chief, Worker,
PS, Evaluator), runs to the end as Kubernetes would run it: each pod in its own network
namespace with its pod name as hostname and the operator's service DNS names
(`<job>-<type>-<i>.default.svc`, addresses in 198.18.1.0/24 inside the namespaces only),
each running its manifest command (tiny synthetic settings appended) with the TF_CONFIG the
training operator builds for it (tests/kubeflow_operator.py). Every pod exits 0, the final
checkpoint is at max_steps and the evaluator exports the best model."""

import glob
import json
import os
import subprocess
import sys
import time

import tensorflow as tf
import yaml

from tests import kubeflow_operator as operator
from tools import namespaces
from tests.cluster_testing import TRAIN_ARGS
from towers.checkpoints import checkpoint_step

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MANIFEST = os.path.join(ROOT, 'docs', 'cluster', 'tfjob.yaml')
MAX_STEPS = 60
# The manifest's commands run the I3D recipe; these make it a tiny synthetic job (c3d_small
# has no checkpoint to warm-start from: kubeflow_tfjob_test checks that the manifest's
# evaluator, with I3D, needs none). The evaluator keeps the manifest's --num_towers=1.
TINY = [a for a in TRAIN_ARGS if not a.startswith('--num_towers')] + [
    f'--max_steps={MAX_STEPS}', '--warm_start_from=']
TRAINERS_TINY = ['--num_towers=2']


def pod_argv(pod: operator.Pod, shared: str) -> list[str]:
  """The pod's command with the image's python, /shared on `shared`, then the tiny settings."""
  command = [a.replace('/shared', shared) for a in pod.command]
  assert command[:3] == ['.venv/bin/python3', '-m', 'towers.train_main'], command
  extra = TINY + (TRAINERS_TINY if pod.rtype != 'Evaluator' else [])
  return [sys.executable, '-m', 'towers.train_main', *command[3:], *extra]


class KubeflowPodsTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    reason = namespaces.missing_reason()
    if reason:
      self.skipTest(reason)
    with open(MANIFEST) as f:
      job = yaml.safe_load(f)
    for spec in job['spec']['tfReplicaSpecs'].values():
      spec['replicas'] = 1
    self.pods = operator.pods(job, namespace='default')
    self.root = self.create_tempdir().full_path
    # Each pod on its own host, reached by its service DNS name as a headless service gives.
    self.network = namespaces.Hosts(
        [p.name for p in self.pods], '198.18.1', hub='hub', hosts_dir=self.root,
        aliases={p.name: [f'{p.name}.default.svc'] for p in self.pods})
    self.network.start()
    self.addCleanup(self.network.stop)

  def log_tail(self, pod: str) -> str:
    with open(os.path.join(self.root, f'{pod}.log')) as f:
      return f.read()[-1500:]

  def test_one_pod_per_replica_type_trains_to_the_end_and_exports(self):
    shared = os.path.join(self.root, 'shared')
    os.makedirs(shared)
    self.assertEqual(sorted(p.rtype for p in self.pods), ['Chief', 'Evaluator', 'PS', 'Worker'])
    running = {}
    for pod in self.pods:
      config = json.loads(pod.env['TF_CONFIG'])
      self.assertIn('evaluator', config['cluster'])  # as the operator writes it
      env = dict(os.environ, **pod.env)
      env.pop('TF_CPP_MIN_LOG_LEVEL', None)
      log = open(os.path.join(self.root, f'{pod.name}.log'), 'w')  # pylint: disable=consider-using-with
      self.addCleanup(log.close)
      running[pod.name] = subprocess.Popen(
          [*self.network.enter(pod.name, working_dir=ROOT), *pod_argv(pod, shared)], cwd=ROOT, env=env,
          stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 600
    codes = {}
    for name, process in running.items():
      try:
        codes[name] = process.wait(timeout=max(1.0, deadline - time.time()))
      except subprocess.TimeoutExpired:
        codes[name] = 'still running after 600 s'
    failed = {n: c for n, c in codes.items() if c != 0}
    tails = ''.join(f'\n--- {n} exited {c}:\n' + self.log_tail(n) for n, c in failed.items())
    self.assertEqual(failed, {}, tails)
    model_dir = os.path.join(shared, 'runs', 'i3d_ucf101')
    self.assertGreaterEqual(checkpoint_step(model_dir), MAX_STEPS)
    exports = glob.glob(os.path.join(model_dir, 'export', 'best', '*', 'saved_model.pb'))
    self.assertLen(exports, 1)


if __name__ == '__main__':
  tf.test.main()

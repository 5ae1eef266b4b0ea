"""Specification: every pod of docs/cluster/tfjob.yaml, given the TF_CONFIG that Kubeflow's
training operator builds for it (tests/kubeflow_operator.py, ported from the operator's
source: kubeflow/training-operator v1.9.0, commit 6f74c7f6b2ed6c27aabd82d0a316b23f0646059c,
pkg/controller.v1/tensorflow/tensorflow.go genTFConfigJSONStr and tfjob_controller.go
SetClusterSpec), runs its command as the role the operator meant; the evaluator needs no
warm-start checkpoint; no pod is deleted before it has finished its job; and the manifest
is a valid TFJob for the operator's CRD schema (tests/testdata/kubeflow_tfjob_crd.json, from
the same commit) and admission webhook."""

import json
import os
import re
from typing import Iterator

import jsonschema
import tensorflow as tf
import yaml
from absl import flags

from tests import kubeflow_operator as operator
from towers import flags as towers_flags
from towers import preflight
from towers.cluster import spec as cluster
from towers.cluster.spec import ClusterError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MANIFEST = os.path.join(ROOT, 'docs', 'cluster', 'tfjob.yaml')
CRD = os.path.join(ROOT, 'tests', 'testdata', 'kubeflow_tfjob_crd.json')
DOCKERFILE = os.path.join(ROOT, 'docs', 'cluster', 'Dockerfile')
# The cluster the manifest is for: 10 nodes (i7-7700: 8 CPUs; 16 GB, of which a kubelet
# leaves about 15 GiB allocatable; one GTX1060).
NODES = 10
ALLOCATABLE = {'nvidia.com/gpu': 1, 'memory': 15 * 2**30, 'cpu': 8}
_UNITS = {'Ki': 2**10, 'Mi': 2**20, 'Gi': 2**30, 'Ti': 2**40, 'k': 1e3, 'M': 1e6, 'G': 1e9,
          'm': 1e-3}


def quantity(value) -> float:
  """A Kubernetes quantity ('14Gi', '500m', '2', 1) as a number."""
  match = re.fullmatch(r'([0-9.]+)([A-Za-z]*)', str(value))
  return float(match.group(1)) * _UNITS.get(match.group(2), 1) if match.group(2) else \
      float(match.group(1))


def requests_of(replica: dict) -> dict[str, float]:
  """What the scheduler reserves for one pod of `replica`: its containers' requests, each
  resource defaulting to its limit when only the limit is given (Kubernetes'
  SetDefaults_Pod)."""
  total: dict[str, float] = {}
  for container in replica['template']['spec']['containers']:
    resources = container.get('resources', {})
    wanted = dict(resources.get('limits', {}), **resources.get('requests', {}))
    for name, value in wanted.items():
      total[name] = total.get(name, 0.0) + quantity(value)
  return total


def load_manifest() -> dict:
  with open(MANIFEST) as f:
    return yaml.safe_load(f)


def _strict_properties(validator, properties, instance, schema):
  """`properties`, plus kubectl apply's strict field validation (its default since
  Kubernetes 1.27): a field the schema does not name is an error unless
  `additionalProperties` or `x-kubernetes-preserve-unknown-fields` allows it."""
  yield from jsonschema.Draft4Validator.VALIDATORS['properties'](
      validator, properties, instance, schema)
  if (validator.is_type(instance, 'object') and 'additionalProperties' not in schema
      and not schema.get('x-kubernetes-preserve-unknown-fields')):
    for name in sorted(set(instance) - set(properties)):
      yield jsonschema.ValidationError(f'unknown field {name!r}', path=[name])


def _list_type(validator, list_type, instance, schema):
  """`x-kubernetes-list-type`: a `map` list holds one item per `x-kubernetes-list-map-keys`
  value, a `set` no item twice; `atomic` asks nothing."""
  if not validator.is_type(instance, 'array') or list_type == 'atomic':
    return
  keys = schema.get('x-kubernetes-list-map-keys', ())
  seen = []
  for i, item in enumerate(instance):
    key = [item.get(k) for k in keys] if list_type == 'map' else item
    if key in seen:
      yield jsonschema.ValidationError(f'duplicate entry {key!r} in a {list_type} list',
                                       path=[i])
    seen.append(key)


# The API server's checks of a new object against a CRD's structural schema (OpenAPI v3, as
# JSON Schema draft 4): the Kubernetes keywords above, and `format` int32/int64 as ranges.
# `x-kubernetes-int-or-string` comes with its own `anyOf`; `x-kubernetes-validations` rules
# comparing with `oldSelf` apply to updates only.
CrdValidator = jsonschema.validators.extend(jsonschema.Draft4Validator, {
    'properties': _strict_properties, 'x-kubernetes-list-type': _list_type})
FORMATS = jsonschema.FormatChecker(())
FORMATS.checks('int32')(lambda n: not isinstance(n, int) or -2**31 <= n < 2**31)
FORMATS.checks('int64')(lambda n: not isinstance(n, int) or -2**63 <= n < 2**63)
KNOWN_KEYWORDS = {  # every keyword of the kept schema; a newer one must be looked at first
    'type', 'properties', 'required', 'items', 'additionalProperties', 'anyOf', 'pattern',
    'format', 'default', 'x-kubernetes-int-or-string', 'x-kubernetes-list-type',
    'x-kubernetes-list-map-keys', 'x-kubernetes-map-type', 'x-kubernetes-validations',
    'x-kubernetes-preserve-unknown-fields'}


def schema_errors(job: dict, schema: dict) -> list[str]:
  """Every violation of the CRD `schema` by `job`, as '<JSON path>: <what>'."""
  return [f'{e.json_path}: {e.message}'
          for e in CrdValidator(schema, format_checker=FORMATS).iter_errors(job)]


def subschemas(schema: dict) -> Iterator[dict]:
  """`schema` and every schema inside it (under properties, additionalProperties, items,
  anyOf)."""
  yield schema
  inner = list(schema.get('properties', {}).values()) + list(schema.get('anyOf', ()))
  inner += [schema[k] for k in ('additionalProperties', 'items')
            if isinstance(schema.get(k), dict)]
  for child in inner:
    yield from subschemas(child)


def params_of(pod: operator.Pod):
  """The TrainParams of the pod's command, run in the image's workingDir (this checkout)."""
  argv = list(pod.command)
  if argv[:3] != ['.venv/bin/python3', '-m', 'towers.train_main']:
    raise AssertionError(f'{pod.name} does not run towers.train_main: {argv}')
  flag_values = flags.FlagValues()
  towers_flags.define_flags(flag_values)
  args = [a.replace('--flagfile=', f'--flagfile={ROOT}/') for a in argv[3:]]
  flag_values(['train', *args])
  return towers_flags.params_from_flags(flag_values, ROOT)


class OperatorTfConfigTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.job = load_manifest()
    self.pods = operator.pods(self.job, namespace='default')

  def test_the_port_writes_what_the_operator_writes(self):
    # The TFConfig struct of tensorflow.go as Go's json.Marshal writes it: fields in
    # declaration order, the cluster map's keys sorted, no spaces; the evaluator is listed.
    chief = next(p for p in self.pods if p.rtype == 'Chief')
    config = json.loads(chief.env['TF_CONFIG'])
    self.assertEqual(chief.env['TF_CONFIG'][:60],
                     '{"cluster":{"chief":["i3d-ucf101-chief-0.default.svc:2222"],')
    self.assertEqual(list(config), ['cluster', 'task', 'environment'])
    self.assertEqual(list(config['cluster']), ['chief', 'evaluator', 'ps', 'worker'])
    self.assertEqual(config['cluster']['evaluator'], ['i3d-ucf101-evaluator-0.default.svc:2222'])
    self.assertEqual(config['task'], {'type': 'chief', 'index': 0})
    self.assertEqual(config['environment'], 'cloud')

  def test_every_pod_gets_the_role_the_operator_meant(self):
    counts = {}
    for pod in self.pods:
      counts[pod.rtype] = counts.get(pod.rtype, 0) + 1
      params = params_of(pod)
      task = cluster.resolve_cluster(params, environ=pod.env)
      self.assertEqual(task.source, 'TF_CONFIG', pod.name)
      self.assertEqual((task.task_type, task.task_index), (pod.rtype.lower(), pod.index))
      self.assertEqual(dict(task.cluster), {
          'chief': ('i3d-ucf101-chief-0.default.svc:2222',),
          'worker': tuple(f'i3d-ucf101-worker-{i}.default.svc:2222' for i in range(9)),
          'ps': ('i3d-ucf101-ps-0.default.svc:2222', 'i3d-ucf101-ps-1.default.svc:2222')},
                       pod.name)
      self.assertEqual(task.address, None if pod.rtype == 'Evaluator'
                       else f'{pod.name}.default.svc:2222')
      # TensorFlow's own RunConfig reads the operator's string as it is.
      os.environ['TF_CONFIG'] = pod.env['TF_CONFIG']
      try:
        config = tf.estimator.RunConfig()
      finally:
        del os.environ['TF_CONFIG']
      self.assertEqual(config.task_type, pod.rtype.lower())
    self.assertEqual(counts, {'Chief': 1, 'Worker': 9, 'PS': 2, 'Evaluator': 1})

  def test_a_custom_cluster_domain_is_read_too(self):
    pods = operator.pods(self.job, namespace='ml', cluster_domain='cluster.local')
    task = cluster.from_tf_config(pods[0].env['TF_CONFIG'])
    self.assertEqual(task.cluster['chief'], ('i3d-ucf101-chief-0.ml.svc.cluster.local:2222',))

  def test_the_evaluator_needs_no_warm_start_checkpoint(self):
    by_type = {p.rtype: p for p in self.pods}
    warm_start_problems = lambda found: [f for f in found if 'kinetics-i3d' in f]  # noqa: E731
    evaluator = params_of(by_type['Evaluator'])
    # It inherits ucf101.flags' relative path, which does not exist in the image ...
    self.assertFalse(os.path.exists(evaluator.warm_start_from + '.index'))
    self.assertEqual(warm_start_problems(preflight.problems(evaluator, 10, trains=False)), [])
    # ... and a trainer's missing checkpoint is still named before training.
    chief = params_of(by_type['Chief'])
    self.assertNotEmpty(warm_start_problems(preflight.problems(chief, 10)))
    self.assertNotIn('--warm_start_from', ' '.join(by_type['Evaluator'].command))

  def test_no_pod_is_deleted_before_it_has_finished(self):
    # The job succeeds as soon as the chief has: the evaluator still runs its last
    # evaluation and export, and a slow worker or ps may still be ending.
    self.assertTrue(operator.job_succeeded(self.job, {'Chief': 1}))
    phases = {p.name: 'Succeeded' if p.rtype == 'Chief' else 'Running' for p in self.pods}
    self.assertEqual(operator.pods_deleted(self.job, True, phases), [])
    running_policy = json.loads(json.dumps(self.job))
    running_policy['spec']['runPolicy']['cleanPodPolicy'] = 'Running'
    self.assertIn('i3d-ucf101-evaluator-0', operator.pods_deleted(running_policy, True, phases))

  def test_two_evaluators_are_refused_naming_the_field(self):
    job = json.loads(json.dumps(self.job))
    job['spec']['tfReplicaSpecs']['Evaluator']['replicas'] = 2
    config = operator.pods(job)[0].env['TF_CONFIG']
    with self.assertRaises(ClusterError) as caught:
      cluster.from_tf_config(config)
    self.assertEqual((caught.exception.field, caught.exception.value),
                     ('TF_CONFIG.cluster.evaluator', 2))


class ManifestSchemaTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.job = load_manifest()
    with open(CRD) as f:
      self.crd = json.load(f)

  def test_the_schema_is_the_operators(self):
    self.assertEqual((self.crd['commit'], self.crd['path']),
                     ('6f74c7f6b2ed6c27aabd82d0a316b23f0646059c',
                      'manifests/base/crds/kubeflow.org_tfjobs.yaml'))
    self.assertEqual(f'{self.crd["group"]}/{self.crd["version"]}', self.job['apiVersion'])
    self.assertEqual(self.crd['kind'], self.job['kind'])
    schemas = list(subschemas(self.crd['openAPIV3Schema']))
    self.assertLessEqual(set().union(*schemas), KNOWN_KEYWORDS)
    rules = [r['rule'] for s in schemas for r in s.get('x-kubernetes-validations', ())]
    self.assertEqual(rules, ['self == oldSelf'])  # an update's check: none for a new job

  def test_the_manifest_is_a_valid_tfjob(self):
    self.assertEqual(schema_errors(self.job, self.crd['openAPIV3Schema']), [])
    self.assertEqual(operator.webhook_errors(self.job), [])
    self.assertIn(self.job['spec']['runPolicy']['cleanPodPolicy'], operator.CLEAN_POD_POLICIES)

  def test_the_checks_catch_what_the_operator_refuses(self):
    schema = self.crd['openAPIV3Schema']
    job = json.loads(json.dumps(self.job))
    chief = job['spec']['tfReplicaSpecs']['Chief']
    chief['replica'] = chief.pop('replicas')           # a misspelt field
    container = chief['template']['spec']['containers'][0]
    container['ports'][0]['containerPort'] = '2222'    # a string where an int32 goes
    container['resources']['limits']['memory'] = '14 GB'  # not a quantity
    container['name'] = 'trainer'                        # the operator needs "tensorflow"
    found = schema_errors(job, schema)
    container_path = '$.spec.tfReplicaSpecs.Chief.template.spec.containers[0]'
    self.assertEqual(sorted(e.split(': ', 1)[0] for e in found),  # the fields at fault
                     ['$.spec.tfReplicaSpecs.Chief.replica',
                      f'{container_path}.ports[0].containerPort',
                      f'{container_path}.resources.limits.memory'], found)
    self.assertEqual(operator.webhook_errors(job), [
        'spec.tfReplicaSpecs[Chief].template.spec.containers: must have at least one '
        'container with name tensorflow'])


  def test_a_broken_manifest_file_is_refused_where_it_breaks(self):
    with open(MANIFEST) as f:
      text = f.read()
    # A misspelt field in the file reads as YAML, and the schema names it.
    misspelt = yaml.safe_load(text.replace('      replicas: 1\n', '      replica: 1\n', 1))
    self.assertEqual([e.split(': ', 1)[0] for e in
                      schema_errors(misspelt, self.crd['openAPIV3Schema'])],
                     ['$.spec.tfReplicaSpecs.Chief.replica'])
    # A line out of its mapping's indentation is no YAML: PyYAML names the first line that
    # no longer parses, the one after it.
    line = text.splitlines().index('      replicas: 9') + 1
    with self.assertRaises(yaml.YAMLError) as caught:
      yaml.safe_load(text.replace('      replicas: 9', '     replicas: 9', 1))
    self.assertEqual(caught.exception.problem_mark.line + 1, line + 1)

  def test_every_pod_runs_the_image_the_dockerfile_builds(self):
    with open(DOCKERFILE) as f:
      steps = [line.split(None, 1) for line in f.read().splitlines()
               if line.strip() and not line.startswith(('#', ' '))]
    workdir = [arg for step, arg in steps if step == 'WORKDIR']
    self.assertEqual([step for step, _ in steps][-3:], ['WORKDIR', 'COPY', 'RUN'])
    self.assertEqual(steps[-1][1], 'bash tools/setup.sh --gpu-image')
    with open(DOCKERFILE) as f:
      tag = re.search(r'docker build -f docs/cluster/Dockerfile -t (\S+) \.', f.read()).group(1)
    for pod in operator.pods(self.job):
      self.assertEqual([pod.working_dir], workdir, pod.name)
      self.assertEqual(pod.command[0], '.venv/bin/python3')  # what tools/setup.sh creates
    images = {c['image'] for spec in self.job['spec']['tfReplicaSpecs'].values()
              for c in spec['template']['spec']['containers']}
    self.assertEqual(images, {tag})


  def fits(self, job: dict) -> list[tuple[str, float, float]]:
    """Why the pods cannot all be scheduled on NODES nodes of ALLOCATABLE, whatever nodes the
    scheduler picks (its fit rule: a node's pods' requests <= its allocatable): (resource,
    asked, available) for each resource short; [] if they can. GPU pods take one node each
    ('nvidia.com/gpu': the GPUs asked and the nodes' GPUs); the worst node holds the largest
    of them plus every pod without a GPU."""
    pods = [requests_of(spec) for spec in operator.set_defaults(job)['spec']['tfReplicaSpecs']
            .values() for _ in range(int(spec['replicas']))]
    gpu_pods = [p for p in pods if p.get('nvidia.com/gpu')]
    others = [p for p in pods if not p.get('nvidia.com/gpu')]
    problems = []
    if sum(p['nvidia.com/gpu'] for p in gpu_pods) > NODES * ALLOCATABLE['nvidia.com/gpu']:
      problems.append(('nvidia.com/gpu', sum(p['nvidia.com/gpu'] for p in gpu_pods),
                       NODES * ALLOCATABLE['nvidia.com/gpu']))
    for resource in ('memory', 'cpu'):
      worst = max((p.get(resource, 0) for p in gpu_pods), default=0) + sum(
          p.get(resource, 0) for p in others)
      if worst > ALLOCATABLE[resource]:
        problems.append((resource, worst, ALLOCATABLE[resource]))
    return problems

  def test_every_pod_can_be_scheduled_on_the_ten_nodes(self):
    self.assertEqual(self.fits(self.job), [])
    evaluator = self.job['spec']['tfReplicaSpecs']['Evaluator']['template']['spec']
    self.assertEqual(evaluator['containers'][0]['env'],
                     [{'name': 'CUDA_VISIBLE_DEVICES', 'value': ''}])
    # The manifest as it was (the evaluator asking for a GPU and 14Gi like a trainer) could
    # never start its evaluator: it stayed Pending and nothing was exported.
    old = json.loads(json.dumps(self.job))
    old['spec']['tfReplicaSpecs']['Evaluator']['template']['spec']['containers'][0][
        'resources'] = {'limits': {'nvidia.com/gpu': 1, 'memory': '14Gi'}}
    self.assertIn(('nvidia.com/gpu', 11, 10), self.fits(old))  # 11 GPU pods, 10 GPUs


if __name__ == '__main__':
  tf.test.main()

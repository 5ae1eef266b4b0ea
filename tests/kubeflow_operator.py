"""What Kubeflow's training operator does with a TFJob, as its source does it, for tests.

Ported line by line from kubeflow/training-operator, tag v1.9.0 (commit
6f74c7f6b2ed6c27aabd82d0a316b23f0646059c), Apache-2.0:

  set_defaults          pkg/apis/kubeflow.org/v1/tensorflow_defaults.go  SetDefaults_TFJob
                        (+ defaulting_utils.go: setTypeNameToCamelCase, setDefaultReplicas,
                        setDefaultRestartPolicy, setDefaultPort)
  is_distributed        pkg/controller.v1/tensorflow/util.go            isDistributed
  port_of               pkg/controller.v1/tensorflow/util.go            GetPortFromTFJob
  cluster_spec          pkg/controller.v1/tensorflow/tensorflow.go      genClusterSpec
  tf_config_json        pkg/controller.v1/tensorflow/tensorflow.go      genTFConfigJSONStr
  pods                  pkg/controller.v1/tensorflow/tfjob_controller.go SetClusterSpec (the
                        TF_CONFIG env of container "tensorflow"), pkg/controller.v1/common/
                        util.go GenGeneralName (pod and service names)
  pods_deleted          pkg/controller.v1/common/job.go                 DeletePodsAndServices
  job_succeeded         pkg/controller.v1/tensorflow/tfjob_controller.go UpdateJobStatus
  webhook_errors        pkg/webhooks/tensorflow/tfjob_webhook.go        validateTFJob
                        (+ pkg/common/util/webhooks.go ValidateRunPolicy)

Go's encoding/json writes struct fields in declaration order and map keys sorted, with no
spaces: `json.dumps(..., separators=(',', ':'))` with the cluster's keys sorted is the same
text for the ASCII names a TFJob can have.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from typing import Any

SOURCE = ('github.com/kubeflow/training-operator v1.9.0 '
          '(6f74c7f6b2ed6c27aabd82d0a316b23f0646059c)')

# pkg/apis/kubeflow.org/v1/tensorflow_types.go
DEFAULT_PORT_NAME = 'tfjob-port'
DEFAULT_CONTAINER_NAME = 'tensorflow'
DEFAULT_PORT = 2222
DEFAULT_RESTART_POLICY = 'Never'
REPLICA_TYPES = ('PS', 'Worker', 'Chief', 'Master', 'Evaluator')  # setTensorflowTypeNamesToCamelCase


def set_defaults(tfjob: dict[str, Any]) -> dict[str, Any]:
  """A copy of `tfjob` as the operator's defaulting leaves it (SetDefaults_TFJob)."""
  job = copy.deepcopy(tfjob)
  spec = job['spec']
  run_policy = spec.setdefault('runPolicy', {})
  run_policy.setdefault('cleanPodPolicy', 'None')
  spec.setdefault('successPolicy', '')
  replicas = spec['tfReplicaSpecs']
  for typ in REPLICA_TYPES:  # setTypeNameToCamelCase: the first key equal ignoring case
    for key in list(replicas):
      if key.lower() == typ.lower() and key != typ:
        replicas[typ] = replicas.pop(key)
        break
  for replica in replicas.values():
    replica.setdefault('replicas', 1)
    if not replica.get('restartPolicy'):
      replica['restartPolicy'] = DEFAULT_RESTART_POLICY
    pod = replica['template']['spec']
    index = next((i for i, c in enumerate(pod['containers'])
                  if c.get('name') == DEFAULT_CONTAINER_NAME), 0)
    ports = pod['containers'][index].setdefault('ports', [])
    if not any(p.get('name') == DEFAULT_PORT_NAME for p in ports):
      ports.append({'name': DEFAULT_PORT_NAME, 'containerPort': DEFAULT_PORT})
  return job


def is_distributed(tfjob: dict[str, Any]) -> bool:
  """More than one replica over Chief, Evaluator, Master, PS and Worker."""
  replicas = tfjob['spec']['tfReplicaSpecs']
  count = 0
  for typ in ('Chief', 'Evaluator', 'Master', 'PS', 'Worker'):
    if typ in replicas:
      count += 1 if replicas[typ].get('replicas') is None else int(replicas[typ]['replicas'])
  return count != 1


def port_of(tfjob: dict[str, Any], rtype: str) -> int:
  """The containerPort named tfjob-port of container "tensorflow", else 2222."""
  for container in tfjob['spec']['tfReplicaSpecs'][rtype]['template']['spec']['containers']:
    if container.get('name') == DEFAULT_CONTAINER_NAME:
      for port in container.get('ports', []):
        if port.get('name') == DEFAULT_PORT_NAME:
          return int(port['containerPort'])
  return DEFAULT_PORT


def general_name(job_name: str, rtype: str, index: int) -> str:
  """GenGeneralName: '<job>-<rtype lower>-<index>' with '/' replaced by '-'."""
  return f'{job_name}-{rtype.lower()}-{index}'.replace('/', '-')


def cluster_spec(tfjob: dict[str, Any], namespace: str, cluster_domain: str = ''
                 ) -> dict[str, list[str]]:
  """genClusterSpec: every replica type, the evaluator included, as
  '<job>-<type>-<i>.<namespace>.svc[.<CUSTOM_CLUSTER_DOMAIN>]:<port>'."""
  cluster = {}
  for rtype, spec in tfjob['spec']['tfReplicaSpecs'].items():
    port = port_of(tfjob, rtype)
    names = []
    for i in range(int(spec['replicas'])):
      service = f'{general_name(tfjob["metadata"]["name"], rtype, i)}.{namespace}.svc'
      if cluster_domain:
        service += '.' + cluster_domain
      names.append(f'{service}:{port}')
    cluster[rtype.lower()] = names
  return cluster


def tf_config_json(tfjob: dict[str, Any], rtype: str, index: int, namespace: str,
                   cluster_domain: str = '') -> str:
  """genTFConfigJSONStr without enableDynamicWorker: {cluster, task {type, index},
  environment: "cloud"}, as Go's json.Marshal writes it."""
  if tfjob['spec'].get('enableDynamicWorker'):
    raise NotImplementedError('enableDynamicWorker writes a sparse cluster spec')
  cluster = cluster_spec(tfjob, namespace, cluster_domain)
  config = {'cluster': {k: cluster[k] for k in sorted(cluster)},
            'task': {'type': rtype.lower(), 'index': index}, 'environment': 'cloud'}
  return json.dumps(config, separators=(',', ':'))


@dataclasses.dataclass(frozen=True)
class Pod:
  """One pod the operator creates: its replica type, index, name (also its service's),
  the command of container "tensorflow" and that container's environment."""
  rtype: str
  index: int
  name: str
  command: tuple[str, ...]
  env: dict[str, str]
  working_dir: str


def pods(tfjob: dict[str, Any], namespace: str = 'default', cluster_domain: str = ''
         ) -> list[Pod]:
  """Every pod of the defaulted `tfjob` with its environment as the operator sets it
  (SetClusterSpec: TF_CONFIG appended to container "tensorflow"'s env when distributed)."""
  job = set_defaults(tfjob)
  out = []
  for rtype, spec in job['spec']['tfReplicaSpecs'].items():
    containers = spec['template']['spec']['containers']
    container = next(c for c in containers if c.get('name') == DEFAULT_CONTAINER_NAME)
    for i in range(int(spec['replicas'])):
      env = {e['name']: e.get('value', '') for e in container.get('env', [])}
      if is_distributed(job):
        env['TF_CONFIG'] = tf_config_json(job, rtype, i, namespace, cluster_domain)
      out.append(Pod(rtype, i, general_name(job['metadata']['name'], rtype, i),
                     tuple(container.get('command', ())) + tuple(container.get('args', ())),
                     env, container.get('workingDir', '')))
  return out


def pods_deleted(tfjob: dict[str, Any], job_finished: bool, phases: dict[str, str]
                 ) -> list[str]:
  """DeletePodsAndServices: the pods (name -> phase) the operator deletes under the job's
  cleanPodPolicy. Finished with None: none; with Running: those Running or Pending; else
  (All, or not finished): all."""
  policy = set_defaults(tfjob)['spec']['runPolicy']['cleanPodPolicy']
  if job_finished and policy == 'None':
    return []
  return [name for name, phase in phases.items()
          if not (job_finished and policy == 'Running' and phase not in ('Running', 'Pending'))]


def job_succeeded(tfjob: dict[str, Any], succeeded: dict[str, int]) -> bool:
  """UpdateJobStatus with a Chief (or Master): the job succeeds once every chief replica
  has succeeded (expected = replicas - succeeded == 0), whatever the others do."""
  replicas = set_defaults(tfjob)['spec']['tfReplicaSpecs']
  for rtype in ('Chief', 'Master'):
    if rtype in replicas:
      return int(replicas[rtype]['replicas']) - succeeded.get(rtype, 0) == 0
  raise NotImplementedError('a TFJob without Chief or Master succeeds by its workers')


# pkg/apis/kubeflow.org/v1/common_types.go: CleanPodPolicy; pkg/common/util/webhooks.go:
# supportedJobControllers.
CLEAN_POD_POLICIES = ('All', 'Running', 'None')
MANAGED_BY = ('kubeflow.org/training-operator', 'kueue.x-k8s.io/multikueue')
_DNS1035_LABEL = re.compile(r'[a-z]([-a-z0-9]*[a-z0-9])?$')


def webhook_errors(tfjob: dict[str, Any]) -> list[str]:
  """What the operator's admission webhook refuses in a new TFJob (validateTFJob): a name
  that is not a DNS-1035 label, an unsupported runPolicy.managedBy, no replica specs, a
  replica without containers, a container without image, a replica without a container
  named "tensorflow", more than one Chief or Master role."""
  found = []
  name = tfjob.get('metadata', {}).get('name', '')
  if len(name) > 63 or not _DNS1035_LABEL.match(name):
    found.append(f'metadata.name: {name!r} is not a DNS-1035 label')
  managed_by = tfjob['spec'].get('runPolicy', {}).get('managedBy')
  if managed_by is not None and managed_by not in MANAGED_BY:
    found.append(f'spec.runPolicy.managedBy: {managed_by!r} is not supported')
  replicas = tfjob['spec'].get('tfReplicaSpecs')
  if replicas is None:
    found.append('spec.tfReplicaSpecs: must be required')
    return found
  chief_or_master = 0
  for rtype, spec in replicas.items():
    path = f'spec.tfReplicaSpecs[{rtype}].template.spec.containers'
    containers = ((spec or {}).get('template', {}).get('spec', {}).get('containers')) or []
    if not containers:
      found.append(f'{path}: must be specified')
    if rtype in ('Chief', 'Master'):
      chief_or_master += 1
    for i, container in enumerate(containers):
      if not container.get('image'):
        found.append(f'{path}[{i}].image: must be required')
    if not any(c.get('name') == DEFAULT_CONTAINER_NAME for c in containers):
      found.append(f'{path}: must have at least one container with name tensorflow')
  if chief_or_master > 1:
    found.append('spec.tfReplicaSpecs: must not have more than 1 Chief or Master role')
  return found

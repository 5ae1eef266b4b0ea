"""Writes kubeflow_tfjob_crd.json, the TFJob schema the training operator installs.

Source: manifests/base/crds/kubeflow.org_tfjobs.yaml of github.com/kubeflow/training-operator
at tag v1.9.0 (commit 6f74c7f6b2ed6c27aabd82d0a316b23f0646059c), Apache-2.0. The fixture
holds the CRD's `openAPIV3Schema` of version v1 with every `description` removed (575,948
bytes of YAML become 179 kB of JSON; nothing a validator reads is dropped),
beside the source, the commit and the sha256 of the YAML it came from.

Regenerate (PyYAML is in the specs' requirements-test.txt):

  git -C training-operator show v1.9.0:manifests/base/crds/kubeflow.org_tfjobs.yaml > crd.yaml
  .venv/bin/python3 tests/testdata/make_kubeflow_tfjob_crd.py crd.yaml
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from typing import Any

SOURCE = {
    'repository': 'https://github.com/kubeflow/training-operator',
    'path': 'manifests/base/crds/kubeflow.org_tfjobs.yaml',
    'tag': 'v1.9.0',
    'commit': '6f74c7f6b2ed6c27aabd82d0a316b23f0646059c',
    'license': 'Apache-2.0',
    'transformation': 'spec.versions[name=v1].schema.openAPIV3Schema, descriptions removed',
}
HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, 'kubeflow_tfjob_crd.json')


def without_descriptions(schema: Any) -> Any:
  if isinstance(schema, dict):
    return {k: (({p: without_descriptions(s) for p, s in v.items()}) if k == 'properties'
                else without_descriptions(v))
            for k, v in schema.items() if k != 'description'}
  if isinstance(schema, list):
    return [without_descriptions(s) for s in schema]
  return schema


def main(crd_yaml: str) -> None:
  import yaml  # pylint: disable=import-outside-toplevel
  with open(crd_yaml, 'rb') as f:
    raw = f.read()
  crd = yaml.safe_load(raw)
  version = next(v for v in crd['spec']['versions'] if v['name'] == 'v1')
  fixture = dict(SOURCE, sha256=hashlib.sha256(raw).hexdigest(),
                 group=crd['spec']['group'], kind=crd['spec']['names']['kind'],
                 version='v1', scope=crd['spec']['scope'],
                 openAPIV3Schema=without_descriptions(version['schema']['openAPIV3Schema']))
  with open(FIXTURE, 'w') as f:
    json.dump(fixture, f, indent=1)
    f.write('\n')


if __name__ == '__main__':
  main(sys.argv[1])

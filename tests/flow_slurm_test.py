"""Specification: docs/cluster/extract_flow.sbatch as a 3-task Slurm array on 3 real Slurm
nodes (tests/slurm_testing.py's MultiNodeSlurm: network, UTS and mount namespaces on one
machine), all tasks writing one --out at once: every task completes, one per node, and the
result is the same as one process's extraction, byte for byte (flow JPEGs, manifest,
flow.txt, source records; no shard record left). OpenCV on tiny frames, for speed.

Skips, with the reason, only where Slurm is not installed (`bash tools/setup.sh`) or this
is not root.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import time

from absl.testing import absltest

from command_line import status_file
from data_tools import extract_flow
from tests.flow_testing import dataset_with_a_broken_video, tree_bytes
from tests.slurm_testing import SlurmTestCase
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, 'docs', 'cluster', 'extract_flow.sbatch')
SETTINGS = ['--backend=opencv', '--workers=1', '--short_side=0', '--tvl1_scales=3',
            '--tvl1_warps=3', '--tvl1_epsilon=0.05']
LIMIT = 240  # seconds the array may take on a loaded 2-core machine


class FlowSlurmTest(SlurmTestCase):

  NODES = 3

  def array_states(self, job: str) -> dict[str, tuple[str, str, str]]:
    """{array task id: (JobState, ExitCode, NodeList)} of every task of array job `job`."""
    out = subprocess.run([*self.slurm.client, 'scontrol', 'show', 'job', '-o', job],
                         env=self.slurm.env, capture_output=True, text=True, timeout=30,
                         check=True).stdout
    states = {}
    for line in out.splitlines():
      fields = dict(re.findall(r'(\w+)=(\S+)', line))
      if 'JobState' in fields:
        states[fields.get('ArrayTaskId', '?')] = (fields['JobState'], fields['ExitCode'],
                                                  fields.get('NodeList', ''))
    return states

  def wait_array(self, job: str) -> dict[str, tuple[str, str, str]]:
    deadline = time.time() + LIMIT
    while time.time() < deadline:
      states = self.array_states(job)
      if states and not any(s[0] in ('PENDING', 'RUNNING', 'CONFIGURING', 'COMPLETING')
                            for s in states.values()):
        return states
      time.sleep(0.5)
    self.slurm.scancel(job)
    self.fail(f'array job {job} still running after {LIMIT} s: cancelled')

  def test_a_three_node_array_writes_what_one_process_writes_byte_for_byte(self):
    work = tempfile.mkdtemp(dir=self.slurm_dir)
    data = os.path.join(work, 'ucf')
    dataset_with_a_broken_video(data, width=24, height=16, min_frames=3, max_frames=5,
                                object_size=6)
    one = os.path.join(work, 'one_process')

    extract_flow.extract(extract_flow.ExtractFlowOptions(
        data_dir=data, out=one, backend='opencv', workers=1, short_side=0, tvl1_scales=3,
        tvl1_warps=3, tvl1_epsilon=0.05), log=lambda line: None)

    out = os.path.join(work, 'array')
    events = os.path.join(work, 'events.jsonl')  # every task's status events
    env = {'PYTHON': sys.executable, 'PYTHONPATH': ROOT, 'PYTHONUNBUFFERED': '1',
           'DATA_DIR': data, 'OUT': out, 'FLOW_FLAGS': ' '.join(SETTINGS),
           status_file.STATUS_FILE_ENV: events}
    job = self.slurm.submit(['--array=0-2', '--gres=none', f'--output={work}/task-%a.out',
                             SCRIPT], cwd=ROOT, env=env)
    states = self.wait_array(job)
    logs = ''
    for task in range(3):
      with open(os.path.join(work, f'task-{task}.out')) as f:
        logs += f.read()
    self.assertEqual({t: state[:2] for t, state in states.items()},
                     {str(t): ('COMPLETED', '0:0') for t in range(3)}, logs[-3000:])
    hosts = {state[2] for state in states.values()}
    self.assertEqual(hosts, {'n1', 'n2', 'n3'}, logs[-3000:])  # one task per node
    plans = [e for e in status_file.read(events) if e['event'] == 'flow_plan']
    self.assertEqual(sorted((p['shard'], p['num_shards'], p['videos']) for p in plans),
                     [(0, 3, 17), (1, 3, 17), (2, 3, 17)], logs[-3000:])
    self.assertEqual(sum(p['mine'] for p in plans), 17)
    with open(os.path.join(out, extract_flow.MANIFEST)) as f:
      merged = json.load(f)
    self.assertEqual((merged['num_with_flow'], merged['num_found']), (16, 17))
    self.assertEqual(tree_bytes(out), tree_bytes(one))


if __name__ == '__main__':
  absltest.main()

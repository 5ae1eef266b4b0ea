"""Specification: a task's status file (`command_line/status_file.py`), the structured record
launchers, benchmarks and specs read instead of console text."""

import json
import os
from unittest import mock

from absl.testing import absltest

from command_line import status_file


class StatusFileTest(absltest.TestCase):

  def test_events_are_appended_in_order_and_read_back(self):
    path = os.path.join(self.create_tempdir().full_path, 'chief.events.jsonl')
    with mock.patch.dict(os.environ, {status_file.STATUS_FILE_ENV: path}):
      status_file.record('session_ready', step=0, max_steps=10)
      status_file.record('progress', step=3, loss=1.5)
      status_file.record('progress', step=6, loss=1.25)
    events = status_file.read(path)
    self.assertEqual([e['event'] for e in events], ['session_ready', 'progress', 'progress'])
    self.assertEqual(status_file.values(events, 'progress', 'step'), [3, 6])
    self.assertEqual(status_file.values(events, 'progress', 'loss'), [1.5, 1.25])
    self.assertEqual(events[0]['max_steps'], 10)
    self.assertLessEqual(events[0]['time'], events[-1]['time'])

  def test_nothing_is_written_without_a_status_file(self):
    root = self.create_tempdir().full_path
    with mock.patch.dict(os.environ, {}, clear=True):
      status_file.record('progress', step=1)
    self.assertEqual(os.listdir(root), [])
    self.assertEqual(status_file.read(os.path.join(root, 'missing.jsonl')), [])

  def test_a_line_still_being_written_is_left_for_the_next_read(self):
    path = os.path.join(self.create_tempdir().full_path, 'worker1.events.jsonl')
    whole = json.dumps({'event': 'first_step', 'time': 1.0, 'step': 1})
    with open(path, 'w') as f:
      f.write(whole + '\n' + whole[:10])
    self.assertEqual(status_file.read(path), [json.loads(whole)])


if __name__ == '__main__':
  absltest.main()

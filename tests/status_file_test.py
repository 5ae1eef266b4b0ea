"""Specification: a task's status file (`command_line/status_file.py`), the structured record
launchers, benchmarks and specs read instead of console text."""

import json
import os
from unittest import mock

from absl.testing import absltest

from command_line import status_file
from tests import program_runs

PROGRESS = dict(max_steps=10, examples_per_second=8.0, steps_per_second=2.0)


class StatusFileTest(absltest.TestCase):

  def test_events_are_appended_in_order_and_read_back(self):
    path = os.path.join(self.create_tempdir().full_path, 'chief.events.jsonl')
    with mock.patch.dict(os.environ, {status_file.STATUS_FILE_ENV: path}):
      status_file.record('session_ready', step=0, max_steps=10)
      status_file.record('progress', **PROGRESS, step=3, loss=1.5)
      status_file.record('progress', **PROGRESS, step=6, loss=1.25)
    events = status_file.read(path)
    self.assertEqual([e['event'] for e in events], ['session_ready', 'progress', 'progress'])
    self.assertEqual(status_file.values(events, 'progress', 'step'), [3, 6])
    self.assertEqual(status_file.values(events, 'progress', 'loss'), [1.5, 1.25])
    self.assertEqual(events[0]['max_steps'], 10)
    self.assertLessEqual(events[0]['time'], events[-1]['time'])

  def test_nothing_is_written_without_a_status_file(self):
    root = self.create_tempdir().full_path
    with mock.patch.dict(os.environ, {}, clear=True):
      status_file.record('first_step', step=1)
    self.assertEqual(os.listdir(root), [])
    self.assertEqual(status_file.read(os.path.join(root, 'missing.jsonl')), [])

  def test_a_line_still_being_written_is_left_for_the_next_read(self):
    path = os.path.join(self.create_tempdir().full_path, 'worker1.events.jsonl')
    whole = json.dumps({'event': 'first_step', 'time': 1.0, 'step': 1})
    with open(path, 'w') as f:
      f.write(whole + '\n' + whole[:10])
    self.assertEqual(status_file.read(path), [json.loads(whole)])

  def test_the_writer_refuses_an_event_the_registry_does_not_allow(self):
    path = os.path.join(self.create_tempdir().full_path, 'chief.events.jsonl')
    refused = {
        'undeclared': ('ps_final_steps', dict(step=3)),
        'missing': ('session_ready', dict(step=0)),
        'added': ('first_step', dict(step=1, loss=0.5)),
        'mistyped': ('peer_lost', dict(address='n2:2222', down_secs=6.0, limit_secs=6,
                                       exit_code='4')),
        'bool for int': ('first_step', dict(step=True)),
    }
    for case, (event, values) in refused.items():
      with self.subTest(case), mock.patch.dict(os.environ, {status_file.STATUS_FILE_ENV: path}):
        with self.assertRaises(status_file.EventError) as caught:
          status_file.record(event, **values)
        self.assertEqual(caught.exception.event, event)
    with mock.patch.dict(os.environ, {}, clear=True):  # refused without a status file too
      with self.assertRaises(status_file.EventError):
        status_file.record('session_ready', step=0)
    self.assertFalse(os.path.exists(path))

  def test_optional_members_none_and_ints_for_floats_are_allowed(self):
    with program_runs.recorded_events() as events:
      status_file.record('progress', **PROGRESS, step=4, loss=1, skipped_records=2,
                         records_read=40)
      status_file.record('stopped', program='prepare', step=None, max_steps=None)
    self.assertEqual([(e['event'], e.get('records_read')) for e in events],
                     [('progress', 40), ('stopped', None)])


if __name__ == '__main__':
  absltest.main()

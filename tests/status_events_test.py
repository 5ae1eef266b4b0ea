"""Specification: the status events' registry (`command_line/status_file.py`'s `EVENTS`)
declares every event the project records, with the members each call records, and the table
in that module's docs is the one written from it (`bazel run //tools:status_events_doc`).

Call sites are read from the sources: every `status_file.record(...)` of the project's
packages (its event a string or a module's string constant; a `**values` spread counts the
keywords of the `dict(...)` calls of its function), and each `status_event NAME '...'` of the
batch scripts in docs/cluster/, whose quoted members are strings and bare ones numbers.
"""

import ast
import os
import re

from absl.testing import absltest

from command_line import status_file
from tests import project_sources
from tools import status_events_doc

SCRIPT_EVENT = re.compile(r'^\s*status_event (\w+) "(.*)"$', re.M)
SCRIPT_MEMBER = re.compile(r'\\"(\w+)\\": (\\")?')


def _string_constants(trees: dict[str, ast.Module]) -> dict[str, str]:
  """Module-level `NAME = 'text'` of every module (a name bound to two texts is left out)."""
  found: dict[str, set[str]] = {}
  for tree in trees.values():
    for node in tree.body:
      if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and
          isinstance(node.value.value, str)):
        for target in node.targets:
          if isinstance(target, ast.Name):
            found.setdefault(target.id, set()).add(node.value.value)
  return {name: texts.pop() for name, texts in found.items() if len(texts) == 1}


def _is_record(node: ast.AST) -> bool:
  return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and
          node.func.attr == 'record' and isinstance(node.func.value, ast.Name) and
          node.func.value.id == 'status_file')


def record_calls(trees: dict[str, ast.Module]) -> list[tuple[str, str | None, set[str]]]:
  """(where, event or None if unresolved, member names) of every status_file.record call."""
  constants = _string_constants(trees)
  calls = []
  for path, tree in trees.items():
    functions = [n for n in ast.walk(tree)
                 if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for node in ast.walk(tree):
      if not _is_record(node):
        continue
      first = node.args[0] if node.args else None
      event = (first.value if isinstance(first, ast.Constant) else
               constants.get(first.id) if isinstance(first, ast.Name) else None)
      members = {k.arg for k in node.keywords if k.arg}
      if any(k.arg is None for k in node.keywords):  # a **spread
        inside = [f for f in functions if f.lineno <= node.lineno <= f.end_lineno]
        for call in ast.walk(inside[-1]):
          if (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and
              call.func.id == 'dict'):
            members |= {k.arg for k in call.keywords if k.arg}
      calls.append((f'{path}:{node.lineno}', event, members))
  return calls


def script_events() -> list[tuple[str, str, dict[str, bool]]]:
  """(where, event, {member: quoted}) of every `status_event` line of the batch scripts."""
  found = []
  folder = os.path.join(project_sources.ROOT, 'docs', 'cluster')
  for name in sorted(os.listdir(folder)):
    with open(os.path.join(folder, name), encoding='utf-8') as f:
      text = f.read()
    for match in SCRIPT_EVENT.finditer(text):
      members = {m.group(1): bool(m.group(2)) for m in SCRIPT_MEMBER.finditer(match.group(2))}
      found.append((f'docs/cluster/{name}', match.group(1), members))
  return found


class StatusEventsTest(absltest.TestCase):

  def test_the_docs_table_is_written_from_the_registry(self):
    with open(status_file.__file__, encoding='utf-8') as f:
      source = f.read()
    self.assertTrue(
        status_events_doc.table_in(source) == status_events_doc.render(status_file.EVENTS),
        f'the table of events in {status_events_doc.OUTPUT} is stale: regenerate it with '
        f'`{status_events_doc.REGENERATE}` and commit it')

  def test_the_registry_is_alphabetical(self):
    self.assertEqual(list(status_file.EVENTS), sorted(status_file.EVENTS))

  def test_every_recorded_event_is_declared_with_the_members_it_records(self):
    calls = record_calls(project_sources.parsed(project_sources.PRODUCT_PACKAGES + ('docs',)))
    self.assertGreater(len(calls), 20)  # the sources were found
    for where, event, members in calls:
      with self.subTest(where=where):
        self.assertIn(event, status_file.EVENTS, 'a literal event or a module constant')
        declared = status_file.EVENTS[event]
        self.assertLessEqual(set(declared.fields), members, 'a declared field is not given')
        self.assertLessEqual(members, {*declared.fields, *declared.optional},
                             'a member the registry does not declare')

  def test_every_event_of_the_batch_scripts_is_declared_with_its_members_and_types(self):
    events = script_events()
    self.assertNotEmpty(events)
    for where, event, members in events:
      with self.subTest(where=where, event=event):
        self.assertIn(event, status_file.EVENTS)
        declared = status_file.EVENTS[event]
        self.assertEqual(set(members), set(declared.fields))
        for name, quoted in members.items():
          self.assertEqual(quoted, status_file.type_name(declared.fields[name]) == 'str', name)


if __name__ == '__main__':
  absltest.main()

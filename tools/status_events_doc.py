"""The table of status events in command_line/status_file.py's module docs, written from its
registry (`status_file.EVENTS`), so the docs list exactly the events the writer accepts.

    render(EVENTS) -> str            # the table: per event its members, then its meaning
    with_table(source, table) -> str # status_file.py's source with that table in its docs
"""

from __future__ import annotations

import textwrap
from typing import Mapping

from command_line.status_file import Event, type_name

REGENERATE = 'bazel run //tools:status_events_doc'
OUTPUT = 'command_line/status_file.py'
# The docs line the table follows; the table ends at the next blank line.
HEADING = f'Events, generated from `EVENTS` by `{REGENERATE}` ([optional]):'
WIDTH = 92
NBSP = '\xa0'


def _members(event: Event) -> str:
  """'{step: int, max_steps: int}', then '[name: type, ...]' for optional members; the
  spaces inside a member are non-breaking (NBSP), so that a line breaks only between two."""
  def listed(members):
    return ', '.join(f'{n}: {type_name(k)}'.replace(' ', NBSP) for n, k in members.items())
  text = '{' + listed(event.fields) + '}'
  return text + (' [' + listed(event.optional) + ']' if event.optional else '')


def render(events: Mapping[str, Event]) -> str:
  """One block per event, in `events`' order: its name and members (wrapped at WIDTH), then
  its meaning indented; no blank line, no trailing newline."""
  lines = []
  for name, event in events.items():
    lines += textwrap.wrap(f'{name} {_members(event)}', WIDTH, initial_indent='  ',
                           subsequent_indent=' ' * (len(name) + 4), break_on_hyphens=False)
    lines += textwrap.wrap(event.meaning, WIDTH, initial_indent='      ',
                           subsequent_indent='      ', break_on_hyphens=False)
  return '\n'.join(lines).replace(NBSP, ' ')


def table_in(source: str) -> str:
  """The table in a source's docs: the lines after HEADING up to the next blank line."""
  start = source.index(HEADING + '\n') + len(HEADING) + 1
  return source[start:source.index('\n\n', start)]


def with_table(source: str, table: str) -> str:
  """`source` with the table after HEADING replaced by `table`."""
  start = source.index(HEADING + '\n') + len(HEADING) + 1
  return source[:start] + table + source[source.index('\n\n', start):]

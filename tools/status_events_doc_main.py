"""`bazel run //tools:status_events_doc`: rewrites the table of status events in
command_line/status_file.py's module docs from its registry, `EVENTS`
(tools/status_events_doc.py)."""

from __future__ import annotations

import os
import sys
from typing import Sequence

from command_line.status_file import EVENTS
from tools.status_events_doc import OUTPUT, REGENERATE, render, with_table


def main(argv: Sequence[str]) -> int:
  del argv
  workspace = os.environ.get('BUILD_WORKSPACE_DIRECTORY')
  if not workspace:
    print(f'status_events_doc: run it as `{REGENERATE}` (it writes {OUTPUT} in the '
          'workspace)', file=sys.stderr)
    return 2
  path = os.path.join(workspace, OUTPUT)
  with open(path, encoding='utf-8') as f:
    source = f.read()
  with open(path, 'w', encoding='utf-8') as f:
    f.write(with_table(source, render(EVENTS)))
  print(f'status_events_doc: wrote the table of {len(EVENTS)} events in {OUTPUT}')
  return 0


if __name__ == '__main__':
  sys.exit(main(sys.argv))

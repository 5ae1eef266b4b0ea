"""`bazel run //docs:flags_doc`: rewrites docs/flags.md in the workspace from the options every
binary declares (docs/flags_doc.py)."""

from __future__ import annotations

import os
import sys
from typing import Callable, Sequence

from command_line import console
from docs.flags_doc import CONCERNS, OUTPUT, REGENERATE, read_build_files, render, runfiles_root


def main(argv: Sequence[str], echo: Callable[[str], None] = print) -> int:
  del argv
  console.quiet_native_logs()
  workspace = os.environ.get('BUILD_WORKSPACE_DIRECTORY')
  if not workspace:
    echo(f'flags_doc: run it as `{REGENERATE}` (it writes {OUTPUT} in the workspace)')
    return 2
  root = runfiles_root()
  text = render(read_build_files(root, [p for p, _ in CONCERNS]))
  with open(os.path.join(workspace, OUTPUT), 'w') as f:
    f.write(text)
  echo(f'flags_doc: wrote {OUTPUT} ({len(text.splitlines())} lines)')
  return 0


if __name__ == '__main__':
  sys.exit(main(sys.argv))

"""`bazel run //tools:build_files`: writes tools/bazel/modules.bzl and the programs section of
every package's BUILD from the sources (tools/build_files.py).

    bazel run //tools:build_files            # rewrite them
    bazel run //tools:build_files -- --check # exit 1 when one is stale

A file that breaks the naming rules (`build_files.misnamed`) stops it, one line each, exit 2.
"""

from __future__ import annotations

import os
import sys

from tools import build_files


def _root() -> str:
  return os.environ.get('BUILD_WORKSPACE_DIRECTORY') or os.path.dirname(
      os.path.dirname(os.path.abspath(__file__)))


def main(argv: list[str]) -> int:
  root = _root()
  problems = build_files.misnamed(root)
  for problem in problems:
    print(f'build_files: error: {problem}', file=sys.stderr)
  if problems:
    return 2
  stale = []
  for path, text in build_files.generated_files(root).items():
    full = os.path.join(root, path)
    current = open(full, encoding='utf-8').read() if os.path.exists(full) else ''
    if current == text:
      continue
    stale.append(path)
    if '--check' not in argv:
      with open(full, 'w', encoding='utf-8') as f:
        f.write(text)
      print(f'wrote {path}')
  if stale and '--check' in argv:
    print(f'{", ".join(stale)} stale: run `bazel run //tools:build_files`', file=sys.stderr)
    return 1
  return 0


if __name__ == '__main__':
  sys.exit(main(sys.argv[1:]))

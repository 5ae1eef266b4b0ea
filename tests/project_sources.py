"""The project's Python sources, parsed, for the specs that read code rather than run it.

`PRODUCT_PACKAGES` are the top-level folders that hold programs (`tools/build_files.py`'s
`BINARY_PACKAGES`), so a new package is read by every such spec without being listed again.
"""

from __future__ import annotations

import ast
import os

from tools import build_files

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRODUCT_PACKAGES = tuple(sorted({p.split('/')[0] for p in build_files.BINARY_PACKAGES}))


def parsed(packages: tuple[str, ...] = PRODUCT_PACKAGES) -> dict[str, ast.Module]:
  """Every .py file under `packages`, parsed, by its path relative to the repository root."""
  trees = {}
  for package in packages:
    for folder, _, names in os.walk(os.path.join(ROOT, package)):
      for name in sorted(n for n in names if n.endswith('.py')):
        path = os.path.join(folder, name)
        with open(path, encoding='utf-8') as f:
          trees[os.path.relpath(path, ROOT)] = ast.parse(f.read(), path)
  return trees

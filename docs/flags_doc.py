"""Generates docs/flags.md: the flags of every binary, read from the binaries themselves.

Every `py_binary` of the BUILD files given (`BUILD_FILES`) is executed as `__main__` with
`command_line.cli.define_flags` recording the options dataclasses it declares and `command_line.cli.run`
doing nothing, so the page lists exactly the flags each binary defines, with their
defaults, choices and help. Fields of an options type composed of sections (`TrainParams`)
are grouped by section (`command_line.options.section_of`). A binary that declares no
options this way is an error.

    bazel run //docs:flags_doc            # rewrites docs/flags.md in the workspace
"""

from __future__ import annotations

import dataclasses
import os
import re
import runpy
from typing import Any, Sequence

from command_line import cli
from command_line.options import CHOICES, help_of, KEY, section_of

REGENERATE = 'bazel run //docs:flags_doc'
OUTPUT = 'docs/flags.md'
# Packages whose binaries the page documents, with the concern each one serves.
CONCERNS = (
    ('towers', 'Training'),
    ('serving', 'Inference and two-stream evaluation'),
    ('data_tools', 'Data preparation'),
    ('towers/cluster', 'Clusters'),
    ('benchmarks', 'Benchmarks'),
)
BINARY = re.compile(r'py_binary\(\s*name\s*=\s*"(\w+)"(.*?)\n\)', re.S)
MAIN = re.compile(r'main\s*=\s*"([\w/]+)\.py"')


class FlagsDocError(Exception):
  """A binary whose flags cannot be read; the message names it and the fix. `label`: the
  binary's (//package:name); `declares_none`: it imports but declares no options."""

  def __init__(self, message: str, label: str, declares_none: bool = False) -> None:
    super().__init__(message)
    self.label = label
    self.declares_none = declares_none


@dataclasses.dataclass(frozen=True)
class Binary:
  label: str       # //package:name
  module: str      # dotted module executed as __main__


def binaries(package: str, build_text: str) -> list[Binary]:
  """The py_binary targets of one BUILD file, in file order."""
  found = []
  for name, body in BINARY.findall(build_text):
    main = MAIN.search(body)
    stem = main.group(1) if main else name
    found.append(Binary(f'//{package}:{name}', f'{package}/{stem}'.replace('/', '.')))
  return found


def declared_options(binary: Binary) -> tuple[list[type], str]:
  """The options dataclasses `binary` passes to `cli.define_flags`, in order, and the
  first sentence of its module docstring."""
  recorded: list[type] = []
  real_define, real_run = cli.define_flags, cli.run
  cli.define_flags = lambda options_type, *args, **kwargs: recorded.append(options_type)
  cli.run = lambda *args, **kwargs: None
  try:
    module_globals = runpy.run_module(binary.module, run_name='__main__', alter_sys=False)
  except ImportError as e:
    raise FlagsDocError(f'{binary.label}: cannot import {binary.module} ({e}): it is missing '
                        'from PROGRAMS; run `bazel run //tools:build_files`',
                        binary.label) from e
  finally:
    cli.define_flags, cli.run = real_define, real_run
  if not recorded:
    raise FlagsDocError(f'{binary.label} declares no options through command_line.cli.define_flags '
                        '(the one flag convention, command_line/cli.py)', binary.label,
                        declares_none=True)
  doc = ' '.join((module_globals.get('__doc__') or '').strip().split('\n\n')[0].split())
  return list(dict.fromkeys(recorded)), doc


def render_value(value: Any) -> str:
  if isinstance(value, bool):
    return 'true' if value else 'false'
  if isinstance(value, tuple):
    return ','.join(render_value(v) for v in value) or '(empty)'
  if value == '':
    return '(empty)'
  return str(value)


def _cell(text: str) -> str:
  return ' '.join(text.split()).replace('|', '\\|')


def table(fields: Sequence[dataclasses.Field]) -> list[str]:
  rows = ['| flag | default | meaning |', '|---|---|---|']
  for f in fields:
    meaning = ('**In `--help`.** ' if f.metadata.get(KEY) else '') + help_of(f)
    if f.metadata.get(CHOICES):
      listed = ", ".join(str(c) or "(empty)" for c in f.metadata[CHOICES])
      meaning += (f' Each of: {listed}, at most once.' if str(f.type).startswith('tuple') else
                  f' One of: {listed}.')
    rows.append(f'| `--{f.name}` | `{render_value(f.default)}` | {_cell(meaning)} |')
  return rows


def binary_section(binary: Binary) -> list[str]:
  options, doc = declared_options(binary)
  lines = [f'### `{binary.label}`', '']
  if doc:
    lines += [doc, '']
  for i, options_type in enumerate(options):
    groups: dict[str, list[dataclasses.Field]] = {}
    for f in dataclasses.fields(options_type):
      groups.setdefault(section_of(options_type, f.name), []).append(f)
    for heading, fields in groups.items():
      if not heading and i > 0:  # a second options object, e.g. ConsoleOptions: "Console"
        heading = re.sub(r'(Options|Params|Config)$', '', options_type.__name__) or 'Other'
      if heading:
        lines += [f'**{heading}**', '']
      lines += table(fields) + ['']
  return lines


def render(build_files: dict[str, str]) -> str:
  """The page for `build_files` (package -> BUILD text)."""
  found = {package: binaries(package, text) for package, text in build_files.items()}
  out = ['# Flags of every binary', '',
         f'Generated from each binary\'s options by `{REGENERATE}`: do not edit by hand. '
         '`bazel run //<package>:<binary> -- --helpfull` prints the same for one binary, '
         'with absl\'s own flags (`--flagfile`, `--v`, ...); `--help` prints the flags a run '
         'starts with: those marked **In `--help`.**, or all of a binary that marks none.', '',
         'Relative paths in flags (and `--flagfile` itself) resolve against the directory '
         '`bazel` was started from; list flags take comma-separated values; booleans take '
         '`--name` / `--noname`.', '']
  contents, body = [], []
  known = [package for package, _ in CONCERNS]
  concerns = list(CONCERNS) + [(p, p) for p in found if p not in known]
  for package, concern in concerns:
    if not found.get(package):
      continue
    anchor = re.sub(r'[^a-z0-9 -]', '', concern.lower()).replace(' ', '-')
    contents.append(f'- [{concern}](#{anchor}): ' +
                    ', '.join(f'`{b.label}`' for b in found[package]))
    body += [f'## {concern}', '']
    for binary in found[package]:
      body += binary_section(binary)
  return '\n'.join(out + contents + [''] + body).rstrip() + '\n'


def read_build_files(root: str, packages: Sequence[str]) -> dict[str, str]:
  texts = {}
  for package in packages:
    with open(os.path.join(root, package, 'BUILD')) as f:
      texts[package] = f.read()
  return texts


def runfiles_root() -> str:
  """The workspace inside this program's runfiles (its sources and BUILD files)."""
  here = os.path.dirname(os.path.abspath(__file__))
  return os.path.dirname(here)

"""The BUILD data of every package, generated from its sources: targets from file names, deps
from imports.

Writes tools/bazel/modules.bzl (one `py_library` per module, its deps read from its imports)
and the programs section at the end of each package's BUILD (one `py_binary` per program file):

  - a program file, a module with `if __name__ == '__main__':`, is named `<name>_main.py`; it
    gets the py_library `<name>_main` and the py_binary `<name>` (`bazel run //pkg:<name>`,
    `main = "<name>_main.py"`). It holds the `command_line.entry.Program` and its run glue.
  - every other module is a library, named after the module (`__init__.py` after the package
    directory; `<name>_lib` when `<name>` is also a program's name), and never ends in `_main`.
    `misnamed` lists the files that break these two rules; the generator refuses to write then.

A module's deps are the project modules it imports, at any depth (imports inside functions
count), and those it names by a dotted string (`python -m towers.train_main`). Test files
(`tests/*_test.py`) get their deps in TEST_DEPS; tests/BUILD keeps their size, tags and data.
`bazel run //tools:build_files` writes them (tools/build_files_main.py).
"""

from __future__ import annotations

import ast
import os

PACKAGES = ('command_line', 'tools', 'model_fn', 'model_fn/networks', 'input_fn', 'data_tools',
            'serving', 'towers', 'towers/cluster', 'benchmarks', 'tests')
OUTPUT = 'tools/bazel/modules.bzl'
MAIN_SUFFIX = '_main'
# Packages whose programs get a py_binary in their BUILD (the specs start tests/'s with `-m`).
BINARY_PACKAGES = tuple(p for p in PACKAGES if p != 'tests')
# Packages whose programs docs/flags.md documents (//docs:flags_doc depends on PROGRAMS).
DOCUMENTED_PACKAGES = ('towers', 'serving', 'data_tools', 'towers/cluster', 'benchmarks')
# Packages outside PACKAGES whose targets are written by hand but follow the naming rules.
HAND_WRITTEN_PACKAGES = ('docs',)
PROGRAMS_MARKER = ('# Programs: one py_binary per <name>_main.py, written by '
                   '`bazel run //tools:build_files`.')
# Modules whose targets are written by hand (their deps are programs found at run time).
HAND_WRITTEN = {('docs', 'flags_doc'): '//docs:flags_doc_lib'}


def _dotted(package: str, filename: str) -> str:
  stem = filename[:-len('.py')]
  return package.replace('/', '.') if stem == '__init__' else f"{package.replace('/', '.')}.{stem}"


def _is_program_file(filename: str) -> bool:
  return filename[:-len('.py')].endswith(MAIN_SUFFIX)


def _target(package: str, filename: str, files: set) -> str:
  """The py_library of `package/filename`; `files`: the package's files."""
  stem = filename[:-len('.py')]
  if stem == '__init__':
    return f'//{package}'
  if f'{stem}{MAIN_SUFFIX}.py' in files:
    return f'//{package}:{stem}_lib'  # the program's name is the py_binary's
  return f'//{package}:{stem}'


def _is_program(tree: ast.Module) -> bool:
  for node in tree.body:
    if isinstance(node, ast.If) and isinstance(node.test, ast.Compare):
      names = {getattr(n, 'id', None) for n in ast.walk(node.test)}
      if '__name__' in names:
        return True
  return False


def misnamed(root: str) -> list[str]:
  """One line per file breaking the naming rules: a program (`__main__` guard) not named
  `<name>_main.py`, or a library whose name ends in `_main` (specs, `*_test.py`, aside)."""
  problems = []
  for package in PACKAGES + HAND_WRITTEN_PACKAGES:
    for filename in sorted(os.listdir(os.path.join(root, package))):
      if not filename.endswith('.py') or filename.endswith('_test.py'):
        continue
      with open(os.path.join(root, package, filename), encoding='utf-8') as f:
        program = _is_program(ast.parse(f.read(), filename))
      if program and not _is_program_file(filename):
        problems.append(f'{package}/{filename} runs as a program: name it '
                        f'{filename[:-len(".py")]}{MAIN_SUFFIX}.py (its library part apart)')
      elif not program and _is_program_file(filename):
        problems.append(f'{package}/{filename} is a library (no `if __name__ == \'__main__\'`): '
                        f'its name must not end in {MAIN_SUFFIX}')
  return problems


def _named_modules(tree: ast.Module) -> set:
  """Modules the file imports at any depth ((package, names) for `from package import names`),
  and its dotted string constants (possible `python -m` names)."""
  names = set()
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      names.update(alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
      # `from package import module` needs the module; the package's __init__ only when a
      # name is not a module (resolved in deps_of).
      names.add((node.module, tuple(alias.name for alias in node.names)))
    elif isinstance(node, ast.Constant) and isinstance(node.value, str) and '.' in node.value:
      names.add(node.value)
  return names


def scan(root: str) -> dict[str, dict]:
  """dotted module name -> {package, file, files (of its package), test, names}."""
  modules = {}
  for package in PACKAGES:
    directory = os.path.join(root, package)
    for filename in sorted(os.listdir(directory)):
      if not filename.endswith('.py'):
        continue
      with open(os.path.join(directory, filename), encoding='utf-8') as f:
        tree = ast.parse(f.read(), filename)
      modules[_dotted(package, filename)] = dict(
          package=package, file=filename, files=set(os.listdir(directory)),
          test=package == 'tests' and filename.endswith('_test.py'), names=_named_modules(tree))
  return modules


def deps_of(module: str, modules: dict[str, dict]) -> list[str]:
  info = modules[module]
  hand_written = {'.'.join(key): label for key, label in HAND_WRITTEN.items()}
  known = set(modules) | set(hand_written)
  named = set()
  for name in info['names']:
    if isinstance(name, tuple):
      package, symbols = name
      submodules = {f'{package}.{s}' for s in symbols}
      named.update(s for s in submodules if s in known)
      if submodules - known:
        named.add(package)
    else:
      named.add(name)
  found = {hand_written[name] for name in named if name in hand_written}
  for name in named:
    if name in modules and name != module and not modules[name]['test']:
      dep = modules[name]
      found.add(_target(dep['package'], dep['file'], dep['files']))
  own = f"//{info['package']}"
  local = {':' + os.path.basename(own) if d == own else ':' + d[len(own) + 1:]
           for d in found if d == own or d.startswith(own + ':')}
  return sorted(local) + sorted(d for d in found if d != own and not d.startswith(own + ':'))


def render(modules: dict[str, dict]) -> str:
  """The text of tools/bazel/modules.bzl."""
  by_package: dict[str, list[tuple]] = {}
  tests = {}
  for module, info in modules.items():
    deps = deps_of(module, modules)
    if info['test']:
      tests[info['file'][:-len('.py')]] = deps
      continue
    label = _target(info['package'], info['file'], info['files'])
    name = label.rsplit(':', 1)[-1].rsplit('/', 1)[-1]
    by_package.setdefault(info['package'], []).append((info['file'], name, deps))
  lines = ['"""Generated by `bazel run //tools:build_files` from the sources\' imports: do not edit.',
           '',
           'MODULES: package -> [(file, py_library name, deps)]; TEST_DEPS: test name -> deps;',
           'PROGRAMS: the py_binary of every program file of the documented packages."""',
           '', 'MODULES = {']
  for package in sorted(by_package):
    lines.append(f'    "{package}": [')
    for filename, name, deps in sorted(by_package[package]):
      lines.append(f'        ("{filename}", "{name}", {_list(deps, 8)}),')
    lines.append('    ],')
  lines += ['}', '', 'TEST_DEPS = {']
  for name in sorted(tests):
    lines.append(f'    "{name}": {_list(tests[name], 4)},')
  programs = sorted(f'//{i["package"]}:{i["file"][:-len(MAIN_SUFFIX + ".py")]}'
                    for i in modules.values()
                    if i['package'] in DOCUMENTED_PACKAGES and _is_program_file(i['file']))
  lines += ['}', '', f'PROGRAMS = {_list(programs, 0)}', '']
  return '\n'.join(lines)


def programs_section(package: str, modules: dict[str, dict]) -> str:
  """The py_binary targets of `package`'s program files, after PROGRAMS_MARKER."""
  blocks = [PROGRAMS_MARKER]
  for info in sorted(modules.values(), key=lambda i: i['file']):
    if info['package'] != package or not _is_program_file(info['file']):
      continue
    stem = info['file'][:-len('.py')]
    blocks.append(f'py_binary(\n    name = "{stem[:-len(MAIN_SUFFIX)]}",\n'
                  f'    srcs = ["{info["file"]}"],\n    main = "{info["file"]}",\n'
                  f'    deps = [":{stem}"],\n)')
  return '\n\n'.join(blocks) + '\n'


def render_build(package: str, current: str, modules: dict[str, dict]) -> str:
  """`package`'s BUILD text `current` with its programs section (from PROGRAMS_MARKER to
  the end) written from the sources; the hand-written part above it is kept."""
  hand_written = current.split(PROGRAMS_MARKER, 1)[0].rstrip()
  if not any(i['package'] == package and _is_program_file(i['file']) for i in modules.values()):
    return hand_written + '\n'
  return hand_written + '\n\n' + programs_section(package, modules)


def generated_files(root: str) -> dict[str, str]:
  """Path (relative to `root`) -> the text the generator writes there."""
  modules = scan(root)
  files = {OUTPUT: render(modules)}
  for package in BINARY_PACKAGES:
    path = os.path.join(package, 'BUILD')
    with open(os.path.join(root, path), encoding='utf-8') as f:
      files[path] = render_build(package, f.read(), modules)
  return files


def _list(items: list[str], indent: int) -> str:
  if not items:
    return '[]'
  pad = ' ' * (indent + 4)
  return '[\n' + ''.join(f'{pad}"{i}",\n' for i in items) + ' ' * indent + ']'

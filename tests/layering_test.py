"""Specifies the project's layers from its source: imports point down and never in a circle.

Layers, bottom first: `command_line` (the command-line convention, no TensorFlow, no project
imports); `model_fn` and `input_fn` (the library: never import `towers` or the data tools);
`data_tools` (programs that make and prepare datasets: never import `towers`); `towers.cluster`
(the cluster runtime and one runner per role: never imports the rest of `towers`, which hands
it what to build as a `Recipe`); `serving` (inference with exports: never imports `towers`,
which may import it); `towers`; `benchmarks`. Importing every module of `serving` in a
fresh interpreter loads no module of `towers`. Every import counts, including those
inside functions. The plotting library (matplotlib) is the benchmarks' pictures' alone:
only `benchmarks/plots.py` imports it.
"""

import ast
import os
import subprocess
import sys

from absl.testing import absltest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ('command_line', 'model_fn', 'input_fn', 'data_tools', 'serving', 'towers',
            'benchmarks')


def _module_name(path: str) -> str:
  rel = os.path.relpath(path, ROOT)[:-len('.py')].replace(os.sep, '.')
  return rel[:-len('.__init__')] if rel.endswith('.__init__') else rel


def _imports(path: str) -> set[str]:
  """Every module named by an import statement of the file, at any depth."""
  with open(path, encoding='utf-8') as f:
    tree = ast.parse(f.read(), path)
  names = set()
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      names.update(alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
      names.add(node.module)
      names.update(f'{node.module}.{alias.name}' for alias in node.names)
  return names


def project_modules() -> dict[str, set[str]]:
  """Each project module -> the project modules it imports."""
  files = {}
  for package in PACKAGES:
    for dirpath, _, filenames in os.walk(os.path.join(ROOT, package)):
      for f in filenames:
        if f.endswith('.py'):
          path = os.path.join(dirpath, f)
          files[_module_name(path)] = path
  return {module: {name for name in _imports(path) if name in files}
          for module, path in files.items()}


def package_of(module: str) -> str:
  if module == 'towers.cluster' or module.startswith('towers.cluster.'):
    return 'towers.cluster'
  return module.split('.')[0]


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
  """One cycle of the directed graph as a list of nodes, or [] when it has none."""
  state, stack = {}, []

  def visit(node):
    state[node] = 'open'
    stack.append(node)
    for nxt in sorted(graph.get(node, ())):
      if state.get(nxt) == 'open':
        return stack[stack.index(nxt):] + [nxt]
      if nxt not in state:
        cycle = visit(nxt)
        if cycle:
          return cycle
    stack.pop()
    state[node] = 'done'
    return []

  for node in sorted(graph):
    if node not in state:
      cycle = visit(node)
      if cycle:
        return cycle
  return []


class LayeringTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    cls.modules = project_modules()

  def imports_from(self, package: str) -> dict[str, set[str]]:
    return {m: deps for m, deps in self.modules.items() if package_of(m) == package}

  def test_the_library_never_imports_towers(self):
    for package in ('model_fn', 'input_fn', 'data_tools', 'command_line', 'serving'):
      for module, deps in self.imports_from(package).items():
        self.assertFalse({d for d in deps if d.split('.')[0] == 'towers'},
                         f'{module} imports towers')

  def test_the_library_never_imports_the_data_tools(self):
    for package in ('model_fn', 'input_fn', 'command_line', 'serving'):
      for module, deps in self.imports_from(package).items():
        self.assertFalse({d for d in deps if d.split('.')[0] == 'data_tools'},
                         f'{module} imports the data tools')

  def test_command_line_is_the_bottom_layer_and_loads_no_tensorflow(self):
    for module in self.imports_from('command_line'):
      path = os.path.join(ROOT, *module.split('.')) + '.py'
      if not os.path.exists(path):
        path = os.path.join(ROOT, *module.split('.'), '__init__.py')
      outside = {d for d in self.modules[module] if package_of(d) != 'command_line'}
      self.assertFalse(outside, f'{module} imports {outside}')
      self.assertNotIn('tensorflow', {n.split('.')[0] for n in _imports(path)}, module)

  def test_cluster_roles_never_import_the_rest_of_towers(self):
    for module, deps in self.imports_from('towers.cluster').items():
      self.assertFalse({d for d in deps if package_of(d) == 'towers'},
                       f'{module} imports the towers package above it')

  def test_the_cluster_roles_start_from_the_one_training_call(self):
    # The runners are the cluster's loop: `towers.training` (and the cluster's own modules)
    # start them; the rest of the project reaches a cluster through it.
    callers = {m for m, deps in self.modules.items() if 'towers.cluster.runners' in deps}
    self.assertEqual({m for m in callers if package_of(m) != 'towers.cluster'},
                     {'towers.training'})

  def test_importing_serving_loads_no_training_code(self):
    # Every serving module, imported in a fresh interpreter, as a program using it would.
    modules = sorted(self.imports_from('serving'))
    self.assertIn('serving.two_stream', modules)
    code = ('import sys\n' + ''.join(f'import {m}\n' for m in modules) +
            'print(sorted(m for m in sys.modules if m.split(".")[0] == "towers"))')
    done = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          cwd=ROOT, timeout=300, check=False)
    self.assertEqual(done.returncode, 0, done.stderr)
    self.assertEqual(done.stdout.strip().splitlines()[-1], '[]')

  def test_no_package_imports_another_in_a_circle(self):
    graph = {}
    for module, deps in self.modules.items():
      graph.setdefault(package_of(module), set()).update(
          package_of(d) for d in deps if package_of(d) != package_of(module))
    self.assertEqual(find_cycle(graph), [], 'package cycle')

  def test_no_module_imports_another_in_a_circle(self):
    graph = {m: {d for d in deps if d != m and not m.startswith(d + '.')}
             for m, deps in self.modules.items()}
    # `from package import name` names the package too: only modules' own files count.
    graph = {m: {d for d in deps if not self.modules.get(d) is None} for m, deps in graph.items()}
    self.assertEqual(find_cycle(graph), [], 'module cycle')

  def test_only_the_benchmarks_plots_import_the_plotting_library(self):
    # matplotlib is installed for the benchmarks' --plot pictures alone.
    importers = set()
    for module in self.modules:
      path = os.path.join(ROOT, *module.split('.')) + '.py'
      if not os.path.exists(path):
        path = os.path.join(ROOT, *module.split('.'), '__init__.py')
      if 'matplotlib' in {name.split('.')[0] for name in _imports(path)}:
        importers.add(module)
    self.assertEqual(importers, {'benchmarks.plots'})

  def test_the_cycle_finder_finds_a_cycle(self):
    self.assertEqual(find_cycle({'a': {'b'}, 'b': {'c'}, 'c': {'a'}}), ['a', 'b', 'c', 'a'])
    self.assertEqual(find_cycle({'a': {'b'}, 'b': set()}), [])


if __name__ == '__main__':
  absltest.main()

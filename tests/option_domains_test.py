"""Specifies, from the source, that every option's own domain is declared beside it.

Each options class (a dataclass deriving `command_line.options.Options`, directly or through
another such class) declares every number option's domain with `valid=` (a range) or
`choices=` (the values it may take) on its field, where `validated` checks it, `--help` and
docs/flags.md show it and an error names the option. What is left to the functions that
check an options object (a class's `rules`, a program's `check=`) is what one field cannot
say alone: a rule over two or more options, or the file system. A check there that reads a
single option and compares it with fixed values (`if p.split not in (1, 2, 3)`,
`if options.ps == 0`) is such a domain written by hand, away from its option.
And an options class lives in the library module that takes it, never in a program
(`*_main.py`, which only parses the flags and calls its library).
"""

from __future__ import annotations

import ast
import dataclasses

from absl import flags
from absl.testing import absltest

from command_line import cli
from command_line.options import Options, OptionsError, Range, option
from tests import project_sources

NUMBER_TYPES = ('int', 'float', 'tuple[int, ...]', 'tuple[float, ...]')
DOMAIN_KEYWORDS = {'valid', 'choices'}


def _options_classes(trees: dict[str, ast.Module]) -> dict[str, tuple[str, ast.ClassDef]]:
  """Class name -> (file, definition) of every class deriving `Options`, at any depth."""
  classes = {node.name: (path, node) for path, tree in trees.items()
             for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
  found: dict[str, tuple[str, ast.ClassDef]] = {}
  grew = True
  while grew:
    grew = False
    for name, (path, node) in classes.items():
      bases = {b.id if isinstance(b, ast.Name) else getattr(b, 'attr', '') for b in node.bases}
      if name not in found and bases & ({'Options'} | set(found)):
        found[name] = (path, node)
        grew = True
  return found


def _programs_declaring(trees: dict[str, ast.Module], classes: dict[str, tuple[str, ast.ClassDef]]
                         ) -> dict[str, list[str]]:
  """Program file (`*_main.py`) -> the options classes it declares, for each that declares
  one (`classes`: every options class by name, as `_options_classes` finds them)."""
  declared = {path: [node.name for node in ast.walk(tree)
                     if isinstance(node, ast.ClassDef) and node.name in classes]
              for path, tree in trees.items() if path.endswith('_main.py')}
  return {path: names for path, names in declared.items() if names}


def _fields(node: ast.ClassDef):
  """(name, annotation text, the call that declares it) of each field of the class body."""
  for statement in node.body:
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and \
        isinstance(statement.value, ast.Call):
      yield statement.target.id, ast.unparse(statement.annotation), statement.value


def _constant(node: ast.AST) -> bool:
  """A literal, a tuple of literals, or a module constant (an upper-case name)."""
  if isinstance(node, ast.Constant):
    return True
  if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
    return all(_constant(e) for e in node.elts)
  if isinstance(node, ast.UnaryOp):
    return _constant(node.operand)
  name = node.attr if isinstance(node, ast.Attribute) else getattr(node, 'id', '')
  return bool(name) and name.isupper()


def _fixed_comparison(node: ast.AST) -> bool:
  return any(isinstance(n, ast.Compare) and all(_constant(c) for c in n.comparators)
             for n in ast.walk(node))


def _single_option_checks(function: ast.FunctionDef, fields: set[str],
                          whole: bool = False) -> list[str]:
  """The checks of `function` that read one field of its first argument, nothing else of it
  (passing it on, to `getattr` or a helper, may read any), and compare something with fixed values, as 'field: test'.
  `whole`: the function is one rule (a class's `rules`), judged by every field it reads; else
  each `if` test (each alternative of an `or`) is judged with its body and the tests of the
  `if`s around it."""
  if not function.args.args:
    return []
  holder = function.args.args[0].arg

  def read(node: ast.AST) -> set[str]:
    names, attribute_of = set(), set()
    for n in ast.walk(node):
      if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and \
          n.value.id == holder:
        attribute_of.add(id(n.value))
        names.update({n.attr} & fields)
    if any(isinstance(n, ast.Name) and n.id == holder and id(n) not in attribute_of
           for n in ast.walk(node)):
      names.add('(the whole object)')  # passed on (getattr, a helper): it may read any
    return names

  if whole:
    names = read(function)
    return [f'{names.pop()}: {function.name}'] if len(names) == 1 and \
        _fixed_comparison(function) else []
  found = []

  def visit(node: ast.AST, around: set[str]) -> None:
    if isinstance(node, ast.If):
      tests = node.test.values if isinstance(node.test, ast.BoolOp) and \
          isinstance(node.test.op, ast.Or) else [node.test]
      for test in tests:
        names = read(test) | around | {f for b in node.body for f in read(b)}
        if len(names) == 1 and _fixed_comparison(test):
          found.append(f'{names.pop()}: {ast.unparse(test)}')
      around = around | read(node.test)
    for child in ast.iter_child_nodes(node):
      visit(child, around)

  visit(function, set())
  return found


def _checking_functions(trees: dict[str, ast.Module]) -> list[tuple[str, ast.FunctionDef, bool]]:
  """(file, function, whether it is a rule) of each function that checks an options object:
  those named in a class's `rules` (one rule each) and those given to a program as its
  `check=` (`entry.Program`; any number of checks)."""
  rules, checks = set(), set()
  for node in (n for tree in trees.values() for n in ast.walk(tree)):
    if isinstance(node, ast.Assign) and any(getattr(t, 'id', '') == 'rules'
                                            for t in node.targets):
      rules.update(getattr(e, 'id', '') for e in getattr(node.value, 'elts', ()))
    elif isinstance(node, ast.Call):
      checks.update(k.value.id for k in node.keywords
                    if k.arg == 'check' and isinstance(k.value, ast.Name))
  return [(path, node, node.name in rules) for path, tree in sorted(trees.items())
          for node in ast.walk(tree)
          if isinstance(node, ast.FunctionDef) and node.name in rules | checks]


@dataclasses.dataclass(frozen=True)
class _Views(Options):
  crops: int = option(1, 'Crops.', choices=(1, 3))
  splits: tuple[int, ...] = option((), 'Splits.', choices=(1, 2, 3))
  towers: int = option(-1, 'Towers; -1: one per GPU.', valid=Range(low=-1, excluded=(0,)))


class OptionDomainsTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.trees = project_sources.parsed()
    cls.classes = _options_classes(cls.trees)

  def test_number_choices_hold_for_a_number_and_each_element_of_a_list(self):
    self.assertEqual(_Views(crops=3, splits=(3, 1), towers=2).splits, (3, 1))
    for values, option_name in ((dict(crops=2), 'crops'), (dict(splits=(1, 4)), 'splits'),
                                (dict(splits=(2, 2)), 'splits'), (dict(towers=0), 'towers'),
                                (dict(towers=-2), 'towers')):
      with self.subTest(values):
        with self.assertRaises(OptionsError) as caught:
          _Views(**values)
        self.assertEqual(caught.exception.option, option_name)
    values = flags.FlagValues()
    cli.define_flags(_Views, values)  # number choices: number flags, checked by the options
    values(['program', '--crops=3', '--splits=1,2'])
    self.assertEqual(cli.options_from_flags(_Views, values), _Views(crops=3, splits=(1, 2)))

  def test_the_options_classes_are_found(self):
    for name in ('TrainParams', 'DataSection', 'ClusterSection', 'EvaluateTwoStreamOptions',
                 'ClassifyOptions', 'LocalClusterOptions', 'PrepareOptions',
                 'BenchmarkOptions', 'EmulatorOptions'):
      self.assertIn(name, self.classes)

  def test_no_program_declares_an_options_class(self):
    self.assertEqual(_programs_declaring(self.trees, self.classes), {})

  def test_the_scan_sees_an_options_class_declared_in_a_program(self):
    program = ast.parse('class ToolOptions(Section):\n  pass\n')
    self.assertEqual(_programs_declaring({'tools/tool_main.py': program, **self.trees},
                                         _options_classes({'tools/tool_main.py': program,
                                                           **self.trees})),
                     {'tools/tool_main.py': ['ToolOptions']})

  def test_every_number_option_declares_its_domain(self):
    missing = [f'{path}: {name}.{field}' for name, (path, node) in sorted(self.classes.items())
               for field, annotation, call in _fields(node)
               if annotation in NUMBER_TYPES and
               not DOMAIN_KEYWORDS & {k.arg for k in call.keywords}]
    self.assertEqual(missing, [], 'number options without valid= or choices=')

  def test_no_single_option_check_is_written_by_hand(self):
    fields_of = {name: {f for f, _, _ in _fields(node)} for name, (_, node) in
                 self.classes.items()}
    every_field = set().union(*fields_of.values())
    found = [f'{path}:{function.lineno} {function.name}: {check}'
             for path, function, whole in _checking_functions(self.trees)
             for check in _single_option_checks(function, every_field, whole)]
    self.assertEqual(found, [], 'single-option checks away from their option (declare them '
                     'with valid= or choices= beside it)')

  def test_the_scan_sees_a_check_written_by_hand(self):
    source = ('def rule(p: DataSection):\n'
              '  if p.split not in (1, 2, 3):\n'
              '    return 1\n'
              '  if p.eval_crops != 1 and p.data_source == "synthetic":\n'
              '    return 2\n')
    function = ast.parse(source).body[0]
    fields = {'split', 'eval_crops', 'data_source'}
    self.assertEqual(_single_option_checks(function, fields),
                     ['split: p.split not in (1, 2, 3)'])
    rule = ast.parse('def _official(p: DataSection):\n'
                     '  return None if p.split in SPLITS else Problem("split", "1, 2 or 3")\n')
    self.assertEqual(_single_option_checks(rule.body[0], fields, whole=True),
                     ['split: _official'])
    self.assertEqual(_single_option_checks(function, fields, whole=True), [])  # two rules


if __name__ == '__main__':
  absltest.main()

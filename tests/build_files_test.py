"""Specification: every module's Bazel target and deps (tools/bazel/modules.bzl) match the
sources' imports, so a change reruns exactly the specs that import what it changed; every
spec in tests/BUILD carries one tier tag, and each tier has its test_suite."""

import os
import re
import tempfile

from absl.testing import absltest

from tools import build_files

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIERS = ('unit', 'process', 'slow')  # tests/BUILD: each spec carries exactly one


class BuildFilesTest(absltest.TestCase):

  def test_modules_bzl_matches_the_imports(self):
    with open(os.path.join(ROOT, build_files.OUTPUT), encoding='utf-8') as f:
      current = f.read()
    self.assertTrue(current == build_files.render(build_files.scan(ROOT)),
                    f'{build_files.OUTPUT} is stale: run `bazel run //tools:build_files`')

  def test_a_module_depends_on_what_it_imports_and_runs(self):
    modules = build_files.scan(ROOT)
    # A function-level import, and a module started as `python -m towers.train_main`.
    self.assertIn(':console', build_files.deps_of('command_line.cli', modules))
    self.assertIn('//towers:train_main', build_files.deps_of('towers.cluster.local_cluster_main', modules))
    # `from towers import estimator` needs towers/estimator.py, not the package's __init__.
    self.assertNotIn(':towers', build_files.deps_of('towers.train_main', modules))

  def test_programs_are_named_main_and_libraries_are_not(self):
    self.assertEqual(build_files.misnamed(ROOT), [],
                     'a program (`if __name__ == \'__main__\'`) is <name>_main.py; a library is not')

  def test_a_misnamed_program_or_library_is_named(self):
    with tempfile.TemporaryDirectory() as root:
      for package in build_files.PACKAGES + build_files.HAND_WRITTEN_PACKAGES:
        os.makedirs(os.path.join(root, package), exist_ok=True)
      guard = "if __name__ == '__main__':\n  pass\n"
      files = {'towers/train.py': guard, 'towers/classify_main.py': '', 'towers/train_main.py':
               guard, 'towers/training.py': '', 'tests/some_test.py': guard}
      for path, text in files.items():
        with open(os.path.join(root, path), 'w', encoding='utf-8') as f:
          f.write(text)
      problems = build_files.misnamed(root)
    self.assertLen(problems, 2, problems)
    self.assertStartsWith(problems[0], 'towers/classify_main.py is a library')
    self.assertStartsWith(problems[1], 'towers/train.py runs as a program: name it train_main.py')

  def test_each_program_has_its_py_binary_in_its_build(self):
    for path, text in build_files.generated_files(ROOT).items():
      with open(os.path.join(ROOT, path), encoding='utf-8') as f:
        self.assertTrue(f.read() == text, f'{path} is stale: run `bazel run //tools:build_files`')
    with open(os.path.join(ROOT, 'towers', 'BUILD'), encoding='utf-8') as f:
      self.assertIn('    name = "train",\n    srcs = ["train_main.py"],\n    main = "train_main.py",',
                    f.read())

  def test_every_spec_has_one_tier_and_every_tier_a_suite(self):
    with open(os.path.join(ROOT, 'tests', 'BUILD'), encoding='utf-8') as f:
      build = f.read()
    specs = re.findall(r'^ *"(\w+_test)": dict\((.*?)\),$', build, re.MULTILINE | re.DOTALL)
    files = {name[:-len('.py')] for name in os.listdir(os.path.join(ROOT, 'tests'))
             if name.endswith('_test.py')}
    self.assertEqual({name for name, _ in specs}, files, 'every tests/*_test.py is one entry')
    for name, attrs in specs:
      tags = re.search(r'tags = \[([^\]]*)\]', attrs)
      tiers = set(re.findall(r'"(\w+)"', tags.group(1) if tags else '')) & set(TIERS)
      self.assertEqual(len(tiers), 1, f'{name}: tags must hold one of {", ".join(TIERS)}')
    for tier in TIERS:
      self.assertIn(f'test_suite(name = "{tier}", tags = ["{tier}"])', build,
                    f'the {tier} tier needs its suite, //tests:{tier}')


if __name__ == '__main__':
  absltest.main()

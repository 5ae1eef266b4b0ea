"""Specification: every module's Bazel target and deps (tools/bazel/modules.bzl) match the
sources' imports, so a change reruns exactly the specs that import what it changed."""

import os

from absl.testing import absltest

from tools import build_files

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class BuildFilesTest(absltest.TestCase):

  def test_modules_bzl_matches_the_imports(self):
    with open(os.path.join(ROOT, build_files.OUTPUT), encoding='utf-8') as f:
      current = f.read()
    self.assertTrue(current == build_files.render(build_files.scan(ROOT)),
                    f'{build_files.OUTPUT} is stale: run `bazel run //tools:build_files`')

  def test_a_module_depends_on_what_it_imports_and_runs(self):
    modules = build_files.scan(ROOT)
    # A function-level import, and a module started as `python -m towers.train`.
    self.assertIn(':console', build_files.deps_of('command_line.cli', modules))
    self.assertIn('//towers:train_lib', build_files.deps_of('towers.cluster.local_cluster', modules))
    # `from towers import estimator` needs towers/estimator.py, not the package's __init__.
    self.assertNotIn(':towers', build_files.deps_of('towers.train', modules))


if __name__ == '__main__':
  absltest.main()

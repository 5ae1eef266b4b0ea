"""Specification: docs/flags.md lists the flags of every binary as the binaries define them."""

import dataclasses
import os

from absl.testing import absltest

from docs import flags_doc
from towers import params as params_lib
from towers.params import TrainParams

ROOT = flags_doc.runfiles_root()


class FlagsDocTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    with open(os.path.join(ROOT, flags_doc.OUTPUT)) as f:
      cls.page = f.read()
    cls.build_files = flags_doc.read_build_files(ROOT, [p for p, _ in flags_doc.CONCERNS])

  def test_page_is_what_the_binaries_define(self):
    generated = flags_doc.render(self.build_files)
    self.assertTrue(generated == self.page,
                    f'{flags_doc.OUTPUT} is stale (a flag, default or help text changed, or a '
                    f'binary was added): regenerate it with `{flags_doc.REGENERATE}` and commit '
                    'it')

  def test_every_binary_has_a_section(self):
    labels = [b.label for package, text in self.build_files.items()
              for b in flags_doc.binaries(package, text)]
    self.assertIn('//towers:train', labels)
    for label in labels:
      self.assertIn(f'### `{label}`', self.page)

  def test_every_training_flag_is_listed_with_its_default(self):
    for f in dataclasses.fields(TrainParams):
      self.assertIn(f'| `--{f.name}` | `{flags_doc.render_value(f.default)}` |', self.page)

  def test_the_flags_help_lists_are_marked(self):
    self.assertIn('| `--model_dir` | `/tmp/video_towers` | **In `--help`.** Checkpoints', self.page)
    self.assertIn('| `--shuffle_buffer` | `', self.page)
    self.assertNotIn('**In `--help`.** Training shuffle buffer', self.page)

  def test_training_flags_are_grouped_by_concern(self):
    train = self.page.index('### `//towers:train`')
    for section in params_lib.SECTIONS:
      self.assertGreater(self.page.index(f'**{section.TITLE}**', train), train)

  def test_a_binary_without_options_is_refused(self):
    binary = flags_doc.Binary('//towers:progress', 'command_line.progress')
    with self.assertRaises(flags_doc.FlagsDocError) as caught:
      flags_doc.declared_options(binary)
    self.assertEqual((caught.exception.label, caught.exception.declares_none),
                     ('//towers:progress', True))


if __name__ == '__main__':
  absltest.main()

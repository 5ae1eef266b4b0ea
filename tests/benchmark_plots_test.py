"""Specification: the benchmarks draw their pictures with `--plot=<file>`.

cluster_emulator draws the scaling curve (nodes against share of compute, sync and async)
of the rows it measured, or, with `--rows_from`, of the `emulator_row` events a run
recorded (no network namespaces needed); time_to_accuracy draws its curves after tiny
runs, writes the runs beside the picture, and draws them again with `--results_from`. Each PNG decodes at the plots' size and is not blank; options that cannot work stop
before any work (exit 2, the option named).
"""

import json
import os

import cv2
import numpy as np
from absl.testing import absltest

from benchmarks import plots
from tests import program_runs

WIDTH, HEIGHT = plots.SIZE_INCHES[0] * plots.DPI, plots.SIZE_INCHES[1] * plots.DPI


class BenchmarkPlotsTest(absltest.TestCase):

  def assertPicture(self, path: str) -> None:
    image = cv2.imread(path)
    self.assertIsNotNone(image, path)
    self.assertEqual(image.shape, (HEIGHT, WIDTH, 3))
    self.assertGreater(np.std(image), 10)  # not blank
    self.assertGreater(len(np.unique(image.reshape(-1, 3), axis=0)), 8)  # lines and text

  def test_the_emulator_draws_recorded_rows(self):
    root = self.create_tempdir().full_path
    events = os.path.join(root, 'events.jsonl')
    with open(events, 'w', encoding='utf-8') as f:
      for mode, nodes, share in (('sync', 1, .98), ('sync', 2, .82), ('async', 1, .99),
                                 ('async', 2, .83)):
        f.write(json.dumps({'event': 'emulator_row', 'system': 'ours', 'mode': mode,
                            'nodes': nodes, 'compute_share': share,
                            'model_efficiency': share - .01}) + '\n')
    png = os.path.join(root, 'scaling.png')
    done = program_runs.run('benchmarks.cluster_emulator_main', f'--rows_from={events}',
                            f'--plot={png}')
    self.assertEqual(done.code, 0, done.output())
    self.assertPicture(png)
    refused = program_runs.run('benchmarks.cluster_emulator_main', f'--rows_from={events}')
    self.assertEqual((refused.code, refused.error_options), (2, ['rows_from']),
                     refused.output())
    refused = program_runs.run('benchmarks.cluster_emulator_main', f'--rows_from={png}.none',
                               f'--plot={png}')
    self.assertEqual((refused.code, refused.error_options), (2, ['rows_from']),
                     refused.output())

  def test_time_to_accuracy_draws_its_curves(self):
    root = self.create_tempdir().full_path
    png = os.path.join(root, 'curves.png')
    done = program_runs.run('benchmarks.time_to_accuracy_main', '--towers=1', '--step_limit=2',
                            '--eval_every=1', '--set=num_classes=4,synthetic_eval_examples=16',
                            f'--work_dir={root}', f'--plot={png}', timeout=600)
    self.assertEqual(done.code, 0, done.output())
    self.assertPicture(png)
    with open(os.path.join(root, 'curves.json'), encoding='utf-8') as f:
      runs = json.load(f)
    self.assertEqual([(r['towers'], [s for s, _ in r['curve']]) for r in runs], [(1, [1, 2])])
    # The recorded runs drawn again, without training.
    again = os.path.join(root, 'again.png')
    done = program_runs.run('benchmarks.time_to_accuracy_main',
                            f'--results_from={os.path.join(root, "curves.json")}',
                            f'--plot={again}')
    self.assertEqual(done.code, 0, done.output())
    self.assertPicture(again)
    refused = program_runs.run('benchmarks.time_to_accuracy_main', f'--plot={root}',
                               f'--work_dir={root}')  # a directory
    self.assertEqual((refused.code, refused.error_options), (2, ['plot']), refused.output())
    refused = program_runs.run('benchmarks.time_to_accuracy_main',
                               f'--results_from={os.path.join(root, "curves.json")}')
    self.assertEqual((refused.code, refused.error_options), (2, ['results_from']),
                     refused.output())


if __name__ == '__main__':
  absltest.main()

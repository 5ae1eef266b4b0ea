"""Specification: the benchmark's statistics, table, target lines and trace arithmetic.

Median and min-max come from the repeats; ratios are medians over the model's reference
(and over MirroredStrategy on the same devices for tower rows); each target line says met
or NOT met with the figures.
"""

import tensorflow as tf

from benchmarks import benchmark_report as report
from benchmarks import benchmark_trace

ROWS = [
    report.Row('c3d_small', report.REFERENCE, 1, (100.0, 90.0, 110.0), (0.02, 0.01, 0.03)),
    report.Row('c3d_small', report.TOWERS, 2, (96.0, 97.0, 50.0), (0.025,)),
    report.Row('c3d_small', report.TOWERS, 4, (94.0, 94.0, 94.0)),
    report.Row('c3d_small', report.MIRRORED, 2, (90.0,)),
    report.Row('c3d_small', report.MIRRORED, 4, (95.0,)),
]


class BenchmarkReportTest(tf.test.TestCase):

  def test_median_and_spread_come_from_the_repeats(self):
    self.assertEqual(ROWS[0].median, 100.0)
    self.assertEqual(ROWS[1].median, 96.0)  # one slow repeat does not move the median
    self.assertEqual(ROWS[1].spread, (50.0, 97.0))

  def test_ratios_are_medians_over_reference_and_mirrored(self):
    self.assertAlmostEqual(report.ratio_to_reference(ROWS, ROWS[2]), 0.94)
    self.assertAlmostEqual(report.ratio_to_mirrored(ROWS, ROWS[1]), 96.0 / 90.0)
    self.assertIsNone(report.ratio_to_mirrored(ROWS, ROWS[3]))

  def test_table_has_one_line_per_row_with_its_ratios(self):
    lines = report.format_table(ROWS).splitlines()
    self.assertLen(lines, 2 + len(ROWS))
    self.assertIn('| 96.00 | 50.00-97.00 | 0.960x | 1.067x | 25.0 | 1.250x |', lines[3])
    self.assertIn('| 94.00 | 94.00-94.00 | 0.940x | 0.989x | - | - |', lines[4])

  def test_targets_say_met_or_not_with_every_figure(self):
    missed = report.target_results(ROWS)  # 0.94x the reference at 4 towers, 0.989x mirrored
    self.assertEqual([(t.model, t.versus_mirrored, t.met) for t in missed],
                     [('c3d_small', False, False), ('c3d_small', True, False)])
    self.assertEqual(list(missed[0].ratios), [2, 4])
    self.assertAllClose(list(missed[0].ratios.values()), [0.96, 0.94])
    self.assertAllClose(list(missed[1].ratios.values()), [96.0 / 90.0, 94.0 / 95.0])
    # The report's line of a target: the verdict and every figure.
    self.assertEqual(report.targets(ROWS)[0], 'c3d_small: 2 and 4 towers at least 0.95x the '
                     'one-device reference: NOT met (2 towers 0.960x, 4 towers 0.940x)')
    # Towers as fast as the reference and faster than MirroredStrategy on every row.
    fast = [report.Row('c3d_small', report.REFERENCE, 1, (100.0,)),
            report.Row('c3d_small', report.TOWERS, 2, (100.0,)),
            report.Row('c3d_small', report.TOWERS, 4, (99.0,)),
            report.Row('c3d_small', report.MIRRORED, 2, (90.0,)),
            report.Row('c3d_small', report.MIRRORED, 4, (95.0,))]
    met = report.target_results(fast)
    self.assertLen(met, 2)
    self.assertTrue(all(t.met for t in met), [t.line for t in met])

  def test_busy_time_is_the_union_of_op_intervals(self):
    self.assertEqual(benchmark_trace._busy_micros([(0, 10), (5, 15), (20, 30)]), 25)
    self.assertEqual(benchmark_trace._busy_micros([]), 0)


if __name__ == '__main__':
  tf.test.main()

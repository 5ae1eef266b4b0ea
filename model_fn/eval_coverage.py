"""After each evaluation: how many of the listed videos were evaluated, said out loud.

`EvalCoverageHook(evaluated, listed, strict, eval_steps)` is an evaluation SessionRunHook.
At the end of an evaluation it reads two scalar tensors, the videos evaluated (distinct
`video_index` values seen) and the videos the input's manifest lists, and logs
`evaluation: 26 of 28 listed videos evaluated (92.9%)`. Below 100% the line is a warning
that says why it matters (videos skipped at preparation, records lost to corruption: see
the test manifest and the input_fn's skipped-record warnings); with `strict`
(--strict_eval) it raises `EvalCoverageError` instead, so no metric
computed on part of the eval set is reported as the result. An evaluation of 0 videos is
that error whatever `strict` says.
"""

from __future__ import annotations

import tensorflow as tf
from absl import logging

tf1 = tf.compat.v1


class EvalCoverageError(RuntimeError):
  """An evaluation saw fewer videos than its data lists while --strict_eval was set, or
  none at all: `evaluated` and `listed` videos (`option`: strict_eval when that refused,
  data_dir when nothing was read)."""

  def __init__(self, message: str, evaluated: int, listed: int) -> None:
    super().__init__(message)
    self.evaluated, self.listed = evaluated, listed
    self.option = 'data_dir' if evaluated == 0 else 'strict_eval'


def coverage_line(evaluated: int, listed: int) -> str:
  """`26 of 28 listed videos evaluated (92.9%)`."""
  return (f'{evaluated} of {listed} listed videos evaluated '
          f'({100.0 * evaluated / max(listed, 1):.1f}%)')


class EvalCoverageHook(tf1.train.SessionRunHook):
  """Logs (and with `strict` enforces) evaluated == listed at the end of an evaluation.
  `evaluated`, `listed`: scalar tensors read once in `end`. With `eval_steps` > 0 the
  evaluation is partial on purpose: it is logged, never a warning."""

  def __init__(self, evaluated: tf.Tensor, listed: tf.Tensor, strict: bool,
               eval_steps: int) -> None:
    self._tensors = (evaluated, listed)
    self._strict = strict
    self._eval_steps = eval_steps

  def end(self, session: tf1.Session) -> None:
    evaluated, listed = (int(round(float(v))) for v in session.run(self._tensors))
    line = 'evaluation: ' + coverage_line(evaluated, listed)
    if evaluated == 0:  # no batch at all also leaves `listed` (a mean over batches) at 0
      of_listed = f' of the {listed} listed' if listed else ''
      why = (f'--eval_steps={self._eval_steps} batches held no video\'s every view: raise '
             '--eval_steps or --eval_batch_size (the clips read must hold a video\'s eval_clips '
             'x eval_crops views), or set --eval_steps=0' if self._eval_steps else
             'the input_fn warnings count the damaged records, the test manifest the videos '
             'prepare skipped: fix those and prepare the data again')
      raise EvalCoverageError(f'evaluation: read no video{of_listed}: no metric is computed on '
                              f'zero videos; {why}', evaluated, listed)
    if evaluated >= listed:
      logging.info(line)
    elif self._eval_steps:
      logging.info('%s: eval_steps=%d reads part of the eval set', line, self._eval_steps)
    elif self._strict:
      raise EvalCoverageError(f'{line}: --strict_eval refuses metrics of part of the eval '
                              'set; the input_fn warnings count the damaged records, the '
                              'test manifest the videos prepare skipped: fix those and '
                              'prepare the data again (//data_tools:prepare, same flags)',
                              evaluated, listed)
    else:
      logging.warning('%s: the metrics cover only these; %d were lost (videos prepare or the '
                      'input_fn skipped, damaged records: see the test manifest and the '
                      'input_fn warnings). --strict_eval makes this an error.',
                      line, listed - evaluated)

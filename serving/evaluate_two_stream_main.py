"""Fuses a trained RGB model and a trained Flow model per video and prints one table.

  bazel run //serving:evaluate_two_stream -- \\
    --rgb_model=runs/ucf101_i3d_rgb --rgb_data=data/ucf101/tfrecord \\
    --flow_model=runs/ucf101_i3d_flow --flow_data=data/ucf101/flow_tfrecord

Prints RGB, Flow and Fusion with video-level top-1, top-5 and mean per-class accuracy, and
the classes where fusion helps and hurts most; writes the same as JSON (--json_out) and,
beside it, a confusion-matrix PNG per stream and a per-class CSV with RGB, Flow and Fusion
side by side (`serving/two_stream_outputs.py`). Method: `serving/two_stream.py`.

The standard protocol of UCF101 and HMDB51 (the mean over the three official splits), in
one run: --splits=1,2,3 with `{split}` in the four paths, e.g.
  --rgb_model=runs/hmdb51_rgb_split{split} --rgb_data=data/hmdb51/tfrecord_split{split} ...
prints each split's table, then video top-1 per split and the mean; the JSON holds
{'splits': {k: table}, 'mean': rows}.

Options that cannot work are refused before TensorFlow loads (serving/two_stream_options.py);
the library: serving/evaluate_two_stream.py.
"""

from __future__ import annotations

import os

from command_line import console

console.quiet_native_logs()  # before TensorFlow is imported: it reads the level once

# pylint: disable=wrong-import-position
from command_line import disk_space, entry
from serving.two_stream_options import PATHS, EvaluateTwoStreamOptions, check_options


def run(options: EvaluateTwoStreamOptions) -> None:
  """Evaluates the two streams (`options` passed `check_options`); a model, records or
  paths that disagree are `entry.Refused` (recorded as their own error)."""
  # TensorFlow loads here, once the flags are known good.
  # pylint: disable=import-outside-toplevel
  from serving import saved_model, two_stream
  try:
    _evaluate(options)
  except (two_stream.TwoStreamError, saved_model.ModelError, FileNotFoundError) as e:
    raise entry.Refused(str(e)) from e


def _evaluate(options: EvaluateTwoStreamOptions) -> None:
  """Evaluates the two streams (each split of --splits), prints and writes the tables."""
  # pylint: disable=import-outside-toplevel
  from input_fn import json_files
  from serving import two_stream, two_stream_outputs
  from serving.evaluate_two_stream import check, evaluate
  os.makedirs(os.path.dirname(options.json_out) or '.', exist_ok=True)
  if not options.splits:
    paths = {name: getattr(options, name) for name in PATHS}
    output = evaluate(paths, options, two_stream_outputs.prefix(options.json_out),
                      check(paths, options))
    print(two_stream.format_table(output))
    print(two_stream_outputs.format_fusion_changes(output))
  else:
    runs = {split: {name: getattr(options, name).replace('{split}', str(split))
                    for name in PATHS} for split in options.splits}
    for split, paths in runs.items():  # every split agrees before a model loads
      two_stream.check_agreement(paths, split, options.dataset)
    checked = {split: check(paths, options, split) for split, paths in runs.items()}
    results = {}
    for split, paths in runs.items():  # each once every split's checks have passed
      results[split] = evaluate(paths, options, two_stream_outputs.prefix(options.json_out,
                                                                          split), checked[split])
      print(f'split {split}: ' + two_stream.format_table(results[split]))
      print(two_stream_outputs.format_fusion_changes(results[split]))
    mean = two_stream.mean_over_splits(results)
    print(two_stream.format_splits_table(results, mean))
    output = {'splits': {str(k): v for k, v in results.items()}, 'mean': mean}
  with disk_space.writing(options.json_out, two_stream_outputs.NOTHING_KEPT):
    json_files.write_json(options.json_out, output)
  prefixes = ([two_stream_outputs.prefix(options.json_out, k) for k in options.splits] or
              [two_stream_outputs.prefix(options.json_out)])
  for stale in two_stream_outputs.earlier_files(options.json_out, prefixes):
    os.remove(stale)  # an earlier evaluation's, which would sit beside this one's
  print(f'written to {options.json_out}')


PROGRAM = entry.Program('evaluate_two_stream', run, EvaluateTwoStreamOptions,
                        check=check_options, verbose=True, resumes=False)


if __name__ == '__main__':
  PROGRAM.start()

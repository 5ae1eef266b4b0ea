"""Classifies videos with a trained model and prints the top classes of each.

  bazel run //serving:classify -- --model=runs/demo_ucf101/export/best clip.avi more_clips/
  bazel run //serving:classify -- --model=runs/rgb --flow_model=runs/flow --output=out.csv list.txt

Arguments: video files, frame folders (frame%06d.jpg), list files (.txt: one video per
line) or directories (searched). One line per video: `<video>: <class> <probability> ...`,
highest first; a video that cannot be read is named with its reason (`FAILED`) and the
others go on. --output also writes JSON (.json) or CSV (.csv), whole or not at all. Exit
code 0 when every video was classified, 1 when any failed or --output found its disk full
(one line naming it and its free space), 2 for a wrong option or model. Options that
cannot work are refused before TensorFlow loads. Method: `serving/classifier.py`; options:
`serving/classify_options.py`; what the export carries: `serving/export_info.py`.
"""

from __future__ import annotations

import csv
import io
import json
import os
import sys
from typing import TYPE_CHECKING

from absl import logging as absl_logging

from command_line import console

console.quiet_native_logs()  # before TensorFlow is imported: it reads the level once

# pylint: disable=wrong-import-position
from command_line import cli, disk_space, entry, working_dir
from command_line.console import protocol
from input_fn import json_files
from input_fn.video_lists import DatasetError
from serving.classify_options import ClassifyError, ClassifyOptions, check_options

if TYPE_CHECKING:  # the module itself loads TensorFlow: `run` imports it once flags are good
  from serving.classifier import VideoResult

PROGRESS_FROM = 10  # videos: fewer get no progress line
PROGRESS_EVERY_SECS = 10.0
NOTHING_KEPT = ('no part of it was kept (the results are on standard output above); classify '
                'keeps nothing to resume from: a rerun classifies every video again')


def write_output(path: str, results: list[VideoResult], top_k: int) -> None:
  """Writes `results` as JSON or CSV, by the extension of `path`, whole or not at all
  (`json_files.write_text`): a full disk raises `disk_space.FullDisk` naming `path` and
  saying that nothing of it is kept (classify has no resume)."""
  from serving import classifier  # pylint: disable=import-outside-toplevel
  if path.lower().endswith('.json'):
    text = json.dumps(classifier.to_json(results), indent=1)
  else:
    rows = io.StringIO(newline='')
    csv.writer(rows).writerows(classifier.csv_rows(results, top_k))
    text = rows.getvalue()
  with disk_space.writing(path, NOTHING_KEPT):
    os.makedirs(os.path.dirname(path) or '.', exist_ok=True)
    json_files.write_text(path, text)


class Progress:
  """The progress line on stderr, every PROGRESS_EVERY_SECS, when there are many videos."""

  def __init__(self) -> None:
    self.shown_at = 0.0

  def __call__(self, done: int, total: int, failed: int, seconds: float) -> None:
    if total < PROGRESS_FROM:
      return
    if done == total or seconds - self.shown_at >= PROGRESS_EVERY_SECS:
      self.shown_at = seconds
      from serving import classifier  # pylint: disable=import-outside-toplevel
      print(classifier.progress_text(done, total, failed, seconds), file=sys.stderr,
            flush=True)


def run(options: ClassifyOptions, arguments: list[str]) -> int:
  """Classifies the videos named by `arguments` (`options` passed `check_options`); 0 when
  every one was, 1 when any failed."""
  if not cli.options_from_flags(console.ConsoleOptions).verbose:
    absl_logging.set_verbosity(absl_logging.WARNING)  # the results are the output
  videos = [working_dir.user_path(v) for v in arguments]
  if not videos:
    raise entry.Refused('give the videos to classify: files, frame folders, list files or '
                        'directories, after the flags')
  # TensorFlow loads here, once the flags and arguments are known good.
  from serving import classifier  # pylint: disable=import-outside-toplevel
  loaded = classifier.load(options.model, options.flow_model, options.flow_weight,
                           options.dataset)
  for stream in loaded.streams:
    if not stream.described:
      print(f'classify: warning: {stream.model.export} carries no class names nor frame '
            'size (exported before they were): classes are shown as class_<i>, frames '
            'are used as decoded', file=sys.stderr)
    elif not stream.frame_short_side and not stream.short_side_range:
      print(f'classify: warning: {stream.model.export} was trained on frames as decoded and '
            'does not record their size: videos are read as decoded, which is the scale it '
            'learnt only if they are the size of its training videos', file=sys.stderr)
  clips = options.clips or classifier.default_clips(loaded)
  results = classifier.classify(videos, loaded, clips, options.crops,
                                options.top_k, batch_size=options.batch_size,
                                progress=Progress())
  if not results:
    raise entry.Refused(f'no video found in {" ".join(arguments)}')
  for result in results:
    print(classifier.result_line(result), flush=True)
  failed = [r for r in results if not r.ok]
  streams = '+'.join(s.stream for s in loaded.streams)
  exports = ' and '.join(s.model.export for s in loaded.streams)
  print(f'classify: {len(results) - len(failed)} of {len(results)} videos classified '
        f'({streams}, {protocol(clips, options.crops)} each) by {exports}; {len(failed)} '
        'failed' + (f' (first: {failed[0].video})' if failed else ''), file=sys.stderr)
  if options.output:
    write_output(options.output, results, options.top_k)
    print(f'written to {options.output}', file=sys.stderr)
  return 1 if failed else 0


PROGRAM = entry.Program('classify', run, ClassifyOptions, check=check_options,
                        refused=(ClassifyError, DatasetError), arguments=True, verbose=True,
                        resumes=False)


if __name__ == '__main__':
  PROGRAM.start()

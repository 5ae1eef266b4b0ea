"""Converts a split (raw videos, frame folders or flow) into sharded TFRecords.

  bazel run //data_tools:prepare -- --source=videos --data_dir=/data/UCF101 --out=/data/ucf101_tfr
  bazel run //data_tools:prepare -- --source=flow --data_dir=/data/UCF101 --out=/data/ucf101_flow
  bazel run //data_tools:prepare -- --dataset=hmdb51 --split=2 --data_dir=/data/hmdb51 --out=/data/hmdb51_2

--dataset picks the split files (`input_fn/datasets.py`): UCF101 (default), HMDB51 in its
official layout, or a labelled list (MMAction2 annotation files, --train_list, --test_list,
--class_names). The manifest records the dataset and counts HMDB51's id-0 videos.

--source=flow converts the TV-L1 flow of //data_tools:extract_flow (`tvl1_flow/{u,v}/<video>/`,
or the rows of I3D_Finetune's `flow.txt`) into flow records (u and v JPEGs per frame,
`data_tools/flow_records.py`); same split rules, shards, manifest and resumption. A
--flow_dir whose extraction was split over shards not all finished (or not merged) stops
before any work, naming the shards missing.
Frame and flow files may be in other projects' layouts (TSN's `<video>/img_00001.jpg`,
denseflow's `<video>/flow_x_00001.jpg`, ...): detected, or named with --layout
(`data_tools/layouts.py`); files in no known layout stop before any work.

A folder named by a flag wins over a list found in data_dir (--frames_dir over
data_dir/rgb.txt, --flow_dir over data_dir/flow.txt); the manifest's `source_paths` and
`layout` are what was read. A subset that ends with no record stops the run (`EmptySubset`,
exit 2) after its manifest is written.

One record per video (schema: `input_fn/records.py`): its frames as JPEG bytes (videos are
decoded with OpenCV and resized so the short side is --short_side, default 256; frame
folders are copied, re-encoded only if they need resizing), label, name, frame count and its
index in the split list. Writes `<out>/{train,test}-SSSSS-of-NNNNN.tfrecord` and
`<out>/{train,test}.manifest.json`, the table of contents (`input_fn/manifest.py`: source,
settings, every shard with its record count and videos, every skipped input with its
reason), and prints a summary line per subset whose numbers add up: records + skipped =
listed videos. Its plan (shards per subset, those already done, videos to convert) is also
a `prepare_plan` status event (`command_line/status_file.py`).

* One dataset per directory: --out holding another dataset (other source, split or
  settings) stops with the differences named; --overwrite replaces it, stale shards included.
  Shards of this dataset that the new manifest does not list are removed.
* All cores: shards are converted by a process pool (--workers, default all CPUs).
* Progress: videos done, rate and ETA on stderr.
* Resumable and idempotent: a shard is written to a temporary file and renamed when
  complete, then described in `<out>/.shards/<shard>.json` with a fingerprint of its inputs,
  their identity on disk (size and mtime of each video file or frame folder) and the
  settings. A rerun keeps every finished shard whose fingerprint matches and converts only
  the rest, so an interrupted run resumed gives the same files as an uninterrupted one, a
  rerun of a finished preparation changes nothing, and a changed or repaired video is
  converted again.
* Bad input (unreadable, truncated or empty video, missing file/folder/frames, malformed
  list line, unknown class, label out of range) is skipped and reported; --strict stops at
  the first one with an error naming the file and line.

The library: data_tools/prepare.py.
"""

from __future__ import annotations

from command_line import entry
from data_tools.prepare import PrepareOptions, PrepareError, check_options, prepare
from input_fn import datasets
from input_fn.video_lists import InputError


def _run(config: PrepareOptions) -> None:
  try:
    prepare(config)
  except InputError as e:
    raise entry.Failed(f'--strict: {e}') from None


PROGRAM = entry.Program('prepare', _run, PrepareOptions, check=check_options,
                        refused=(PrepareError, FileNotFoundError, datasets.DatasetError),
                        answers_sigterm=True)


if __name__ == '__main__':
  PROGRAM.start()

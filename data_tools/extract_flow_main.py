"""Extracts TV-L1 optical flow from raw UCF101 videos, in the community release's layout.

  bazel run //data_tools:extract_flow -- --data_dir=data/ucf101/UCF101

Reads every `<videos_dir>/<Class>/v_<Class>_gGG_cCC.avi`, decodes it (short side resized
to --short_side, like //data_tools:prepare), converts the frames to grayscale and writes
`<out>/{u,v}/<video>/frame%06d.jpg` (frame t: the flow from frame t to t+1; see
`input_fn/flow.py` for the 8-bit coding) under the video's canonical name
(`ucf101.canonical_name`: the class spelled as in classInd.txt). Also writes:

* `<out>/flow.manifest.json`: the settings, videos found / with flow / skipped (each with its
  reason and kind, as prepare reports them).
* `<out>/flow.txt` (when classInd.txt is found): I3D_Finetune's list,
  `<video> {:s}/<video> <flow frames> <label0>` (paths relative to the list), read by
  `//data_tools:prepare --source=flow --flow_dir=<out>`. Nothing is written outside `<out>`.
* `<out>/.flow_sources.jsonl`: per video, the identity of the .avi its flow was computed
  from (size, mtime) and the settings.

* Backends (--backend): `tensorflow`, TV-L1 ported to TensorFlow (`data_tools/tvl1.py`),
  the frames of a video in batches of --tvl1_batch pairs, on the GPU; the default when
  TensorFlow sees a GPU. `opencv`: OpenCV's DualTVL1, one process per core (--workers), each
  single-threaded; the default on CPU, where it is faster per core (docs/input.md). Both write
  the same layout and records; their stored codes agree to within one gray level on >99% of
  the pixels (docs/input.md).
* Split over nodes (--shard/--num_shards, or a Slurm array task's SLURM_ARRAY_TASK_ID and
  SLURM_ARRAY_TASK_COUNT): each shard computes a stable share of the videos balanced by
  frames, and many may write one `<out>` at once (`input_fn/flow_shards.py`); the last to
  finish, or any later run without a split, writes the manifest, flow.txt and the sources
  record whole. Each shard records its settings and backend: one whose settings differ
  from another's in that `<out>` stops (one line naming them, exit 2), at its start or at
  the merge. --shard and --num_shards are never negative (-1 and 0: not given); a split
  (above 1 shard) without --shard or SLURM_ARRAY_TASK_ID is refused naming --shard.
* Progress: videos done, videos/s, flow frames/s and ETA (`command_line/progress.py`); the
  summary gives flow frames/s per core (opencv) or in all (tensorflow). The plan (videos
  found, already done, to compute, changed) and what was computed are also `flow_plan` and
  `flow_computed` status events (`command_line/status_file.py`).
* Resumable: a video's u and v folders are renamed into place only when complete, then its
  source identity is recorded (with the files and bytes written); a rerun skips every video
  whose flow is there as written and whose .avi is the one recorded, and computes the rest:
  missing ones, replaced or edited videos (counted as changed), and folders that lost,
  emptied or cut a frame since (u and v of other lengths, for records without what was
  written). Flow without a record (an earlier version of this tool) is kept
  when it is newer than its video, and counted. A rerun into an
  `<out>` extracted with other settings stops with one line (flow of two settings is never
  mixed).
* Options are checked before any work (one line, exit 2): TV-L1 needs scales >= 1,
  warps >= 1 and an epsilon > 0.
* Bad videos (unreadable, empty, truncated, fewer than 2 frames, badly named) are skipped,
  counted and listed; --strict stops at the first one (one line, exit 1).

The library: data_tools/extract_flow.py.
"""

from __future__ import annotations

from command_line import entry
from data_tools.extract_flow import (ExtractFlowOptions, NoFlow, OptionsError, SettingsMismatch,
                                     check_options, extract)
from input_fn.video_lists import DatasetError, InputError


def _run(options: ExtractFlowOptions) -> None:
  try:
    extract(options)
  except InputError as e:
    raise entry.Failed(f'--strict: {e}') from None
  except NoFlow as e:
    raise entry.Failed(str(e)) from None


PROGRAM = entry.Program('extract_flow', _run, ExtractFlowOptions, check=check_options,
                        refused=(OptionsError, SettingsMismatch, FileNotFoundError, DatasetError,
                                 ImportError), answers_sigterm=True)


if __name__ == '__main__':
  PROGRAM.start()

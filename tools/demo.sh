#!/usr/bin/env bash
# The built-in demo, end to end: synthetic UCF101 (.avi files and the official split files)
# -> sharded TFRecords (//input_fn:prepare) -> two towers (//towers:train, demo_ucf101.flags).
# Each step is skipped when its output is already there. Extra arguments go to the trainer.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
data=runs/synthetic_ucf101
if [ ! -f "$data/videos/.make_synthetic_ucf101.json" ]; then
  bazel run //input_fn:make_synthetic_ucf101 -- --out="$data/videos"
fi
# Idempotent and resumable: finished shards are kept.
bazel run //input_fn:prepare -- --source=videos --data_dir="$data/videos" \
  --out="$data/tfrecord" --short_side=0
bazel run //towers:train -- --flagfile=towers/demo_ucf101.flags "$@"

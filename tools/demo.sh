#!/usr/bin/env bash
# The built-in demo, end to end: synthetic UCF101 (.avi files and the official split files)
# -> sharded TFRecords (//data_tools:prepare) -> two towers (//towers:train, demo_ucf101.flags).
# Each step is skipped when its output is already there. Extra arguments go to the trainer;
# --verbose also shows Bazel's build messages and TensorFlow's own logs. Prints its elapsed
# time at the end.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
started=$SECONDS
trap 'status=$?; echo "demo: $([ $status -eq 0 ] && echo finished || echo FAILED) after $((SECONDS - started)) s"' EXIT
bazel_quiet=(--noshow_progress --ui_event_filters=-info --show_result=0)
for arg in "$@"; do
  if [ "$arg" = --verbose ]; then bazel_quiet=(); fi
done
data=runs/synthetic_ucf101
if [ ! -f "$data/videos/.make_synthetic_ucf101.json" ]; then
  bazel run "${bazel_quiet[@]}" //data_tools:make_synthetic_ucf101 -- --out="$data/videos"
fi
# Idempotent and resumable: finished shards are kept.
bazel run "${bazel_quiet[@]}" //data_tools:prepare -- --source=videos \
  --data_dir="$data/videos" --out="$data/tfrecord" --short_side=0
bazel run "${bazel_quiet[@]}" //towers:train -- --flagfile=towers/demo_ucf101.flags "$@"

#!/usr/bin/env bash
# The two-stream demo, end to end, in the order of the real recipe: synthetic UCF101 (.avi
# files whose 6 classes differ only in motion) -> TV-L1 flow (//data_tools:extract_flow) ->
# RGB and flow TFRecords (//data_tools:prepare) -> train the RGB and the Flow stream
# (//towers:train, demo_ucf101.flags) -> fuse per video (//serving:evaluate_two_stream).
# Every step is skipped or resumed when its output is already there. Extra arguments go to
# both trainings; --verbose also shows Bazel's build messages and TensorFlow's own logs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
start=$SECONDS
bazel_quiet=(--noshow_progress --ui_event_filters=-info --show_result=0)
evaluate_verbose=()
for arg in "$@"; do
  if [ "$arg" = --verbose ]; then bazel_quiet=(); evaluate_verbose=(--verbose); fi
done
data=runs/synthetic_ucf101
runs=runs/demo_two_stream
if [ ! -f "$data/videos/.make_synthetic_ucf101.json" ]; then
  bazel run "${bazel_quiet[@]}" //data_tools:make_synthetic_ucf101 -- --out="$data/videos" --write_flow
else
  # Idempotent: computes only the videos without flow (e.g. a dataset made by tools/demo.sh).
  # Same settings as make_synthetic_ucf101's SYNTHETIC_FLOW (a mismatch stops with a message).
  bazel run "${bazel_quiet[@]}" //data_tools:extract_flow -- --data_dir="$data/videos" \
    --short_side=0 --tvl1_scales=3 --tvl1_warps=3 --tvl1_epsilon=0.05
fi
bazel run "${bazel_quiet[@]}" //data_tools:prepare -- --source=videos --data_dir="$data/videos" \
  --out="$data/tfrecord" --short_side=0
bazel run "${bazel_quiet[@]}" //data_tools:prepare -- --source=flow --data_dir="$data/videos" \
  --out="$data/flow_tfrecord" --short_side=0
bazel run "${bazel_quiet[@]}" //towers:train -- --flagfile=towers/demo_ucf101.flags --stream=rgb \
  --data_dir="$data/tfrecord" --model_dir="$runs/rgb" "$@"
bazel run "${bazel_quiet[@]}" //towers:train -- --flagfile=towers/demo_ucf101.flags --stream=flow \
  --data_dir="$data/flow_tfrecord" --model_dir="$runs/flow" "$@"
bazel run "${bazel_quiet[@]}" //serving:evaluate_two_stream -- --rgb_model="$runs/rgb" --rgb_data="$data/tfrecord" \
  --flow_model="$runs/flow" --flow_data="$data/flow_tfrecord" --eval_clips=3 \
  --json_out="$runs/two_stream.json" "${evaluate_verbose[@]}"
echo "demo_two_stream: done in $((SECONDS - start)) s"

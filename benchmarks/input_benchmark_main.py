"""Input throughput, side by side: the TFRecord pipeline against a PIL py_func loader.

  bazel run //benchmarks:input_benchmark [-- --seconds=30 --clip_frames=64 --crop_size=224]

Generates its own data in a temporary directory (synthetic UCF101 videos at UCF101's
320x240, prepared with --short_side=256 like the real data: 341x256 JPEG frames, plus the
same JPEGs as jpegs_256 frame folders), then measures training clips per second and CPU
seconds per clip (the process's CPU time over the clips delivered) at the I3D recipe's clip
size by default (64 frames, 224x224 crop, batch 6) of:

* tfrecord pipeline: `input_fn/pipeline.py` as `input_fn/factory.py` sets it up for the
  Estimator (parallel reads, decode_and_crop_jpeg of the used frames, batches of
  uint8 clips that the tower model_fn scales to [-1, 1] on each tower's device).
* PIL loader: I3D_Finetune's `Video_3D.get_frames` approach in a
  `tf.compat.v1.py_func` per clip (parallel map): PIL opens and decodes every frame of the
  clip, the short side is resized to 256 when it is not already, one random crop and one
  random flip for the whole clip, `np.asarray` per frame; batches of uint8 clips, the same
  output as ours. Needs Pillow, which only this benchmark uses
  (`.venv/bin/pip install Pillow`).
* OpenCV py_func: the same, decoding with cv2.imread (the baseline written here before).
* direct OpenCV (frames): `input_fn/direct.py` (OpenCV in a Python generator; float clips).
* tfrecord (flow): the same pipeline with --stream=flow on flow records (`prepare
  --source=flow`), 2-channel clips, against its own decode limit: two grayscale JPEG planes
  (u, v) per frame. The planes hold the grayscale of the RGB frames, not TV-L1 output (TV-L1
  of 341x256 frames takes seconds per frame on this CPU): the same sizes, so the same decode
  work per plane as real flow of that size, measured in its own interleaved rounds.
* decode limit: full-frame JPEG decodes per second on one core (cv2.imdecode, one thread)
  x cores / frames per clip: a pipeline that decodes every used frame whole and does nothing
  else could reach this on this machine.
* TFRecord stages (with --profile): the pipeline cut after each stage, so the differences
  in CPU per clip say where its CPU goes: read + parse, + decode of the crop windows,
  + flip and label check, + skipped-record count, shuffle and batch (= what the Estimator
  gets), + float scaling (what the pipeline gives other callers by default).

Each route runs in `rounds` interleaved rounds (a fresh iterator each, so no other route's
threads run meanwhile); the median round counts. Prints a table and whether the targets
"TFRecord >= 3x the PIL loader" and "TFRecord >= 90% of the decode limit" are met, by
clips/s and by CPU time per clip (the fair measure on a shared machine), and the ceiling
that the decode cost puts on the first: PIL loader CPU per clip / bare decode CPU per
clip, the most any route that decodes every frame of the clip could reach.
Not a test: numbers depend on the machine and its load.

The library: benchmarks/input_benchmark.py.
"""

from __future__ import annotations

from benchmarks.input_benchmark import InputBenchmarkOptions, options_problem, run
from command_line import entry


PROGRAM = entry.Program('input_benchmark', lambda options: print(run(options)),
                        InputBenchmarkOptions, check=options_problem, verbose=True)


if __name__ == '__main__':
  PROGRAM.start()

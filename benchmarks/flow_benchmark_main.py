"""TV-L1 flow, side by side: OpenCV's DualTVL1 against its TensorFlow port (data_tools/tvl1.py).

  bazel run //benchmarks:flow_benchmark [-- --pairs=4 --batch=4 --width=341 --height=256]

Same real frames for both (the UCF101 clip ../shared/i3d/v_CricketShot_g04_c01_rgb.gif,
in gray as extract_flow makes them, at --width x --height: 341x256 by default, resized
from the clip's own 224x224; `--pairs` pairs spread over the clip), same settings (OpenCV's
defaults). Prints, naming the frame size:

* throughput: frame pairs per second (wall clock) and per CPU-second (the process's CPU
  time, all threads), OpenCV on one thread (extract_flow runs one process per core) and
  TensorFlow on its device (the first GPU when TensorFlow sees one, else the CPU with all
  cores) in batches of --batch pairs; TensorFlow's first call (building the graph) is
  excluded, timed on its own;
* agreement of the two backends, before encoding: the mean end-point difference (px) of
  their float flow; and as stored: the 8-bit codes (input_fn/flow.py's coding) in the JPEGs
  extract_flow writes, decoded as prepare reads them: the share within one gray level and
  the largest difference;
* accuracy against ground truth: a real frame shifted by a known sub-pixel motion (Keys
  cubic resampling of the frame, so the true flow is that motion at every pixel), mean
  end-point error of each backend over the pixels at least 16 px from the border.

The library: benchmarks/flow_benchmark.py.
"""

from __future__ import annotations

from benchmarks.flow_benchmark import FlowBenchmarkOptions, options_problem, run
from command_line import entry


PROGRAM = entry.Program('flow_benchmark', lambda options: print(run(options)),
                        FlowBenchmarkOptions, check=options_problem)


if __name__ == '__main__':
  PROGRAM.start()

"""Writes a small synthetic UCF101 or HMDB51: real .avi files and the official split files.

  bazel run //data_tools:make_synthetic_ucf101 -- --out=/tmp/ucf_synth --classes=6
  bazel run //data_tools:make_synthetic_ucf101 -- --out=/tmp/hmdb_synth --layout=hmdb51

Layout (exactly the release's):
  <out>/UCF-101/<Class>/v_<Class>_gGG_cCC.avi     MJPG AVI (written and read by OpenCV)
  <out>/ucfTrainTestlist/classInd.txt             "1 MoveRightSpeed1" (CRLF)
  <out>/ucfTrainTestlist/trainlist0N.txt          "<Class>/v_..._g08_c01.avi 1" (CRLF)
  <out>/ucfTrainTestlist/testlist0N.txt           "<Class>/v_..._g01_c01.avi" (CRLF)
  with --write_frames also <out>/jpegs_256/<video>/frame%06d.jpg and <out>/rgb.txt
  ("<video> jpegs_256/<video> <nframes> <label0>").
  with --write_flow also <out>/tvl1_flow/{u,v}/<video>/frame%06d.jpg and
  <out>/tvl1_flow/flow.txt, computed from the .avi files by the TV-L1 extractor
  (//data_tools:extract_flow) with SYNTHETIC_FLOW settings.

--layout=hmdb51 writes HMDB51's official layout instead (`input_fn/datasets.py`):
  <out>/hmdb51_org/<class>/<title>_<class>_u_nm_np1_fr_goo_<i>.avi   lower-case classes
      (move_down_speed1, move_up_speed1, move_right_speed1, ...: vertical motions first, and
      alphabetical order is not the order written), titles
      with the characters real names carry: # & ( ) ! ; '
  <out>/testTrainMulti_7030_splits/<class>_test_split<k>.txt, k = 1..3: "<video>.avi <id> "
      (trailing space as in the release); per split 60% of a class's videos id 1 (train),
      30% id 2 (test), 10% id 0 (neither), each split another draw.
  with --write_frames <out>/rawframes/<class>/<video>/img_%05d.jpg (MMAction2's layout);
  with --write_flow <out>/tvl1_flow/ by //data_tools:extract_flow --dataset=hmdb51.

The directory also gets `<out>/.make_synthetic_ucf101.json` (the options). A non-empty
--out without it (e.g. a real UCF101 root) is refused: nothing there is overwritten. A
directory this tool wrote is replaced.

25 groups per class; split N puts groups 7(N-1)+1 .. 7N in the test list (split 1: 01-07).
Classes differ only in motion: every video shows a random textured square on a random
textured background, starting at a random place and moving with wrap-around; the class sets
its direction (8 directions) and speed. Any single frame has the same distribution in every
class, so telling classes apart needs time.

The library: data_tools/make_synthetic_ucf101.py.
"""

from __future__ import annotations

import dataclasses

from command_line import entry
from data_tools.make_synthetic_ucf101 import (SyntheticError, SyntheticOptions, check_options,
                                              make_dataset)


def _run(options: SyntheticOptions) -> None:
  settings = {k: v for k, v in dataclasses.asdict(options).items() if k != 'out'}
  summary = make_dataset(options.out, **settings)
  print(f'make_synthetic_ucf101: wrote {summary["videos"]} videos of '
        f'{len(summary["classes"])} classes to {options.out}')


PROGRAM = entry.Program('make_synthetic_ucf101', _run, SyntheticOptions,
                        check=check_options, refused=(SyntheticError,))


if __name__ == '__main__':
  PROGRAM.start()

"""Color-coded previews of extracted flow, to look at without writing code.

  bazel run //data_tools:flow_preview -- --flow_dir=data/ucf101/UCF101/tvl1_flow \
      --videos=v_CricketShot_g04_c01 --out=previews

Writes `<out>/<video>/flow_NNNNNN.png`, --frames evenly spaced flow frames of each video, in
the Middlebury colors (the library: data_tools/flow_preview.py). Exit codes: 0 written; 2
refused before any work (a missing option, a video without flow: one line naming them);
1 a flow frame missing or undecodable (one line naming it).
"""

from __future__ import annotations

from command_line import entry
from command_line.options import OptionsError
from data_tools.flow_preview import FlowPreviewOptions, check_options, preview


def _run(options: FlowPreviewOptions) -> None:
  written = preview(options)
  print(f'flow_preview: {len(written)} PNG frames of {len(set(options.videos))} videos in '
        f'{options.out}')


PROGRAM = entry.Program('flow_preview', _run, FlowPreviewOptions, check=check_options,
                        refused=(OptionsError,))


if __name__ == '__main__':
  PROGRAM.start()

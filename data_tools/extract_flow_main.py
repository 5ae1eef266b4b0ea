"""Extracts TV-L1 optical flow from raw UCF101 videos, in the community release's layout.

  bazel run //data_tools:extract_flow -- --data_dir=data/ucf101/UCF101

The extraction: data_tools/extract_flow.py; a video that cannot be read under --strict
fails the run (exit 1).
"""

from __future__ import annotations

from command_line import entry
from data_tools.extract_flow import (ExtractFlowOptions, OptionsError, SettingsMismatch,
                                     check_options, extract)
from input_fn.ucf101 import InputError


def _run(options: ExtractFlowOptions) -> None:
  try:
    extract(options)
  except InputError as e:
    raise entry.Failed(f'--strict: {e}') from None


PROGRAM = entry.Program('extract_flow', _run, ExtractFlowOptions, check=check_options,
                        refused=(OptionsError, SettingsMismatch, FileNotFoundError,
                                 ImportError))


if __name__ == '__main__':
  PROGRAM.start()

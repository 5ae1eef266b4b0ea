"""Writes a small synthetic UCF101 or HMDB51: real .avi files and the official split files.

  bazel run //data_tools:make_synthetic_ucf101 -- --out=/tmp/ucf_synth --classes=6

The dataset: data_tools/make_synthetic_ucf101.py; prints one summary line.
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

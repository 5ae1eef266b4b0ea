"""Converts a split (raw videos, frame folders or flow) into sharded TFRecords.

  bazel run //data_tools:prepare -- --source=videos --data_dir=/data/UCF101 --out=/data/ucf101_tfr

The conversion: data_tools/prepare.py; a video that cannot be read under --strict fails
the run (exit 1).
"""

from __future__ import annotations

from command_line import entry
from data_tools.prepare import PrepareConfig, PrepareError, check_config, prepare
from input_fn import datasets
from input_fn.ucf101 import InputError


def _run(config: PrepareConfig) -> None:
  try:
    prepare(config)
  except InputError as e:
    raise entry.Failed(f'--strict: {e}') from None


PROGRAM = entry.Program('prepare', _run, PrepareConfig, check=check_config,
                        refused=(PrepareError, FileNotFoundError, datasets.DatasetError))


if __name__ == '__main__':
  PROGRAM.start()

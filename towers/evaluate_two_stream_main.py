"""`bazel run //towers:evaluate_two_stream`: fuses an RGB and a Flow model per video and prints
one table (towers/evaluate_two_stream.py)."""

from __future__ import annotations

from command_line import entry
from towers import two_stream
from towers.evaluate_two_stream import EvaluateTwoStreamOptions, check_options, run


PROGRAM = entry.Program('evaluate_two_stream', run, EvaluateTwoStreamOptions,
                        check=check_options,
                        refused=(two_stream.TwoStreamError, FileNotFoundError), verbose=True)


if __name__ == '__main__':
  PROGRAM.start()

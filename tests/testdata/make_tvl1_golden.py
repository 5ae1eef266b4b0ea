"""Writes tvl1_golden.npz: real frames and the TV-L1 flow data_tools/tvl1.py gave them.

The frames are three pairs of the real UCF101 clip ../shared/i3d/v_CricketShot_g04_c01_rgb.gif
(frames 10-11, 40-41, 60-61; DeepMind's kinetics-i3d sample), gray and resized to 64x48 as
extract_flow makes them. The flow is TV-L1 with OpenCV's default parameters, the three pairs
in one batch, without XLA, once per state of TensorFlow's oneDNN CPU kernels (their sums
round differently): `flow_onednn_off` and `flow_onednn_on`; each run writes its own. The stored file was made by the loop that checked its stop rule
every inner iteration (the code of commit 5af06e7); the loop that checks it every few
iterations must give the same bits (tests/tvl1_test.py).

Regenerate (from the repository root; needs ../shared/i3d/):

  TF_ENABLE_ONEDNN_OPTS=0 PYTHONPATH=. .venv/bin/python3 tests/testdata/make_tvl1_golden.py
  TF_ENABLE_ONEDNN_OPTS=1 PYTHONPATH=. .venv/bin/python3 tests/testdata/make_tvl1_golden.py
"""

from __future__ import annotations

import os

import numpy as np
from tensorflow.python.util import _pywrap_util_port

from data_tools import tvl1
from tests.tvl1_test import real_gray_frames

FIRST_FRAMES = (10, 40, 60)
WIDTH, HEIGHT = 64, 48
PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'tvl1_golden.npz')


def flow_key() -> str:
  """The stored flow of this process's TensorFlow: 'flow_onednn_on' or 'flow_onednn_off'."""
  return f'flow_onednn_{"on" if _pywrap_util_port.IsMklEnabled() else "off"}'


def main() -> None:
  gray = real_gray_frames([i + d for i in FIRST_FRAMES for d in (0, 1)], WIDTH, HEIGHT)
  first, second = gray[0::2], gray[1::2]
  flow = tvl1.Tvl1(HEIGHT, WIDTH).flow(first.astype(np.float32), second.astype(np.float32))
  stored = dict(np.load(PATH)) if os.path.exists(PATH) else {}
  stored.pop('flow', None)
  stored.update(first=first, second=second, **{flow_key(): flow.numpy()})
  np.savez_compressed(PATH, **stored)


if __name__ == '__main__':
  main()

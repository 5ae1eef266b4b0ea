"""extract_flow's TensorFlow backend: a video's frame pairs through `data_tools/tvl1.py` in
batches, coded to 8 bits exactly as the OpenCV backend codes them (`input_fn/flow.py`).

One graph per frame size (built on first use, a few seconds); frames of one video go
through it `batch` pairs at a time, on the first GPU when TensorFlow sees one, else on the
CPU with all its cores.
"""

from __future__ import annotations

import numpy as np

from data_tools import tvl1
from input_fn import flow


def gpu_visible() -> bool:
  """True when TensorFlow sees a GPU (imports TensorFlow)."""
  import tensorflow as tf
  return bool(tf.config.list_physical_devices('GPU'))


def parameters(settings: flow.Tvl1Settings) -> tvl1.Tvl1Parameters:
  """The TV-L1 parameters of `settings` (the rest at OpenCV's defaults, as `flow.tvl1`)."""
  return tvl1.Tvl1Parameters(scales=settings.scales, warps=settings.warps,
                             epsilon=settings.epsilon)


class TensorflowFlow:
  """`video_flow(frames_gray)`: uint8 [T, H, W] -> uint8 codes [T-1, H, W, 2], like
  `flow.video_flow` with OpenCV's solver."""

  def __init__(self, settings: flow.Tvl1Settings, batch: int, xla: bool | None = None):
    """`xla`: compile with XLA; None: where TensorFlow sees a GPU (fused, the iterations
    move ~13x fewer bytes: benchmarks/flow_benchmark.py), not on CPU (slower there)."""
    if batch < 1:
      raise ValueError(f'batch must be >= 1, got {batch}')
    self._parameters = parameters(settings)
    self._batch = batch
    self._xla = gpu_visible() if xla is None else xla
    self._graphs: dict[tuple[int, int], tvl1.Tvl1] = {}

  def _graph(self, height: int, width: int) -> tvl1.Tvl1:
    if (height, width) not in self._graphs:
      self._graphs[height, width] = tvl1.Tvl1(height, width, self._parameters,
                                                  jit_compile=self._xla)
    return self._graphs[height, width]

  def pairs_flow(self, first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Gray [N, H, W] pairs -> float32 displacements [N, H, W, 2] in pixels."""
    graph = self._graph(*first.shape[1:])
    parts = []
    for start in range(0, len(first), self._batch):
      end = start + self._batch
      parts.append(graph.flow(first[start:end].astype(np.float32),
                              second[start:end].astype(np.float32)).numpy())
    return np.concatenate(parts)

  def video_flow(self, frames_gray: np.ndarray) -> np.ndarray:
    if len(frames_gray) < 2:
      raise ValueError(f'flow needs at least 2 frames, got {len(frames_gray)}')
    return flow.to_uint8(self.pairs_flow(frames_gray[:-1], frames_gray[1:]))

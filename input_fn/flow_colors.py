"""Optical flow as color: the Middlebury color wheel (numpy only).

    flow_to_rgb(u, v, max_magnitude=None) -> uint8 RGB [..., H, W, 3]

The color code of Baker et al., "A Database and Evaluation Methodology for Optical Flow"
(ICCV 2007), as Daniel Scharstein's C++ `colorcode.cpp` of the Middlebury flow code draws it:
the direction of a displacement (u right, v down) is the hue, read from a wheel of 55 colors
(red, yellow, green, cyan, blue, magenta and back: 15, 6, 4, 11, 13 and 6 steps), and its
length the saturation, from white (no motion) to the full color at `max_magnitude`; longer
displacements are the full color darkened to 75%. `max_magnitude` None scales by the
largest displacement of the whole input, as the Middlebury code scales each flow field, so
one call over a clip's frames keeps their colors comparable.
"""

from __future__ import annotations

import numpy as np

# Steps per segment of the wheel: red-yellow, yellow-green, green-cyan, cyan-blue,
# blue-magenta, magenta-red.
SEGMENTS = (15, 6, 4, 11, 13, 6)


def color_wheel() -> np.ndarray:
  """float64 [55, 3] RGB in 0..255: in each segment one channel ramps (floor(255 * i / n)),
  up or down, while another stays at 255."""
  # (channel that ramps, rising?, channel held at 255) per segment.
  ramps = ((1, True, 0), (0, False, 1), (2, True, 1), (1, False, 2), (0, True, 2),
           (2, False, 0))
  rows = []
  for steps, (channel, rising, full) in zip(SEGMENTS, ramps):
    ramp = np.floor(255 * np.arange(steps) / steps)
    part = np.zeros((steps, 3))
    part[:, channel] = ramp if rising else 255 - ramp
    part[:, full] = 255
    rows.append(part)
  return np.concatenate(rows)


def flow_to_rgb(u: np.ndarray, v: np.ndarray, max_magnitude: float | None = None
                ) -> np.ndarray:
  """uint8 RGB [..., 3] of displacements `u` (right) and `v` (down), any equal shapes, in
  any unit; `max_magnitude` (same unit) is the length drawn at full color, None: the
  largest length in the input (all-zero input is white)."""
  u = np.nan_to_num(np.asarray(u, np.float64))
  v = np.nan_to_num(np.asarray(v, np.float64))
  if max_magnitude is None:
    scale = float(np.max(np.sqrt(u * u + v * v), initial=0.0)) + 1e-5
  else:
    scale = float(max_magnitude)
  u, v = u / scale, v / scale
  radius = np.sqrt(u * u + v * v)
  wheel = color_wheel()
  position = (np.arctan2(-v, -u) / np.pi + 1) / 2 * (len(wheel) - 1)
  k0 = np.floor(position).astype(np.int64)
  k1 = (k0 + 1) % len(wheel)
  f = (position - k0)[..., None]
  color = ((1 - f) * wheel[k0] + f * wheel[k1]) / 255.0
  inside = (radius <= 1)[..., None]
  color = np.where(inside, 1 - radius[..., None] * (1 - color), color * 0.75)
  return np.floor(255 * color).astype(np.uint8)

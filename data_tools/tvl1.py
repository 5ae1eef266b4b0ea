"""TV-L1 optical flow in TensorFlow, batched over frame pairs, on any device.

A step-by-step port of OpenCV's `cv::optflow::DualTVL1OpticalFlow` (Zach, Pock and Bischof,
as formulated by Sanchez, Meinhardt-Llopis and Facciolo, IPOL 2013), from
opencv_contrib 4.10.0 (the version pip's opencv-contrib-python-headless 4.10.0 is built
from), modules/optflow/src/tvl1flow.cpp at commit 1ed3dd2c53888e3289afdb22ec4e9ebbff3dba87,
CPU path (`calc`, `procOneScale`). What it takes from there, step for step:

* Pyramid: `cv::resize(..., fx=fy=scaleStep, INTER_LINEAR)` of the float images (destination
  round(size * 0.8), source position (d + 0.5) / 0.8 - 0.5, clamped at the borders), stopping
  early below 16 pixels; the coarsest flow starts at 0; each finer scale starts from the
  coarser flow resized (INTER_LINEAR to the finer size) and divided by scaleStep.
* Per scale: centered gradient of I1 (one-sided halves at the borders, `centeredGradient`);
  the duals p reset to 0; per warp: I1 and its gradient warped by `cv::remap(INTER_CUBIC,
  BORDER_CONSTANT 0)` with float maps, i.e. positions rounded to 1/32 pixel
  (INTER_TAB_SIZE) and Keys' cubic with A = -0.75; then up to outerIterations x
  innerIterations steps (`estimateV` threshold, `divergence` of p with OpenCV's border,
  `estimateU`, `forwardGradient`, `estimateDualVariables`), a 5x5 median (`cv::medianBlur`,
  replicated border) of u at the start of each outer iteration, and the stopping rule: stop
  this warp once the summed squared change of u over the image is <= epsilon^2 * pixels.
* Each pair of a batch stops on its own (its state is frozen by a mask once it meets the
  rule), so a batch gives what OpenCV gives pair by pair. gamma (illumination term) and
  useInitialFlow are not ported: OpenCV's defaults (0, false) are what extract_flow uses.

On a GPU the loop stays on the device: the host reads the stop rule (any pair still
moving?) once per block of `check_every` (5) inner iterations, not after each one; pairs
that stopped inside a block stay frozen, so the result is bit for bit the one of a check
after every iteration. The remap's index arithmetic is int64 (`remap_cubic`). What else
lives on the host is scalar int32 counters (warp, block), compared there without a copy.

`Tvl1` builds the graph for one frame size; `flow(first, second)` maps uint8 or float
[B, H, W] gray frames (0..255) to float32 [B, H, W, 2] displacements in pixels (x, y);
`flow_and_work` also returns each pair's pixel-iterations [B] (the sum over scales of the
inner iterations it ran times that scale's pixels) and the batch's (the iterations the
batch ran, until the first check after its slowest pair stopped, times the pixels, per
pair): the units of work a throughput estimate counts.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import tensorflow as tf

INTER_TAB_SIZE = 32  # cv::remap's sub-pixel grid for float maps (INTER_BITS = 5)
CUBIC_A = -0.75      # cv::remap's interpolateCubic
MEDIAN_SIZE = 5
GPU_CHECK_EVERY = 5  # inner iterations between two reads of the stop rule on a GPU (at most)


@dataclasses.dataclass(frozen=True)
class Tvl1Parameters:
  """OpenCV's DualTVL1OpticalFlow parameters, with its defaults."""
  tau: float = 0.25
  lambda_: float = 0.15
  theta: float = 0.3
  scales: int = 5
  warps: int = 5
  epsilon: float = 0.01
  inner_iterations: int = 30
  outer_iterations: int = 10
  scale_step: float = 0.8
  median_filtering: int = 5


def pyramid_sizes(height: int, width: int, parameters: Tvl1Parameters) -> list[tuple[int, int]]:
  """(height, width) per scale, finest first, as `calc` builds them (cv::resize with
  fx = fy = scale_step rounds; scales below 16 pixels are dropped)."""
  sizes = [(height, width)]
  for _ in range(1, parameters.scales):
    h, w = sizes[-1]
    h, w = _round_half_even(h * parameters.scale_step), _round_half_even(w * parameters.scale_step)
    if h < 16 or w < 16:
      break
    sizes.append((h, w))
  return sizes


def stop_check_interval(parameters: Tvl1Parameters, at_most: int) -> int:
  """Inner iterations between two evaluations of the stop rule: the largest divisor of
  inner_iterations up to `at_most`, so that each outer iteration (and its median) starts a
  block of them."""
  return max(d for d in range(1, at_most + 1) if parameters.inner_iterations % d == 0)


def _round_half_even(x: float) -> int:
  """saturate_cast<int>(double): cvRound, ties to even."""
  return int(np.rint(x))


def linear_resize_matrix(source: int, target: int, scale: float) -> np.ndarray:
  """float32 [target, source]: cv::resize INTER_LINEAR along one axis (resizeGeneric_):
  target pixel d reads source position (d + 0.5) * scale - 0.5, weights (1 - f, f),
  positions left of 0 or right of source - 1 clamped to the edge pixel."""
  matrix = np.zeros((target, source), np.float32)
  for d in range(target):
    position = np.float32((d + 0.5) * scale - 0.5)
    s = math.floor(position)
    f = np.float32(position - s)
    if s < 0:
      s, f = 0, np.float32(0)
    if s >= source - 1:
      s, f = source - 1, np.float32(0)
    matrix[d, s] += np.float32(1) - f
    if f:
      matrix[d, s + 1] += f
  return matrix


def cubic_table() -> np.ndarray:
  """float32 [INTER_TAB_SIZE, 4]: interpolateCubic's four weights at fraction k / 32."""
  table = np.zeros((INTER_TAB_SIZE, 4), np.float32)
  a = np.float32(CUBIC_A)
  for k in range(INTER_TAB_SIZE):
    x = np.float32(k / INTER_TAB_SIZE)
    c0 = ((a * (x + 1) - 5 * a) * (x + 1) + 8 * a) * (x + 1) - 4 * a
    c1 = ((a + 2) * x - (a + 3)) * x * x + 1
    c2 = ((a + 2) * (1 - x) - (a + 3)) * (1 - x) * (1 - x) + 1
    table[k] = (c0, c1, c2, np.float32(1) - c0 - c1 - c2)
  return table


def resize(images: tf.Tensor, rows: np.ndarray, cols: np.ndarray) -> tf.Tensor:
  """[B, H, W] -> [B, H', W'] with the resize matrices rows [H', H] and cols [W', W]."""
  horizontal = tf.einsum('bhw,vw->bhv', images, tf.constant(cols))
  return tf.einsum('uh,bhv->buv', tf.constant(rows), horizontal)


def centered_gradient(image: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
  """centeredGradient: 0.5 (I[x+1] - I[x-1]) inside, 0.5 (I[1] - I[0]) and
  0.5 (I[n-1] - I[n-2]) at the borders; [B, H, W] -> (dx, dy)."""
  dx = 0.5 * tf.concat([image[:, :, 1:2] - image[:, :, 0:1],
                        image[:, :, 2:] - image[:, :, :-2],
                        image[:, :, -1:] - image[:, :, -2:-1]], axis=2)
  dy = 0.5 * tf.concat([image[:, 1:2] - image[:, 0:1],
                        image[:, 2:] - image[:, :-2],
                        image[:, -1:] - image[:, -2:-1]], axis=1)
  return dx, dy


def forward_gradient(u: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
  """forwardGradient: u[x+1] - u[x], 0 on the last column (dx) / last row (dy)."""
  dx = tf.pad(u[:, :, 1:] - u[:, :, :-1], [[0, 0], [0, 0], [0, 1]])
  dy = tf.pad(u[:, 1:] - u[:, :-1], [[0, 0], [0, 1], [0, 0]])
  return dx, dy


def divergence(v1: tf.Tensor, v2: tf.Tensor) -> tf.Tensor:
  """divergence: backward differences with v[-1] = 0 (first row / column keep v)."""
  v1x = v1 - tf.pad(v1[:, :, :-1], [[0, 0], [0, 0], [1, 0]])
  v2y = v2 - tf.pad(v2[:, :-1], [[0, 0], [1, 0], [0, 0]])
  return v1x + v2y


def median5(u: tf.Tensor) -> tf.Tensor:
  """cv::medianBlur(u, 5) of float images: the median of each 5x5 window, border
  replicated; [B, H, W] -> [B, H, W]."""
  r = MEDIAN_SIZE // 2
  padded = tf.concat([tf.repeat(u[:, :1], r, axis=1), u, tf.repeat(u[:, -1:], r, axis=1)], 1)
  padded = tf.concat([tf.repeat(padded[:, :, :1], r, axis=2), padded,
                      tf.repeat(padded[:, :, -1:], r, axis=2)], 2)
  height, width = tf.shape(u)[1], tf.shape(u)[2]
  windows = tf.stack([padded[:, i:i + height, j:j + width]
                      for i in range(MEDIAN_SIZE) for j in range(MEDIAN_SIZE)], axis=-1)
  k = MEDIAN_SIZE * MEDIAN_SIZE // 2 + 1
  return tf.math.top_k(windows, k=k, sorted=True).values[..., k - 1]


def remap_cubic(images: tf.Tensor, map_x: tf.Tensor, map_y: tf.Tensor) -> tf.Tensor:
  """cv::remap(INTER_CUBIC, BORDER_CONSTANT 0) with float maps: images [B, H, W, C]
  sampled at (map_x, map_y) [B, H, W] -> [B, H, W, C]. Positions are rounded to 1/32
  pixel; taps outside the image count as 0. The index arithmetic is int64: on a GPU,
  TensorFlow keeps int32 tensors in host memory, so int32 [B, H, W, 4, 4] indices would
  cross PCIe at every warp; int64 ones stay on the device."""
  shape = tf.shape(images, out_type=tf.int64)
  batch, height, width = shape[0], shape[1], shape[2]
  qx = tf.cast(tf.round(map_x * INTER_TAB_SIZE), tf.int64)
  qy = tf.cast(tf.round(map_y * INTER_TAB_SIZE), tf.int64)
  x0 = tf.bitwise.right_shift(qx, tf.constant(5, tf.int64)) - 1
  y0 = tf.bitwise.right_shift(qy, tf.constant(5, tf.int64)) - 1
  table = tf.constant(cubic_table())
  wx = tf.gather(table, tf.bitwise.bitwise_and(qx, INTER_TAB_SIZE - 1))  # [B, H, W, 4]
  wy = tf.gather(table, tf.bitwise.bitwise_and(qy, INTER_TAB_SIZE - 1))
  taps = tf.range(4, dtype=tf.int64)
  xs = x0[..., None] + taps  # [B, H, W, 4]
  ys = y0[..., None] + taps
  wx = tf.where((xs >= 0) & (xs < width), wx, 0.0)
  wy = tf.where((ys >= 0) & (ys < height), wy, 0.0)
  xs = tf.clip_by_value(xs, tf.constant(0, tf.int64), width - 1)
  ys = tf.clip_by_value(ys, tf.constant(0, tf.int64), height - 1)
  base = tf.reshape(tf.range(batch) * height * width, [-1, 1, 1, 1, 1])
  index = base + ys[..., :, None] * width + xs[..., None, :]  # [B, H, W, 4, 4]
  flat = tf.reshape(images, tf.stack([-1, shape[3]]))
  samples = tf.gather(flat, index)  # [B, H, W, 4, 4, C]
  weights = wy[..., :, None] * wx[..., None, :]
  return tf.einsum('bhwijc,bhwij->bhwc', samples, weights)


class Tvl1:
  """The TV-L1 graph for frames of one size: `flow(first, second)` -> [B, H, W, 2]."""

  def __init__(self, height: int, width: int, parameters: Tvl1Parameters = Tvl1Parameters(),
               jit_compile: bool = False, check_every: int | None = None):
    """`check_every`: inner iterations between two reads of the stop rule (at most; None:
    GPU_CHECK_EVERY where TensorFlow sees a GPU, else 1: a CPU reads it for free, and the
    iterations a batch runs past its slowest pair's stop cost CPU time)."""
    if height < 3 or width < 3:
      raise ValueError(f'TV-L1 needs frames of at least 3x3 pixels, got {width}x{height}')
    self.parameters = parameters
    self.sizes = pyramid_sizes(height, width, parameters)
    if check_every is None:
      check_every = GPU_CHECK_EVERY if tf.config.list_physical_devices('GPU') else 1
    self.check_every = stop_check_interval(parameters, check_every)
    step = parameters.scale_step
    self._down = [(linear_resize_matrix(h0, h1, 1 / step), linear_resize_matrix(w0, w1, 1 / step))
                  for (h0, w0), (h1, w1) in zip(self.sizes, self.sizes[1:])]
    self._up = [(linear_resize_matrix(h1, h0, h1 / h0), linear_resize_matrix(w1, w0, w1 / w0))
                for (h0, w0), (h1, w1) in zip(self.sizes, self.sizes[1:])]
    signature = [tf.TensorSpec([None, height, width], tf.float32)] * 2
    self.flow_and_work = tf.function(self._flow, jit_compile=jit_compile,
                                     input_signature=signature)
    self.flow = tf.function(lambda first, second: self._flow(first, second)[0],
                            jit_compile=jit_compile, input_signature=signature)

  def _flow(self, first: tf.Tensor, second: tf.Tensor
            ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    p = self.parameters
    pyramid = [(first, second)]
    for rows, cols in self._down:
      i0, i1 = pyramid[-1]
      pyramid.append((resize(i0, rows, cols), resize(i1, rows, cols)))
    h, w = self.sizes[-1]
    batch = tf.shape(first)[0]
    u1 = tf.zeros([batch, h, w])
    u2 = tf.zeros([batch, h, w])
    work = tf.zeros([batch])
    batch_work = tf.constant(0.0)
    for s in range(len(self.sizes) - 1, -1, -1):
      u1, u2, iterations, ran = self._one_scale(pyramid[s][0], pyramid[s][1], u1, u2)
      work += iterations * float(self.sizes[s][0] * self.sizes[s][1])
      batch_work += ran * float(self.sizes[s][0] * self.sizes[s][1])
      if s == 0:
        break
      rows, cols = self._up[s - 1]
      u1 = resize(u1, rows, cols) * np.float32(1 / p.scale_step)
      u2 = resize(u2, rows, cols) * np.float32(1 / p.scale_step)
    return tf.stack([u1, u2], axis=-1), work, batch_work

  def _one_scale(self, i0: tf.Tensor, i1: tf.Tensor, u1: tf.Tensor, u2: tf.Tensor
                 ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor]:
    """procOneScale: warps x (outer x inner iterations) at one pyramid level; returns u1,
    u2, the inner iterations each pair ran [B] and those the batch ran (scalar)."""
    p = self.parameters
    height, width = i0.shape[1], i0.shape[2]
    scaled_epsilon = np.float32(p.epsilon * p.epsilon * height * width)
    l_t = np.float32(p.lambda_ * p.theta)
    taut = np.float32(p.tau / p.theta)
    theta = np.float32(p.theta)
    i1x, i1y = centered_gradient(i1)
    sources = tf.stack([i1, i1x, i1y], axis=-1)
    grid_x = tf.range(width, dtype=tf.float32)[None, None, :]
    grid_y = tf.range(height, dtype=tf.float32)[None, :, None]
    check_every = self.check_every
    blocks_per_outer = max(p.inner_iterations // check_every, 1)
    blocks = p.outer_iterations * p.inner_iterations // check_every
    median = p.median_filtering > 1
    if median and p.median_filtering != MEDIAN_SIZE:
      raise ValueError(f'only a {MEDIAN_SIZE}x{MEDIAN_SIZE} median is ported, got '
                       f'{p.median_filtering}')
    def warp(w, ran, count, u1, u2, p11, p12, p21, p22):
      warped = remap_cubic(sources, grid_x + u1, grid_y + u2)
      i1w, i1wx, i1wy = warped[..., 0], warped[..., 1], warped[..., 2]
      grad = i1wx * i1wx + i1wy * i1wy
      rho_c = i1w - i1wx * u1 - i1wy * u2 - i0
      no_grad = grad <= np.finfo(np.float32).eps

      def step(count, active, u1, u2, p11, p12, p21, p22):
        act = active[:, None, None]
        rho = rho_c + (i1wx * u1 + i1wy * u2)
        threshold = l_t * grad
        fi = tf.where(no_grad, 0.0, -rho / tf.where(no_grad, 1.0, grad))
        d1 = tf.where(rho < -threshold, l_t * i1wx,
                      tf.where(rho > threshold, -l_t * i1wx, fi * i1wx))
        d2 = tf.where(rho < -threshold, l_t * i1wy,
                      tf.where(rho > threshold, -l_t * i1wy, fi * i1wy))
        v1, v2 = u1 + d1, u2 + d2
        new_u1 = v1 + theta * divergence(p11, p12)
        new_u2 = v2 + theta * divergence(p21, p22)
        error = tf.reduce_sum(tf.square(new_u1 - u1) + tf.square(new_u2 - u2), axis=[1, 2])
        u1x, u1y = forward_gradient(new_u1)
        u2x, u2y = forward_gradient(new_u2)
        ng1 = 1.0 + taut * tf.sqrt(u1x * u1x + u1y * u1y)
        ng2 = 1.0 + taut * tf.sqrt(u2x * u2x + u2y * u2y)
        updated = (new_u1, new_u2, (p11 + taut * u1x) / ng1, (p12 + taut * u1y) / ng1,
                   (p21 + taut * u2x) / ng2, (p22 + taut * u2y) / ng2)
        old = (u1, u2, p11, p12, p21, p22)
        kept = [tf.where(act, new, before) for new, before in zip(updated, old)]
        return (count + tf.cast(active, tf.float32), active & (error > scaled_epsilon), *kept)

      def block(b, count, active, u1, u2, p11, p12, p21, p22):
        """check_every inner iterations; the median first when an outer iteration starts."""
        if median:
          act = active[:, None, None]
          u1, u2 = tf.cond(b % blocks_per_outer == 0,
                           lambda: (tf.where(act, median5(u1), u1),
                                    tf.where(act, median5(u2), u2)),
                           lambda: (u1, u2))
        state = (count, active, u1, u2, p11, p12, p21, p22)
        for _ in range(check_every):
          state = step(*state)
        return (b + 1, *state)

      active = tf.ones([tf.shape(u1)[0]], tf.bool)
      state = tf.while_loop(
          lambda b, count, active, *_: (b < blocks) & tf.reduce_any(active), block,
          (tf.constant(0), count, active, u1, u2, p11, p12, p21, p22))
      return (w + 1, ran + tf.cast(state[0] * check_every, tf.float32), state[1], *state[3:])

    zeros = tf.zeros_like(u1)
    state = tf.while_loop(lambda w, *_: w < p.warps, warp,
                          (tf.constant(0), tf.constant(0.0), tf.zeros([tf.shape(u1)[0]]), u1,
                           u2, zeros, zeros, zeros, zeros))
    return state[3], state[4], state[2], state[1]

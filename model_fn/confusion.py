"""The confusion matrix and per-class accuracy of a classifier, counted and drawn (numpy, OpenCV).

    counts(labels, predictions, num_classes) -> int64 [C, C]: row = true class, column =
        predicted class, each cell a number of examples (clips or videos: the caller's unit)
    per_class_accuracy(matrix) -> float64 [C]: diagonal / row sum; NaN for a class with no
        example (absent, not 0)
    worst_classes(accuracy, names, k) -> the k lowest present classes, lowest first
    render_matrix(matrix, names) -> uint8 [H, W, 3] RGB: rows normalised to [0, 1] (white 0,
        dark blue 1), row labels 'index name', column labels the index
    render_per_class(accuracy, names) -> uint8 [H, W, 3] RGB: one bar per present class,
        sorted lowest first, labelled 'accuracy  name  (examples)'
    write_png(path, image): the whole PNG or no file (a temporary name renamed when complete)

Both pictures stay readable at 101 classes (a few pixels per cell, one text line per class).
`names[i]` is class i's name; without names (None) classes are labelled by their index.
"""

from __future__ import annotations

import os
from typing import Sequence

import cv2
import numpy as np

FONT = cv2.FONT_HERSHEY_SIMPLEX
TEXT_SCALE = 0.4
LINE = 14        # pixels per text line (per row of the per-class chart)
MARGIN = 8


def counts(labels: np.ndarray, predictions: np.ndarray, num_classes: int) -> np.ndarray:
  """int64 [num_classes, num_classes]: matrix[true, predicted] = examples."""
  matrix = np.zeros((num_classes, num_classes), np.int64)
  np.add.at(matrix, (np.asarray(labels, np.int64), np.asarray(predictions, np.int64)), 1)
  return matrix


def per_class_accuracy(matrix: np.ndarray) -> np.ndarray:
  """float64 [C]: each class's correct / examples; NaN where the class has no example."""
  examples = matrix.sum(axis=1).astype(np.float64)
  with np.errstate(invalid='ignore', divide='ignore'):
    return np.where(examples > 0, np.diag(matrix) / examples, np.nan)


def class_labels(num_classes: int, names: Sequence[str] | None) -> list[str]:
  """Each class's label: its name when `names` has one per class, else its index."""
  if names is not None and len(names) == num_classes:
    return [str(n) for n in names]
  return [str(i) for i in range(num_classes)]


def worst_classes(accuracy: np.ndarray, names: Sequence[str] | None,
                  k: int = 5) -> list[tuple[str, float]]:
  """The `k` present classes (accuracy not NaN) of lowest accuracy, lowest first; ties in
  class order."""
  labels = class_labels(len(accuracy), names)
  present = [i for i in np.argsort(np.nan_to_num(accuracy, nan=np.inf), kind='stable')
             if not np.isnan(accuracy[i])]
  return [(labels[i], float(accuracy[i])) for i in present[:k]]


def _text_width(text: str) -> int:
  return cv2.getTextSize(text, FONT, TEXT_SCALE, 1)[0][0]


def _put(image: np.ndarray, text: str, x: int, y: int) -> None:
  cv2.putText(image, text, (x, y), FONT, TEXT_SCALE, (0, 0, 0), 1, cv2.LINE_AA)


def render_matrix(matrix: np.ndarray, names: Sequence[str] | None = None) -> np.ndarray:
  """The row-normalised confusion matrix as an RGB picture (see the module docstring)."""
  num_classes = matrix.shape[0]
  labels = [f'{i} {n}' if n != str(i) else n
            for i, n in enumerate(class_labels(num_classes, names))]
  cell = max(4, min(24, 900 // num_classes))
  left = MARGIN + max(_text_width(t) for t in labels) + MARGIN
  top = MARGIN + _text_width(str(num_classes - 1)) + MARGIN
  rows = matrix.sum(axis=1, keepdims=True).astype(np.float64)
  share = np.divide(matrix, rows, out=np.zeros(matrix.shape), where=rows > 0)
  # white (0) to dark blue (1), RGB
  colour = np.array([255, 255, 255]) - share[..., None] * np.array([255, 215, 115])
  grid = np.repeat(np.repeat(colour.astype(np.uint8), cell, axis=0), cell, axis=1)
  height, width = top + num_classes * cell + MARGIN, left + num_classes * cell + MARGIN
  image = np.full((height, width, 3), 255, np.uint8)
  image[top:top + num_classes * cell, left:left + num_classes * cell] = grid
  line_step = max(1, -(-LINE // cell))  # label every row when cells are tall enough
  for i in range(0, num_classes, line_step):
    _put(image, labels[i], MARGIN, top + i * cell + cell // 2 + 4)
  # column labels: written horizontally on a strip, turned to read bottom-up
  strip = np.full((width, top, 3), 255, np.uint8)
  for i in range(0, num_classes, line_step):
    _put(strip, str(i), MARGIN, left + i * cell + cell // 2 + 4)
  image[:top] = np.rot90(strip)
  return image


def render_per_class(accuracy: np.ndarray, names: Sequence[str] | None = None,
                     examples: np.ndarray | None = None) -> np.ndarray:
  """Per-class accuracy as sorted horizontal bars, lowest first (see the module docstring)."""
  labels = class_labels(len(accuracy), names)
  order = [i for i in np.argsort(np.nan_to_num(accuracy, nan=np.inf), kind='stable')
           if not np.isnan(accuracy[i])]
  texts = [f'{accuracy[i]:.3f}  {labels[i]}' +
           (f'  ({int(examples[i])})' if examples is not None else '') for i in order]
  bar = 300
  left = MARGIN + max([_text_width(t) for t in texts] or [0]) + MARGIN
  image = np.full((2 * MARGIN + max(1, len(order)) * LINE, left + bar + MARGIN, 3), 255,
                  np.uint8)
  for row, (i, text) in enumerate(zip(order, texts)):
    y = MARGIN + row * LINE
    _put(image, text, MARGIN, y + LINE - 3)
    cv2.rectangle(image, (left, y + 2), (left + bar, y + LINE - 2), (225, 225, 225), -1)
    cv2.rectangle(image, (left, y + 2), (left + int(round(accuracy[i] * bar)), y + LINE - 2),
                  (0, 40, 140), -1)
  return image


def write_png(path: str, image: np.ndarray) -> None:
  """Writes the RGB uint8 `image` to `path` as PNG, whole or not at all: encoded here and
  written by Python (whose writes report a full disk or a file-size limit; OpenCV's
  `imwrite` leaves a truncated file and says it succeeded) to a temporary name in the same
  folder, renamed to `path` when complete. Raises OSError (naming `path`) when it cannot;
  then neither `path` nor the temporary file is left."""
  ok, encoded = cv2.imencode('.png', cv2.cvtColor(image, cv2.COLOR_RGB2BGR))
  if not ok:
    raise OSError(f'could not encode {path} as PNG')
  temporary = f'{path}.tmp-{os.getpid()}'
  try:
    with open(temporary, 'wb') as f:
      f.write(encoded.tobytes())
    os.replace(temporary, path)
  except OSError as e:
    raise OSError(e.errno, e.strerror, path) from e
  finally:
    if os.path.exists(temporary):
      os.remove(temporary)

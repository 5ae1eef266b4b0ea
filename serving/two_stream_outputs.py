"""The files a two-stream evaluation writes beside its JSON, and where fusion helps and hurts.

For a --json_out of `out.json` (one split: `out_split<k>`):
  out_rgb_confusion.png, out_flow_confusion.png, out_fusion_confusion.png
      each stream's confusion matrix over the videos both streams have (rows normalised;
      `model_fn/confusion.py`)
  out_per_class.csv
      the report's `per_class` rows (`two_stream.per_class_rows`): class, label, videos, rgb,
      flow, fusion, fusion_gain; one row per class with videos, values as in the JSON
An earlier evaluation's files of the same --json_out under other names (with or without
--splits) are removed once this one's JSON is written (`earlier_files`).
"""

from __future__ import annotations

import csv
import io
import os
import re
from typing import Any, Sequence

import numpy as np

from command_line import disk_space
from input_fn import json_files
from model_fn import confusion

CSV_COLUMNS = ('class', 'label', 'videos', 'rgb', 'flow', 'fusion', 'fusion_gain')
# The end of the error line when a disk refuses one of these files.
NOTHING_KEPT = ('no part of that file was kept (the files written before it are whole); '
                'evaluate_two_stream keeps nothing to resume from: a rerun evaluates again')


def prefix(json_out: str, split: int | None = None) -> str:
  """The path the files of `json_out` (of `split`) start with: the JSON's without '.json'."""
  stem = json_out[:-len('.json')] if json_out.lower().endswith('.json') else json_out
  return stem if split is None else f'{stem}_split{split}'


def earlier_files(json_out: str, prefixes: Sequence[str]) -> list[str]:
  """The files beside `json_out` named as `write` names them for it (one split or
  `_split<k>`) under a prefix other than `prefixes` (this run's): an earlier evaluation's into
  the same --json_out with or without --splits, which would sit beside this one's."""
  stem = prefix(json_out)
  folder = os.path.dirname(stem) or '.'
  ours = re.compile(re.escape(os.path.basename(stem)) +
                    r'(_split\d+)?_(rgb_confusion\.png|flow_confusion\.png|'
                    r'fusion_confusion\.png|per_class\.csv)')
  kept = {os.path.basename(p) for p in prefixes}
  found = []
  for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
    match = ours.fullmatch(name)
    if match and os.path.basename(stem) + (match.group(1) or '') not in kept:
      found.append(os.path.join(folder, name))
  return found


def write(result: dict[str, Any], matrices: dict[str, np.ndarray],
          class_names: Sequence[str] | None, path_prefix: str) -> list[str]:
  """Writes the three confusion PNGs of `matrices` and the per-class CSV of `result`, each
  whole or not at all (a temporary name renamed when complete); returns their paths. A full
  disk (or a quota or file-size limit) raises `disk_space.FullDisk` naming the file."""
  written = []
  for stream, matrix in matrices.items():
    path = f'{path_prefix}_{stream}_confusion.png'
    with disk_space.writing(path, NOTHING_KEPT):
      confusion.write_png(path, confusion.render_matrix(matrix, class_names))
    written.append(path)
  path = f'{path_prefix}_per_class.csv'
  rows = io.StringIO(newline='')
  writer = csv.DictWriter(rows, CSV_COLUMNS)
  writer.writeheader()
  writer.writerows(result['per_class'])
  with disk_space.writing(path, NOTHING_KEPT):
    json_files.write_text(path, rows.getvalue())
  return written + [path]


def fusion_changes(result: dict[str, Any], k: int = 3
                   ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
  """The `k` classes fusion helps most (largest positive fusion_gain, largest first) and the
  `k` it hurts most (most negative first); ties in label order."""
  rows = result['per_class']
  helps = sorted((r for r in rows if r['fusion_gain'] > 0), key=lambda r: -r['fusion_gain'])
  hurts = sorted((r for r in rows if r['fusion_gain'] < 0), key=lambda r: r['fusion_gain'])
  return helps[:k], hurts[:k]


def format_fusion_changes(result: dict[str, Any], k: int = 3) -> str:
  """Two lines: 'fusion helps most: <class> +0.2500 (rgb 0.5000, flow 0.2500, fusion
  0.7500), ...' and 'fusion hurts most: ...' ('none' when no class gains or loses)."""
  def cells(rows: list[dict[str, Any]]) -> str:
    return ', '.join(f'{r["class"]} {r["fusion_gain"]:+.4f} (rgb {r["rgb"]:.4f}, flow '
                     f'{r["flow"]:.4f}, fusion {r["fusion"]:.4f})' for r in rows) or 'none'
  helps, hurts = fusion_changes(result, k)
  return (f'fusion helps most (video top-1 over the better stream): {cells(helps)}\n'
          f'fusion hurts most: {cells(hurts)}')

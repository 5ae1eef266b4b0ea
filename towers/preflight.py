"""Checks to run before training starts, with messages that say what to fix.

    preflight.check(params)   # raises PreflightError listing every problem

Covers the I3D fine-tuning flags: the `--warm_start_from` checkpoint must be there (index
and weights; the message says what to download from DeepMind's kinetics-i3d repository
and where to put it), I3D-only flags must not be set for other models, and a file data
source needs an existing `--data_dir`. Cheap: it reads no weights and builds no graph.
Whether the checkpoint's names and shapes fit the graph is checked when the graph exists
(`warm_start.make_warm_start_init_fn`).
"""

from __future__ import annotations

import os

import tensorflow as tf

from input_fn import factory
from model_fn import warm_start


_DATA_DIR_CONTENTS = {
    'tfrecord': 'the TFRecord shards of UCF101, made once with `bazel run //input_fn:prepare '
                '-- --source=videos --data_dir=<UCF101 root> --out=<this data_dir>`',
    'videos': 'the UCF101 root: UCF-101/ (the .avi class folders) and the split files '
              '(ucfTrainTestlist/)',
    'frames': 'jpegs_256/ (frame folders) and the UCF101 split files',
}


class PreflightError(ValueError):
  """One or more things needed by the run are missing or inconsistent."""


def problems(params) -> list[str]:
  """Every problem found, as messages; empty when the run can start."""
  found = []
  if params.warm_start_from:
    if params.model != 'i3d':
      found.append(f'warm_start_from is for model=i3d (DeepMind\'s Kinetics checkpoints), '
                   f'got model={params.model}')
    elif not _has_checkpoint(params.model_dir):
      try:
        warm_start.resolve_checkpoint(params.warm_start_from, params.stream)
      except warm_start.WarmStartError as e:
        found.append(str(e))
  if params.trainable_from and params.model != 'i3d':
    found.append(f'trainable_from is for model=i3d, got model={params.model}')
  if params.model == 'i3d' and params.head == 'keep' and params.warm_start_from and \
      params.num_classes != params.pretrained_classes:
    found.append(f'head=keep restores the checkpoint\'s Logits, which needs num_classes equal '
                 f'to its classes ({params.pretrained_classes}), got num_classes='
                 f'{params.num_classes}; use head=replace (a new {params.num_classes}-way '
                 'layer) or head=stack')
  data_source = getattr(params, 'data_source', 'synthetic')
  data_dir = getattr(params, 'data_dir', '')
  if data_source != 'synthetic' and not (data_dir and os.path.isdir(data_dir)):
    what = _DATA_DIR_CONTENTS.get(data_source, 'the files of that source (see --helpfull)')
    found.append(f'data_source={data_source} reads from --data_dir, but '
                 f'data_dir={data_dir or "(empty)"} is not a directory: it must hold {what}')
  if hasattr(params, 'data_source'):
    problem = factory.stream_data_problem(params)
    if problem:
      found.append(problem)
  return found


def check(params) -> None:
  """Raises `PreflightError` listing every problem, one per paragraph."""
  found = problems(params)
  if found:
    raise PreflightError('cannot start:\n- ' + '\n- '.join(found))


def _has_checkpoint(model_dir: str) -> bool:
  """A resumed run restores model_dir and never warm-starts (Estimator's rule)."""
  return bool(model_dir) and tf.io.gfile.isdir(model_dir) and \
      tf.train.latest_checkpoint(model_dir) is not None

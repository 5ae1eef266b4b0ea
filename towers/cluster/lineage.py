"""The lineage of the model in a model_dir: the training run its checkpoints descend from.

    new() -> str                            drawn when training starts from step 0
    of_model_dir(model_dir) -> str | None   the lineage model_dir's record holds

A lineage is a random id that training draws when it starts from step 0 without a
checkpoint and keeps in `model_dir/train_settings.json` (key `lineage`,
`towers/train_settings.py`) on every resume. Each export's video_model.json and
final_evaluation.json carry the lineage of the model they measured, and count only while it
is the model_dir's: an export or final evaluation of another run, or one written before
lineages were recorded (it has none), never does.
"""

from __future__ import annotations

import os
import uuid

from input_fn import json_files

# The record of a model_dir's learning settings (written by towers/train_settings.py).
RECORD_FILE = 'train_settings.json'
KEY = 'lineage'


def new() -> str:
  """A lineage no other training run has: 16 random hex digits."""
  return uuid.uuid4().hex[:16]


def of_model_dir(model_dir: str) -> str | None:
  """The lineage model_dir's record holds; None when it has none (no record, an unreadable
  one, or one written before lineages were recorded)."""
  record = json_files.load_object(os.path.join(model_dir, RECORD_FILE))
  value = record.get(KEY) if record else None
  return value if isinstance(value, str) and value else None

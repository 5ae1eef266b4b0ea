"""The tiny prepared dataset the specs train and read from: a synthetic UCF101 (or HMDB51)
and its TFRecords, written once here.

    made = tiny_records.make(root, ('videos', 'flow'), classes=3, groups=9, min_frames=4,
                             max_frames=5)
    made.data                # root/ucf (root/hmdb51 for layout='hmdb51')
    made.records['flow']     # root/flow_tfr: prepared from the dataset's TV-L1 flow
    made.manifests['videos']['test']['num_records']

`prepared(data, out, **options)` prepares any dataset as every spec does: frames kept at
their size (short_side=0), one worker, no console lines.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Mapping, Sequence

from data_tools import make_synthetic_ucf101, prepare


@dataclasses.dataclass(frozen=True)
class TinyRecords:
  """A synthetic dataset and what `prepare` made of it, per source."""
  data: str                                   # the dataset root
  records: dict[str, str]                     # source -> prepared directory
  manifests: dict[str, dict[str, Any]]        # source -> {subset: manifest}


def prepared(data: str, out: str, **options: Any) -> dict[str, Any]:
  """Prepares `data` into `out` (`options`: other `PrepareOptions` fields, which win over
  short_side=0 and workers=1); returns prepare's {subset: manifest}."""
  config = prepare.PrepareOptions(**{'short_side': 0, 'workers': 1, **options},
                                 data_dir=data, out=out)
  return prepare.prepare(config, log=lambda line: None)


def make(root: str, sources: Sequence[str] = ('videos',), *,
         prepare_options: Mapping[str, Any] | None = None, **dataset: Any) -> TinyRecords:
  """Writes a synthetic dataset under `root` (`dataset`: `make_synthetic_ucf101` settings;
  TV-L1 flow too when 'flow' is a source) and prepares it from each of `sources` ('videos',
  'frames', 'flow'; none: the dataset alone) into root/<source>_tfr, with `prepare_options`
  (an hmdb51 layout is prepared as dataset='hmdb51')."""
  layout = dataset.get('layout', 'ucf101')
  data = os.path.join(root, 'hmdb51' if layout == 'hmdb51' else 'ucf')
  if 'flow' in sources:
    dataset.setdefault('write_flow', True)
  make_synthetic_ucf101.make_dataset(data, **dataset)
  options = dict(prepare_options or {})
  if layout == 'hmdb51':
    options.setdefault('dataset', 'hmdb51')
  records = {source: os.path.join(root, f'{source}_tfr') for source in sources}
  manifests = {source: prepared(data, out, source=source, **options)
               for source, out in records.items()}
  return TinyRecords(data, records, manifests)

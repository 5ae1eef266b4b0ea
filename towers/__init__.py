"""Multi-tower, multi-node training of video CNNs with tf.estimator.

    from towers import train_and_evaluate, build_estimator
    metrics = train_and_evaluate({'num_towers': 2, 'model_dir': '/tmp/run'})  # as //towers:train
    estimator = build_estimator({'num_towers': 2, 'model_dir': '/tmp/run'})
    estimator = build_estimator({'num_towers': 2, 'model_dir': '/tmp/mine'}, network=my_network)

Importing `towers` before TensorFlow turns on TensorFlow's oneDNN CPU kernels (about 3x
faster 3-D convolutions on AVX2 CPUs, where TF 2.15 leaves them off) unless
TF_ENABLE_ONEDNN_OPTS is already set; set it to 0 to keep them off. TensorFlow reads that
switch once, when it is imported: imported earlier, it keeps its own choice.

The package itself does not import TensorFlow: `build_estimator`, `train_and_evaluate` and
the params names load on first use, so a binary can import `command_line.console` (and set
TensorFlow's log level) before TensorFlow starts.
"""

import importlib as _importlib
import os as _os
import sys as _sys

if 'tensorflow' not in _sys.modules:
  _os.environ.setdefault('TF_ENABLE_ONEDNN_OPTS', '1')

_EXPORTS = {'build_estimator': 'towers.estimator', 'ParamsError': 'towers.params',
            'TrainParams': 'towers.params', 'make_params': 'towers.params',
            'train_and_evaluate': 'towers.training'}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
  if name in _EXPORTS:
    return getattr(_importlib.import_module(_EXPORTS[name]), name)
  raise AttributeError(f'module {__name__!r} has no attribute {name!r}')

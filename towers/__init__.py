"""Multi-tower, multi-node training of video CNNs with tf.estimator.

    from towers import build_estimator
    estimator = build_estimator({'num_towers': 2, 'model_dir': '/tmp/run'})
    estimator = build_estimator({'num_towers': 2, 'model_dir': '/tmp/mine'}, network=my_network)

Importing `towers` before TensorFlow turns on TensorFlow's oneDNN CPU kernels (about 3x
faster 3-D convolutions on AVX2 CPUs, where TF 2.15 leaves them off) unless
TF_ENABLE_ONEDNN_OPTS is already set; set it to 0 to keep them off. TensorFlow reads that
switch once, when it is imported: imported earlier, it keeps its own choice.
"""

import os as _os
import sys as _sys

if 'tensorflow' not in _sys.modules:
  _os.environ.setdefault('TF_ENABLE_ONEDNN_OPTS', '1')

# pylint: disable=wrong-import-position
from towers.estimator import build_estimator
from towers.params import ParamsError, TrainParams, make_params

__all__ = ['build_estimator', 'ParamsError', 'TrainParams', 'make_params']

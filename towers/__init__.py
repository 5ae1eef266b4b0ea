"""Multi-tower, multi-node training of video CNNs with tf.estimator.

    from towers import build_estimator
    estimator = build_estimator({'num_towers': 2, 'model_dir': '/tmp/run'})
"""

from towers.estimator import build_estimator
from towers.params import ParamsError, TrainParams, make_params

__all__ = ['build_estimator', 'ParamsError', 'TrainParams', 'make_params']

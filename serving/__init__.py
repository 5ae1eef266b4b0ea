"""Inference with exported models: classify videos, fuse two streams per video.

    from serving.classifier import classify
    results = classify(['clip.avi'], 'runs/ucf101_i3d_rgb')   # as //serving:classify

`saved_model` finds and loads an export, `export_info` reads what it carries (class names,
input settings, training videos), `two_stream` fuses an RGB and a Flow model per video, `classifier` and
`evaluate_two_stream` are the libraries of //serving:classify and
//serving:evaluate_two_stream. The package stands on `command_line`, `input_fn` and
`model_fn` alone: it never imports `towers` (training), so inference needs no training code.

Importing `serving` before TensorFlow turns on TensorFlow's oneDNN CPU kernels, as importing
`towers` does (see towers/__init__.py), unless TF_ENABLE_ONEDNN_OPTS is already set.
"""

import os as _os
import sys as _sys

if 'tensorflow' not in _sys.modules:
  _os.environ.setdefault('TF_ENABLE_ONEDNN_OPTS', '1')

"""Writes the GPU kernel registry of a CUDA build of TensorFlow as a snapshot (JSON) that
the placement spec checks GPU-placed ops against on machines without a GPU:

    python -m venv /tmp/tf-cuda && /tmp/tf-cuda/bin/pip install tensorflow==2.15.1
    /tmp/tf-cuda/bin/python3 -m tools.cuda_kernels_main tests/testdata/cuda_kernels.json

(from the repository root).The wheel's version must be requirements.txt's pin; a CPU-only build is refused (exit 2).
"""

from __future__ import annotations

import os
import sys

from tools import cuda_kernels

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pinned_version(requirements: str) -> str:
  """The version of requirements.txt's `tensorflow-cpu==` pin."""
  with open(requirements, encoding='utf-8') as f:
    for line in f:
      if line.startswith('tensorflow-cpu=='):
        return line.strip().split('==', 1)[1]
  raise SystemExit(f'error: {requirements} pins no tensorflow-cpu==VERSION')


def main(argv: list[str]) -> int:
  if len(argv) != 2:
    print('usage: python -m tools.cuda_kernels_main OUTPUT.json', file=sys.stderr)
    return 2
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tensorflow.python.framework import kernels  # pylint: disable=g-import-not-at-top
  pin = pinned_version(os.path.join(ROOT, 'requirements.txt'))
  if not tf.test.is_built_with_cuda():
    print(f'error: tensorflow {tf.__version__} here is a CPU-only build: run this with the '
          f'python of a venv holding the pip wheel tensorflow=={pin}', file=sys.stderr)
    return 2
  if tf.__version__ != pin:
    print(f'error: tensorflow {tf.__version__} here, but requirements.txt pins {pin}: '
          f'install tensorflow=={pin} in that venv', file=sys.stderr)
    return 2
  gpu = cuda_kernels.registry(kernels.get_all_registered_kernels(), 'GPU')
  cuda_kernels.write_snapshot(argv[1], gpu, tf.__version__,
                              tf.sysconfig.get_build_info()['cuda_version'])
  print(f'{argv[1]}: {sum(map(len, gpu.values()))} GPU and DEFAULT kernels of {len(gpu)} ops, '
        f'tensorflow {tf.__version__}, CUDA {tf.sysconfig.get_build_info()["cuda_version"]}')
  return 0


if __name__ == '__main__':
  sys.exit(main(sys.argv))

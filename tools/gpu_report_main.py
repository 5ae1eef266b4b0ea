"""Which GPUs TensorFlow sees here, or why it sees none: `python tools/gpu_report_main.py`.

Run by tools/setup.sh after a GPU install and by tools/gpu_check.sh. Prints one line per
GPU TensorFlow sees ("[gpu] GPU 0: NVIDIA GeForce GTX 1060 6GB, compute capability 6.1"),
or, when it sees none, the reasons it can find: no NVIDIA driver (nvidia-smi), the
driver's version against what this TensorFlow's CUDA needs, a CUDA library that cannot
be loaded, a CPU-only TensorFlow build. Exit 0 when at least one GPU is seen, 1 when none.
"""

from __future__ import annotations

import ctypes
import dataclasses
import glob
import os
import shutil
import subprocess
import sys

# CUDA 12.x needs an NVIDIA driver >= 525.60.13 (Linux); TensorFlow 2.15.1 is built with 12.2.
MIN_DRIVER = (525, 60)
PREFIX = '[gpu]'


def say(line: str) -> None:
  print(f'{PREFIX} {line}', flush=True)


def driver() -> tuple[str | None, str]:
  """(driver version or None, one line on what nvidia-smi said)."""
  smi = shutil.which('nvidia-smi')
  if smi is None:
    return None, 'nvidia-smi not found: no NVIDIA driver installed on this machine'
  try:
    out = subprocess.run([smi, '--query-gpu=name,driver_version,memory.total',
                          '--format=csv,noheader'], capture_output=True, text=True,
                         timeout=60, check=False)
  except (OSError, subprocess.TimeoutExpired) as e:
    return None, f'nvidia-smi failed to run: {e}'
  if out.returncode != 0:
    first = (out.stdout + out.stderr).strip().splitlines()
    return None, f'nvidia-smi failed (exit {out.returncode}): {first[0] if first else ""}'
  rows = [r.strip() for r in out.stdout.strip().splitlines() if r.strip()]
  version = rows[0].split(',')[1].strip() if rows and rows[0].count(',') >= 2 else None
  return version, f'nvidia-smi lists {len(rows)} GPU(s): {"; ".join(rows)}'


def driver_too_old(version: str) -> bool:
  try:
    parts = tuple(int(p) for p in version.split('.')[:2])
  except ValueError:
    return False
  return parts < MIN_DRIVER


def unloadable_libraries() -> list[str]:
  """The CUDA libraries TensorFlow needs that cannot be loaded, with the loader's reason."""
  site = [p for p in sys.path if p.endswith('site-packages')]
  missing = []
  for name in ('libcuda.so.1', 'libcudart.so.12', 'libcublas.so.12', 'libcudnn.so.8'):
    candidates = [name] + [f for s in site for f in glob.glob(os.path.join(s, 'nvidia', '*',
                                                                           'lib', name))]
    errors = []
    for candidate in candidates:
      try:
        ctypes.CDLL(candidate)
        break
      except OSError as e:
        errors.append(str(e))
    else:
      missing.append(f'{name}: {errors[-1] if errors else "not found"}')
  return missing


@dataclasses.dataclass(frozen=True)
class Diagnosis:
  """What this machine offers TensorFlow: the GPUs it sees (one line each) and, for none,
  the causes found: a CPU-only build, the driver (version from nvidia-smi, None without
  one; `driver_line` what nvidia-smi said) and whether it is older than `MIN_DRIVER`, CUDA
  libraries that cannot be loaded, and CUDA_VISIBLE_DEVICES when set."""
  tf_version: str
  gpus: list[str]
  cuda_version: str | None
  cudnn_version: str | None
  cuda_build: bool
  driver_version: str | None = None
  driver_line: str = ''
  driver_too_old: bool = False
  unloadable: list[str] = dataclasses.field(default_factory=list)
  visible_devices: str | None = None


def diagnose() -> Diagnosis:
  """Looks at TensorFlow's GPUs and, when it sees none, at why (see `Diagnosis`)."""
  os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  build = tf.sysconfig.get_build_info()
  gpus = []
  for i, gpu in enumerate(tf.config.list_physical_devices('GPU')):
    details = tf.config.experimental.get_device_details(gpu)
    capability = details.get('compute_capability')
    gpus.append(f'GPU {i}: {details.get("device_name", gpu.name)}'
                + (f', compute capability {capability[0]}.{capability[1]}' if capability else ''))
  found = Diagnosis(tf.__version__, gpus, build.get('cuda_version'),
                    build.get('cudnn_version'), bool(build.get('is_cuda_build')))
  if gpus:
    return found
  version, line = driver()
  return dataclasses.replace(
      found, driver_version=version, driver_line=line,
      driver_too_old=bool(version and driver_too_old(version)),
      unloadable=unloadable_libraries() if found.cuda_build else [],
      visible_devices=os.environ.get('CUDA_VISIBLE_DEVICES'))


def main() -> int:
  found = diagnose()
  for line in found.gpus:
    say(line)
  if found.gpus:
    say(f'TensorFlow {found.tf_version} sees {len(found.gpus)} GPU(s) (CUDA '
        f'{found.cuda_version}, cuDNN {found.cudnn_version})')
    return 0
  say(f'TensorFlow {found.tf_version} sees no GPU. Why:')
  if not found.cuda_build:
    say('- this TensorFlow is a CPU-only build (tensorflow-cpu): run `bash tools/setup.sh --gpu`')
  say(f'- {found.driver_line}')
  if found.driver_too_old:
    say(f'- driver {found.driver_version} is older than {MIN_DRIVER[0]}.{MIN_DRIVER[1]}, which '
        f'CUDA {found.cuda_version or "12"} needs: upgrade the NVIDIA driver')
  for problem in found.unloadable:
    say(f'- cannot load {problem}')
  if found.visible_devices is not None:
    say(f'- CUDA_VISIBLE_DEVICES={found.visible_devices!r} limits the GPUs '
        'this process may see')
  return 1


if __name__ == '__main__':
  sys.exit(main())

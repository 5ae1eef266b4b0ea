#!/usr/bin/env bash
# One idempotent set-up for a fresh Debian machine: Bazel (Debian's bazel-bootstrap 4.2.3),
# Slurm and munge (for the real-Slurm test), the local Bazel repositories Bazel needs
# offline, and the pinned Python environment in .venv/ (requirements.txt, and the specs'
# requirements-test.txt).
# Safe to run again: every step checks first and does nothing when already done.
#
#   bash tools/setup.sh          CPU machines: tensorflow-cpu; GPU nodes found by nvidia-smi
#   bash tools/setup.sh --gpu    GPU nodes: tensorflow[and-cuda] (CUDA 12.2 / cuDNN 8.9
#                                libraries from the package index) instead of tensorflow-cpu,
#                                then the GPUs TensorFlow sees, or why none
#   bash tools/setup.sh --cpu    tensorflow-cpu even where nvidia-smi lists GPUs
#   bash tools/setup.sh --gpu-image   the --gpu environment for a container image
#                                (docs/cluster/Dockerfile): no GPU is looked for while the
#                                image is built, and neither Bazel nor Slurm is installed
#                                (a pod runs .venv/bin/python3 -m towers.train_main)
# --gpu on a machine whose nvidia-smi lists no GPU changes nothing: it says what it would
# install and why it found no GPU, and exits 1.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

say() { printf '[setup] %s\n' "$*"; }

asked=""
image=""
for arg in "$@"; do
  case "$arg" in
    --gpu) asked=gpu ;;
    --gpu-image) asked=gpu; image=yes ;;
    --cpu) asked=cpu ;;
    -h|--help) sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "error: tools/setup.sh: unknown argument $arg (use --gpu, --gpu-image, --cpu or nothing)" >&2; exit 2 ;;
  esac
done
cpu_pin="$(grep '^tensorflow-cpu==' requirements.txt)"
gpu_pin="tensorflow[and-cuda]==${cpu_pin#tensorflow-cpu==}"
# Whether nvidia-smi lists a GPU here; `gpu_why` says what was found either way.
gpu_found=""
if ! command -v nvidia-smi >/dev/null 2>&1; then
  gpu_why="nvidia-smi not found: no NVIDIA driver is installed here"
elif ! smi_out="$(nvidia-smi -L 2>&1)"; then
  gpu_why="nvidia-smi failed: $(printf '%s' "$smi_out" | head -n1)"
elif ! printf '%s' "$smi_out" | grep -q '^GPU '; then
  gpu_why="nvidia-smi lists no GPU"
else
  gpu_found=yes
  gpu_why="nvidia-smi lists $(printf '%s\n' "$smi_out" | grep -c '^GPU ') GPU(s), driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n1)"
fi
variant=cpu
if [ -n "$image" ]; then
  variant=gpu
  say "container image: installing $gpu_pin (the GPUs are those of the node it runs on)"
elif [ "$asked" = gpu ] && [ -z "$gpu_found" ]; then
  say "--gpu: would install $gpu_pin instead of $cpu_pin into .venv"
  say "but found no GPU: $gpu_why"
  say "nothing changed. Install the NVIDIA driver (>= 525.60 for CUDA 12.2) and run again, or"
  say "run 'bash tools/setup.sh' for the CPU environment"
  exit 1
elif [ "$asked" = gpu ] || { [ -z "$asked" ] && [ -n "$gpu_found" ]; }; then
  variant=gpu
  say "GPU node ($gpu_why): installing $gpu_pin instead of $cpu_pin"
fi

# Debian packages: Bazel, and Slurm + munge for tests/slurm_test.py (the test starts its own
# private daemons; nothing is started here).
apt_packages=()
if [ -z "$image" ]; then
  command -v bazel >/dev/null 2>&1 || apt_packages+=(bazel-bootstrap)
  for program in slurmctld:slurmctld slurmd:slurmd sbatch:slurm-client munged:munge; do
    command -v "${program%%:*}" >/dev/null 2>&1 || [ -x "/usr/sbin/${program%%:*}" ] \
      || apt_packages+=("${program##*:}")
  done
fi
if [ "${#apt_packages[@]}" -gt 0 ]; then
  say "installing Debian packages: ${apt_packages[*]} (needs root and apt)"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${apt_packages[@]}" >/dev/null
fi
[ -n "$image" ] || say "bazel: $(bazel --version 2>/dev/null | head -n1)"

python_bin="${PYTHON:-python3}"
if [ ! -x .venv/bin/python3 ]; then
  say "creating .venv with $($python_bin --version)"
  "$python_bin" -m venv .venv
fi
# The GPU variant: requirements.txt with tensorflow[and-cuda] in place of tensorflow-cpu.
requirements=requirements.txt
if [ "$variant" = gpu ]; then
  requirements=.venv/requirements-gpu.txt
  sed "s/^tensorflow-cpu==/tensorflow[and-cuda]==/" requirements.txt > "$requirements"
fi
stamp=.venv/.requirements.sha256
want="$(sha256sum "$requirements" | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  say "installing pinned Python packages from $requirements"
  .venv/bin/python3 -m pip install -q --upgrade pip
  # tensorflow and tensorflow-cpu both own the tensorflow package: switching between the
  # CPU and GPU variants removes the other one first.
  other=tensorflow
  [ "$variant" = gpu ] && other=tensorflow-cpu
  switched=""
  if .venv/bin/python3 -m pip show -q "$other" >/dev/null 2>&1; then
    say "removing $other from .venv (switching to the $variant variant)"
    .venv/bin/python3 -m pip uninstall -q -y "$other"
    switched=yes
  fi
  # opencv-python-headless and opencv-contrib-python-headless both own the cv2 package:
  # with both installed, whichever was installed last silently wins. A reused .venv may
  # still hold the plain one from an older requirements.txt: remove every cv2 wheel not
  # pinned there, then reinstall the pinned one (the removal deleted files they share).
  removed=""
  for wheel in opencv-python-headless opencv-python opencv-contrib-python; do
    if ! grep -q "^${wheel}==" requirements.txt && .venv/bin/python3 -m pip show -q "$wheel" >/dev/null 2>&1; then
      say "removing $wheel from .venv (requirements.txt pins opencv-contrib-python-headless)"
      .venv/bin/python3 -m pip uninstall -q -y "$wheel"
      removed=yes
    fi
  done
  .venv/bin/python3 -m pip install -q -r "$requirements"
  if [ -n "$switched" ]; then  # the removal deleted files the two wheels share
    pin="$cpu_pin"
    [ "$variant" = gpu ] && pin="tensorflow==${cpu_pin#*==}"
    .venv/bin/python3 -m pip install -q --no-deps --force-reinstall "$pin"
  fi
  if [ -n "$removed" ] || ! .venv/bin/python3 -c 'import cv2; cv2.optflow' >/dev/null 2>&1; then
    say "reinstalling opencv-contrib-python-headless (cv2 files shared with a removed wheel)"
    .venv/bin/python3 -m pip install -q --no-deps --force-reinstall \
      "$(grep '^opencv-contrib-python-headless==' requirements.txt)"
  fi
  echo "$want" > "$stamp"
fi
# The specs' own libraries (requirements-test.txt): not in the container image, which runs
# programs only.
if [ -z "$image" ]; then
  test_stamp=.venv/.requirements-test.sha256
  want_test="$(sha256sum requirements-test.txt | cut -d' ' -f1)"
  if [ ! -f "$test_stamp" ] || [ "$(cat "$test_stamp")" != "$want_test" ]; then
    say "installing the specs' pinned Python packages from requirements-test.txt"
    .venv/bin/python3 -m pip install -q -r requirements-test.txt
    echo "$want_test" > "$test_stamp"
  fi
  .venv/bin/python3 -c 'import jsonschema, yaml' \
    || { say "the specs' packages do not import: run 'bash tools/setup.sh' again"; exit 1; }
fi
.venv/bin/python3 - <<'PY'
import cv2, numpy, tensorflow as tf
from tensorflow import estimator  # noqa: F401  (fails loudly if tf.estimator is missing)
if not hasattr(cv2, "optflow"):  # TV-L1 flow (//data_tools:extract_flow) needs the contrib build
    raise SystemExit("[setup] cv2 has no optflow module: run "
                     "'.venv/bin/python3 -m pip uninstall -y opencv-python-headless' "
                     "then 'bash tools/setup.sh' again")
cv2.optflow.DualTVL1OpticalFlow_create()
print(f"[setup] python ok: tensorflow {tf.__version__}, numpy {numpy.__version__}, opencv {cv2.__version__}")
PY
if [ "$variant" = gpu ] && [ -z "$image" ]; then
  if ! .venv/bin/python3 tools/gpu_report_main.py | sed 's/^\[gpu\]/[setup]/'; then
    say "the GPU environment is installed, but TensorFlow sees no GPU (reasons above)"
    exit 1
  fi
fi

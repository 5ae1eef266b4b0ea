#!/usr/bin/env bash
# One idempotent set-up for a fresh Debian machine: Bazel (Debian's bazel-bootstrap 4.2.3),
# Slurm and munge (for the real-Slurm test), the local Bazel repositories Bazel needs
# offline, and the pinned Python environment in .venv/.
# Safe to run again: every step checks first and does nothing when already done.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

say() { printf '[setup] %s\n' "$*"; }

# Debian packages: Bazel, and Slurm + munge for tests/slurm_test.py (the test starts its own
# private daemons; nothing is started here).
apt_packages=()
command -v bazel >/dev/null 2>&1 || apt_packages+=(bazel-bootstrap)
for program in slurmctld:slurmctld slurmd:slurmd sbatch:slurm-client munged:munge; do
  command -v "${program%%:*}" >/dev/null 2>&1 || [ -x "/usr/sbin/${program%%:*}" ] \
    || apt_packages+=("${program##*:}")
done
if [ "${#apt_packages[@]}" -gt 0 ]; then
  say "installing Debian packages: ${apt_packages[*]} (needs root and apt)"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${apt_packages[@]}" >/dev/null
fi
say "bazel: $(bazel --version 2>/dev/null | head -n1)"

python_bin="${PYTHON:-python3}"
if [ ! -x .venv/bin/python3 ]; then
  say "creating .venv with $($python_bin --version)"
  "$python_bin" -m venv .venv
fi
stamp=.venv/.requirements.sha256
want="$(sha256sum requirements.txt | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  say "installing pinned Python packages from requirements.txt"
  .venv/bin/python3 -m pip install -q --upgrade pip
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
  .venv/bin/python3 -m pip install -q -r requirements.txt
  if [ -n "$removed" ] || ! .venv/bin/python3 -c 'import cv2; cv2.optflow' >/dev/null 2>&1; then
    say "reinstalling opencv-contrib-python-headless (cv2 files shared with a removed wheel)"
    .venv/bin/python3 -m pip install -q --no-deps --force-reinstall \
      "$(grep '^opencv-contrib-python-headless==' requirements.txt)"
  fi
  echo "$want" > "$stamp"
fi
.venv/bin/python3 - <<'PY'
import cv2, numpy, tensorflow as tf
from tensorflow import estimator  # noqa: F401  (fails loudly if tf.estimator is missing)
if not hasattr(cv2, "optflow"):  # TV-L1 flow (//input_fn:extract_flow) needs the contrib build
    raise SystemExit("[setup] cv2 has no optflow module: run "
                     "'.venv/bin/python3 -m pip uninstall -y opencv-python-headless' "
                     "then 'bash tools/setup.sh' again")
cv2.optflow.DualTVL1OpticalFlow_create()
print(f"[setup] python ok: tensorflow {tf.__version__}, numpy {numpy.__version__}, opencv {cv2.__version__}")
PY

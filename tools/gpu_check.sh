#!/usr/bin/env bash
# The GPU tier on this machine, in one command (a new GPU node, after tools/setup.sh --gpu):
#
#   bash tools/gpu_check.sh
#
# Says which GPUs TensorFlow sees (or why none: tools/gpu_report_main.py), runs every spec of
# tests/gpu_tier_test.py's GpuTierTest (those that need a GPU; its WithoutGpuTest runs
# anywhere, in `bazel test //tests:gpu_tier_test`) with the project's .venv (PYTHON=... to
# use another interpreter),
# with soft placement off (an op that has no GPU kernel fails its spec), then prints one
# table: spec, GPU, towers, examples/s, peak memory, PASS / FAIL / SKIP. Its measured rows:
# uint8 clips from records, 2 GPUs with bfloat16 transfers and micro-batches, both 6 GB
# recipes (RGB, Flow) under a 5 GiB cap with the allocator's peak, towers against
# MirroredStrategy, and TV-L1 with and without XLA (examples/s are frame pairs/s at
# 341x256, target >= 30 for the faster). Each spec's outcome is read from the tier's JUnit
# XML report, its figures and report lines from
# the JSON lines it writes (GPU_TIER_RESULTS). GPU_CHECK_RESULTS=<file> also writes the
# table as JSON there: {rows: [{test, spec, gpu, ..., result}], skipped: the reason the
# tier could not run or null, tier_exit_code}.
# Exit 0 when every spec passed, 1 when one failed or none could run (the reason is
# printed), 2 when the interpreter is missing. Takes minutes on a GPU: each I3D spec alone
# trains 5 steps of its 6 GB recipe.
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
python_bin="${PYTHON:-.venv/bin/python3}"
if ! [ -x "$python_bin" ] && ! command -v "$python_bin" >/dev/null 2>&1; then
  echo "error: $python_bin not found: run 'bash tools/setup.sh --gpu' first (or set PYTHON)" >&2
  exit 2
fi
scratch="$(mktemp -d "${TMPDIR:-/tmp}/gpu_check.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT
export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}"

"$python_bin" tools/gpu_report_main.py
echo "[gpu_check] running tests/gpu_tier_test.py (its report lines below, then the table)"
GPU_TIER_RESULTS="$scratch/results.jsonl" TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}" \
  "$python_bin" -m tests.gpu_tier_test GpuTierTest --xml_output_file="$scratch/tier.xml" \
  > "$scratch/test.log" 2>&1
code=$?
full_log="${GPU_CHECK_LOG:-runs/gpu_check.log}"  # the tier's whole output is kept here
mkdir -p "$(dirname "$full_log")" && cp "$scratch/test.log" "$full_log" \
  || full_log="(not kept: cannot write $full_log)"

"$python_bin" - "$scratch/tier.xml" "$scratch/results.jsonl" "$code" "$full_log" \
  "${GPU_CHECK_RESULTS:-}" <<'PY'
import json, os, sys
import xml.etree.ElementTree as ET

xml_path, results_path, code, full_log, summary_path = sys.argv[1:6]
code = int(code)
outcome = {}  # spec -> PASS / FAIL / SKIP, from the tier's JUnit XML report
if os.path.exists(xml_path):
  for case in ET.parse(xml_path).iter('testcase'):
    name = case.get('name', '')
    if not case.get('classname', '').endswith('GpuTierTest') or name == 'test_session':
      continue
    failed = case.find('failure') is not None or case.find('error') is not None
    outcome[name] = ('FAIL' if failed else 'SKIP' if case.get('result') == 'suppressed'
                     else 'PASS')
lines = []
if os.path.exists(results_path):
  lines = [json.loads(l) for l in open(results_path, encoding='utf-8') if l.strip()]
notes = [l for l in lines if 'note' in l]
rows = [l for l in lines if 'test' in l]
skipped = next((n['skipped'] for n in notes if n.get('skipped')), None)
for n in notes:
  print(f"[gpu_check] {n['note']}")
for test, result in outcome.items():
  print(f'[gpu_check] {result} {test}')
measured = {r['test'] for r in rows}
for test in outcome:
  if test not in measured:
    rows.append({'test': test, 'spec': test[len('test_'):].replace('_', ' '),
                 'gpu': 'none' if outcome[test] == 'SKIP' else ''})
for r in rows:
  r['result'] = outcome.get(r['test'], 'FAIL' if code else 'PASS')

def cell(value, fmt):
  return '' if value is None else format(value, fmt)

table = [('spec', 'GPU', 'towers', 'examples/s', 'peak memory (MiB)', 'result')]
for r in rows:
  table.append((r['spec'], r.get('gpu', ''), cell(r.get('towers'), 'd'),
                cell(r.get('examples_per_s'), '.1f'), cell(r.get('peak_mib'), ',.0f'),
                r['result']))
widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
for i, row in enumerate(table):
  print('| ' + ' | '.join(c.ljust(w) for c, w in zip(row, widths)) + ' |')
  if i == 0:
    print('|' + '|'.join('-' * (w + 2) for w in widths) + '|')
results = list(outcome.values())
if summary_path:  # GPU_CHECK_RESULTS: the table and the tier's skip reason, as JSON
  with open(summary_path, 'w', encoding='utf-8') as f:
    json.dump({'rows': rows, 'skipped': skipped, 'tier_exit_code': code}, f, indent=1)
if not results:
  print(f'[gpu_check] the tier did not run: see {full_log}')
  sys.exit(1)
if all(r == 'SKIP' for r in results):
  print('[gpu_check] every spec skipped: no GPU here (reason above)')
  sys.exit(1)
failed = results.count('FAIL')
print(f'[gpu_check] {results.count("PASS")} passed, {failed} failed, '
      f'{results.count("SKIP")} skipped; full log: {full_log}')
sys.exit(1 if failed or code else 0)
PY

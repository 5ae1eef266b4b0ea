"""The machine a benchmark ran on, as its tables name it."""

import os


def cpu_name() -> str:
  """The CPU model from /proc/cpuinfo and its widest vector unit: 'AMD EPYC, AVX2, no
  AVX-512' ('CPU unknown' where there is no /proc/cpuinfo)."""
  try:
    with open('/proc/cpuinfo', encoding='utf-8') as f:
      lines = f.read().splitlines()
  except OSError:
    return 'CPU unknown'
  model = next((l.split(':', 1)[1].strip() for l in lines if l.startswith('model name')),
               'CPU unknown')
  flags = set(next((l.split(':', 1)[1].split() for l in lines if l.startswith('flags')), []))
  vector = 'AVX-512' if 'avx512f' in flags else 'AVX2, no AVX-512' if 'avx2' in flags else \
      'no AVX2'
  return f'{model}, {vector}'


def machine_name() -> str:
  """cpu_name() and the cores this process may use: 'AMD EPYC, AVX-512, 2 cores'."""
  return f'{cpu_name()}, {len(os.sched_getaffinity(0))} cores'

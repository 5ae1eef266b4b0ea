"""extract_flow split over processes and nodes: which videos a shard takes, and how shards
writing one `--out` at once record their work without a race.

* Share: every shard lists all videos the same way and splits them with the same rule, so
  the shares are disjoint, cover every video and are the same on every run over the same
  videos: videos sorted by (frames descending, name), each given to the shard with the
  fewest frames so far (lowest index on ties). Frames are the container's announced count
  (0 for an unreadable file; it still belongs to exactly one shard, which reports it).
* Records: a shard (and a run without a split, as shard 0 of 1) records its settings (those of the flow's values and the backend) in
  `<out>/.flow_parts/<i>-of-<N>.started.json` before any work, appends its videos' source
  records to its own file `<out>/.flow_sources.<i>-of-<N>.jsonl` and, when done, writes its
  part `<out>/.flow_parts/<i>-of-<N>.json` (its settings, the videos it skipped and why).
  Nothing else in `<out>` is written by two processes. A shard (or a run without a split)
  whose settings differ from any shard's recorded there is refused, at its start and again
  at the merge (`other_settings`): flow of two settings or backends never shares a manifest.
* Merge: the manifest, flow.txt and `.flow_sources.jsonl` are written whole by the last
  shard to finish (it sees every part), or by any later run of extract_flow without --shard. The merge folds the shard source files into
  `.flow_sources.jsonl` and removes them and the parts. Until then `unfinished` names the
  shards that have not written their part.
"""

from __future__ import annotations

import glob
import json
import os
import re
from typing import Any, Iterable, Sequence, TypeVar

from command_line.options import Problem
from input_fn import dir_identity, json_files, video_lists

PARTS_DIR = '.flow_parts'
# {"video": name, "source": {"size", "mtime_ns", "settings"}, "written": [u frames, v frames,
# bytes of their files]} ("written" absent in records made before it was kept)
SOURCES = '.flow_sources.jsonl'
SHARD_SOURCES = '.flow_sources.{shard}-of-{num_shards}.jsonl'
_SHARD_FILE = re.compile(r'(?:\.flow_sources\.)?(\d+)-of-(\d+)(?:\.started)?\.jsonl?')

T = TypeVar('T')


def from_environment(shard: int, num_shards: int, environ=os.environ) -> tuple[int, int]:
  """(shard, num_shards): the flags when given (shard >= 0, num_shards >= 1), else a Slurm
  array task's SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN and SLURM_ARRAY_TASK_COUNT, else
  (0, 1): the flags' defaults -1 and 0 stand for "not given". Raises ValueError naming the
  flag for a shard outside [0, num_shards), and for a split (num_shards > 1) that does not
  say which shard this process computes."""
  source = ''
  if num_shards <= 0 and 'SLURM_ARRAY_TASK_COUNT' in environ:
    num_shards = int(environ['SLURM_ARRAY_TASK_COUNT'])
    source = ' (from SLURM_ARRAY_TASK_COUNT)'
  if shard < 0 and 'SLURM_ARRAY_TASK_ID' in environ:
    shard = int(environ['SLURM_ARRAY_TASK_ID']) - int(environ.get('SLURM_ARRAY_TASK_MIN', 0))
    source += ' (from SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN)'
  num_shards = max(num_shards, 1)
  if shard < 0 and num_shards > 1:
    raise ValueError(f'--num_shards={num_shards}{source} needs --shard: say which share '
                     f'this process computes (0..{num_shards - 1})')
  shard = max(shard, 0)
  if shard >= num_shards:
    raise ValueError(f'--shard={shard} must be below --num_shards={num_shards}{source} '
                     f'(shards are numbered 0..{num_shards - 1})')
  return shard, num_shards


def share(items: Sequence[T], frames: Sequence[int], names: Sequence[str], shard: int,
          num_shards: int) -> list[T]:
  """The items of `shard`, in their given order (see the module docstring for the rule)."""
  if num_shards == 1:
    return list(items)
  loads = [0] * num_shards
  mine = set()
  for i in sorted(range(len(items)), key=lambda i: (-frames[i], names[i])):
    owner = min(range(num_shards), key=lambda s: (loads[s], s))
    loads[owner] += frames[i]
    if owner == shard:
      mine.add(i)
  return [item for i, item in enumerate(items) if i in mine]


def sources_path(out: str, shard: int, num_shards: int) -> str:
  return os.path.join(out, SHARD_SOURCES.format(shard=shard, num_shards=num_shards))


def shard_source_files(out: str) -> list[str]:
  """Every shard's source-record file in `out`, sorted."""
  return sorted(glob.glob(os.path.join(out, '.flow_sources.*-of-*.jsonl')))


def read_sources(out: str) -> dict[str, dict[str, Any] | None]:
  """{video: source} recorded in `<out>/SOURCES`, then in the shards' files (the last line
  of a video wins; unreadable lines are ignored, so their videos are computed again); a
  source is None for a video whose flow could not be computed."""
  return {video: row['source'] for video, row in _records(out).items()}


def read_written(out: str) -> dict[str, list[int]]:
  """{video: [u frames, v frames, bytes of their files]} as its flow was written (the same
  lines as `read_sources`); videos recorded without it are absent."""
  return {video: row['written'] for video, row in _records(out).items()
          if isinstance(row.get('written'), list)}


def _records(out: str) -> dict[str, dict[str, Any]]:
  """{video: its last readable record line} of `<out>/SOURCES` then the shards' files."""
  recorded = {}
  lines = []
  for path in [os.path.join(out, SOURCES)] + shard_source_files(out):
    try:
      with open(path) as f:
        lines += f.read().splitlines()
    except OSError:
      continue
  for line in lines:
    try:
      row = json.loads(line)
      if 'source' in row:
        recorded[row['video']] = row
    except (ValueError, KeyError, TypeError):
      continue
  return recorded


def changed_videos(out: str, entries: Iterable[video_lists.VideoEntry],
                   videos_dir: str) -> tuple[list[str], str]:
  """(sorted names, the video file of the first) of the `entries` whose source record in
  `out` (`read_sources`) names another size or mtime than their video file under
  `videos_dir` has now: their flow is of an older file. A video without a record, or
  without its file, is not among them; ([], '') when none is."""
  recorded = read_sources(out)
  files = {e.name: path for e in entries
           for path in [video_lists.resolve_video(videos_dir, e)] if path}
  changed = []
  for name, path in sorted(files.items()):
    source = recorded.get(name)
    if not isinstance(source, dict):
      continue
    try:
      stat = os.stat(path)
    except OSError:
      continue
    if (source.get('size'), source.get('mtime_ns')) != (stat.st_size, stat.st_mtime_ns):
      changed.append(name)
  return changed, files[changed[0]] if changed else ''


def part_path(out: str, shard: int, num_shards: int) -> str:
  return os.path.join(out, PARTS_DIR, f'{shard}-of-{num_shards}.json')


def started_path(out: str, shard: int, num_shards: int) -> str:
  return os.path.join(out, PARTS_DIR, f'{shard}-of-{num_shards}.started.json')


def write_started(out: str, shard: int, num_shards: int, settings: dict[str, Any]) -> None:
  """Records, before any work, that `shard` extracts with `settings`."""
  os.makedirs(os.path.join(out, PARTS_DIR), exist_ok=True)
  json_files.write_json(started_path(out, shard, num_shards), {'settings': settings})


def _recorded(out: str) -> dict[tuple[int, int], dict[str, Any]]:
  """{(shard, num_shards): its record} of every shard that started (its part when done,
  else its started record) or left source records in `out`; the record {} when unreadable."""
  found: dict[tuple[int, int], dict[str, Any]] = {}
  folder = os.path.join(out, PARTS_DIR)
  names = [os.path.basename(p) for p in shard_source_files(out)] + (
      sorted(os.listdir(folder)) if os.path.isdir(folder) else [])
  for name in names:
    match = _SHARD_FILE.fullmatch(name)
    if match:
      key = (int(match.group(1)), int(match.group(2)))
      record = (json_files.load_object(part_path(out, *key)) or
                json_files.load_object(started_path(out, *key)))
      found[key] = record or {}
  return found


def other_settings(out: str, settings: dict[str, Any]) -> dict[str, list[Problem]]:
  """{'shard <i> of <N>': its differences from `settings`} for every shard recorded in
  `out` with other settings (`dir_identity.differences`: each names the setting, e.g.
  'backend', 'short_side', 'tvl1_epsilon'), a shard's own earlier run included; {} when
  all agree."""
  found = {}
  for key, record in sorted(_recorded(out).items()):
    if 'settings' not in record:
      continue
    differences = dir_identity.differences(dir_identity.flattened(record['settings']),
                                           dir_identity.flattened(settings))
    if differences:
      found[f'shard {key[0]} of {key[1]}'] = differences
  return found


def unfinished(out: str) -> list[str] | None:
  """None when `out` holds no extraction awaiting its merge; else the shards of it
  ('<i> of <N>'; '0 of 1': a run without a split that stopped) that have not written
  their part ([] when every one has and only the merge is left to do)."""
  recorded = _recorded(out)
  if not recorded:
    return None
  return [f'{i} of {n}' for n in sorted({n for _, n in recorded}) for i in range(n)
          if json_files.load_object(part_path(out, i, n)) is None]


def unfinished_text(flow_dir: str, shards: list[str]) -> str:
  """What to do about `flow_dir`'s unfinished extraction (`unfinished`'s `shards`), as the
  end of a refusal."""
  if shards == ['0 of 1']:
    return (f'//data_tools:extract_flow stopped before it finished; run it again with '
            f'--out={flow_dir} (it resumes)')
  waiting = (f'shard(s) {", ".join(shards)} of //data_tools:extract_flow have not finished'
             if shards else 'every shard finished but none merged them')
  return f'{waiting}; run them, or extract_flow without --shard into it'


def write_part(out: str, shard: int, num_shards: int, part: dict[str, Any]) -> None:
  """Records that `shard` is done, with `part` (JSON: its skipped videos)."""
  os.makedirs(os.path.join(out, PARTS_DIR), exist_ok=True)
  json_files.write_json(part_path(out, shard, num_shards), part)


def read_parts(out: str, num_shards: int) -> list[dict[str, Any]] | None:
  """Every part of a split into `num_shards`, or None while any is missing or unreadable."""
  parts = []
  for shard in range(num_shards):
    part = json_files.load_object(part_path(out, shard, num_shards))
    if part is None:
      return None
    parts.append(part)
  return parts


def claim_merge(out: str, num_shards: int) -> bool:
  """True for exactly one of the shards that saw every part: it creates the merge lock
  (O_EXCL) and does the merge; `remove_records` removes the lock."""
  try:
    os.close(os.open(os.path.join(out, PARTS_DIR, f'merge-{num_shards}.lock'),
                     os.O_CREAT | os.O_EXCL | os.O_WRONLY))
  except FileExistsError:
    return False
  return True


def remove_records(out: str) -> None:
  """Removes the shard source files, every part, started record and merge lock (after a
  merge has folded them in)."""
  for path in shard_source_files(out):
    _remove(path)
  folder = os.path.join(out, PARTS_DIR)
  for name in os.listdir(folder) if os.path.isdir(folder) else []:
    if re.fullmatch(r'\d+-of-\d+(\.started)?\.json|merge-\d+\.lock', name):
      _remove(os.path.join(folder, name))
  try:
    os.rmdir(folder)
  except OSError:  # absent, or a shard of a newer split already wrote into it
    pass


def _remove(path: str) -> None:
  try:
    os.remove(path)
  except FileNotFoundError:  # another merge removed it first
    pass

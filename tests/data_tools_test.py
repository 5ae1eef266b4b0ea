"""Specification: the data tools (//data_tools:prepare, //data_tools:extract_flow,
//data_tools:make_synthetic_ucf101) as a new user meets them, run as real processes.

* What the user names wins over what is discovered, and the manifest says what was read:
  `--frames_dir` / `--flow_dir` beat the lists found in data_dir; extract_flow writes only
  inside its `--out`, and the prepare it suggests for another `--out` reads that flow.
* Every option is checked before any work: impossible TV-L1 settings, negative sizes,
  impossible synthetic sizes stop with one line and exit 2, nothing written.
* extract_flow recomputes the flow of a replaced video (and says so), keeps the rest.
* Flow whose u and v hold different frame counts is skipped and counted, never cut.
* The frame and flow layouts of TSN, mmaction's denseflow and I3D_Finetune are detected (or
  named with --layout); a layout not understood stops with one line naming the one found
  and the ones expected.
* No subset ends with zero records and exit 0; the manifest keeps how many videos the list
  named (`num_listed`).
* Damaged JSON files of the tools give one line (or are rebuilt), never a traceback.

The specs read exit codes, the `error` and plan events of the status file, manifests and
records; the lines the tools print are specified in data_tools_console_test.py.

Data: a synthetic UCF101 of 2 classes x 8 groups (split 1: 2 train, 14 test videos of 4-5
frames of 24x16), its frames and TV-L1 flow, and copies in other projects' layouts. The
processes run a few at a time in setUpClass; the specs look at their results.
"""

import concurrent.futures
import glob
import json
import os
import shutil
import tempfile

import cv2
import numpy as np
import tensorflow as tf

from command_line import status_file
from data_tools import extract_flow, layouts, make_synthetic_ucf101

from input_fn import direct, flow, frame_folders, manifest, records, ucf101, video_io
from tests import program_runs
from towers import params as params_lib

LIMIT = 300  # seconds for one process
SYNTHETIC_FLOW = [f'--{k}={v}' for k, v in make_synthetic_ucf101.SYNTHETIC_FLOW.items()]
SPLIT = 'ucfTrainTestlist'
UNEVEN = 'v_MoveLeftSpeed1_g01_c01'   # its v folder loses frames (different lengths)
REPLACED = 'v_MoveLeftSpeed1_g02_c01'  # its .avi is replaced by another video's


def run(module: str, *args: str) -> program_runs.ProgramRun:
  return program_runs.run(module, *args, timeout=LIMIT)


def prepare(data: str, out: str, *args: str) -> program_runs.ProgramRun:
  return run('data_tools.prepare_main', f'--data_dir={data}', f'--out={out}', '--short_side=0', '--workers=1',
             *args)


def read_records(out: str, subset: str) -> dict[str, dict]:
  """{video: parsed record} of every shard the manifest lists."""
  rows = {}
  for path, _ in manifest.shard_paths(out, subset):
    for raw in tf.data.TFRecordDataset(path):
      parsed = records.parse(raw)
      rows[parsed['video'].numpy().decode()] = parsed
  return rows


def read_json(path: str) -> dict:
  with open(path) as f:
    return json.load(f)


def copy_frames(source: str, target: str, name: str, transform=lambda image: image) -> None:
  """Copies `source`'s frame%06d.jpg files to `target` as `name % n` (re-encoded)."""
  os.makedirs(target, exist_ok=True)
  count, _ = frame_folders.count_frames(source)
  for i in range(count):
    image = cv2.imread(frame_folders.frame_path(source, i), cv2.IMREAD_UNCHANGED)
    cv2.imwrite(os.path.join(target, name % (i + 1)), transform(image))


def plan(done: program_runs.ProgramRun, event: str) -> dict:
  """The one plan event (`prepare_plan`, `flow_plan`) of a run."""
  found = [e for e in done.events if e['event'] == event]
  assert len(found) == 1, (event, done.events, done.output())
  return found[0]


class DataToolsTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.root = tempfile.mkdtemp()
    at = lambda *parts: os.path.join(cls.root, *parts)
    cls.data = at('ucf')
    make_synthetic_ucf101.make_dataset(cls.data, classes=2, groups=8, width=24, height=16,
                                       min_frames=4, max_frames=5, object_size=6,
                                       write_frames=True, write_flow=True)
    split = ucf101.read_split(os.path.join(cls.data, SPLIT), 1)
    cls.videos = sorted(e.name for e in split.train + split.test)
    flow_root = os.path.join(cls.data, ucf101.FLOW_DIR_NAME)
    # A root flow.txt as I3D_Finetune keeps it, pointing at tvl1_flow.
    with open(os.path.join(cls.data, ucf101.FLOW_LIST_NAME), 'w') as f:
      for entry in split.train + split.test:
        count, _ = frame_folders.count_flow_frames(flow_root, entry.name)
        f.write(f'{entry.name} {ucf101.FLOW_DIR_NAME}/{{:s}}/{entry.name} {count} '
                f'{entry.label}\n')
    # Other folders the user names: frames at twice the size, constant flow (u=200, v=60)
    # but for one pixel of u, the video's number (no two videos' flow are copies).
    for i, video in enumerate(cls.videos):
      copy_frames(os.path.join(cls.data, 'jpegs_256', video), at('big_frames', video),
                  frame_folders.FRAME_PATTERN, lambda image: cv2.resize(image, (48, 32)))
      plane = lambda value: np.full((16, 24), value, np.uint8)
      u = plane(200)
      u[0, 0] = i
      flow.write_flow(np.stack([np.stack([u, plane(60)], -1)] * 2), at('other_flow'), video)
    # Other projects' layouts: TSN frames in the root, denseflow's flow_x/flow_y, u/ and v/
    # inside the video's folder; and one nobody writes.
    for name in ('tsn', 'png', 'mixed'):
      shutil.copytree(os.path.join(cls.data, SPLIT), at(name, SPLIT))
    for i, video in enumerate(cls.videos):  # every other video in TSN's layout
      copy_frames(os.path.join(cls.data, 'jpegs_256', video), at('mixed', video),
                  ('img_%05d.jpg', frame_folders.FRAME_PATTERN)[i % 2])
    for video in cls.videos:
      copy_frames(os.path.join(cls.data, 'jpegs_256', video), at('tsn', video), 'img_%05d.jpg')
      copy_frames(os.path.join(cls.data, 'jpegs_256', video), at('png', video),
                  'image-%04d.png')
      for channel, x in (('u', 'x'), ('v', 'y')):
        copy_frames(os.path.join(flow_root, channel, video), at('denseflow', video),
                    f'flow_{x}_%05d.jpg')
        copy_frames(os.path.join(flow_root, channel, video), at('inside', video, channel),
                    frame_folders.FRAME_PATTERN)
    for channel in flow.CHANNELS:
      shutil.copytree(os.path.join(flow_root, channel), at('uneven', channel))
    for extra in sorted(glob.glob(os.path.join(at('uneven'), 'v', UNEVEN, '*')))[1:]:
      os.remove(extra)
    # Videos only (for extract_flow); every test video broken (for an empty subset).
    for name in ('videos', 'broken'):
      os.makedirs(at(name))
      for part in (SPLIT, 'UCF-101'):
        shutil.copytree(os.path.join(cls.data, part), at(name, part))
    for path in glob.glob(at('broken', 'UCF-101', '*', 'v_*_g0[1-7]_c*.avi')):
      with open(path, 'wb') as f:
        f.write(b'not a video')

    jobs = {
        'frames_dir': lambda: prepare(cls.data, at('out_frames_dir'), '--source=frames',
                                      f'--frames_dir={at("big_frames")}'),
        'flow_dir': lambda: prepare(cls.data, at('out_flow_dir'), '--source=flow',
                                    f'--flow_dir={at("other_flow")}'),
        'other_out': cls.extract_into_another_out,
        'replaced': cls.replace_a_video,
        'uneven': lambda: prepare(cls.data, at('out_uneven'), '--source=flow',
                                  f'--flow_dir={at("uneven")}'),
        'tsn': lambda: prepare(at('tsn'), at('out_tsn'), '--source=frames'),
        'tsn_named': lambda: prepare(at('tsn'), at('out_tsn_named'), '--source=frames',
                                     '--layout={video}/img_%05d.jpg', '--subsets=train'),
        'tsn_misnamed': lambda: prepare(at('tsn'), at('out_tsn_misnamed'), '--source=frames',
                                        '--layout={video}/frame%06d.jpg'),
        'denseflow': lambda: prepare(cls.data, at('out_denseflow'), '--source=flow',
                                     f'--flow_dir={at("denseflow")}'),
        'inside': lambda: prepare(cls.data, at('out_inside'), '--source=flow',
                                  f'--flow_dir={at("inside")}'),
        'png': lambda: prepare(at('png'), at('out_png'), '--source=frames'),
        'png_named': lambda: prepare(at('png'), at('out_png_named'), '--source=frames',
                                     '--layout={video}/image-%04d.png', '--subsets=test'),
        'mixed': lambda: prepare(at('mixed'), at('out_mixed'), '--source=frames'),
        'broken': lambda: prepare(at('broken'), at('out_broken')),
        'damaged_flow_manifest': cls.damage_the_flow_manifest,
        'damaged_identity': cls.damage_the_dataset_identity,
    }
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
      futures = {name: pool.submit(job) for name, job in jobs.items()}
      cls.results = {name: future.result() for name, future in futures.items()}

  @classmethod
  def tearDownClass(cls):
    shutil.rmtree(cls.root)
    super().tearDownClass()

  def assertRefused(self, done: program_runs.ProgramRun, error: str, options: list[str]):
    """Exit 2 through the program's entry, for `error` naming `options`."""
    self.assertEqual(done.code, 2, done.output())
    self.assertEqual((done.error['error'], done.error_options), (error, options),
                     done.output())

  def assertDone(self, done: program_runs.ProgramRun):
    self.assertEqual((done.code, done.error), (0, None), done.output())

  @classmethod
  def extract_into_another_out(cls) -> dict:
    """extract_flow into the default --out, then with other TV-L1 settings (refused), then
    as the refusal suggests: another --out, and the prepare it suggests for that."""
    data = os.path.join(cls.root, 'videos')
    first = run('data_tools.extract_flow_main', f'--data_dir={data}', *SYNTHETIC_FLOW)
    lists = {p: open(p, 'rb').read() for p in glob.glob(os.path.join(data, '**', '*.txt'),
                                                        recursive=True)}
    other = ['--short_side=0', '--tvl1_scales=2', '--tvl1_warps=2', '--tvl1_epsilon=0.1']
    refused = run('data_tools.extract_flow_main', f'--data_dir={data}', *other)
    flow_b = os.path.join(data, 'flowB')
    second = run('data_tools.extract_flow_main', f'--data_dir={data}', f'--out={flow_b}', *other)
    after = {p: open(p, 'rb').read() for p in glob.glob(os.path.join(data, '**', '*.txt'),
                                                        recursive=True)}
    out = os.path.join(cls.root, 'out_flow_b')
    follow_up = prepare(data, out, '--source=flow', f'--flow_dir={flow_b}')
    return {'first': first, 'refused': refused, 'second': second, 'lists': lists,
            'after': after, 'flow_b': flow_b, 'out': out, 'prepare': follow_up}

  @classmethod
  def replace_a_video(cls) -> dict:
    """extract_flow, replace one .avi by another video's file, prepare its flow (refused:
    stale), extract_flow again (twice), prepare again."""
    data = os.path.join(cls.root, 'replaced')
    os.makedirs(data)
    shutil.copytree(os.path.join(cls.data, SPLIT), os.path.join(data, SPLIT))
    shutil.copytree(os.path.join(cls.data, 'UCF-101'), os.path.join(data, 'UCF-101'))
    first = run('data_tools.extract_flow_main', f'--data_dir={data}', *SYNTHETIC_FLOW)
    videos = os.path.join(data, 'UCF-101', 'MoveLeftSpeed1')
    shutil.copy(os.path.join(data, 'UCF-101', 'MoveRightSpeed1', 'v_MoveRightSpeed1_g05_c01.avi'),
                os.path.join(videos, REPLACED + '.avi'))
    out = os.path.join(cls.root, 'out_replaced')
    stale = prepare(data, out, '--source=flow', '--subsets=test')
    second = run('data_tools.extract_flow_main', f'--data_dir={data}', *SYNTHETIC_FLOW)
    third = run('data_tools.extract_flow_main', f'--data_dir={data}', *SYNTHETIC_FLOW)
    current = prepare(data, out, '--source=flow', '--subsets=test')
    return {'first': first, 'stale': stale, 'second': second, 'third': third,
            'current': current, 'out': out, 'flow': os.path.join(data, ucf101.FLOW_DIR_NAME)}

  @classmethod
  def damage_the_flow_manifest(cls) -> dict:
    data = os.path.join(cls.root, 'damaged_flow')
    os.makedirs(data)
    shutil.copytree(os.path.join(cls.data, SPLIT), os.path.join(data, SPLIT))
    shutil.copytree(os.path.join(cls.data, 'UCF-101'), os.path.join(data, 'UCF-101'))
    run('data_tools.extract_flow_main', f'--data_dir={data}', *SYNTHETIC_FLOW)
    path = os.path.join(data, ucf101.FLOW_DIR_NAME, extract_flow.MANIFEST)
    refused = {}
    for name, text in (('invalid', '{"settings": '), ('empty', '{}'), ('list', '[1, 2]')):
      with open(path, 'w') as f:
        f.write(text)
      refused[name] = run('data_tools.extract_flow_main', f'--data_dir={data}', *SYNTHETIC_FLOW)
    os.remove(path)  # as the line says
    again = run('data_tools.extract_flow_main', f'--data_dir={data}', *SYNTHETIC_FLOW)
    return {'refused': refused, 'again': again}

  @classmethod
  def damage_the_dataset_identity(cls) -> dict:
    out = os.path.join(cls.root, 'out_identity')
    first = prepare(cls.data, out, '--subsets=train')
    with open(os.path.join(out, '.shards', 'dataset.json'), 'w') as f:
      f.write('[1, 2]')
    again = prepare(cls.data, out, '--subsets=train')
    return {'first': first, 'again': again, 'out': out}

  # --- What the user names wins; a tool writes only inside its own output -----------------

  def test_an_explicit_frames_dir_wins_over_the_rgb_txt_of_data_dir(self):
    self.assertDone(self.results['frames_dir'])
    out = os.path.join(self.root, 'out_frames_dir')
    test = read_records(out, 'test')
    self.assertLen(test, 14)
    self.assertEqual({int(r['height']) for r in test.values()}, {32})  # big_frames, not 16
    paths = read_json(manifest.manifest_path(out, 'test'))['source_paths']
    self.assertEqual((paths['frames_dir'], paths['frame_list']),
                     (os.path.join(self.root, 'big_frames'), ''))

  def test_an_explicit_flow_dir_wins_over_the_flow_txt_of_data_dir(self):
    self.assertDone(self.results['flow_dir'])
    out = os.path.join(self.root, 'out_flow_dir')
    test = read_records(out, 'test')
    self.assertLen(test, 14)
    for record in test.values():
      self.assertEqual(int(record['num_frames']), 2)
      self.assertAllClose(tf.io.decode_jpeg(record['flow_u'][0]).numpy().mean(), 200, atol=2)
    paths = read_json(manifest.manifest_path(out, 'test'))['source_paths']
    self.assertEqual((paths['flow_dir'], paths['flow_list']),
                     (os.path.join(self.root, 'other_flow'), ''))

  def test_extract_flow_into_another_out_leaves_every_list_alone_and_its_advice_works(self):
    runs = self.results['other_out']
    self.assertDone(runs['first'])
    self.assertRefused(runs['refused'], 'SettingsMismatch', ['out'])
    self.assertDone(runs['second'])
    self.assertEqual(plan(runs['second'], 'flow_plan')['to_compute'], 16)
    # Only flowB's own list is new; the lists of the first extraction and data_dir's are
    # byte for byte what they were.
    new = os.path.join(runs['flow_b'], ucf101.FLOW_LIST_NAME)
    self.assertEqual({p: b for p, b in runs['after'].items() if p != new}, runs['lists'])
    self.assertIn(new, runs['after'])
    self.assertFalse(os.path.exists(os.path.join(self.root, 'videos', ucf101.FLOW_LIST_NAME)))
    # The suggested prepare reads flowB: its manifest says so and its records hold flowB's
    # JPEGs, not those of tvl1_flow.
    self.assertDone(runs['prepare'])
    paths = read_json(manifest.manifest_path(runs['out'], 'train'))['source_paths']
    self.assertEqual((paths['flow_dir'], paths['flow_list']), (runs['flow_b'], new))
    video, record = sorted(read_records(runs['out'], 'train').items())[0]
    for root, same in ((runs['flow_b'], True),
                       (os.path.join(self.root, 'videos', ucf101.FLOW_DIR_NAME), False)):
      with open(frame_folders.frame_path(os.path.join(root, 'u', video), 0), 'rb') as f:
        self.assertEqual(record['flow_u'][0].numpy() == f.read(), same, root)

  # --- Options checked before any work -----------------------------------------------------

  def test_impossible_tvl1_settings_and_sizes_stop_with_one_line_before_any_work(self):
    out = os.path.join(self.root, 'never_written')
    cases = {'--tvl1_warps=0': 'tvl1_warps', '--tvl1_warps=-2': 'tvl1_warps',
             '--tvl1_scales=0': 'tvl1_scales', '--tvl1_epsilon=0': 'tvl1_epsilon',
             '--short_side=-8': 'short_side'}
    with concurrent.futures.ThreadPoolExecutor(len(cases)) as pool:
      results = dict(zip(cases, pool.map(
          lambda flag: run('data_tools.extract_flow_main', f'--data_dir={self.data}', f'--out={out}', flag),
          cases)))
    for flag, option in cases.items():
      with self.subTest(flag):
        self.assertRefused(results[flag], 'OptionsError', [option])
        self.assertEqual(status_file.values(results[flag].events, 'flow_plan', 'videos'), [])
    self.assertRefused(prepare(self.data, out, '--short_side=-8'), 'PrepareError',
                       ['short_side'])
    self.assertRefused(prepare(self.data, out, '--source=frames', f'--frames_dir={out}'),
                       'PrepareError', ['frames_dir'])
    self.assertFalse(os.path.exists(out))

  def test_make_synthetic_ucf101_refuses_impossible_sizes_before_writing(self):
    out = os.path.join(self.root, 'never_synthesized')
    cases = {('--width=0',): 'width', ('--object_size=0',): 'object_size',
             ('--object_size=48',): 'object_size',
             ('--clips_per_group=0',): 'clips_per_group',
             ('--write_flow', '--min_frames=1'): 'min_frames'}
    with concurrent.futures.ThreadPoolExecutor(len(cases)) as pool:
      results = dict(zip(cases, pool.map(
          lambda flags: run('data_tools.make_synthetic_ucf101_main', f'--out={out}', *flags), cases)))
    for flags, option in cases.items():
      with self.subTest(flags):
        self.assertRefused(results[flags], 'SyntheticError', [option])
    self.assertFalse(os.path.exists(out))

  # --- Stale and damaged flow ----------------------------------------------------------------

  def test_a_replaced_video_gets_its_flow_computed_again_and_said(self):
    runs = self.results['replaced']
    for name in ('first', 'second', 'third'):
      self.assertDone(runs[name])
    counts = lambda name: {k: plan(runs[name], 'flow_plan')[k]
                           for k in ('videos', 'already_done', 'to_compute', 'changed')}
    self.assertEqual(counts('first'),
                     {'videos': 16, 'already_done': 0, 'to_compute': 16, 'changed': 0})
    self.assertEqual(counts('second'),
                     {'videos': 16, 'already_done': 15, 'to_compute': 1, 'changed': 1})
    self.assertEqual(counts('third'),
                     {'videos': 16, 'already_done': 16, 'to_compute': 0, 'changed': 0})
    # Before the rerun prepare refuses the stale flow; after it, it reads the new flow.
    self.assertRefused(runs['stale'], 'StaleFlow', ['flow_dir'])
    self.assertDone(runs['current'])
    self.assertIn(REPLACED, read_records(runs['out'], 'test'))
    # The replaced video's flow is now that of the video copied over it.
    for channel in flow.CHANNELS:
      replaced = os.path.join(runs['flow'], channel, REPLACED)
      source = os.path.join(runs['flow'], channel, 'v_MoveRightSpeed1_g05_c01')
      self.assertEqual(sorted(os.listdir(replaced)), sorted(os.listdir(source)))
      for name in os.listdir(source):
        with open(os.path.join(replaced, name), 'rb') as a, \
            open(os.path.join(source, name), 'rb') as b:
          self.assertEqual(a.read(), b.read(), name)

  def test_a_damaged_flow_manifest_is_one_line_and_deleting_it_as_told_works(self):
    runs = self.results['damaged_flow_manifest']
    for name in ('invalid', 'empty', 'list'):
      self.assertRefused(runs['refused'][name], 'SettingsMismatch', ['out'])
    self.assertDone(runs['again'])
    self.assertEqual(plan(runs['again'], 'flow_plan')['already_done'], 16)
    self.assertEqual(plan(runs['again'], 'flow_plan')['to_compute'], 0)
    # What the refusal found, as the error holds it.
    out = self.create_tempdir().full_path
    for text, found in (('{"settings": ', 'not JSON'), ('{}', 'no settings in it'),
                        ('[1, 2]', 'a JSON list, not an object')):
      with open(os.path.join(out, extract_flow.MANIFEST), 'w') as f:
        f.write(text)
      options = extract_flow.ExtractFlowOptions(data_dir=self.data, out=out, workers=1)
      with self.assertRaises(extract_flow.SettingsMismatch) as caught:
        extract_flow.extract(options, log=lambda line: None)
      self.assertEqual((caught.exception.damaged, caught.exception.option), (found, 'out'))
    self.assertEqual(sorted(os.listdir(out)), [extract_flow.MANIFEST])  # no flow computed

  def test_u_and_v_of_different_lengths_are_skipped_and_counted_never_cut(self):
    self.assertDone(self.results['uneven'])
    out = os.path.join(self.root, 'out_uneven')
    test = read_json(manifest.manifest_path(out, 'test'))
    self.assertEqual((test['num_records'], test['num_skipped'], test['num_listed']),
                     (13, 1, 14))
    self.assertEqual(test['skipped_by_kind'], {'u/v length mismatch': 1})
    self.assertEqual(test['skipped'][0]['input'], os.path.join(self.root, 'uneven', 'u', UNEVEN))
    self.assertLen(read_records(out, 'test'), 13)
    self.assertNotIn(UNEVEN, read_records(out, 'test'))

  # --- Other projects' layouts -------------------------------------------------------------

  def check_frames(self, out: str, subsets=('train', 'test')):
    for subset in subsets:
      for video, record in read_records(out, subset).items():
        count, _ = frame_folders.count_frames(os.path.join(self.data, 'jpegs_256', video))
        self.assertEqual((int(record['num_frames']), len(record['frames'])), (count, count))

  def test_tsn_frame_folders_in_the_root_are_detected_and_prepared(self):
    self.assertDone(self.results['tsn'])
    out = os.path.join(self.root, 'out_tsn')
    test = read_json(manifest.manifest_path(out, 'test'))
    self.assertEqual((test['num_records'], test['num_listed'], test['layout']),
                     (14, 14, '{video}/img_%05d.jpg'))
    self.check_frames(out)

  def test_a_named_layout_is_used_and_one_that_does_not_fit_stops_naming_both(self):
    self.assertDone(self.results['tsn_named'])
    self.check_frames(os.path.join(self.root, 'out_tsn_named'), ('train',))
    self.assertRefused(self.results['tsn_misnamed'], 'PrepareError', ['layout'])
    self.assertFalse(os.path.exists(os.path.join(self.root, 'out_tsn_misnamed')))
    tsn = os.path.join(self.root, 'tsn')
    with self.assertRaises(layouts.LayoutError) as caught:
      layouts.resolve('{video}/frame%06d.jpg', tsn, self.videos, {}, False, '--frames_dir')
    self.assertEqual((caught.exception.found, caught.exception.expected),
                     ('{video}/img_%05d.jpg', ('{video}/frame%06d.jpg',)))
    self.assertRefused(prepare(self.data, os.path.join(self.root, 'never'), '--source=flow',
                               '--layout={video}/flow_x_%05d.jpg'), 'PrepareError', ['layout'])
    self.assertFalse(os.path.exists(os.path.join(self.root, 'never')))

  def test_denseflow_and_per_video_u_v_flow_layouts_are_detected(self):
    for name, layout in (('denseflow', '{video}/flow_{x,y}_%05d.jpg'),
                         ('inside', '{video}/{u,v}/frame%06d.jpg')):
      self.assertDone(self.results[name])
      out = os.path.join(self.root, f'out_{name}')
      test = read_json(manifest.manifest_path(out, 'test'))
      self.assertEqual((test['layout'], test['num_records']), (layout, 14))
      for video, record in read_records(out, 'test').items():
        u = os.path.join(self.data, ucf101.FLOW_DIR_NAME, 'u', video)
        self.assertEqual(int(record['num_frames']), frame_folders.count_frames(u)[0])
        original = cv2.imread(frame_folders.frame_path(u, 0), cv2.IMREAD_GRAYSCALE)
        stored = tf.io.decode_jpeg(record['flow_u'][0]).numpy()[..., 0]
        self.assertAllClose(stored, original, atol=3)

  def test_an_unknown_layout_stops_with_one_line_naming_found_and_expected(self):
    self.assertRefused(self.results['png'], 'PrepareError', ['frames_dir'])
    self.assertFalse(os.path.exists(os.path.join(self.root, 'out_png')))
    with self.assertRaises(layouts.LayoutError) as caught:
      layouts.resolve(layouts.AUTO, os.path.join(self.root, 'png'), self.videos, {}, False,
                      '--frames_dir')
    self.assertEqual((caught.exception.option, caught.exception.found,
                      caught.exception.expected),
                     ('frames_dir', '{video}/image-%04d.png', layouts.FRAME_LAYOUTS))

  def test_png_frames_named_by_layout_are_stored_as_jpeg(self):
    # At --short_side=0 no resize re-encodes them: the PNG bytes went into the records,
    # which nothing could decode as JPEG.
    done = self.results['png_named']
    self.assertEqual(done.code, 0, done.output())
    stored = read_records(os.path.join(self.root, 'out_png_named'), 'test')
    self.assertNotEmpty(stored)
    for record in stored.values():
      self.assertTrue(video_io.is_jpeg(record['frames'][0].numpy()))
      tf.io.decode_jpeg(record['frames'][0])

  def test_a_tree_mixing_two_frame_layouts_is_refused_by_prepare_and_read_by_the_direct_route(
      self):
    """8 folders of img_%05d.jpg and 8 of frame%06d.jpg: prepare reads one layout and would
    skip the other half, so it stops naming both; the direct route reads each folder in its
    own layout."""
    root = os.path.join(self.root, 'mixed')
    self.assertRefused(self.results['mixed'], 'PrepareError', ['frames_dir'])
    self.assertFalse(os.path.exists(os.path.join(self.root, 'out_mixed')))
    with self.assertRaises(layouts.LayoutError) as caught:
      layouts.resolve(layouts.AUTO, root, self.videos, {}, False, '--frames_dir')
    self.assertEqual(caught.exception.mixed,
                     {'{video}/frame%06d.jpg': 8, '{video}/img_%05d.jpg': 8})
    params = params_lib.make_params(model='c3d_small', num_classes=2, data_source='frames',
                                    data_dir=root, frame_short_side=0, clip_frames=4,
                                    crop_size=16, model_dir=os.path.join(self.root, 'unused'))
    for subset in ('train', 'test'):
      readable, listed, problems = direct.readable_videos(params, subset)
      self.assertEqual((readable, problems), (listed, []))
    source = direct.VideoSource(params)
    for entry in source.entries('train') + source.entries('test'):
      original = os.path.join(self.data, 'jpegs_256', entry.name)
      count, _ = frame_folders.count_frames(original)
      frames = source.load(entry, lambda n: np.arange(n))
      self.assertEqual(frames.shape, (count, 16, 24, 3))
      last = frame_folders.read_frames(original, [count - 1])[0]
      self.assertLess(np.abs(frames[-1].astype(int) - last.astype(int)).mean(), 8)  # JPEG

  # --- No subset of zero records with exit 0 ---------------------------------------------------

  def test_a_subset_without_any_record_stops_prepare_naming_the_count_and_cause(self):
    self.assertRefused(self.results['broken'], 'EmptySubset', [])
    # The manifests say what the lists named and what was written.
    out = os.path.join(self.root, 'out_broken')
    test = read_json(manifest.manifest_path(out, 'test'))
    train = read_json(manifest.manifest_path(out, 'train'))
    self.assertEqual((test['num_listed'], test['num_records']), (14, 0))
    self.assertEqual(test['skipped_by_kind'], {'undecodable video': 14})
    self.assertEqual((train['num_listed'], train['num_records']), (2, 2))

  def test_an_empty_test_list_stops_prepare(self):
    data = os.path.join(self.create_tempdir().full_path, 'ucf')
    shutil.copytree(os.path.join(self.root, 'videos', SPLIT), os.path.join(data, SPLIT))
    shutil.copytree(os.path.join(self.root, 'videos', 'UCF-101'), os.path.join(data, 'UCF-101'))
    open(os.path.join(data, SPLIT, 'testlist01.txt'), 'w').close()
    out = os.path.join(data, 'out')
    self.assertRefused(prepare(data, out, '--subsets=test'), 'EmptySubset', [])
    test = read_json(manifest.manifest_path(out, 'test'))
    self.assertEqual((test['num_listed'], test['num_records']), (0, 0))

  # --- Damaged files of prepare ---------------------------------------------------------------

  def test_a_damaged_dataset_identity_is_rebuilt_from_the_manifest(self):
    runs = self.results['damaged_identity']
    self.assertDone(runs['first'])
    self.assertDone(runs['again'])
    self.assertEqual(plan(runs['again'], 'prepare_plan')['subsets'],
                     {'train': {'shards': 1, 'already_done': 1}})
    self.assertEqual(read_json(os.path.join(runs['out'], '.shards', 'dataset.json'))['split'], 1)

  def test_a_damaged_manifest_is_named_with_the_fix(self):
    out = self.create_tempdir().full_path
    path = manifest.manifest_path(out, 'test')
    for text in ('{"shards": ', '[]', '{}'):
      with open(path, 'w') as f:
        f.write(text)
      with self.assertRaises(manifest.ManifestError) as caught:
        manifest.read(out, 'test')
      self.assertEqual((caught.exception.path, caught.exception.damaged), (path, True), text)
    os.remove(path)
    with self.assertRaises(manifest.ManifestError) as caught:
      manifest.read(out, 'test')
    self.assertEqual((caught.exception.path, caught.exception.damaged), (path, False))


if __name__ == '__main__':
  tf.test.main()

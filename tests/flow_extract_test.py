"""TV-L1 flow extraction: the motion it recovers, its 8-bit coding and layout, and the
//data_tools:extract_flow tool (processes, canonical names, bad videos, resumption, settings).

Frames are tiny (at most 40x32) and the solver runs with coarse settings, so the whole spec
takes seconds of TV-L1.
"""

import dataclasses
import json
import os
import shutil
import tempfile
from typing import Any

import numpy as np
import tensorflow as tf

from tests import program_runs
from data_tools import extract_flow, make_synthetic_ucf101, prepare
from input_fn import flow_shards

from input_fn import data_checks, flow, frame_folders, video_lists
from input_fn import manifest as manifest_lib
from towers.params import make_params
from tests.flow_testing import dataset_with_a_broken_video, tree_bytes

FAST = flow.Tvl1Settings(scales=3, warps=3, epsilon=0.05)


def moving_square(velocity: tuple[float, float], frames: int = 4) -> np.ndarray:
  return make_synthetic_ucf101.render_video(np.random.default_rng(1), velocity, frames,
                                            width=40, height=32, object_size=12)


def mean_motion(codes: np.ndarray) -> tuple[float, float]:
  """Mean (u, v) in pixels over the pixels that move (|d| > 0.5 px)."""
  displacement = flow.from_uint8(codes)
  moving = np.abs(displacement).sum(-1) > 0.5
  return float(displacement[..., 0][moving].mean()), float(displacement[..., 1][moving].mean())


def read_flow(flow_root: str, video: str, indices: list[int]) -> np.ndarray:
  """The video's flow frames at `indices` as uint8 [T, H, W, 2] (u, v) from their JPEGs."""
  u_folder, v_folder = frame_folders.flow_folders(flow_root, video)
  return np.stack([frame_folders.read_frames(u_folder, indices, grayscale=True),
                   frame_folders.read_frames(v_folder, indices, grayscale=True)], axis=-1)


def write_files(root: str, rels: tuple[str, ...], content: bytes) -> None:
  """Writes `content` to each of `rels` under `root` (stand-ins for video files)."""
  for rel in rels:
    os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
    with open(os.path.join(root, rel), 'wb') as f:
      f.write(content)


class Tvl1Test(tf.test.TestCase):

  def test_recovers_the_direction_and_rough_size_of_a_moving_square(self):
    for velocity in ((2.0, 0.0), (0.0, -2.0), (-2.0, 2.0)):
      codes = flow.video_flow(flow.grayscale(moving_square(velocity)), flow.tvl1(FAST))
      self.assertEqual(codes.shape, (3, 32, 40, 2))  # frame t: flow from t to t+1
      u, v = mean_motion(codes)
      for measured, true in ((u, velocity[0]), (v, velocity[1])):
        if true == 0:
          self.assertLess(abs(measured), 0.5, (velocity, u, v))
        else:  # right sign, and between 40% and 150% of the true speed
          self.assertBetween(measured / true, 0.4, 1.5, (velocity, u, v))

  def test_coding_clips_to_20_pixels_and_maps_linearly_to_0_255(self):
    codes = flow.to_uint8(np.array([-30.0, -20.0, 0.0, 10.0, 20.0, 25.0]))
    self.assertEqual(codes.tolist(), [0, 0, 128, 191, 255, 255])
    self.assertAllClose(flow.from_uint8(codes)[1:5], [-20.0, 0.16, 10.04, 20.0], atol=0.1)

  def test_resizing_scales_the_displacement_with_the_image(self):
    codes = np.full((32, 48), flow.to_uint8(np.array(4.0)), np.uint8)  # 4 px at 32 px
    resized = flow.resize_codes(codes, 64)
    self.assertEqual(resized.shape, (64, 96))
    self.assertAllClose(flow.from_uint8(resized), np.full((64, 96), 8.0), atol=0.2)
    self.assertIs(flow.resize_codes(codes, 32), codes)

  def test_written_layout_is_grayscale_jpegs_per_channel_and_whole(self):
    root = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, root)
    codes = np.zeros((3, 16, 24, 2), np.uint8)
    codes[..., 0], codes[..., 1] = 200, 60
    flow.write_flow(codes, root, 'v_A_g01_c01')
    self.assertTrue(flow.has_flow(root, 'v_A_g01_c01'))
    self.assertEqual(sorted(os.listdir(os.path.join(root, 'u'))), ['v_A_g01_c01'])
    self.assertEqual(sorted(os.listdir(os.path.join(root, 'v', 'v_A_g01_c01'))),
                     ['frame000001.jpg', 'frame000002.jpg', 'frame000003.jpg'])
    planes = read_flow(root, 'v_A_g01_c01', [0, 2])
    self.assertEqual(planes.shape, (2, 16, 24, 2))
    self.assertAllClose(planes[..., 0].mean(), 200, atol=1)
    self.assertAllClose(planes[..., 1].mean(), 60, atol=1)


class ExtractFlowToolTest(tf.test.TestCase):
  """One extraction with 2 processes (setUpClass), looked at; resumption on a copy."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.root = tempfile.mkdtemp()
    cls.data = os.path.join(cls.root, 'ucf')
    videos = dataset_with_a_broken_video(cls.data, width=24, height=16, min_frames=3,
                                         max_frames=4, object_size=6)
    # The file spells the class otherwise (like v_HandStandPushups in HandstandPushups/).
    os.rename(os.path.join(videos, 'v_MoveLeftSpeed1_g02_c01.avi'),
              os.path.join(videos, 'v_MoveleftSpeed1_g02_c01.avi'))
    cls.manifest, cls.events = cls.extract(cls.data, workers=2)

  @classmethod
  def tearDownClass(cls):
    shutil.rmtree(cls.root)
    super().tearDownClass()

  @staticmethod
  def extract(data, **overrides) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Runs extract_flow here: (its manifest, {event name: its status event})."""
    options = extract_flow.ExtractFlowOptions(**{
        'data_dir': data, 'short_side': 0, 'workers': 1, 'tvl1_scales': FAST.scales,
        'tvl1_warps': FAST.warps, 'tvl1_epsilon': FAST.epsilon, **overrides})
    with program_runs.recorded_events() as events:
      manifest = extract_flow.extract(options, log=lambda line: None)
    return manifest, {e['event']: e for e in events}

  def assertPlan(self, events, **expected):
    self.assertEqual({k: events['flow_plan'][k] for k in expected}, expected)

  def test_writes_every_video_under_its_canonical_name_and_reports_the_bad_one(self):
    out = os.path.join(self.data, 'tvl1_flow')
    manifest = self.manifest
    self.assertEqual((manifest['num_found'], manifest['num_with_flow'],
                      manifest['num_skipped']), (17, 16, 1))
    self.assertEqual(manifest['skipped_by_kind'], {'undecodable video': 1})
    self.assertIn('v_MoveLeftSpeed1_g09_c01.avi', manifest['skipped'][0]['input'])
    self.assertTrue(flow.has_flow(out, 'v_MoveLeftSpeed1_g02_c01'))
    self.assertFalse(os.path.exists(os.path.join(out, 'u', 'v_MoveleftSpeed1_g02_c01')))
    computed = self.events['flow_computed']
    self.assertEqual((computed['videos'], computed['backend'], computed['workers']),
                     (17, 'opencv', 2))
    self.assertEqual(computed['flow_frames'], sum(
        frame_folders.count_flow_frames(out, name)[0]
        for name in os.listdir(os.path.join(out, 'u'))))
    # flow.txt: I3D_Finetune's list inside --out, one row per video with flow, counts =
    # frames - 1; nothing written beside --out.
    self.assertFalse(os.path.exists(os.path.join(self.data, 'flow.txt')))
    rows, _ = video_lists.read_frame_list(os.path.join(out, 'flow.txt'))
    self.assertLen(rows, 16)
    row = rows['v_moveleftspeed1_g02_c01']
    self.assertEqual((row.name, row.label), ('v_MoveLeftSpeed1_g02_c01', 1))
    self.assertEqual(row.path, os.path.join(out, '{:s}', 'v_MoveLeftSpeed1_g02_c01'))
    count, _ = frame_folders.count_frames(row.path.format('u'))
    self.assertEqual(row.num_frames, count)
    self.assertIn(count, (2, 3))  # videos of 3-4 frames

  def test_a_rerun_computes_only_what_is_missing_and_refuses_other_settings(self):
    data = os.path.join(self.root, 'copy')
    shutil.copytree(self.data, data)
    out = os.path.join(data, 'tvl1_flow')
    shutil.rmtree(os.path.join(out, 'v', 'v_MoveRightSpeed1_g03_c01'))
    _, events = self.extract(data)
    self.assertPlan(events, already_done=15, to_compute=2)  # the gap + the bad video
    self.assertTrue(flow.has_flow(out, 'v_MoveRightSpeed1_g03_c01'))
    with open(os.path.join(out, extract_flow.MANIFEST)) as f:
      self.assertEqual(json.load(f)['num_with_flow'], 16)
    with self.assertRaises(extract_flow.SettingsMismatch) as caught:
      self.extract(data, tvl1_epsilon=0.01)
    self.assertEqual((caught.exception.differences, caught.exception.damaged),
                     (('tvl1_epsilon',), ''))
    # The flow of other videos in that root: another dataset's would be listed with it.
    others = os.path.join(self.root, 'others')
    shutil.copytree(os.path.join(self.data, 'UCF-101', 'MoveRightSpeed1'),
                    os.path.join(others, 'UCF-101', 'MoveRightSpeed1'))
    with self.assertRaises(extract_flow.SettingsMismatch) as caught:
      self.extract(others, out=out)
    self.assertEqual(caught.exception.differences, ('videos_dir',))

  def test_a_flow_folder_that_lost_emptied_or_cut_a_frame_is_computed_again(self):
    data = os.path.join(self.root, 'damaged')
    shutil.copytree(self.data, data)
    out = os.path.join(data, 'tvl1_flow')
    lost, emptied, cut = (f'v_MoveRightSpeed1_g0{g}_c01' for g in (3, 4, 5))
    def sizes(name: str) -> list[int]:  # of every u and v file, in order
      return [os.path.getsize(os.path.join(folder, file))
              for folder in frame_folders.flow_folders(out, name)
              for file in sorted(os.listdir(folder))]
    whole = {name: sizes(name) for name in (lost, emptied, cut)}
    os.remove(os.path.join(out, 'u', lost, 'frame000002.jpg'))
    open(os.path.join(out, 'u', emptied, 'frame000001.jpg'), 'wb').close()
    path = os.path.join(out, 'v', cut, 'frame000001.jpg')
    with open(path, 'rb') as f:
      head = f.read(300)
    with open(path, 'wb') as f:
      f.write(head)
    _, events = self.extract(data)
    self.assertPlan(events, already_done=13, to_compute=4, changed=0)  # 3 + the bad video
    self.assertEqual({name: sizes(name) for name in whole}, whole)
    _, events = self.extract(data)
    self.assertPlan(events, already_done=16, to_compute=1)
    # Records written before the counts were kept: u and v of other lengths still tell.
    path = os.path.join(out, flow_shards.SOURCES)
    with open(path) as f:
      rows = [json.loads(line) for line in f]
    with open(path, 'w') as f:
      f.write(''.join(json.dumps({'video': r['video'], 'source': r['source']}) + '\n'
                      for r in rows))
    os.remove(os.path.join(out, 'v', lost, 'frame000001.jpg'))
    _, events = self.extract(data)
    self.assertPlan(events, already_done=15, to_compute=2)

  def test_flow_of_an_older_extraction_without_source_records_is_kept_unless_older_than_its_video(self):
    data = os.path.join(self.root, 'older')
    shutil.copytree(self.data, data)  # file and folder times kept
    os.remove(os.path.join(data, 'tvl1_flow', flow_shards.SOURCES))
    video = os.path.join(data, 'UCF-101', 'MoveRightSpeed1', 'v_MoveRightSpeed1_g04_c01.avi')
    later = os.stat(video).st_mtime + 3600
    os.utime(video, (later, later))  # edited after its flow was computed
    _, events = self.extract(data)
    self.assertPlan(events, already_done=15, adopted=15, to_compute=2, changed=1)
    _, events = self.extract(data)
    self.assertPlan(events, already_done=16, adopted=0, to_compute=1, changed=0)  # the bad one

  def test_flow_older_than_its_video_is_refused_by_prepare_unless_no_source_records(self):
    data = os.path.join(self.root, 'stale')
    shutil.copytree(self.data, data)
    videos = os.path.join(data, 'UCF-101')
    shutil.copy(os.path.join(videos, 'MoveRightSpeed1', 'v_MoveRightSpeed1_g01_c01.avi'),
                os.path.join(videos, 'MoveLeftSpeed1', 'v_MoveLeftSpeed1_g01_c01.avi'))
    config = prepare.PrepareOptions(source='flow', data_dir=data, subsets=('test',),
                                    out=os.path.join(self.root, 'stale_records'),
                                    short_side=0, workers=1)
    with self.assertRaises(prepare.PrepareError) as caught:  # a StaleFlow
      prepare.prepare(config, log=lambda line: None)
    self.assertEqual((caught.exception.option, caught.exception.videos),
                     ('flow_dir', ('v_MoveLeftSpeed1_g01_c01',)))
    # The copied flow's manifest names the videos it was extracted from: the message too.
    self.assertIn(f'extracted from the videos of {os.path.join(self.data, "UCF-101")}',
                  str(caught.exception))
    self.assertFalse(os.path.exists(config.out))
    # Training the flow of the frames route refuses the same flow.
    stale = [p for p in data_checks.problems(make_params(
        model='c3d_small', num_classes=3, stream='flow', data_source='frames', data_dir=data))
             if p.option == 'data_dir']
    self.assertLen(stale, 1)
    self.assertIn('v_MoveLeftSpeed1_g01_c01', stale[0])
    sources = os.path.join(data, 'tvl1_flow', flow_shards.SOURCES)
    with open(sources) as f:
      recorded = f.read()
    os.remove(sources)  # another tool's flow: read as it is
    prepare.prepare(config, log=lambda line: None)
    with open(sources, 'w') as f:
      f.write(recorded)
    _, events = self.extract(data)
    self.assertPlan(events, changed=1)
    prepare.prepare(dataclasses.replace(config, out=os.path.join(self.root, 'fresh_records')),
                    log=lambda line: None)

  def test_three_shards_into_one_out_write_what_one_process_writes_byte_for_byte(self):
    out = os.path.join(self.root, 'sharded')
    results = [self.extract(self.data, out=out, shard=i, num_shards=3)[0] for i in range(3)]
    self.assertEqual([r.get('merged', True) for r in results], [False, False, True])
    self.assertEqual(tree_bytes(out), tree_bytes(os.path.join(self.data, 'tvl1_flow')))
    _, events = self.extract(self.data, out=out)  # a later run: nothing to do, same records
    self.assertPlan(events, videos=17, already_done=16, to_compute=1, num_shards=1)
    self.assertEqual(tree_bytes(out), tree_bytes(os.path.join(self.data, 'tvl1_flow')))

  def test_a_shard_out_of_range_is_refused_before_work(self):
    with self.assertRaises(extract_flow.OptionsError) as caught:
      self.extract(self.data, shard=3, num_shards=3)
    self.assertEqual(caught.exception.option, 'shard')

  def test_a_negative_shard_or_shard_count_is_refused(self):
    for values, option in (({'shard': -2, 'num_shards': 3}, 'shard'),
                           ({'shard': 0, 'num_shards': -3}, 'num_shards'),
                           ({'shard': -1, 'num_shards': 2}, 'shard'),  # which share?
                           ({'num_shards': 2}, 'shard')):
      with self.assertRaises(extract_flow.OptionsError) as caught:
        self.extract(self.data, out=os.path.join(self.root, 'negative'), **values)
      self.assertEqual(caught.exception.option, option)
    self.assertFalse(os.path.exists(os.path.join(self.root, 'negative')))

  def test_shards_of_another_backend_in_one_out_are_refused_naming_them(self):
    out = os.path.join(self.root, 'mixed')
    first, _ = self.extract(self.data, out=out, shard=0, num_shards=2, backend='opencv')
    self.assertFalse(first['merged'])
    for shard in (1, 0):  # another shard, or the same one resumed: its flow is opencv's
      with self.assertRaises(extract_flow.SettingsMismatch) as caught:
        self.extract(self.data, out=out, shard=shard, num_shards=2, backend='tensorflow')
      self.assertEqual((caught.exception.differences, caught.exception.shards),
                       (('backend',), ('shard 0 of 2',)))
    with self.assertRaises(extract_flow.SettingsMismatch) as caught:  # nor merged later
      self.extract(self.data, out=out, backend='tensorflow')
    self.assertEqual(caught.exception.shards, ('shard 0 of 2',))
    self.assertFalse(os.path.exists(os.path.join(out, 'flow.txt')))

  def test_shards_of_another_short_side_or_tvl1_setting_are_refused_naming_it(self):
    out = os.path.join(self.root, 'other_settings')
    self.extract(self.data, out=out, shard=0, num_shards=2)
    for change, option in (({'short_side': 24}, 'short_side'),  # each named as its flag
                           ({'tvl1_warps': FAST.warps + 1}, 'tvl1_warps'),
                           ({'tvl1_epsilon': FAST.epsilon * 2}, 'tvl1_epsilon')):
      with self.assertRaises(extract_flow.SettingsMismatch) as caught:
        self.extract(self.data, out=out, shard=1, num_shards=2, **change)
      self.assertEqual(caught.exception.differences, (option,))
    self.assertFalse(os.path.exists(os.path.join(out, 'flow.txt')))

  def test_preparing_records_of_an_unfinished_split_names_the_missing_shards(self):
    out = os.path.join(self.root, 'unfinished')
    self.extract(self.data, out=out, shard=1, num_shards=3)
    config = prepare.PrepareOptions(source='flow', data_dir=self.data, flow_dir=out,
                                   out=os.path.join(self.root, 'unfinished_records'),
                                   short_side=0, workers=1)
    with self.assertRaises(prepare.PrepareError) as caught:  # an UnfinishedFlow
      prepare.prepare(config, log=lambda line: None)
    self.assertEqual((caught.exception.option, caught.exception.shards),
                     ('flow_dir', ('0 of 3', '2 of 3')))
    self.assertFalse(os.path.exists(config.out))
    for shard in (0, 2):
      self.extract(self.data, out=out, shard=shard, num_shards=3)
    self.assertIsNone(flow_shards.unfinished(out))
    prepare.prepare(config, log=lambda line: None)  # merged: records are made
    # The records keep how their flow was computed once the flow folder is gone.
    extracted = flow.extraction_settings(out)
    shutil.rmtree(out)
    prepared = manifest_lib.read(config.out, 'test')
    self.assertEqual(prepared['flow_extraction'], extracted)
    self.assertEqual(flow.records_extraction_settings(prepared), extracted)
    self.assertEqual(extracted['tvl1']['scales'], FAST.scales)

  def test_training_on_the_flow_frames_of_an_unfinished_split_is_refused(self):
    data = shutil.copytree(self.data, os.path.join(self.root, 'unfinished_frames'))
    self.extract(data, shard=1, num_shards=3)  # into data/tvl1_flow: shards 0 and 2 missing
    params = make_params(model='c3d_small', num_classes=3, stream='flow',
                         data_source='frames', data_dir=data)
    found = [p for p in data_checks.problems(params) if p.option == 'data_dir']
    self.assertLen(found, 1)
    self.assertIn('0 of 3, 2 of 3', found[0])

  def test_two_hmdb51_videos_of_one_name_are_named_not_given_one_flow_folder(self):
    videos = os.path.join(self.create_tempdir().full_path, 'hmdb51_org')
    write_files(videos, ('chew/clip_1.avi', 'kick/clip_1.avi', 'kick/clip_2.avi'), b'x')
    tasks, problems = extract_flow.dataset_videos('hmdb51', videos, None)
    self.assertEqual([t.name for t in tasks], ['clip_2'])
    self.assertEqual(sorted((os.path.relpath(p.source, videos), p.kind) for p in problems),
                     [('chew/clip_1.avi', 'duplicate name'), ('kick/clip_1.avi', 'duplicate name')])

  def test_a_slurm_array_task_takes_its_share_from_the_environment(self):
    environ = {'SLURM_ARRAY_TASK_ID': '5', 'SLURM_ARRAY_TASK_MIN': '4',
               'SLURM_ARRAY_TASK_COUNT': '3'}
    self.assertEqual(flow_shards.from_environment(-1, 0, environ), (1, 3))
    self.assertEqual(flow_shards.from_environment(2, 0, environ), (2, 3))  # flags win
    self.assertEqual(flow_shards.from_environment(-1, 0, {}), (0, 1))
    with self.assertRaisesRegex(ValueError, '--shard'):  # a count, but no task id
      flow_shards.from_environment(-1, 0, {'SLURM_ARRAY_TASK_COUNT': '3'})

  def test_shares_are_disjoint_cover_every_video_and_balance_frames(self):
    rng = np.random.default_rng(3)
    frames = [int(f) for f in rng.integers(30, 300, 200)]
    names = [f'v_{i:03d}' for i in range(200)]
    shares = [flow_shards.share(names, frames, names, i, 4) for i in range(4)]
    self.assertCountEqual(sum(shares, []), names)
    loads = [sum(frames[names.index(n)] for n in share) for share in shares]
    self.assertLess(max(loads) - min(loads), max(frames))
    shuffled = list(rng.permutation(200))  # listed in another order: the same shares
    again = flow_shards.share([names[i] for i in shuffled], [frames[i] for i in shuffled],
                              [names[i] for i in shuffled], 2, 4)
    self.assertCountEqual(again, shares[2])

  def test_a_folder_without_videos_is_an_error_naming_the_fix(self):
    lists = os.path.join(self.data, 'ucfTrainTestlist')
    with self.assertRaises(FileNotFoundError) as caught:
      self.extract('', videos_dir=lists)
    self.assertEqual((caught.exception.path, caught.exception.option), (lists, 'videos_dir'))


  def test_a_folder_of_videos_none_named_as_the_dataset_names_them_is_refused(self):
    # HMDB51's videos without --dataset=hmdb51: every one skipped, and exit 0 said "0 of 3".
    videos = os.path.join(self.create_tempdir().full_path, 'hmdb51_org')
    write_files(videos, ('chew/clip_1.avi', 'kick/clip_2.avi', 'kick/clip_3.avi'), b'x')
    with self.assertRaises(video_lists.DatasetError) as caught:
      self.extract('', videos_dir=videos, out=self.create_tempdir().full_path)
    self.assertEqual(caught.exception.option, 'dataset')
    self.assertIn('none of the 3 videos', str(caught.exception))
    self.assertIn('--dataset=hmdb51', str(caught.exception))

  def test_an_extraction_that_gives_no_video_flow_fails(self):
    # Every video undecodable: "0 of 2 videos have flow" ended with exit 0 and an empty root.
    videos = os.path.join(self.create_tempdir().full_path, 'UCF-101')
    write_files(videos, ('MoveUp/v_MoveUp_g01_c01.avi', 'MoveUp/v_MoveUp_g02_c01.avi'), b'not a video')
    with self.assertRaises(extract_flow.NoFlow) as caught:
      self.extract('', videos_dir=videos, out=self.create_tempdir().full_path)
    self.assertIn('none of the 2 videos has flow', str(caught.exception))

if __name__ == '__main__':
  tf.test.main()

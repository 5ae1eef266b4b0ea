"""TensorBoard, the viewer the README names, over a model_dir a short training run wrote.

The real `tensorboard` TensorFlow installs is started on 127.0.0.1 (a free port) over the
model_dir and asked through its HTTP data API (`/data/plugin/scalars/tags`,
`/data/plugin/images/tags`, `/data/plugin/images/images`) for the training and evaluation
scalars and the training clip's frames; it is killed whatever happens.
"""

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import tensorflow as tf
from absl.testing import absltest

from model_fn import train_view
from tests import program_runs

WAIT_SECONDS = 120  # for TensorBoard to start and load the run
# `tensorboard --logdir runs/`: model_dir runs/short is run 'short', its evaluations 'short/eval'.
TRAIN_RUN, EVAL_RUN = 'short', 'short/eval'


def _free_port() -> int:
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]


class TensorBoardTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    cls.scratch = tempfile.mkdtemp()
    cls.model_dir = os.path.join(cls.scratch, 'runs', 'short')
    cls.done = program_runs.run(
        'towers.train_main', '--model=c3d_small', '--data_source=synthetic',
        '--num_classes=4', '--clip_frames=8', '--crop_size=32', '--batch_size=8',
        '--num_towers=2', '--accumulate_steps=2', '--max_steps=10',
        '--save_checkpoints_steps=10', '--log_every_steps=5', '--eval_steps=1',
        '--synthetic_eval_examples=8', '--export_savedmodel=false',
        f'--model_dir={cls.model_dir}')
    port = _free_port()
    cls.url = f'http://127.0.0.1:{port}'
    cls.board = subprocess.Popen(
        [sys.executable, '-m', 'tensorboard.main', f'--logdir={os.path.dirname(cls.model_dir)}',
         '--host=127.0.0.1', f'--port={port}', '--reload_interval=1'],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

  @classmethod
  def tearDownClass(cls):
    cls.board.kill()
    cls.board.communicate(timeout=30)

  def get(self, path: str, **query: str):
    with urllib.request.urlopen(f'{self.url}{path}?{urllib.parse.urlencode(query)}',
                                timeout=30) as response:
      return response.read()

  def tags(self, plugin: str, run: str, wanted: set[str]) -> dict:
    """The plugin's tags of `run` once they include `wanted` (TensorBoard loads the event
    files in the background), within WAIT_SECONDS."""
    deadline, found = time.monotonic() + WAIT_SECONDS, {}
    while time.monotonic() < deadline:
      self.assertIsNone(self.board.poll(), 'tensorboard ended early')
      try:
        found = json.loads(self.get(f'/data/plugin/{plugin}/tags')).get(run, {})
      except (urllib.error.URLError, ConnectionError):
        found = {}
      if wanted <= set(found):
        return found
      time.sleep(1)
    self.fail(f'{plugin} tags of run {run!r} after {WAIT_SECONDS} s: {sorted(found)}, '
              f'wanted {sorted(wanted)}')

  def test_the_short_run_trained(self):
    self.assertEqual(self.done.code, 0, self.done.output())

  def test_training_scalars_include_the_training_top_1(self):
    self.tags('scalars', TRAIN_RUN, {'accuracy/top_1', 'loss/total', 'learning_rate',
                                     'gradient_global_norm', 'examples_per_second'})

  def test_evaluation_scalars_share_the_top_1_chart(self):
    self.tags('scalars', EVAL_RUN, {'accuracy/top_1', 'accuracy/top_5',
                                    'accuracy/mean_per_class', 'loss'})

  def test_training_clip_frames_are_images(self):
    self.tags('images', TRAIN_RUN, {'train/clip/image'})
    steps = json.loads(self.get('/data/plugin/images/images', run=TRAIN_RUN,
                                tag='train/clip/image', sample='0'))
    self.assertGreaterEqual(len(steps), 2)  # every log_every_steps: steps 1 and 6
    query = dict(urllib.parse.parse_qsl(steps[-1]['query']))
    png = tf.io.decode_png(self.get('/data/plugin/images/individualImage', **query))
    # FRAMES frames of 32 x 32 side by side.
    self.assertEqual(png.shape, (32, 32 * train_view.FRAMES, 3))


if __name__ == '__main__':
  absltest.main()

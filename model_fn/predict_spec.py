"""The PREDICT spec: the graph an export serves (and `Estimator.predict` runs).

    serving_spec(features, params, network=None) -> EstimatorSpec(PREDICT)

The network once, as one tower on no device, whatever the towers of training: the SavedModel
carries no tower or device pin, and a TF1 session with soft placement off (TensorFlow
Serving's) runs it on any machine; every checkpoint of any tower count loads into it. Outputs
per clip: `classes` int64 [B], `probabilities` float32 [B, num_classes] (softmax), `logits`;
with the features' 'class_names' string [num_classes] also `class_name` [B] and
`class_names` [B, num_classes]. With `ema_decay` the weights' averages are served.
"""

from __future__ import annotations

import tensorflow as tf

from model_fn import tower_graph
from model_fn.ema_weights import ema_scaffold
from model_fn.networks import Network, build_network
from model_fn.tower_forward import check_logits, split_features

ModeKeys = tf.estimator.ModeKeys


def serving_spec(features, params, network: Network | None = None
                 ) -> tf.estimator.EstimatorSpec:
  """PREDICT, the graph an export serves: the network once, as one tower on no device, so
  that the SavedModel carries none of training's towers or device pins and a TF1 session
  with soft placement off (TensorFlow Serving's) runs it on any machine. Variable names do
  not depend on the towers: every checkpoint of any tower count loads into it."""
  clips, _ = split_features(features)
  outputs = tower_graph.build_towers(network or build_network(params), clips, None, ('',),
                                     None, False)
  check_logits(outputs.logits[0], params.num_classes)
  logits = tf.identity(outputs.logits[0], name='logits')
  names = features.get('class_names') if isinstance(features, dict) else None
  return predict_spec(logits, params, names)


def predict_spec(logits, params, class_names: tf.Tensor | None = None
                 ) -> tf.estimator.EstimatorSpec:
  """predictions `classes` int64 [B], `probabilities` float32 [B, num_classes], `logits`;
  given `class_names` (string [num_classes], label order) the serving signature also
  returns `class_names` string [B, num_classes] (row b: the names in label order, beside
  `probabilities[b]`) and `class_name` string [B] (the name of `classes`)."""
  predictions = {
      'classes': tf.argmax(logits, axis=-1),
      'probabilities': tf.nn.softmax(logits),
      'logits': logits,
  }
  served = dict(predictions)
  if class_names is not None:
    served['class_name'] = tf.gather(class_names, predictions['classes'], name='class_name')
    served['class_names'] = tf.tile(class_names[tf.newaxis], [tf.shape(logits)[0], 1],
                                    name='class_names')
  return tf.estimator.EstimatorSpec(
      ModeKeys.PREDICT, predictions=predictions,
      export_outputs={'serving_default': tf.estimator.export.PredictOutput(served)},
      scaffold=ema_scaffold(params))

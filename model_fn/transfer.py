"""Parameter and gradient transfers between a worker and the ps task holding a variable.

The ps keeps float32 master weights and applies float32 updates. What crosses the
network can be narrower: with `dtype` bfloat16 or float16 each transfer is cast on the
SENDING side, so only 2 bytes per parameter travel:

* pull: `pull(v, worker, dtype)` reads v on v's own device (the ps), casts it to `dtype`
  there, and casts it back to float32 on `worker`: a float32 [shape] tensor on the worker.
* push: `push(g, v, dtype)` casts the worker's float32 gradient to `dtype` on the
  gradient's device (the worker), and back to float32 on v's device: the float32 tensor
  that the optimizer applies next to v.

With `dtype` float32 neither adds an op: a pull is one read copied to the worker, a push
is the gradient itself. Rounding: bfloat16 keeps float32's exponent range and 8 bits of
mantissa (relative error <= 2^-8); float16 has 11 bits but overflows above 65504.
"""

from __future__ import annotations

import tensorflow as tf

TRANSFER_DTYPES = {'float32': tf.float32, 'bfloat16': tf.bfloat16, 'float16': tf.float16}


def transfer_dtype(name: str) -> tf.DType:
  """The tf.DType of `--transfer_dtype`; raises ValueError naming the choices."""
  if name not in TRANSFER_DTYPES:
    raise ValueError(f'transfer_dtype={name!r} is not one of {", ".join(TRANSFER_DTYPES)}')
  return TRANSFER_DTYPES[name]


def bytes_per_value(name: str) -> int:
  """Bytes one parameter or gradient value takes on the wire."""
  return transfer_dtype(name).size


def pull(variable: tf.Variable, worker_device: str, dtype: tf.DType) -> tf.Tensor:
  """The worker's float32 copy of `variable`, sent in `dtype` (cast on the ps)."""
  with tf.device(variable.device):
    value = variable.read_value()
    if dtype != tf.float32:
      value = tf.cast(value, dtype, name='pull_cast')
  with tf.device(worker_device):
    if dtype == tf.float32:
      return tf.identity(value, name='pulled')
    return tf.cast(value, tf.float32, name='pulled')


def push(gradient: tf.Tensor, variable: tf.Variable, dtype: tf.DType) -> tf.Tensor:
  """`gradient` (float32, on the worker) as float32 on `variable`'s device, sent in
  `dtype` (cast on the worker)."""
  if dtype == tf.float32:
    return gradient
  with tf.device(gradient.device):
    narrow = tf.cast(gradient, dtype, name='push_cast')
  with tf.device(variable.device):
    return tf.cast(narrow, tf.float32, name='pushed')

"""Reads the live values of variables on a ps task, by the names they are shared under.

    read_ps_variables(target, ps_index, {name: (dtype, shape)}) -> {name: np.ndarray}

A ps task holds the variables the chief created there, under their names (a variable's
`shared_name`). They are resource variables (what this library's graphs create) or ref
variables (what some tf.distribute and replica_device_setter peers create); the reader
tries resource handles first, then refs. The session talks to that ps task only: chief
and workers may have ended, and a session that looked for them would wait.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import tensorflow as tf

tf1 = tf.compat.v1

# What a read raises when the ps holds no variable of that name and kind (or of another type).
NOT_HELD = (tf.errors.NotFoundError, tf.errors.FailedPreconditionError,
            tf.errors.InvalidArgumentError)


def read_ps_variables(target: str, ps_index: int,
                      variables: Mapping[str, tuple[tf.DType, Sequence[int]]],
                      timeout_ms: int = 10000) -> dict[str, np.ndarray]:
  """{name: value} of `variables` ({name: (dtype, shape)}) on /job:ps/task:`ps_index`,
  through the server at `target` (e.g. 'grpc://host:port'). Raises one of `NOT_HELD`
  when that ps holds them neither as resource nor as ref variables, another
  `tf.errors.OpError` (e.g. DeadlineExceeded after `timeout_ms`) when it cannot answer."""
  device = f'/job:ps/task:{ps_index}'
  config = tf1.ConfigProto(device_filters=[device], operation_timeout_in_ms=timeout_ms)
  try:
    return _run(target, device, variables, config, resource=True)
  except NOT_HELD:
    return _run(target, device, variables, config, resource=False)


def _run(target: str, device: str, variables: Mapping[str, tuple[tf.DType, Sequence[int]]],
         config: tf1.ConfigProto, resource: bool) -> dict[str, np.ndarray]:
  """One read of every variable on `device`, as resource (or ref) variables."""
  graph = tf1.Graph()
  with graph.as_default(), tf.device(device):
    reads = {name: _read(name, dtype, shape, resource)
             for name, (dtype, shape) in variables.items()}
  with tf1.Session(target, graph=graph, config=config) as session:
    return session.run(reads)


def _read(name: str, dtype: tf.DType, shape: Sequence[int], resource: bool) -> tf.Tensor:
  """The value of the variable shared as `name`: through a resource handle or a ref."""
  if resource:
    handle = tf.raw_ops.VarHandleOp(dtype=dtype, shape=shape, shared_name=name)
    return tf.raw_ops.ReadVariableOp(resource=handle, dtype=dtype)
  return tf.identity(tf.raw_ops.VariableV2(shape=shape, dtype=dtype, shared_name=name))

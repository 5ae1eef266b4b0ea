"""Validates an object against a Kubernetes CRD's structural OpenAPI v3 schema, for tests.

    errors(value, schema) -> list[str]   # [] when valid; each error starts with its path

What the API server checks on `kubectl apply` (field validation Strict, kubectl's default
since 1.27), for the keywords the training operator's CRDs use: `type` (object, array,
string, integer, number, boolean), `properties` (a field the schema does not name is an
error unless `additionalProperties` or `x-kubernetes-preserve-unknown-fields` allows it),
`additionalProperties`, `required`, `items`, `anyOf`, `x-kubernetes-int-or-string`,
`pattern` (strings only), `format` int32/int64 ranges, `x-kubernetes-list-type` map/set
uniqueness (`x-kubernetes-list-map-keys`). A keyword outside this list raises ValueError, so
a newer schema that needs more is not silently half-checked; `description`, `default`,
`x-kubernetes-map-type` and `x-kubernetes-validations` rules comparing with `oldSelf` (they
apply to updates only) carry no check for a new object.
"""

from __future__ import annotations

import re
from typing import Any

_IGNORED = {'description', 'default', 'x-kubernetes-map-type', 'x-kubernetes-list-map-keys'}
_CHECKED = {'type', 'properties', 'additionalProperties', 'required', 'items', 'anyOf',
            'x-kubernetes-int-or-string', 'pattern', 'format', 'x-kubernetes-list-type',
            'x-kubernetes-preserve-unknown-fields', 'x-kubernetes-validations'}
_RANGES = {'int32': (-2**31, 2**31 - 1), 'int64': (-2**63, 2**63 - 1)}


def errors(value: Any, schema: dict[str, Any], path: str = '') -> list[str]:
  """Every violation of `schema` by `value`, as '<path>: <what>'."""
  unknown = set(schema) - _IGNORED - _CHECKED
  if unknown:
    raise ValueError(f'{path or "<root>"}: schema keywords {sorted(unknown)} are not supported')
  where = path or '<root>'
  for rule in schema.get('x-kubernetes-validations', ()):
    if 'oldSelf' not in rule.get('rule', ''):
      raise ValueError(f'{where}: CEL rule {rule.get("rule")!r} is not supported')
  if 'anyOf' in schema and not any(not errors(value, {k: v for k, v in option.items()}, path)
                                   for option in schema['anyOf']):
    return [f'{where}: {value!r} matches none of {schema["anyOf"]}']
  found = _type_errors(value, schema, where)
  if found:
    return found
  if isinstance(value, str) and 'pattern' in schema and not re.search(schema['pattern'], value):
    found.append(f'{where}: {value!r} does not match {schema["pattern"]}')
  if schema.get('format') in _RANGES and isinstance(value, int) and not isinstance(value, bool):
    low, high = _RANGES[schema['format']]
    if not low <= value <= high:
      found.append(f'{where}: {value} is out of the {schema["format"]} range')
  if isinstance(value, dict):
    found += _object_errors(value, schema, path)
  if isinstance(value, list):
    found += _array_errors(value, schema, path)
  return found


def _type_errors(value: Any, schema: dict[str, Any], where: str) -> list[str]:
  if schema.get('x-kubernetes-int-or-string'):
    ok = (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, str)
    return [] if ok else [f'{where}: {value!r} is neither an integer nor a string']
  kind = schema.get('type')
  checks = {
      'object': lambda v: isinstance(v, dict),
      'array': lambda v: isinstance(v, list),
      'string': lambda v: isinstance(v, str),
      'integer': lambda v: isinstance(v, int) and not isinstance(v, bool),
      'number': lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
      'boolean': lambda v: isinstance(v, bool),
  }
  if kind is None:
    return []
  if kind not in checks:
    raise ValueError(f'{where}: type {kind!r} is not supported')
  return [] if checks[kind](value) else [f'{where}: {value!r} is not of type {kind}']


def _object_errors(value: dict, schema: dict[str, Any], path: str) -> list[str]:
  found = []
  properties = schema.get('properties', {})
  extra = schema.get('additionalProperties')
  for name in schema.get('required', ()):
    if name not in value:
      found.append(f'{_join(path, name)}: required')
  for name, item in value.items():
    if name in properties:
      found += errors(item, properties[name], _join(path, name))
    elif isinstance(extra, dict):
      found += errors(item, extra, _join(path, name))
    elif extra is True or schema.get('x-kubernetes-preserve-unknown-fields'):
      continue
    elif properties or extra is False:
      found.append(f'{_join(path, name)}: unknown field')
  return found


def _array_errors(value: list, schema: dict[str, Any], path: str) -> list[str]:
  found = []
  if 'items' in schema:
    for i, item in enumerate(value):
      found += errors(item, schema['items'], f'{path}[{i}]')
  list_type = schema.get('x-kubernetes-list-type')
  if list_type == 'map':
    keys = schema.get('x-kubernetes-list-map-keys', ())
    seen = set()
    for i, item in enumerate(value):
      key = tuple(repr(item.get(k)) for k in keys) if isinstance(item, dict) else None
      if key in seen:
        found.append(f'{path}[{i}]: duplicate entry for keys {list(keys)}')
      seen.add(key)
  elif list_type == 'set':
    seen_items = []
    for i, item in enumerate(value):
      if item in seen_items:
        found.append(f'{path}[{i}]: duplicate entry {item!r} in a set')
      seen_items.append(item)
  elif list_type not in (None, 'atomic'):
    raise ValueError(f'{path}: x-kubernetes-list-type {list_type!r} is not supported')
  return found


def _join(path: str, name: str) -> str:
  return f'{path}.{name}' if path else name

"""Reads the YAML of the project's Kubernetes manifests (docs/cluster/*.yaml) for tests.

    load(text) -> dict

The subset the manifests use, as YAML 1.1 (PyYAML's `safe_load`) reads it: block mappings
and sequences by indentation, `- key: value` items, flow collections (`{a: b}`, `[x, y]`,
spanning lines), anchors (`&name`) and aliases (`*name`), comments, plain and quoted
scalars (ints, floats, true/false/null as YAML 1.1 core). Anything else (block scalars
`|`/`>`, tags, multi-document streams, merge keys) raises `ValueError` naming the line, so a
manifest edited beyond the subset fails its specs instead of being misread.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterator

_INT = re.compile(r'[-+]?(0|[1-9][0-9]*)$')
_FLOAT = re.compile(r'[-+]?([0-9]+\.[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$')


def load(text: str) -> Any:
  """The document `text` as Python dicts, lists and scalars."""
  lines = _logical_lines(text)
  reader = _Reader(lines)
  value = reader.block(0)
  if reader.pos != len(lines):
    raise ValueError(f'line {lines[reader.pos][2]}: unexpected indentation')
  return value


def _unquoted(text: str) -> Iterator[tuple[int, str]]:
  """(index, character) of every character of `text` outside quoted strings."""
  quote = ''
  for i, ch in enumerate(text):
    if quote:
      if ch == quote and (quote == "'" or text[i - 1] != '\\'):
        quote = ''
    elif ch in '"\'':
      quote = ch
    else:
      yield i, ch


def _strip_comment(line: str) -> str:
  for i, ch in _unquoted(line):
    if ch == '#' and (i == 0 or line[i - 1] in ' \t'):
      return line[:i].rstrip()
  return line.rstrip()


def _depth(text: str) -> int:
  """Open minus closed flow brackets outside quotes."""
  return sum((ch in '[{') - (ch in ']}') for _, ch in _unquoted(text))


def _logical_lines(text: str) -> list[tuple[int, str, int]]:
  """(indent, content, line number) with comments and blank lines gone, and a flow
  collection that spans lines joined into one."""
  out: list[tuple[int, str, int]] = []
  pending = None
  for number, raw in enumerate(text.splitlines(), 1):
    if '\t' in raw[:len(raw) - len(raw.lstrip())]:
      raise ValueError(f'line {number}: tab in indentation')
    line = _strip_comment(raw)
    if not line.strip():
      continue
    if line.strip() in ('---', '...') or line.lstrip().startswith(('%', '!')):
      raise ValueError(f'line {number}: {line.strip()!r} is outside the supported subset')
    if pending is not None:
      pending = (pending[0], pending[1] + ' ' + line.strip(), pending[2])
    else:
      pending = (len(line) - len(line.lstrip()), line.strip(), number)
    if _depth(pending[1]) == 0:
      out.append(pending)
      pending = None
  if pending is not None:
    raise ValueError(f'line {pending[2]}: unclosed flow collection')
  return out


class _Reader:

  def __init__(self, lines: list[tuple[int, str, int]]) -> None:
    self.lines = lines
    self.pos = 0
    self.anchors: dict[str, Any] = {}

  def block(self, indent: int) -> Any:
    """The block starting at the current line, whose indentation must be `indent`."""
    if self.pos >= len(self.lines):
      return None
    at, content, number = self.lines[self.pos]
    if at != indent:
      raise ValueError(f'line {number}: expected indentation {indent}, found {at}')
    if content == '-' or content.startswith('- '):
      return self._sequence(indent)
    return self._mapping(indent)

  def _sequence(self, indent: int) -> list:
    items = []
    while self.pos < len(self.lines):
      at, content, number = self.lines[self.pos]
      if at < indent or (at == indent and not (content == '-' or content.startswith('- '))):
        break  # the enclosing mapping's next key (a sequence may sit at its key's indent)
      if at != indent:
        raise ValueError(f'line {number}: expected a "- " item at indentation {indent}')
      rest = content[1:].lstrip()
      if not rest:
        self.pos += 1
        items.append(self._nested(indent))
      elif _key_value(rest) is not None and not rest.startswith(('{', '[', '"', "'")):
        # "- key: value": a mapping whose first key sits after the dash
        inner = indent + (len(content) - len(rest))
        self.lines[self.pos] = (inner, rest, number)
        items.append(self._mapping(inner))
      else:
        self.pos += 1
        items.append(self._scalar_or_flow(rest, number))
    return items

  def _mapping(self, indent: int) -> dict:
    result: dict[str, Any] = {}
    while self.pos < len(self.lines):
      at, content, number = self.lines[self.pos]
      if at < indent:
        break
      if at > indent:
        raise ValueError(f'line {number}: unexpected indentation')
      if content.startswith('- '):
        break
      pair = _key_value(content)
      if pair is None:
        raise ValueError(f'line {number}: expected "key: value", got {content!r}')
      key, value = pair
      if key in result:
        raise ValueError(f'line {number}: duplicate key {key!r}')
      if key == '<<':
        raise ValueError(f'line {number}: merge keys are outside the supported subset')
      self.pos += 1
      anchor = None
      if value.startswith('&'):
        anchor, _, value = value[1:].partition(' ')
        value = value.strip()
      if value:
        result[key] = self._scalar_or_flow(value, number)
      else:
        result[key] = self._nested(indent)
      if anchor:
        self.anchors[anchor] = result[key]
    return result

  def _nested(self, indent: int) -> Any:
    """The block under a key or dash at `indent`; a sequence may sit at the key's own
    indentation (`key:` then `- item`)."""
    if self.pos >= len(self.lines):
      return None
    at, content, _ = self.lines[self.pos]
    if at > indent or (at == indent and content.startswith('- ')):
      return self.block(at)
    return None

  def _scalar_or_flow(self, text: str, number: int) -> Any:
    if text.startswith('*'):
      name = text[1:]
      if name not in self.anchors:
        raise ValueError(f'line {number}: unknown alias *{name}')
      return self.anchors[name]
    if text.startswith(('|', '>', '!', '&')):
      raise ValueError(f'line {number}: {text[:1]!r} is outside the supported subset')
    if text.startswith(('{', '[')):
      value, end = _flow(text, 0, number)
      if text[end:].strip():
        raise ValueError(f'line {number}: text after a flow collection: {text[end:]!r}')
      return value
    return _scalar(text, number)


def _key_value(content: str) -> tuple[str, str] | None:
  """('key', 'rest') of 'key: rest' or 'key:'; None when the line is not a mapping entry."""
  if content.startswith(('"', "'")):
    end = content.find(content[0], 1)
    if end < 0 or not content[end + 1:].startswith(':'):
      return None
    key, rest = content[1:end], content[end + 2:]
  else:
    match = re.match(r'([^\s:{}\[\],#][^:]*?):(\s|$)', content)
    if not match:
      return None
    key, rest = match.group(1), content[match.end():]
  return key, rest.strip()


def _scalar(text: str, number: int) -> Any:
  text = text.strip()
  if text.startswith('"'):
    if not text.endswith('"') or len(text) < 2:
      raise ValueError(f'line {number}: unterminated string {text!r}')
    return json.loads(text)
  if text.startswith("'"):
    if not text.endswith("'") or len(text) < 2:
      raise ValueError(f'line {number}: unterminated string {text!r}')
    return text[1:-1].replace("''", "'")
  if text in ('null', 'Null', 'NULL', '~', ''):
    return None
  if text in ('true', 'True', 'TRUE'):
    return True
  if text in ('false', 'False', 'FALSE'):
    return False
  if text.lower() in ('yes', 'no', 'on', 'off', 'y', 'n'):
    raise ValueError(f'line {number}: {text!r} is a YAML 1.1 boolean: quote it')
  if _INT.match(text):
    return int(text)
  if _FLOAT.match(text):
    return float(text)
  return text


def _flow(text: str, i: int, number: int) -> tuple[Any, int]:
  """The flow collection starting at text[i] ('{' or '['), and the index after it."""
  closing = '}' if text[i] == '{' else ']'
  items: list[Any] = []
  pairs: dict[str, Any] = {}
  i += 1
  while True:
    while i < len(text) and text[i] == ' ':
      i += 1
    if i >= len(text):
      raise ValueError(f'line {number}: unclosed flow collection')
    if text[i] == closing:
      return (pairs if closing == '}' else items), i + 1
    if closing == '}':
      key, i = _flow_item(text, i, number, ':')
      if i >= len(text) or text[i] != ':':
        raise ValueError(f'line {number}: expected ":" in a flow mapping')
      value, i = _flow_item(text, i + 1, number, ',}')
      pairs[key] = value
    else:
      value, i = _flow_item(text, i, number, ',]')
      items.append(value)
    while i < len(text) and text[i] == ' ':
      i += 1
    if i < len(text) and text[i] == ',':
      i += 1


def _flow_item(text: str, i: int, number: int, stops: str) -> tuple[Any, int]:
  while i < len(text) and text[i] == ' ':
    i += 1
  if i < len(text) and text[i] in '{[':
    return _flow(text, i, number)
  if i < len(text) and text[i] in '"\'':
    quote, j = text[i], i + 1
    while j < len(text) and not (text[j] == quote and (quote == "'" or text[j - 1] != '\\')):
      j += 1
    return _scalar(text[i:j + 1], number), j + 1
  j = i
  while j < len(text) and text[j] not in stops:
    j += 1
  return _scalar(text[i:j], number), j

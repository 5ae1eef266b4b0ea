"""The one reader of a user's text files: split files, class lists, annotation and info lists
(`input_fn/video_lists.py`) and flagfiles (`command_line/flagfile.py`).

    read_lines(path, blank=False) -> [(line number, text)]

A UTF-8 byte-order mark, CRLF or CR line ends and trailing spaces or tabs read the same as
without; a file that is not UTF-8 (UTF-16, as Windows' "Unicode" saves, or a byte of another
code page) raises `NotUtf8` naming it and the line: its lines would read as other text.
Standard library only.
"""

from __future__ import annotations


class NotUtf8(ValueError):
  """A text file that is not UTF-8: the message names it (and the line: `line`, 0 for the
  whole file) and the fix; `path` is the file."""

  def __init__(self, message: str, path: str, line: int = 0) -> None:
    super().__init__(message)
    self.path, self.line = path, line


def read_lines(path: str, blank: bool = False) -> list[tuple[int, str]]:
  """The lines of `path` as (1-based line number, text without trailing whitespace); the
  text keeps its leading whitespace; blank lines are left out unless `blank`."""
  with open(path, 'rb') as f:
    raw = f.read()
  if raw.startswith((b'\xff\xfe', b'\xfe\xff')) or b'\x00' in raw:
    raise NotUtf8(f'{path} is UTF-16 (or holds NUL bytes), not UTF-8 text: save it as UTF-8',
                  path)
  try:
    data = raw.decode('utf-8-sig')
  except UnicodeDecodeError as e:
    line = raw[:e.start].count(b'\n') + 1
    raise NotUtf8(f'{path}:{line}: byte 0x{raw[e.start]:02x} is not UTF-8 (a file saved in '
                  'another code page, e.g. Latin-1): save it as UTF-8', path, line) from None
  lines = [(i + 1, line.rstrip()) for i, line in enumerate(data.splitlines())]
  return lines if blank else [(number, text) for number, text in lines if text]

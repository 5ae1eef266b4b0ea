"""The one entry of every program: options -> validation -> run -> one line and an exit code.

    PROGRAM = entry.Program('prepare', run, PrepareOptions, check=check_options,
                            refused=(PrepareError, FileNotFoundError))
    if __name__ == '__main__': PROGRAM.start()

`Program.main(argv)` (absl's main) reads the options object from the parsed flags, calls
`check(options)` (which raises, or returns a line naming the problem), then `run(options)`
(`run(options, arguments)` when the program takes positional arguments). What goes wrong
is one line on stderr, `<name>: error: <message>` (`error_line`), and an exit code:

  2  refused before any work: a flag absl cannot parse (unknown flag, value not of its
     type or choices), positional arguments the program does not take, options
     `command_line.options` rejects (`OptionsError`: a value, a combination, a name), `Refused` or a `refused` exception type
     (raised by `check` or by `run` before it starts its work);
  1  the run failed: `Failed` or a `failed` exception type, or a write to a full disk
     (`command_line.disk_space.full_disk_line`: the path and its free space);
  N  `Ended(message, N)`: an ending a caller tells apart by its code (e.g. //towers:train's
     4, the chief was lost);
  75 SIGUSR1, the job's time limit (`command_line/signals.py`): the work finished is kept,
     one line (not an error) and a `stopped` event; a program with `stops_at_once=False`
     (//towers:train) acts on `signals.STOP` itself and returns its own code;
  130 SIGINT (Ctrl-C), at any instant: one line, no traceback.

`run` returns its own exit code (None means 0); any other exception is a bug and keeps its
traceback. Every such ending is also recorded in the status file
(`command_line.status_file`) as an `error` event: the program, its exit code, the error's
type, the options it names (`options.options_named`; for a `Refused` or `Failed` raised
`from` an error, that error's) and the message of its line, for callers and specs to tell
endings apart without reading the line (a launcher passes the message on). `verbose=True`
also defines `--verbose` and configures the console
(`command_line.console`) before `check`. `extra_options`: more options dataclasses whose
flags it defines after those, for `run` to read (`cli.options_from_flags`): //towers:train's
options are `TrainParams`, the library's, and its own --check_flags lives beside them.
"""

from __future__ import annotations

import sys

# pylint: disable=wrong-import-position
from command_line import signals

if getattr(sys.modules.get('__main__'), '__file__', '').endswith('_main.py'):
  signals.install()  # a program starts: before absl, TensorFlow or anything slow

import dataclasses
import threading
from typing import Any, Callable, Sequence

from absl import flags

from command_line import cli, console, disk_space, flagfile, status_file
from command_line.options import OptionsError, options_named

REFUSED = 2
FAILED = 1


class Refused(ValueError):
  """Options or input that cannot work, found before any work (exit 2). The message
  names the flag, file or count and the fix."""


class Failed(RuntimeError):
  """The run started and could not finish (exit 1). The message says what and where."""


def _cause(error: BaseException) -> BaseException | None:
  """The error a `Refused` or `Failed` was raised from (recorded in its stead), else None."""
  return error.__cause__ if isinstance(error, (Refused, Failed)) else None


class Ended(RuntimeError):
  """The run ended in a way its caller tells apart by the exit code `code`."""

  def __init__(self, message: str, code: int):
    super().__init__(message)
    self.code = code


def error_line(program: str, message: Any) -> str:
  """The one line a program prints for a problem: `<program>: error: <message>`."""
  return f'{program}: error: {message}'


@dataclasses.dataclass(frozen=True)
class Program:
  """A command-line program: its name (the prefix of its lines), its options dataclass
  (one flag per field, `command_line.cli`), `check(options)` raising or returning a problem
  before any work, and `run`. `refused` / `failed`: the exception types that end it with exit
  2 / 1. `stops_at_once`: SIGUSR1 ends it at once (exit 75); False: `run` acts on
  `signals.STOP` (set however early the signal came) and returns its own code. `resumes`:
  a rerun goes on from the work a stop or a refused write left (False: the program keeps
  nothing to go on from, and its lines say the same command starts over). `answers_sigterm`:
  once its main starts, SIGTERM ends it as SIGINT does, with one line and exit 143
  (`signals.answer_sigterm`); False: SIGTERM keeps its default action, or what `run` sets."""
  name: str
  run: Callable[..., int | None]
  options: type | None = None
  check: Callable[[Any], str | None] | None = None
  refused: tuple[type[BaseException], ...] = ()
  failed: tuple[type[BaseException], ...] = ()
  arguments: bool = False
  verbose: bool = False
  extra_options: tuple[type, ...] = ()
  stops_at_once: bool = True
  resumes: bool = True
  answers_sigterm: bool = False

  def define_flags(self) -> None:
    """Defines the options' flags, --verbose when `verbose`, then `extra_options`' flags."""
    if self.options is not None:
      cli.define_flags(self.options)
    if self.verbose:
      cli.define_flags(console.ConsoleOptions)
    for options_type in self.extra_options:
      cli.define_flags(options_type)

  def main(self, argv: Sequence[str]) -> int:
    """absl's main: `argv[1:]` are the positional arguments left after the flags."""
    arguments = list(argv[1:])
    if arguments and not self.arguments:
      return self._error(Refused(f'unexpected arguments: {" ".join(arguments)}'), REFUSED)
    if self.verbose:
      console.configure(cli.options_from_flags(console.ConsoleOptions).verbose)
    try:
      signals.raise_pending(self.stops_at_once)
      if self.answers_sigterm:
        signals.answer_sigterm()
      options = cli.options_from_flags(self.options) if self.options is not None else None
      problem = self.check(options) if self.check is not None else None
      if problem:
        raise Refused(problem)
      code = self.run(options, arguments) if self.arguments else self.run(options)
    except (Refused, OptionsError, *self.refused) as e:
      return self._error(e, REFUSED, _cause(e))
    except (Failed, *self.failed) as e:
      return self._error(e, FAILED, _cause(e))
    except Ended as e:
      return self._error(e, e.code)
    except KeyboardInterrupt:
      return self._error(KeyboardInterrupt('interrupted (SIGINT)'),
                         signals.INTERRUPTED_EXIT_CODE)
    except signals.Terminated:
      return self._error(signals.Terminated('terminated (SIGTERM)'),
                         signals.TERMINATED_EXIT_CODE)
    except signals.TimeLimit:
      after = ('the work finished is kept; the same command continues it' if self.resumes
               else disk_space.STARTS_OVER)
      print(f'{self.name}: stopped for the job\'s time limit (SIGUSR1): {after}',
            file=sys.stderr, flush=True)
      status_file.record('stopped', program=self.name, step=None, max_steps=None)
      return signals.STOPPED_EXIT_CODE
    except Exception as e:  # pylint: disable=broad-except
      after = disk_space.RESUMES if self.resumes else disk_space.STARTS_OVER
      line = disk_space.full_disk_line(e, after)
      if line is None:
        raise
      path = disk_space.full_disk_path(e)
      status_file.record('full_disk', path=path,
                         free_bytes=disk_space.free_bytes(path) if path else None,
                         resumes=disk_space.resumes(e, after))
      return self._error(line, FAILED, e)
    finally:
      signals.work_done()
    return code or 0

  def start(self, flags_parser: Callable[[list[str]], list[str]] | None = None,
            define: bool = True) -> None:
    """Refuses a status file it cannot write (`status_file.unwritable`: exit 2, one line,
    nothing recorded), defines the flags (unless `define` is False: the module defined them
    when imported) and runs `main` from the user's working directory (`cli.run`); exits with its code.
    `flags_parser(argv)` -> remaining argv, default absl's full parse (`flags.FLAGS(argv)`)."""
    status_file.anchor()  # a relative status file is the user's, also in child processes
    problem = status_file.unwritable()  # every ending below records into it
    if problem:
      print(error_line(self.name, problem), file=sys.stderr, flush=True)
      sys.exit(REFUSED)
    if define:
      self.define_flags()
    parser = flags_parser or (lambda argv: flags.FLAGS(argv))

    def parse(argv: list[str]) -> list[str]:
      try:
        return parser(flagfile.expand_flagfiles(argv))
      except (flags.Error, flagfile.FlagfileError) as e:
        sys.exit(self._error(e, REFUSED))

    threading.excepthook = self._thread_exception
    cli.run(self.main, parse)

  def _thread_exception(self, args: threading.ExceptHookArgs) -> None:
    """A write a disk refused in a background thread (TensorFlow's event writer) is one
    warning line naming the file, not the thread's traceback (the main thread ends with
    the error line when that writer is next used); anything else keeps Python's report."""
    line = disk_space.full_disk_line(args.exc_value) if args.exc_value else None
    if line is None:
      threading.__excepthook__(args)
      return
    print(f'{self.name}: warning: {line}', file=sys.stderr, flush=True)

  def _error(self, message: Any, code: int, error: BaseException | None = None) -> int:
    """Prints the one error line and records it (`error` is the exception behind `message`
    when `message` is not the exception itself); returns `code`."""
    error = error or (message if isinstance(message, BaseException) else None)
    print(error_line(self.name, message), file=sys.stderr, flush=True)
    status_file.record('error', program=self.name, exit_code=code,
                       error=type(error).__name__ if error else None,
                       options=options_named(error) if error else [], message=str(message))
    return code

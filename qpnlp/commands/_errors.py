"""The CLI's errors and exit codes: :class:`UsageError` (2), :class:`CommandFailed` (1) and :func:`run_command`.

:func:`run_command` runs a parsed command and turns its failures into one
line on stderr and an exit code (2 usage, 1 failure, 130 Ctrl-C).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import traceback
import warnings

from qpnlp.training.config import ConfigError

from ._console import results_lost, status_line


class UsageError(ValueError):
    """An option value that cannot work, found before anything is read (exit code 2)."""


class CommandFailed(RuntimeError):
    """A failure while running, with a message composed for the user (exit code 1)."""


# Errors whose message is written for users; other types are shown with their type name.
_PLAIN_ERRORS = (ValueError, OSError, RuntimeError, TypeError, LookupError)


def run_command(args: argparse.Namespace) -> int:
    """Run the parsed command and turn every failure into one line on stderr and an exit code.

    0 success; 2 a usage error (a bad option value, a model or training
    setting the configs refuse); 1 any other failure (missing or bad files,
    data that does not fit, diverged training), and also, without a line, a
    closed stdout pipe (``qpnlp ... | head -1``: the reader left), and with
    a line, results written to a closed stdout (``qpnlp ... >&-``, once the
    run is done: its files are written); 130 Ctrl-C. ``--debug`` prints the
    traceback before the line.
    """
    prog = getattr(args, "prog", "qpnlp")
    try:
        with one_line_warnings(prog), contextlib.ExitStack() as args.exit_stack:    # what the command holds to its end
            code = int(args.func(args) or 0)
    except KeyboardInterrupt:
        if getattr(args, "debug", False):
            traceback.print_exc()
        print(f"{prog}: interrupted", file=sys.stderr, flush=True)
        return 130
    except BrokenPipeError:                      # `qpnlp ... | head`: the reader left
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, sys.stdout.fileno())
            finally:
                os.close(devnull)                # stdout holds its own descriptor of it now
        return 1
    except Exception as err:  # noqa: BLE001 - the CLI's one place that turns every failure into a message
        if getattr(args, "debug", False):
            traceback.print_exc()
        usage = isinstance(err, (UsageError, ConfigError))
        print(f"{prog}: error: {error_line(err)}", file=sys.stderr, flush=True)
        return 2 if usage else 1
    if code == 0 and results_lost():
        print(f"{prog}: error: write error: stdout is closed (Bad file descriptor); the results were not written",
              file=sys.stderr, flush=True)
        return 1
    return code


@contextlib.contextmanager
def one_line_warnings(prog: str):
    """Warnings shown as the errors are, one line on stderr (``qpnlp train qpdn: warning: ...``), while the command
    runs: the default form names a file and a line of code (a command's user wrote neither) on two lines."""
    def show(message, category, filename, lineno, file=None, line=None):
        text = f"{prog}: warning: {' '.join(str(message).split())}"
        if file is None or file is sys.stderr:
            status_line(text)                          # around a progress bar, as the other status lines
        else:
            print(text, file=file, flush=True)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


def error_line(err: BaseException) -> str:
    """``err`` as one line: its message, with the type name for errors not written for users."""
    text = " ".join(str(err).split()) or type(err).__name__
    if isinstance(err, KeyError) or not isinstance(err, _PLAIN_ERRORS):
        text = f"{type(err).__name__}: {text} (run with --debug for the traceback)"
    return text

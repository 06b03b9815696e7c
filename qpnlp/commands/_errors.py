"""The CLI's errors and exit codes: :class:`UsageError` (2), :class:`CommandFailed` (1) and :func:`run_command`.

:func:`run_command` runs a parsed command and turns its failures into one
line on stderr and an exit code (2 usage, 1 failure, 130 Ctrl-C, 143
SIGTERM: :class:`Terminated`).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import traceback
import warnings

from qpnlp._stacklevel import raised_by_qpnlp
from qpnlp.training.config import ConfigError

from ._console import results_lost, warning_line, warning_text


class UsageError(ValueError):
    """An option value that cannot work, found before anything is read (exit code 2)."""


class CommandFailed(RuntimeError):
    """A failure while running, with a message composed for the user (exit code 1)."""


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, ``timeout``, a scheduler ending the job: slurm, kubernetes) while a command runs
    (:func:`sigterm_interrupts`).

    A ``KeyboardInterrupt``, so that it stops the work as Ctrl-C does: the training threads stopped, the best model
    so far saved (``--save``), the report finished as interrupted ("stopped by SIGTERM"), the locks released; then
    exit status 143 (128 + 15, what the shell shows for a process that SIGTERM ended).
    """


def stopped_by_sigterm(error: BaseException) -> bool:
    """Whether the ``KeyboardInterrupt`` ``error`` came from SIGTERM: it is a :class:`Terminated`, or was raised while
    one was handled (:class:`~qpnlp.training.TrainingInterrupted` replaces the interrupt it carries)."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, Terminated):
            return True
        seen.add(id(error))
        error = error.__context__
    return False


def how_stopped(error: BaseException) -> str:
    """"interrupted" (Ctrl-C) or "stopped by SIGTERM": the words of the ``KeyboardInterrupt`` ``error``."""
    return "stopped by SIGTERM" if stopped_by_sigterm(error) else "interrupted"


def interrupted_status(error: BaseException) -> int:
    """The exit status of a command that the ``KeyboardInterrupt`` ``error`` stopped: 143 for SIGTERM, else 130."""
    return 128 + (signal.SIGTERM if stopped_by_sigterm(error) else signal.SIGINT)


def _raise_terminated(signum, frame):
    raise Terminated("SIGTERM")


@contextlib.contextmanager
def sigterm_interrupts(interrupts: bool = True):
    """Inside the block SIGTERM raises :class:`Terminated` in the main thread (``interrupts``), or, with
    ``interrupts`` False, ends the process at once again (Python's default; a process of ``--processes``, which
    its launcher stops and reports for).

    Python's default ends the process at once: the report left "running", the best model so far not saved. A
    handler that the process already has (a program calling :func:`qpnlp.cli.main`, SIGTERM ignored) is kept; so
    is everything outside the main thread, where no handler can be set.
    """
    wanted = _raise_terminated if interrupts else signal.SIG_DFL
    try:
        previous = signal.getsignal(signal.SIGTERM)
        if previous in (signal.SIG_DFL, _raise_terminated) and previous is not wanted:
            signal.signal(signal.SIGTERM, wanted)
        else:
            previous = None
    except ValueError:                            # not the main thread: no handler can be set
        previous = None
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


# Errors whose message may be written for users (by a raise of qpnlp; OSError: the system's, naming the file;
# ImportError: a missing optional package, with the pip command that installs it).
_PLAIN_ERRORS = (ValueError, OSError, RuntimeError, TypeError, LookupError, ImportError)


def run_command(args: argparse.Namespace) -> int:
    """Run the parsed command and turn every failure into one line on stderr and an exit code.

    0 success; 2 a usage error (a bad option value, a model or training
    setting the configs refuse); 1 any other failure (missing or bad files,
    data that does not fit, diverged training), and also, without a line, a
    closed stdout pipe (``qpnlp ... | head -1``: the reader left), and with
    a line, results written to a closed stdout (``qpnlp ... >&-``, once the
    run is done: its files are written); 130 Ctrl-C; 143 SIGTERM, which stops
    the command as Ctrl-C does (:func:`sigterm_interrupts`). ``--debug``
    prints the traceback before the line.
    """
    prog = getattr(args, "prog", "qpnlp")
    try:
        with one_line_warnings(prog), sigterm_interrupts(), \
                contextlib.ExitStack() as args.exit_stack:         # what the command holds to its end
            check_switches()
            code = int(args.func(args) or 0)
    except KeyboardInterrupt as stop:
        if getattr(args, "debug", False):
            traceback.print_exc()
        print(f"{prog}: {how_stopped(stop)}", file=sys.stderr, flush=True)
        return interrupted_status(stop)
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


def check_switches() -> None:
    """The compiled loops' environment switches (``QPNLP_COMPILED``, ...: :data:`qpnlp._numba.SWITCHES`), checked
    before the command runs: a bad value is a usage error (exit code 2), said once, not where a loop is first asked
    (in the middle of a run, or in every process of ``--processes``)."""
    from qpnlp import _numba

    try:
        _numba.check_switches()
    except ValueError as err:
        raise UsageError(str(err)) from None


@contextlib.contextmanager
def one_line_warnings(prog: str):
    """Warnings shown as the errors are, one line on stderr (``qpnlp train qpdn: warning: ...``), while the command
    runs: the default form names a file and a line of code (a command's user wrote neither) on two lines."""
    def show(message, category, filename, lineno, file=None, line=None):
        if file is None or file is sys.stderr:
            warning_line(prog, message)                # around a progress bar, as the other status lines
        else:
            print(warning_text(prog, message), file=file, flush=True)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


def error_line(err: BaseException) -> str:
    """``err`` as one line: its message, with the type name and the hint of ``--debug`` for errors not written for
    users (:func:`written_for_users`)."""
    text = " ".join(str(err).split()) or type(err).__name__
    if not written_for_users(err):
        text = f"{type(err).__name__}: {text} (run with --debug for the traceback)"
    return text


def written_for_users(err: BaseException) -> bool:
    """Whether the message of ``err`` was written for the user of the command, who can act on it alone.

    An :class:`OSError` (the system's message, naming the file: missing,
    unreadable, a full disk), or a ValueError, TypeError, RuntimeError,
    ImportError or LookupError but KeyError that a ``raise`` statement of
    qpnlp raised (:func:`qpnlp._stacklevel.raised_by_qpnlp`: the checks of
    the inputs and options, ``seed must be an integer ...``, a missing
    optional package and its ``pip install``). The same types raised by
    Python, torch or NumPy (``[][1]``, a wrong call deep in qpnlp) are bugs
    or limits of qpnlp, not the user's mistake: their line names the type
    and asks for the traceback (``--debug``).
    """
    if isinstance(err, OSError):
        return True
    return isinstance(err, _PLAIN_ERRORS) and not isinstance(err, KeyError) and raised_by_qpnlp(err)

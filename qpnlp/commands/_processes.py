"""``qpnlp train word2fun --processes N``: the command again in N processes on this machine, as ``torchrun``
would start them, and what each one tells the launcher when it fails.

:func:`run_in_processes` starts the processes, waits for them and, when one
fails, stops the others and finishes the report.  The processes write the
report and the checkpoint themselves (the first one only); the launcher
writes the report before they start and again only once every process has
ended.  Each process is given
a file of its own (:data:`ERROR_FILE_VARIABLE`) where it records the error
that ends it (:func:`records_error`): when a process other than the first
fails, the first one fails too, with only its lost connection ("Connection
closed by peer"), and the launcher puts the error recorded first, the real
cause, in the report.

Stopped (Ctrl-C, SIGTERM), a run of one process or of several says what ``--out`` keeps and how to continue
(:func:`interrupted`); the launcher, whose processes end at once on its SIGTERM, reads it from the checkpoint
on disk (``_kept_by_processes``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from qpnlp._atomic import atomic_write_text

from ._console import status_line
from ._errors import UsageError, how_stopped, interrupted_status, sigterm_interrupts
from ._report import Report, run_outcome

__all__ = ["ERROR_FILE_VARIABLE", "interrupted", "records_error", "run_in_processes", "saved_epochs"]

#: The environment variable naming the file where a process started by :func:`run_in_processes` records its error.
ERROR_FILE_VARIABLE = "QPNLP_ERROR_FILE"


@contextlib.contextmanager
def records_error():
    """Inside the block, an exception is recorded in the file named by :data:`ERROR_FILE_VARIABLE` (if set), then
    goes on: its one-line message (as the command prints it), the report status it gives (failed, diverged,
    interrupted), the time and, for the error of a process that failed because another one did
    (:class:`~qpnlp.word2fun.distributed.ProcessFailed`), that process: for the launcher to tell the first
    error of its processes from those that followed from it. Such a process ends at once on SIGTERM, Python's
    default (:func:`~._errors.sigterm_interrupts` off): the launcher stops its processes so, and reports for them."""
    path = os.environ.get(ERROR_FILE_VARIABLE)
    try:
        with sigterm_interrupts(not path):        # the launcher stops its processes with SIGTERM and reports for them
            yield
    except BaseException as error:
        if path and not isinstance(error, SystemExit):
            from qpnlp.word2fun.distributed import ProcessFailed     # loaded by the training that failed

            status, line = run_outcome(error)     # Report.guard's status and words
            record = {"error": line, "status": status, "time": time.time()}
            if isinstance(error, ProcessFailed):
                record["follows"] = error.rank
            with contextlib.suppress(OSError):
                atomic_write_text(path, json.dumps(record))
        raise


def run_in_processes(args: argparse.Namespace, report: Report, env: dict[str, str] | None = None) -> int:
    """This command again in ``--processes`` processes on this machine, as ``torchrun`` would start them.

    Each process gets ``torchrun``'s environment (``RANK``, ``WORLD_SIZE``,
    ``MASTER_ADDR``/``MASTER_PORT`` of a free local port; one torch thread
    unless ``OMP_NUM_THREADS`` says otherwise) and a file for its error
    (:func:`records_error`), trains on its own shard of the corpus, and the
    first writes ``--out`` and the report.  The options were checked here,
    once, before the processes start.  Started here rather than by
    ``torchrun`` itself so that a failure stays the one-line error of the
    failing process (torchrun adds a page of its own); when one process
    fails, the others are stopped (they would wait for it in the next
    collective) and the failure is recorded (``_record_failure``): the
    first error of the processes goes in the report and on a last line, or,
    for a process killed by a signal, a line naming it and the signal (exit
    status 1).  ``env`` adds to their environment (the lock of ``--out``
    this process holds for them).  Stopped
    itself by SIGTERM (``kill``, ``timeout``), it stops them too
    (``_errors.sigterm_interrupts``) and exits with status 143; by Ctrl-C, with
    status 130; either way a report left "running" is finished as
    interrupted, and one line says what ``--out`` keeps (:func:`interrupted`).
    """
    import subprocess

    command_line = getattr(args, "command_line", None)
    if command_line is None:
        raise UsageError("--processes starts the command again from its command line: run it as `qpnlp train "
                         "word2fun ...` (in Python, start fit() under torchrun)")
    env = {"OMP_NUM_THREADS": "1", **os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(_free_port()),
           "WORLD_SIZE": str(args.processes), "LOCAL_WORLD_SIZE": str(args.processes), **(env or {})}
    report.write()                                # "running" until the first process rewrites it: never a stale one
    before = _checkpoint_mark(args.out)
    procs: list = []
    with tempfile.TemporaryDirectory(prefix="qpnlp-processes-") as errors:
        files = [Path(errors) / f"process-{r}.json" for r in range(args.processes)]
        try:
            with sigterm_interrupts():
                for r in range(args.processes):
                    procs.append(subprocess.Popen([sys.executable, "-m", "qpnlp.cli", *command_line],
                                                  env={**env, "RANK": str(r), "LOCAL_RANK": str(r),
                                                       ERROR_FILE_VARIABLE: str(files[r])}))
                failure = _wait_for_all(procs)
        except KeyboardInterrupt as stop:                     # Ctrl-C (SIGINT), or SIGTERM
            _stop(procs)                                      # the first process may not have finished the report
            _finish_report(report, "interrupted", f"{run_outcome(stop)[1]}; the processes were stopped", force=False)
            return interrupted(args, stop, _kept_by_processes(args, before))
        finally:
            _stop(procs)
        return 0 if failure is None else _record_failure(args, report, failure, len(procs),
                                                         _recorded_errors(files))


def interrupted(args: argparse.Namespace, stop: KeyboardInterrupt, kept: int) -> int:
    """Ctrl-C (or SIGTERM) while training or reporting: one line saying what ``--out`` keeps, exit 130 (143).

    ``kept``: the epochs of the checkpoint in ``--out`` that this run wrote whole last (an epoch interrupted
    while its checkpoint was written is not finished, the previous one's is kept) or, resumed, that it
    started from; 0 for none.
    """
    message = f"{args.prog}: {how_stopped(stop)}"
    if not args.out:
        message += "; nothing saved (--out DIR keeps a checkpoint after every epoch)"
    elif kept:
        message += f"; the checkpoint of epoch {kept} (of {args.epochs}) is in {args.out}; continue with --resume"
    else:
        message += f"; no epoch finished, nothing saved in {args.out}"
    status_line(message)
    return interrupted_status(stop)


def saved_epochs(checkpoint) -> int:
    """The epochs done of the run saved at ``checkpoint``; 0 when none is there (or none readable)."""
    from qpnlp.word2fun._run_state import saved_run

    try:
        run = saved_run(checkpoint)
    except (OSError, ValueError):
        return 0
    return int(run.get("epochs_done", 0)) if run else 0


def _checkpoint_mark(out) -> tuple[int, int] | None:
    """What tells the checkpoint in ``out`` from the next one saved (each save writes a new ``config.json``): its
    inode and modification time; None without one."""
    from qpnlp.models.base import CONFIG_FILE

    try:
        stat = (Path(out) / CONFIG_FILE).stat() if out else None
    except OSError:
        return None
    return None if stat is None else (stat.st_ino, stat.st_mtime_ns)


def _kept_by_processes(args: argparse.Namespace, before: tuple[int, int] | None) -> int:
    """The epochs of the checkpoint the stopped processes leave in ``--out`` (for :func:`interrupted`): the one
    they saved last, put back first where the first process, killed while replacing it, left it aside (its
    launcher holds ``--out`` locked and its processes have ended), or, resumed, the one the run started from;
    0 when they saved none over an earlier run's checkpoint (``before``: :func:`_checkpoint_mark` of ``--out``
    before they started)."""
    from qpnlp._atomic import restore_replaced_directory

    if not args.out:
        return 0
    with contextlib.suppress(OSError):            # several versions left aside: --resume names them
        restore_replaced_directory(args.out)
    return saved_epochs(args.out) if args.resume or _checkpoint_mark(args.out) != before else 0


#: Seconds a process is given to end after SIGTERM before it is killed (SIGKILL).
STOP_GRACE_SECONDS = 10.0


def _stop(procs, grace: float | None = None) -> None:
    """Terminate the processes of ``procs`` still running and wait for them; one still running ``grace`` seconds
    later (default :data:`STOP_GRACE_SECONDS`) is killed: it ignores or blocks SIGTERM (a mask inherited from
    whatever started the command) or hangs, and waiting on it would hang the command too."""
    import subprocess

    running = [p for p in procs if p.poll() is None]
    for p in running:
        p.terminate()
    deadline = time.monotonic() + (STOP_GRACE_SECONDS if grace is None else grace)
    for p in running:
        try:
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_all(procs) -> tuple[int, int] | None:
    """None once every process has succeeded, else ``(rank, exit status)`` of the first one that failed
    (a negative status: killed by that signal)."""
    while True:
        codes = [p.poll() for p in procs]
        failed = [(rank, c) for rank, c in enumerate(codes) if c not in (None, 0)]
        if failed:
            return failed[0]
        if all(c == 0 for c in codes):
            return None
        time.sleep(0.1)


def _recorded_errors(files: list[Path]) -> dict[int, dict]:
    """The errors the processes recorded (:func:`records_error`), by rank: those whose file is readable."""
    errors = {}
    for rank, path in enumerate(files):
        with contextlib.suppress(OSError, ValueError):
            errors[rank] = json.loads(path.read_text(encoding="utf-8"))
    return errors


def _record_failure(args: argparse.Namespace, report: Report, failure: tuple[int, int], world: int,
                    errors: dict[int, dict]) -> int:
    """The exit status of a run whose process ``failure[0]`` of ``world`` failed with status ``failure[1]`` (the
    others then stopped), given the ``errors`` the processes recorded (:func:`records_error`), by rank.

    A process killed by a signal (the out-of-memory killer's SIGKILL) printed and recorded nothing: its line is
    printed here, the report is finished as failed with it, keeping the epochs the first process recorded, and
    the status is 1 (not the negative signal number, which the shell saw as 247).  Otherwise the cause is the
    error recorded first (``_first_error``), named on a last line here (the processes' own lines come in
    no set order).  The report gets it, with its status, when it came from another process than the first
    (which reported only its lost connection) or the report was left "running" (the first process was stopped
    before it could finish it).
    """
    rank, code = failure
    prog = getattr(args, "prog", "qpnlp")
    if code < 0:
        error = _killed(rank, world, -code)
        _finish_report(report, "failed", error, force=True)     # its "report written to" line first: the error last
        print(f"{prog}: error: {error}", file=sys.stderr, flush=True)
        return 1
    first = _first_error(errors)
    if first is None:
        error = f"process {rank} of {world} failed with exit status {code} (its error is above); the others were " \
                "stopped"
        _finish_report(report, "failed", error, force=False)
        return code
    rank, recorded = first
    error = f"process {rank} of {world} failed: {recorded['error']}; the others were stopped"
    _finish_report(report, recorded.get("status", "failed"), error, force=rank != 0)
    print(f"{prog}: error: {error} (the first error of the processes)", file=sys.stderr, flush=True)
    return code


def _killed(rank: int, world: int, signal_number: int) -> str:
    """The line of process ``rank`` of ``world`` killed by ``signal_number`` (SIGKILL: the out-of-memory killer?)."""
    import signal

    killed_by_system = signal_number == getattr(signal, "SIGKILL", None)       # Windows has no SIGKILL
    why = " (by the system: out of memory?)" if killed_by_system else ""
    return f"process {rank} of {world} was killed by {_signal_name(signal_number)}{why}; the others were stopped"


def _first_error(errors: dict[int, dict]) -> tuple[int, dict] | None:
    """``(rank, record)`` of the error recorded first (the others' errors followed from it), None for none: one
    of a process's own before one that only names another process's (``follows``, recorded as early)."""
    if not errors:
        return None
    rank = min(errors, key=lambda r: ("follows" in errors[r], errors[r].get("time", float("inf")), r))
    return rank, errors[rank]


def _finish_report(report: Report, status: str, error: str, *, force: bool) -> None:
    """Finish the report of the processes as ``status`` with ``error``, keeping the epochs the first process
    recorded, if it was left "running" (or anyway with ``force``)."""
    if report.path is None:
        return
    written = json.loads(report.path.read_text(encoding="utf-8")) if report.path.is_file() else {}
    if force or written.get("status", "running") == "running":   # the file was written before the processes
        report.data.update({k: v for k, v in written.items() if k in report.data and k != "status"})
        report.finish(status, error=error)


def _signal_name(number: int) -> str:
    """``SIGKILL`` for 9: the name of signal ``number``, or ``signal N`` for one Python does not name."""
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"

"""Where the commands write: results on stdout, everything else on stderr.

The one rule of every ``qpnlp`` command. **stdout holds the results only**,
what ``qpnlp ... > results.txt`` is run to keep: the metrics of the trained
or evaluated model (``qpnlp train``: one line per split and the summary;
``qpnlp evaluate``: its one line), the nearest words of ``qpnlp train
word2fun --words`` and ``qpnlp demo``'s accuracy and interpretation, each
written with :func:`result_line`. **stderr holds everything else**, written with
:func:`status_line`: what the run is doing (loading, the selection grid it
searches, the training state it keeps or resumes from), the files it wrote
(``report written to ...``, ``checkpoint written to ...``, ``converted ... ->
...``), the per-epoch lines, the progress bars (on a terminal only), the
warnings and the errors (``qpnlp.commands._errors``).

The per-epoch lines are progress, not results: they say how far a run of
minutes or hours has come, which a user watching the console (or the log of
``2> log.txt``) wants and a script reading the results does not (the last
epoch is rarely the one selected); gensim and pip also keep their progress
and status on stderr. The history they show is kept for scripts in the
report, ``--report FILE.json`` (``history``) and ``FILE.history.csv``.

A status line goes through :func:`tqdm.tqdm.write`, which takes a progress
bar drawn on stderr off the screen, writes the line and draws the bar again
(a plain ``print`` landed inside the bar: ``word2fun IV:  40%|####  | ...word2fun
epoch 2: loss ...``). A result written while a bar is drawn would land there
too: the commands write their results after training, and after the files they were asked for (``--save``,
``--export-npz``, ``--report``), so that a reader of stdout that leaves early (``qpnlp ... | head -1``) or a
stdout that fails loses none of them.

On a console whose encoding lacks a character of a result (a word ``naïve`` under an ASCII or Latin-1 locale),
the character is written as its backslash escape (``na\\xefve``, :func:`escaped_unencodable`) instead of the
run failing at its last step with :class:`UnicodeEncodeError`; stderr does so already (Python's default).

A closed stream (``qpnlp ... 2>&-``, ``>&-``: Python sets ``sys.stderr`` or ``sys.stdout`` to None) is one the
command writes to all the same (:func:`standard_streams`): the status lines of a closed stderr are dropped, and the
results of a closed stdout are counted (:class:`ClosedStdout`), so that the command ends with an error line and exit
code 1 once its files are written, as ``ls >&-`` does, instead of exit code 0 for results written nowhere.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys


def result_line(line: str) -> None:
    """Write one line of the command's results to stdout."""
    print(line, flush=True)


def status_line(line: str) -> None:
    """Write one status line (progress, a notice, a file written, a warning) to stderr, around any progress bar."""
    from tqdm import tqdm

    stream = sys.stderr
    tqdm.write(line, file=stream)
    stream.flush()


def warning_text(prog: str, message: str) -> str:
    """A warning as every command says it, as the errors are said: ``PROG: warning: MESSAGE`` on one line
    (``qpnlp train word2fun: warning: ...``)."""
    return f"{prog}: warning: {' '.join(str(message).split())}"


def warning_line(prog: str, message: str) -> None:
    """Say a warning (:func:`warning_text`) on stderr, a :func:`status_line`."""
    status_line(warning_text(prog, message))


class ClosedStdout(io.TextIOBase):
    """``sys.stdout`` of a command started with stdout closed: what is written to it is counted (``lost``), not kept."""

    def __init__(self) -> None:
        super().__init__()
        self.lost = 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.lost += len(text)
        return len(text)


def results_lost() -> bool:
    """Whether the command wrote results to a closed stdout (:class:`ClosedStdout`)."""
    return isinstance(sys.stdout, ClosedStdout) and sys.stdout.lost > 0


@contextlib.contextmanager
def standard_streams():
    """While the command runs, a closed stderr is the null device and a closed stdout a :class:`ClosedStdout`.

    Python starts with ``sys.stderr`` None under ``2>&-``: a status line failed with ``AttributeError: 'NoneType'
    object has no attribute 'flush'`` (exit code 1, the run lost), and every ``print(..., file=sys.stderr)``, the
    error line included, went to stdout among the results (``print`` and :func:`tqdm.tqdm.write` write to
    ``sys.stdout`` when given None). A closed descriptor 1 or 2 also holds the null device while the command runs,
    so that no file the command opens takes its number (the output of the C libraries and of the processes it
    starts would land in that file). The caller's streams and descriptors are as they were afterwards.
    """
    saved = sys.stdout, sys.stderr
    held = [fd for fd in (1, 2) if _hold_if_closed(fd)]
    null = open(os.devnull, "w", encoding="utf-8") if sys.stderr is None else None
    try:
        if null is not None:
            sys.stderr = null
        if saved[0] is None:
            sys.stdout = ClosedStdout()
        yield
    finally:
        sys.stdout, sys.stderr = saved
        if null is not None:
            null.close()
        for fd in held:
            os.close(fd)


def _hold_if_closed(fd: int) -> bool:
    """Open the null device on descriptor ``fd`` if it is closed (inherited by the processes started); whether so."""
    try:
        os.fstat(fd)
        return False
    except OSError:
        pass
    null = os.open(os.devnull, os.O_WRONLY)
    if null != fd:
        os.dup2(null, fd)
        os.close(null)
    os.set_inheritable(fd, True)
    return True


@contextlib.contextmanager
def escaped_unencodable():
    """While the command runs, stdout writes a character its encoding cannot hold as a backslash escape.

    A results line such as ``1900-1905: naïve, war`` on an ASCII stdout (``LC_ALL=C`` with ``PYTHONUTF8=0``,
    ``PYTHONIOENCODING=ascii``, a Latin-1 console for Cyrillic words) became ``na\\xefve`` instead of a
    :class:`UnicodeEncodeError` once training was done. The stream's own setting is restored afterwards
    (``main([...])`` run in-process leaves the caller's stdout as it was).
    """
    stream = sys.stdout
    errors = getattr(stream, "errors", None)
    if errors != "strict" or not callable(getattr(stream, "reconfigure", None)):
        yield
        return
    stream.reconfigure(errors="backslashreplace")
    try:
        yield
    finally:
        with contextlib.suppress(OSError, ValueError):     # a closed pipe or stream: nothing left to restore for
            stream.reconfigure(errors=errors)

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
warnings and the errors (:mod:`._errors`).

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
"""

from __future__ import annotations

import contextlib
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

"""Atomic writes: a file or a directory appears complete or not at all (fsync, then rename into place).

One home for the models' save format (:meth:`qpnlp.models.Model.save_pretrained`), the training state and the
command line's reports.  A directory whose replacement a killed process left half done is put back by
:func:`restore_replaced_directory`.

A process killed while saving may leave hidden siblings of the path it saved, ``NAME``: ``.NAME.XXXXXXXX.tmp``
(a new version not yet renamed into place; a file's is a file, a directory's a directory) and, killed while
replacing a directory, ``.NAME.XXXXXXXX.old`` (the previous version moved aside: whole where ``NAME`` is missing,
which :func:`restore_replaced_directory` handles, else part of it, deleted halfway). Nothing removes them
automatically: while another process saves the same ``NAME`` the same names are its work in progress, and
telling a dead writer's from a live one's would need a lock that not every file system keeps. Delete them once
no process saves ``NAME``.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["MAX_CONFIG_BYTES", "atomic_directory", "atomic_file", "atomic_write_text", "check_replaceable",
           "existing_parent", "restore_replaced_directory", "written_by_qpnlp"]

# qpnlp's JSON headers (a model's config.json, a training state's state.json, training-run.json) are a few
# kilobytes: a larger file is never read whole (read_model_header refuses it, written_by_qpnlp counts it a user's).
MAX_CONFIG_BYTES = 1 << 20


def _fsync_directory(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _replace_directory(new: Path, target: Path) -> None:
    """Rename the directory ``new`` onto the existing directory ``target``; on any exception ``target`` stays.

    The old ``target`` is first moved aside, into a fresh hidden directory of
    the same parent (``.NAME.XXXXXXXX.old``, unique like :func:`tempfile.mkdtemp`'s,
    so that a leftover of an earlier crash is never in the way), and deleted
    only once ``new`` is in its place. If the second rename fails, or an
    exception (Ctrl-C included) comes between the two, the old directory is
    renamed back before the exception goes on; should that fail too, the
    exception's note says where the old directory is. Only a process killed
    between the two renames leaves it aside (``.NAME.*.old/NAME``, with
    ``target`` missing): :func:`restore_replaced_directory` puts it back.
    """
    aside = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
    old = aside / target.name
    try:
        os.rename(target, old)
        os.rename(new, target)
    except BaseException as error:
        if os.path.lexists(old) and not os.path.lexists(target):           # moved aside, not replaced: undo
            try:
                os.rename(old, target)
            except OSError as undo:
                if hasattr(error, "add_note"):                               # Python 3.11+
                    error.add_note(f"the previous {target} could not be put back ({undo}); it is at {old}")
        with contextlib.suppress(OSError):
            aside.rmdir()                                         # only if empty: never the old directory
        raise
    _fsync_directory(target.parent)
    shutil.rmtree(aside, ignore_errors=True)


def restore_replaced_directory(directory: str | os.PathLike) -> Path | None:
    """Undo the replacement of ``directory`` that a process killed between its two renames left half done.

    Such a process (:func:`_replace_directory`) left ``directory`` missing and
    its previous version aside, at ``.NAME.*.old/NAME`` in the same parent:
    that one is renamed back (its emptied side directory removed), as the
    process would have done on an exception, and the path it had is
    returned; None when ``directory`` exists or nothing of it was left
    aside. Several versions left aside (a crash, a run started afresh, a
    second crash) are refused with FileExistsError naming them: which one to
    keep is for the user to tell.
    """
    target = Path(directory)
    if os.path.lexists(target):
        return None
    pattern = f".{glob.escape(target.name)}.*.old"
    left = sorted(p / target.name for p in target.parent.glob(pattern) if (p / target.name).is_dir())
    if len(left) > 1:
        raise FileExistsError(f"{target} is missing and {len(left)} earlier versions of it were left aside by "
                              f"processes killed while replacing it: {', '.join(map(str, left))}; move the one to "
                              f"keep back to {target} (and delete the others)")
    if not left:
        return None
    os.rename(left[0], target)
    _fsync_directory(target.parent)
    with contextlib.suppress(OSError):
        left[0].parent.rmdir()
    return left[0]


def existing_parent(path: str | os.PathLike) -> Path:
    """The nearest ancestor of ``path`` that exists (absolute): where its missing directories would be made.

    Callers refuse a path below a file with it (``mkdir`` would say only "File exists") before any work.
    """
    parent = Path(path).absolute().parent
    while not parent.exists():
        parent = parent.parent
    return parent


def check_replaceable(directory: str | os.PathLike, *, replaces: str | None = None) -> Path:
    """``directory`` as a Path if :func:`atomic_directory` may write it, else the error it would raise.

    ValueError for an existing file; with ``replaces`` (a file name), FileExistsError for an existing non-empty
    directory that does not hold that file as qpnlp writes it (:func:`written_by_qpnlp`: a user's own directory,
    whose files would be deleted, such as another library's model directory with its own ``config.json``).
    Callers that write late (after an epoch of training) call it first, to fail before any work.
    """
    target = Path(directory)
    if target.exists() and not target.is_dir():
        raise ValueError(f"{target} exists and is not a directory")
    if replaces and target.is_dir() and any(target.iterdir()) and not written_by_qpnlp(target / replaces):
        raise FileExistsError(f"{target} exists, is not empty and holds no {replaces} written by qpnlp: refusing to "
                              f"replace it (its files would be deleted); choose a new directory")
    return target


def written_by_qpnlp(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a JSON file that qpnlp wrote: an object whose ``format`` starts with ``qpnlp-`` (a model's
    ``config.json``, a training state's ``state.json``, the command line's ``training-run.json``); any other file
    of that name is a user's (a named pipe is never opened: reading it would wait for a writer; a file larger than
    :data:`MAX_CONFIG_BYTES` is not read whole)."""
    if not os.path.isfile(path):
        return False
    try:
        with open(path, "rb") as handle:
            text = handle.read(MAX_CONFIG_BYTES + 1)
        header = json.loads(text.decode("utf-8")) if len(text) <= MAX_CONFIG_BYTES else None
    except (OSError, ValueError):
        return False
    return isinstance(header, dict) and str(header.get("format", "")).startswith("qpnlp-")


@contextlib.contextmanager
def atomic_directory(directory: str | os.PathLike, *, replaces: str | None = None) -> Iterator[Path]:
    """Yield a temporary directory; on success, fsync its files and rename it onto ``directory``.

    An existing ``directory`` is replaced only after the new one is complete
    (:func:`_replace_directory`); on an exception, even one between the two
    renames of the replacement, nothing changes at ``directory``. With
    ``replaces`` (a file name), an existing non-empty directory is replaced
    only if it holds that file: a user's own directory is never deleted
    (FileExistsError). A process killed meanwhile leaves ``.NAME.*.tmp``
    (or ``.NAME.*.old``) beside it, never removed by a later save (see the
    module notes).
    """
    target = check_replaceable(directory, replaces=replaces)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        yield tmp
        for file in tmp.iterdir():
            with open(file, "r+b") as handle:      # writable: Windows fsyncs no read-only handle (EBADF)
                os.fsync(handle.fileno())
        _fsync_directory(tmp)
        if target.exists():
            _replace_directory(tmp, target)
        else:
            os.rename(tmp, target)
            _fsync_directory(target.parent)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike, mode: str = "w") -> Iterator:
    """A file object (``mode`` "w" for UTF-8 text, "wb" for bytes) whose content appears at ``path`` complete or not
    at all: a temporary file of the same directory (created with its parents), fsynced and renamed onto ``path``
    when the block ends without an exception, deleted otherwise. Text is written as given: ``\\n`` stays ``\\n``
    on every platform (Windows' text mode would write ``\\r\\n``), so the files are the same everywhere."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8", "newline": "\n"})) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
        _fsync_directory(path.parent)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file, fsync and rename (never a half-written file)."""
    with atomic_file(path) as handle:
        handle.write(text)
    return Path(path)

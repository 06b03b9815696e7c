"""Atomic writes: a file or a directory appears complete or not at all (fsync, then rename into place).

One home for the models' save format (:meth:`qpnlp.models.Model.save_pretrained`), the training state and the
command line's reports.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["atomic_directory", "atomic_write_text"]

def _fsync_directory(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def atomic_directory(directory: str | os.PathLike, *, replaces: str | None = None) -> Iterator[Path]:
    """Yield a temporary directory; on success, fsync its files and rename it onto ``directory``.

    An existing ``directory`` is replaced only after the new one is complete;
    on an exception nothing changes at ``directory``. With ``replaces`` (a
    file name), an existing non-empty directory is replaced only if it holds
    that file: a user's own directory is never deleted (FileExistsError).
    """
    target = Path(directory)
    if target.exists() and not target.is_dir():
        raise ValueError(f"{target} exists and is not a directory")
    if replaces and target.is_dir() and any(target.iterdir()) and not (target / replaces).is_file():
        raise FileExistsError(f"{target} exists, is not empty and holds no {replaces}: refusing to replace it "
                              f"(its files would be deleted); choose a new directory")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        yield tmp
        for file in tmp.iterdir():
            with open(file, "rb") as handle:
                os.fsync(handle.fileno())
        _fsync_directory(tmp)
        old = None
        if target.exists():
            old = target.parent / f".{target.name}.old-{os.getpid()}"
            os.rename(target, old)
        os.rename(tmp, target)
        _fsync_directory(target.parent)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file, fsync and rename (never a half-written file)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
        _fsync_directory(path.parent)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path

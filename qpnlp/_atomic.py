"""Atomic writes: a file or a directory appears complete or not at all (fsync, then rename into place).

One home for the models' save format (:meth:`qpnlp.models.Model.save_pretrained`), the training state and the
command line's reports.  A directory whose replacement a killed process left half done is put back by
:func:`restore_replaced_directory`.

A process killed while saving may leave hidden siblings of the path it saved, ``NAME``: ``.NAME.XXXXXXXX.tmp``
(a new version not yet renamed into place; a file's is a file, a directory's a directory) and, killed while
replacing a directory, ``.NAME.XXXXXXXX.old`` (the previous version moved aside: whole where ``NAME`` is missing,
which :func:`restore_replaced_directory` handles, else part of it, deleted halfway); :func:`leftover_of` reads
these names back, :func:`leftovers` lists those of one ``NAME``. A save never removes them: while another process
saves the same ``NAME`` the same names are its work in progress, and telling a dead writer's from a live one's
would need a lock that not every file system keeps. Delete them once no process saves ``NAME``. The callers that
know: resuming a training state puts back a ``.NAME.*.old/NAME`` where ``NAME`` is missing
(``qpnlp.training.loop``, as ``qpnlp.word2fun`` does its checkpoint); ``qpnlp train MODEL --resume`` deletes the
others from the training-state directory that it holds locked, and every ``qpnlp train`` those of its ``--save``
(``--out`` for Word2Fun), locked beside it (``qpnlp.commands._outputs``).

A write that fails (disk full, permission denied, an I/O error, a file system gone) leaves ``NAME`` as it was and
no temporary behind; its OSError names ``NAME``, not the temporary that failed (``_naming``).

Processes saving the same ``NAME`` at the same time each leave it whole: the last to finish is kept
(``_place``). A directory that one process uses for the whole of a run (the command line's training state) is
held by :func:`locked_directory`, so that a second run there is refused instead of mixing its files in.

What is saved gets the mode a plain ``open(path, "w")`` or ``os.mkdir`` gives: 0o666 for a file, 0o777 for a
directory, less the process's umask (0o644 / 0o755 under the usual 0o022), not the private 0o600 / 0o700 of the
temporaries it is written as (:func:`give_default_mode`). The umask decides: under 0o077 it stays private. A file
that replaces another gets that mode too, not the old file's.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import socket
import stat
import tempfile
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path

__all__ = ["MAX_CONFIG_BYTES", "atomic_directory", "atomic_file", "atomic_write_text", "check_header_size",
           "check_replaceable", "current_umask", "existing_parent", "give_default_mode", "leftover_of", "leftovers",
           "LOCK_FILE", "lock_file_of", "locked_directory", "restore_replaced_directory", "written_by_qpnlp"]

# qpnlp's JSON headers (a model's config.json, a training state's state.json, training-run.json) are a few
# kilobytes: a larger file is never read whole (read_model_header refuses it, written_by_qpnlp counts it a user's).
MAX_CONFIG_BYTES = 1 << 20


def check_header_size(text: str, path: str | os.PathLike) -> None:
    """Refuse (ValueError, naming both sizes) to write the JSON header ``text`` to ``path`` when it is larger than
    :data:`MAX_CONFIG_BYTES`: qpnlp would not read it back, and would count the directory a user's (never replaced)."""
    size = len(text.encode("utf-8"))
    if size > MAX_CONFIG_BYTES:
        raise ValueError(f"{path} would be {size} bytes, more than the {MAX_CONFIG_BYTES} bytes (MAX_CONFIG_BYTES) "
                         f"that qpnlp reads of a header: refusing to write what could not be loaded back (keep large "
                         f"data out of the metadata: in a file or tensors of its own)")


_UMASK_LOCK = threading.Lock()


def current_umask() -> int:
    """The process's umask (e.g. ``0o022``), read without changing it where the system says it.

    Linux (4.7 and later) writes it in ``/proc/self/status`` (``Umask:\t0022``), read there: nothing changes, so
    no other thread can be affected. Elsewhere ``os.umask`` is the only way, and it must set a mask to tell the
    old one: that round trip is made under a lock (two qpnlp saves never interleave theirs) and sets 0o077 while
    it lasts, so that a file another thread creates in that instant comes out private, never world-writable as
    with the usual ``os.umask(0)``.
    """
    with contextlib.suppress(OSError, ValueError, IndexError):
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    with _UMASK_LOCK:
        mask = os.umask(0o077)
        os.umask(mask)
    return mask


def give_default_mode(target: str | os.PathLike | int, *, directory: bool = False) -> None:
    """Give ``target`` (a path, or an open file's descriptor) the mode a new file (``directory``: a new directory)
    gets from ``open(path, "w")`` (``os.mkdir``): 0o666 (0o777) less :func:`current_umask`, in place of the 0o600
    (0o700) that :func:`tempfile.mkstemp` (:func:`tempfile.mkdtemp`) and safetensors give their temporaries.

    Nothing on Windows, which keeps no such modes (``chmod`` sets only a read-only flag, on a directory nothing);
    a file system that refuses ``chmod`` (FAT, some CIFS mounts) keeps the mode it gives, the save going on.
    """
    if os.name == "nt":
        return
    with contextlib.suppress(OSError):
        os.chmod(target, (0o777 if directory else 0o666) & ~current_umask())


def _fsync_directory(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _sibling(target: Path, kind: str) -> dict:
    """The arguments of :func:`tempfile.mkstemp` / :func:`tempfile.mkdtemp` that make the hidden sibling of
    ``target`` in which a save works: ``.NAME.XXXXXXXX.KIND`` in its parent (``kind`` "tmp": the new version being
    written; "old": the previous one moved aside). :func:`leftover_of` reads these names back."""
    return dict(prefix=f".{target.name}.", suffix=f".{kind}", dir=target.parent)


# What _sibling's names look like: tempfile puts 8 characters of [a-z0-9_] between the prefix and the suffix.
_LEFTOVER = re.compile(r"\.(?P<name>.+)\.[a-z0-9_]{8}\.(?:tmp|old)", re.DOTALL)


def leftover_of(path: str | os.PathLike) -> Path | None:
    """The path whose save made ``path`` (:func:`atomic_file`, :func:`atomic_directory`), if ``path`` is named as
    a save's hidden sibling, ``.NAME.XXXXXXXX.tmp`` or ``.NAME.XXXXXXXX.old``: ``NAME`` in the same directory;
    else None. What it was is its suffix (``.tmp``: an unfinished write; ``.old``: a replaced directory moved
    aside). Only the name is read.

    >>> leftover_of("runs/.model.k1lled00.old") == Path("runs/model")
    True
    >>> leftover_of("runs/.model.lock"), leftover_of("runs/model.k1lled00.tmp"), leftover_of("runs/.model.x.tmp")
    (None, None, None)
    """
    path = Path(path)
    found = _LEFTOVER.fullmatch(path.name)
    return None if found is None else path.parent / found["name"]


def leftovers(path: str | os.PathLike) -> list[Path]:
    """The hidden siblings that saves of ``path`` left (:func:`leftover_of`; a file or directory each), sorted;
    none where its parent is missing. Only those of this exact name: never another file, nor those of ``NAME.x``."""
    target = Path(path)
    try:
        entries = list(target.parent.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(p for p in entries if (of := leftover_of(p)) is not None and of.name == target.name)


def _replace_directory(new: Path, target: Path) -> None:
    """Rename the directory ``new`` onto the existing directory ``target``; on any exception ``target`` stays.

    The old ``target`` is first moved aside, into a fresh hidden directory of
    the same parent (``.NAME.XXXXXXXX.old``, unique like :func:`tempfile.mkdtemp`'s,
    so that a leftover of an earlier crash is never in the way), and deleted
    only once ``new`` is in its place. If the second rename fails, or an
    exception (Ctrl-C included) comes between the two, the old directory is
    renamed back before the exception goes on; should that fail too, the
    exception's note says where the old directory is (unless another
    process's save of ``target`` came in between: its version is kept and
    the old one deleted). Only a process killed between the two renames
    leaves it aside (``.NAME.*.old/NAME``, with ``target`` missing):
    :func:`restore_replaced_directory` puts it back.
    """
    aside = Path(tempfile.mkdtemp(**_sibling(target, "old")))
    old = aside / target.name
    try:
        os.rename(target, old)
        os.rename(new, target)
    except BaseException as error:
        if os.path.lexists(old):                                          # moved aside, not replaced: undo
            try:
                os.rename(old, target)
            except OSError as undo:
                if os.path.lexists(target):         # another process's save came in between: the old one is older
                    shutil.rmtree(aside, ignore_errors=True)
                elif hasattr(error, "add_note"):                              # Python 3.11+
                    error.add_note(f"the previous {target} could not be put back ({undo}); it is at {old}")
        with contextlib.suppress(OSError):
            aside.rmdir()                                         # only if empty: never the old directory
        raise
    _fsync_directory(target.parent)
    shutil.rmtree(aside, ignore_errors=True)


def restore_replaced_directory(directory: str | os.PathLike) -> Path | None:
    """Undo the replacement of ``directory`` that a process killed between its two renames left half done.

    Such a process (``_replace_directory``) left ``directory`` missing and
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
    left = [p / target.name for p in leftovers(target) if p.suffix == ".old" and (p / target.name).is_dir()]
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
    Callers that write late (after an epoch of training) call it first, to fail before any work. A directory that
    another process replaced while it was looked at (its save, between its two renames) is looked at again: a
    refusal stands only for a directory that stayed the same during the check.
    """
    target = Path(directory)
    for _ in range(_ATTEMPTS):
        before = _identity(target)
        refusal = _refusal(target, before, replaces)
        if refusal is None or _identity(target) == before:
            break
    if refusal is not None:
        raise refusal
    return target


#: How often a check or a rename that another process's save of the same path got in the way of is tried.
_ATTEMPTS = 8


def _identity(path: Path) -> tuple[int, int, bool] | None:
    """``(device, inode, is a directory)`` of ``path``, None where nothing is: what changes when a save replaces it."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return st.st_dev, st.st_ino, stat.S_ISDIR(st.st_mode)


def _refusal(target: Path, identity: tuple[int, int, bool] | None, replaces: str | None) -> Exception | None:
    """The error :func:`check_replaceable` raises for ``target`` as it was (``identity``), or None."""
    if identity is None:
        return None
    if not identity[2]:
        return ValueError(f"{target} exists and is not a directory")
    try:
        empty = not any(target.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        empty = False                   # gone meanwhile: the identity differs, the check is made again
    if replaces and not empty and not written_by_qpnlp(target / replaces):
        return FileExistsError(f"{target} exists, is not empty and holds no {replaces} written by qpnlp: refusing to "
                               f"replace it (its files would be deleted); choose a new directory")
    return None


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
    (``_replace_directory``); on an exception, even one between the two
    renames of the replacement, nothing changes at ``directory``. With
    ``replaces`` (a file name), an existing non-empty directory is replaced
    only if it holds that file: a user's own directory is never deleted
    (FileExistsError). A process killed meanwhile leaves ``.NAME.*.tmp``
    (or ``.NAME.*.old``) beside it, never removed by a later save (see the
    module notes).

    Parameters
    ----------
    directory : str or os.PathLike
        The directory to write; its parents are made if missing. An existing file there is refused (ValueError).
    replaces : str, optional
        A file name an existing non-empty ``directory`` must hold (as qpnlp writes it) to be replaced, e.g.
        ``"config.json"`` for a saved model. None: any existing directory is replaced.
    """
    target = check_replaceable(directory, replaces=replaces)
    with _naming(target):
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(**_sibling(target, "tmp")))
    try:
        give_default_mode(tmp, directory=True)                          # 0o755 under umask 0o022, not mkdtemp's 0o700
        with _naming(target):
            yield tmp
            for file in tmp.iterdir():
                with open(file, "r+b") as handle:      # writable: Windows fsyncs no read-only handle (EBADF)
                    os.fsync(handle.fileno())
            _fsync_directory(tmp)
            _place(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)                   # best effort: never hides the error raised


def _place(tmp: Path, target: Path) -> None:
    """Rename the complete directory ``tmp`` onto ``target``, replacing it if it exists (``_replace_directory``).

    Another process saving ``target`` at the same time may make it appear or vanish between the look and the
    rename (its own two renames): the rename then fails (FileNotFoundError, or a non-empty directory in the way)
    with nothing changed, and is tried again; the last save to finish is the one kept, whole.
    """
    for attempt in range(_ATTEMPTS):
        try:
            if os.path.lexists(target):
                _replace_directory(tmp, target)
            else:
                os.rename(tmp, target)
                _fsync_directory(target.parent)
            return
        except OSError as error:
            raced = isinstance(error, (FileNotFoundError, FileExistsError)) or error.errno == errno.ENOTEMPTY
            if not raced or attempt == _ATTEMPTS - 1 or not tmp.is_dir():
                raise


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike, mode: str = "w") -> Iterator:
    """A file object (``mode`` "w" for UTF-8 text, "wb" for bytes) whose content appears at ``path`` complete or not
    at all: a temporary file of the same directory (created with its parents), fsynced and renamed onto ``path``
    when the block ends without an exception, deleted otherwise. Text is written as given: ``\\n`` stays ``\\n``
    on every platform (Windows' text mode would write ``\\r\\n``), so the files are the same everywhere."""
    path = Path(path)
    with _naming(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(**_sibling(path, "tmp"))
    try:
        give_default_mode(fd)                                          # 0o644 under umask 0o022, not mkstemp's 0o600
        with _naming(path):
            with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8", "newline": "\n"})) as handle:
                yield handle
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        _fsync_directory(path.parent)
    finally:
        with contextlib.suppress(OSError):                       # best effort: never hides the error raised
            os.unlink(tmp)


@contextlib.contextmanager
def _naming(path: Path) -> Iterator[None]:
    """Re-raise an OSError of writing ``path`` through its temporaries as one that names ``path`` (same errno, so
    the same subclass: ``[Errno 28] No space left on device: 'runs/m'``), the original chained.

    Rewritten: an error naming no file (``write``, ``fsync``, ``close``), ``path`` or one of its hidden siblings
    (``.NAME.*.tmp``, ``.NAME.*.old``, or a file inside them); an error naming another file (``path``'s parent,
    which ``mkdir`` could not make), or without an errno, goes on as it is. Its notes are kept.
    """
    try:
        yield
    except OSError as error:
        if error.errno is None or not (error.filename is None or _is_ours(error.filename, path)):
            raise
        named = OSError(error.errno, error.strerror or str(error), str(path))
        for note in getattr(error, "__notes__", ()):
            named.add_note(note)
        raise named from error


def _is_ours(filename: str | bytes | os.PathLike, path: Path) -> bool:
    """Whether ``filename`` is ``path``, one of its hidden siblings (``.NAME.*``) or lies inside one."""
    try:
        below = Path(os.fsdecode(filename)).absolute().relative_to(path.absolute().parent)
    except (ValueError, OSError):                                  # elsewhere; or the working directory is gone
        return False
    return bool(below.parts) and (below.parts == (path.name,) or below.parts[0].startswith(f".{path.name}."))


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file, fsync and rename (never a half-written file).

    Parameters
    ----------
    path : str or os.PathLike
        The file to write or replace; its parent directories are made if missing.
    text : str
        Written as UTF-8, ``\\n`` kept as ``\\n`` on every platform (``atomic_file``).
    """
    with atomic_file(path) as handle:
        handle.write(text)
    return Path(path)


#: The file of a directory that :func:`locked_directory` locks; it stays there (deleting it would let a third process
#: lock a new file while the second still holds the old one).
LOCK_FILE = ".lock"


def lock_file_of(directory: str | os.PathLike, *, beside: bool = False) -> Path:
    """The file :func:`locked_directory` locks for ``directory``: its :data:`LOCK_FILE`, or with ``beside``
    ``.NAME.lock`` in its parent, for a directory that every save replaces (:func:`atomic_directory`; its own files
    go with it). The parent is resolved (``runs/x``, ``./runs/x/`` and a symbolic link to ``runs`` give one file);
    the name is not, since a save replaces what is at that name."""
    if not beside:
        return Path(directory) / LOCK_FILE
    path = Path(os.path.abspath(directory))
    return path.parent.resolve() / f".{path.name}.lock"


@contextlib.contextmanager
def locked_directory(directory: str | os.PathLike, *, beside: bool = False) -> Iterator[bool]:
    """Hold an exclusive lock on ``directory`` while the block runs; yield whether one is held.

    The lock is ``flock`` on its file (:func:`lock_file_of`: :data:`LOCK_FILE` in ``directory``, made if missing;
    with ``beside``, ``.NAME.lock`` beside it, the directory itself not made), which records the host and process
    id of the holder: the system releases it when the process ends, killed or not, so a crash leaves no stale
    lock. A second holder, in another process or by another open in this one, gets BlockingIOError naming the
    first. Where no lock can be taken (Windows, a file system without ``flock`` such as Lustre mounted
    ``noflock``) the block runs unlocked, with a RuntimeWarning: two processes using ``directory`` at once are then
    not detected.
    """
    directory = Path(directory)
    lock = lock_file_of(directory, beside=beside)
    lock.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:                                                  # Windows
        fcntl = None
    with _naming(lock):
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)      # the umask decides, as for open(): a group may lock
    try:
        held = fcntl is not None and _lock(fd, fcntl, directory)
        if held:
            with _naming(lock):                      # a full disk: said here, before any work, naming the file
                os.ftruncate(fd, 0)
                os.write(fd, f"{socket.gethostname()} {os.getpid()}\n".encode())
        else:
            warnings.warn(f"{directory} cannot be locked on this system: another process using it at the same time "
                          f"would not be detected", RuntimeWarning, stacklevel=3)
        yield held
    finally:
        os.close(fd)                                                      # releases the lock


def _lock(fd: int, fcntl, directory: Path) -> bool:
    """``flock`` ``fd`` exclusively without waiting: True when held, False where the file system keeps no locks;
    BlockingIOError naming the holder (as its lock file says) when another one holds it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 200, 0).decode("utf-8", "replace").split()
        by = f" (process {holder[1]} on {holder[0]})" if len(holder) == 2 else ""
        raise BlockingIOError(errno.EWOULDBLOCK, f"{directory} is in use by another process{by}") from None
    except OSError as error:
        if error.errno in (errno.ENOLCK, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL):
            return False
        raise
    return True

"""What qpnlp writes and how it trains on macOS and Windows, emulated on Linux (CI runs Linux only).

Each test puts back one Windows behaviour that the library met there: text files opened without ``newline``
written with ``\\r\\n`` (and in cp1252 without ``encoding``), ``os.fsync`` refusing a read-only handle, a
memory-mapped file that cannot be moved, no ``signal.SIGKILL``, torch wheels without libuv.
"""

from __future__ import annotations

import errno
import io
import os
import signal
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import qpnlp._atomic as atomic
from qpnlp._atomic import atomic_write_text
from qpnlp.data import EncodedTexts, TimestampedCorpus, Vocabulary, write_tsv
from qpnlp.models import QPDN, Model, QPDNConfig
from qpnlp.training import TrainConfig, fit

_real_open = io.open


def _windows_open(file, mode="r", buffering=-1, encoding=None, errors=None, newline=None, closefd=True,
                  opener=None):
    """``open`` as on Windows: text in the locale's cp1252 unless ``encoding`` is given, ``\\n`` written as
    ``\\r\\n`` unless ``newline`` is given."""
    if "b" not in mode:
        encoding = "cp1252" if encoding in (None, "locale") else encoding
        newline = "\r\n" if newline is None and any(c in mode for c in "wax+") else newline
    return _real_open(file, mode, buffering, encoding, errors, newline, closefd, opener)


def _qpdn(seed=0):
    return QPDN(QPDNConfig(num_words=20, num_classes=2, dim=4, num_measurements=3),
                generator=torch.Generator().manual_seed(seed))


def _texts(n=48, seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    return EncodedTexts([list(rng.integers(2 + 8 * y, 10 + 8 * y, rng.integers(2, 6))) for y in labels], labels)


def _files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def test_saved_files_are_the_same_bytes_under_windows_text_defaults(tmp_path, monkeypatch):
    """A model's ``config.json`` (and ``vocabulary.json``), a corpus TSV and a report written on Windows had
    ``\\r\\n`` line ends (``config.json`` also the locale's encoding): the same save gave other bytes than on
    Linux or macOS. They are written with ``\\n`` and UTF-8 everywhere."""
    vocabulary = Vocabulary.build([["café", "naïve"] * 10], min_freq=1)
    model = QPDN(QPDNConfig(num_words=len(vocabulary), num_classes=2, dim=4, num_measurements=3),
                 generator=torch.Generator().manual_seed(0))
    corpus = TimestampedCorpus([1900.0, 1950.5], [["café", "b"], ["c", "naïve"]])
    report = '{\n  "status": "finished",\n  "word": "café"\n}\n'

    def write(root: Path) -> None:
        model.save_pretrained(root / "model", vocabulary=vocabulary, metadata={"dataset": "données"})
        write_tsv(corpus, root / "corpus.tsv")
        atomic_write_text(root / "report.json", report)

    write(tmp_path / "linux")
    with monkeypatch.context() as m:
        m.setattr(io, "open", _windows_open)
        m.setattr("builtins.open", _windows_open)
        write(tmp_path / "windows")
    for name in ("corpus.tsv", "report.json"):
        assert (tmp_path / "windows" / name).read_bytes() == (tmp_path / "linux" / name).read_bytes()
        assert b"\r\n" not in (tmp_path / "windows" / name).read_bytes()
    assert _files(tmp_path / "windows" / "model") == _files(tmp_path / "linux" / "model")
    assert b"\r\n" not in (tmp_path / "windows" / "model" / "config.json").read_bytes()
    assert Model.from_pretrained(tmp_path / "windows" / "model").config == model.config


def _windows_fsync(real):
    """``os.fsync`` as on Windows: FlushFileBuffers needs a handle opened for writing, else EBADF."""
    fcntl = pytest.importorskip("fcntl")

    def fsync(fd):
        fd = fd if isinstance(fd, int) else fd.fileno()
        if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY:
            raise OSError(errno.EBADF, "Bad file descriptor")
        real(fd)
    return fsync


def test_atomic_directories_fsync_through_handles_windows_can_flush(tmp_path, monkeypatch):
    """Every save (``save_pretrained``, the training state) fsynced its files through handles opened read-only,
    which Windows refuses ("[Errno 9] Bad file descriptor"): no model could be saved there."""
    monkeypatch.setattr(os, "fsync", _windows_fsync(os.fsync))
    model = _qpdn()
    model.save_pretrained(tmp_path / "m")
    model.save_pretrained(tmp_path / "m")                       # replacing the directory too
    fit(_qpdn(), _texts(), _texts(seed=1), TrainConfig(epochs=1, batch_size=8, progress=False),
        checkpoint_dir=tmp_path / "state")
    assert (tmp_path / "state" / "state.json").is_file()


@pytest.mark.skipif(not Path("/proc/self/maps").is_file(), reason="reads the memory maps of Linux's /proc")
def test_a_resumed_run_keeps_no_mapping_of_the_state_it_replaces(tmp_path, monkeypatch):
    """The state a run resumed from was memory-mapped (safetensors' load_file) and the optimisers' moments and
    the best parameters kept the mapped tensors: the next epoch's save renames that directory aside, which Windows
    refuses while a file in it is mapped ("Access is denied"), so a resumed run failed after one epoch there."""
    real = atomic._replace_directory
    replaced = []

    def replace_as_windows(new, target):
        maps = Path("/proc/self/maps").read_text(encoding="utf-8")
        mapped = [p.name for p in Path(target).iterdir() if str(p) in maps]
        if mapped:
            raise PermissionError(errno.EACCES, f"Access is denied ({mapped} memory-mapped)", str(target))
        replaced.append(target)
        return real(new, target)

    config = dict(batch_size=8, lr=0.05, embedding_lr=0.05, seed=3, optimizer="adam", patience=5, progress=False)
    fit(_qpdn(), _texts(), _texts(seed=1), TrainConfig(epochs=2, **config), checkpoint_dir=tmp_path / "state")
    monkeypatch.setattr(atomic, "_replace_directory", replace_as_windows)
    fit(_qpdn(), _texts(), _texts(seed=1), TrainConfig(epochs=4, **config), checkpoint_dir=tmp_path / "state",
        resume=True)
    assert len(replaced) == 2


def test_the_process_group_asks_for_no_libuv_on_windows(monkeypatch):
    """torch's Windows wheels are built without libuv, which torch from 2.4 asked for by default: ``--processes``
    (and fit under torchrun) failed with "use_libuv was requested but PyTorch was build without libuv support"."""
    import torch.distributed as dist

    from qpnlp.word2fun.distributed import setup

    seen = []
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.delenv("USE_LIBUV", raising=False)
    monkeypatch.delenv("QPNLP_DIST_BACKEND", raising=False)
    monkeypatch.delenv("QPNLP_DIST_TIMEOUT", raising=False)   # set where the suite runs with a bounded group wait
    monkeypatch.setattr(dist, "is_initialized", lambda: False)
    monkeypatch.setattr(dist, "init_process_group",
                        lambda backend, **options: seen.append((backend, os.environ["USE_LIBUV"])))
    monkeypatch.setattr(dist, "get_world_size", lambda: 2)
    assert setup("cpu") == 2 and seen == [("gloo", "0")]
    monkeypatch.setenv("USE_LIBUV", "1")                        # the user's own choice stays
    setup("cpu")
    assert seen[-1] == ("gloo", "1")


def test_a_killed_process_is_named_without_sigkill(monkeypatch):
    """Windows' signal module has no SIGKILL: naming a process killed by a signal raised AttributeError."""
    from qpnlp.commands._processes import _killed

    monkeypatch.delattr(signal, "SIGKILL")
    line = _killed(1, 2, 9)
    assert line.startswith("process 1 of 2 was killed by ") and "out of memory" not in line

"""Writes that fail (a full disk, a read-only directory, an I/O error): what was there stays, no temporary is left,
and the error names the path the user gave, not a temporary one; a read-only output is refused before any work.

Failures are injected by monkeypatching (tests may run as root, whom ``chmod`` does not stop); the one test that
uses a read-only directory itself is skipped as root.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import tempfile

import pytest
import torch
from safetensors import SafetensorError

from qpnlp._atomic import atomic_directory, atomic_file, atomic_write_text
from qpnlp._safetensors import save_tensors
from qpnlp.commands._errors import UsageError
from qpnlp.commands._outputs import check_output_path, check_report_path
from qpnlp.models import QPDN, Model, QPDNConfig

ENOSPC = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))            # what write() and fsync() raise: no file named


def _disk_full(*args, **kwargs):
    raise ENOSPC


def _model() -> QPDN:
    torch.manual_seed(0)
    return QPDN(QPDNConfig(num_words=12, dim=4, num_measurements=3, num_classes=2))


@pytest.mark.parametrize("fails", ["fsync", "replace", "mkstemp"])
def test_a_file_that_cannot_be_written_keeps_the_old_one_and_names_its_path(tmp_path, monkeypatch, fails):
    """The error said ``[Errno 28] No space left on device`` alone (a write or fsync names no file) or named the
    deleted temporary (``.r.json.x1y2.tmp``); now the file the user gave."""
    target = atomic_write_text(tmp_path / "r.json", "old\n")
    where = {"fsync": os, "replace": os, "mkstemp": tempfile}[fails]
    original = getattr(where, fails)

    def failing(*args, **kwargs):
        if fails == "mkstemp":
            raise OSError(errno.EACCES, os.strerror(errno.EACCES), str(tmp_path / ".r.json.x1y2.tmp"))
        if fails == "replace":
            raise OSError(errno.EIO, os.strerror(errno.EIO), args[0], None, args[1])
        raise ENOSPC

    monkeypatch.setattr(where, fails, failing)
    with pytest.raises(OSError) as raised:
        atomic_write_text(target, "new\n")
    monkeypatch.setattr(where, fails, original)
    number = {"fsync": errno.ENOSPC, "replace": errno.EIO, "mkstemp": errno.EACCES}[fails]
    assert str(raised.value) == f"[Errno {number}] {os.strerror(number)}: '{target}'"     # one line, the user's path
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]                   # no temporary left behind


def test_a_temporary_that_cannot_be_deleted_does_not_hide_the_error_of_the_write(tmp_path, monkeypatch):
    """The file system gone: the unlink of the temporary failed too, and its error replaced the write's."""
    monkeypatch.setattr(os, "fsync", _disk_full)
    monkeypatch.setattr(os, "unlink", lambda path: _raise(OSError(errno.EIO, "I/O error", path)))
    with pytest.raises(OSError) as raised, atomic_file(tmp_path / "r.json") as handle:
        handle.write("new")
    assert raised.value.errno == errno.ENOSPC and raised.value.filename == str(tmp_path / "r.json")


def _raise(error):
    raise error


def test_an_error_of_another_file_than_the_one_written_goes_on_as_it_is(tmp_path):
    with pytest.raises(FileNotFoundError) as raised, atomic_file(tmp_path / "r.json") as handle:
        handle.write((tmp_path / "missing.txt").read_text())
    assert raised.value.filename == str(tmp_path / "missing.txt")


def test_a_model_that_cannot_be_saved_keeps_the_previous_one_and_names_the_directory(tmp_path, monkeypatch):
    """safetensors said ``SafetensorError: Error while serializing: I/O error: No space left on device (os error
    28)`` (no path; shown with its type name and "run with --debug"); now an OSError naming the directory."""
    model = _model()
    model.save_pretrained(tmp_path / "m")
    before = (tmp_path / "m" / "model.safetensors").read_bytes()

    def full(tensors, filename, metadata=None):
        with open(filename, "wb") as handle:                                 # a part written, as on a full disk
            handle.write(b"\0" * 10)
        raise SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)")

    monkeypatch.setattr("qpnlp._safetensors.save_file", full)
    with pytest.raises(OSError) as raised:
        _model().save_pretrained(tmp_path / "m")
    assert raised.value.errno == errno.ENOSPC and raised.value.filename == str(tmp_path / "m")
    assert (tmp_path / "m" / "model.safetensors").read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["m"]
    Model.from_pretrained(tmp_path / "m")


def test_save_tensors_raises_the_os_error_of_safetensors_with_the_path(tmp_path):
    with pytest.raises(FileNotFoundError) as raised:               # real: safetensors' temporary has no directory
        save_tensors({"a": torch.zeros(2)}, tmp_path / "missing" / "t.safetensors", {})
    assert raised.value.filename == str(tmp_path / "missing" / "t.safetensors")
    assert isinstance(raised.value.__cause__, SafetensorError)


def test_a_directory_that_cannot_be_replaced_stays_and_the_error_names_it(tmp_path, monkeypatch):
    """A read-only model directory cannot be renamed aside (EACCES): the error named both renamed paths, one of
    them the hidden side directory."""
    with atomic_directory(tmp_path / "d") as tmp:
        (tmp / "old.txt").write_text("old")
    rename = os.rename

    def read_only(src, dst):
        if str(src) == str(tmp_path / "d"):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(src), None, str(dst))
        rename(src, dst)

    monkeypatch.setattr(os, "rename", read_only)
    with pytest.raises(PermissionError) as raised, atomic_directory(tmp_path / "d") as tmp:
        (tmp / "new.txt").write_text("new")
    assert str(raised.value) == f"[Errno {errno.EACCES}] {os.strerror(errno.EACCES)}: '{tmp_path / 'd'}'"
    assert [p.name for p in tmp_path.iterdir()] == ["d"] and (tmp_path / "d" / "old.txt").read_text() == "old"


# ------------------------------------------------------------------ outputs checked before any work
def _refuse_temporary_files_in(directory, monkeypatch):
    """``directory`` read-only as the probe of :func:`check_output_path` sees it (chmod does not stop root)."""
    temporary_file = tempfile.TemporaryFile

    def probe(*args, dir=None, **kwargs):
        if os.path.abspath(dir) == os.path.abspath(directory):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(dir))
        return temporary_file(*args, dir=dir, **kwargs)

    monkeypatch.setattr(tempfile, "TemporaryFile", probe)


@pytest.mark.parametrize("model", [True, False])
def test_an_existing_read_only_output_directory_is_refused_before_any_work(tmp_path, monkeypatch, model):
    """Its parent was writable, so it passed; it failed to be replaced (or written in) after the training."""
    _model().save_pretrained(tmp_path / "m")
    _refuse_temporary_files_in(tmp_path / "m", monkeypatch)
    with pytest.raises(UsageError, match=f"--save m: cannot write in {tmp_path / 'm'} \\(Permission denied\\)"):
        monkeypatch.chdir(tmp_path)
        check_output_path("m", "--save", directory=True, model=model)
    assert check_output_path(tmp_path / "new", "--save", directory=True, model=model) == tmp_path / "new"


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root writes in a read-only directory: the monkeypatched test above stands for it")
def test_a_read_only_model_directory_is_refused_before_any_work(tmp_path):
    _model().save_pretrained(tmp_path / "m")
    os.chmod(tmp_path / "m", 0o500)
    try:
        with pytest.raises(UsageError, match="cannot write in .*m \\(Permission denied\\)"):
            check_output_path(tmp_path / "m", "--save", directory=True, model=True)
    finally:
        os.chmod(tmp_path / "m", 0o700)


def test_a_report_whose_history_file_is_a_directory_is_refused_before_any_work(tmp_path):
    """It failed after the first epoch (``[Errno 21] Is a directory``), which stopped the training."""
    (tmp_path / "r.history.csv").mkdir()
    with pytest.raises(UsageError, match="r.history.csv, where the report's history is written, is a directory"):
        check_report_path(tmp_path / "r.json")
    assert check_report_path(tmp_path / "s.json") == tmp_path / "s.json"


# ------------------------------------------------------------------ the report of a long run
def test_a_report_that_cannot_be_written_after_an_epoch_is_a_warning_said_once(tmp_path, monkeypatch):
    """A full disk when the report was rewritten after an epoch stopped the training (and lost the model unless a
    training state was kept); now one warning, the training goes on, and the next writes catch up."""
    import qpnlp.commands._report as module

    real, failing = module.atomic_write_text, {"on": True}

    def flaky(path, text):
        if failing["on"]:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return real(path, text)

    monkeypatch.setattr(module, "atomic_write_text", flaky)
    report = module.Report(argparse.Namespace(report=str(tmp_path / "r.json"), seed=0), command="train toy")
    with pytest.warns(RuntimeWarning, match=r"could not be written after epoch 1 \(\[Errno 28\].*r.json'\); the "
                                            r"training goes on") as said:
        report.epoch(dict(epoch=1, train_loss=0.5, seconds=1.0))
        report.epoch(dict(epoch=2, train_loss=0.4, seconds=2.0))
    assert len(said) == 1 and not (tmp_path / "r.json").exists()
    failing["on"] = False
    report.epoch(dict(epoch=3, train_loss=0.3, seconds=3.0))
    written = json.loads((tmp_path / "r.json").read_text())
    assert [e["epoch"] for e in written["history"]] == [1, 2, 3]
    assert any("could not be written after epoch 1" in w for w in written["warnings"])
    assert (tmp_path / "r.history.csv").read_text().count("\n") == 4
    failing["on"] = True
    with pytest.raises(OSError, match="No space left on device"):         # the end: the command fails
        report.finish()

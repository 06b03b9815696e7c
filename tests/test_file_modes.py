"""What qpnlp saves gets the mode a plain ``open(path, "w")`` / ``os.mkdir`` gives (0o666 / 0o777 less the umask),
not the private 0o600 / 0o700 of ``tempfile.mkstemp`` / ``mkdtemp`` and safetensors' temporaries: a model saved
on a shared cluster for colleagues, or a results directory a web server serves, is readable as any file is.

The umask is set by each test (0o022: group and others read; 0o077: private) and put back after.
"""

from __future__ import annotations

import argparse
import errno
import os
import stat

import pytest
import torch

import qpnlp._atomic as atomic
from qpnlp._atomic import atomic_directory, atomic_file, atomic_write_text, current_umask, give_default_mode
from qpnlp._safetensors import save_tensors
from qpnlp.commands._report import Report
from qpnlp.data import Vocabulary
from qpnlp.models import QPDN, QPDNConfig
from qpnlp.training.state import save_training_state

pytestmark = pytest.mark.skipif(os.name == "nt", reason="Windows keeps no POSIX modes")

#: (umask, a directory's mode, a file's mode)
MASKS = [(0o022, 0o755, 0o644), (0o077, 0o700, 0o600), (0o002, 0o775, 0o664)]


@pytest.fixture(params=MASKS, ids=lambda m: oct(m[0]))
def modes(request):
    """Run the test under the umask of ``request.param``; yield the (directory, file) modes it gives."""
    mask, directory, file = request.param
    old = os.umask(mask)
    try:
        yield directory, file
    finally:
        os.umask(old)


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def _tree_modes(root) -> dict[str, int]:
    """The mode of ``root`` (key ``.``) and of every file and directory below it, by relative path."""
    return {".": _mode(root), **{str(p.relative_to(root)): _mode(p) for p in sorted(root.rglob("*"))}}


def _expected(root, directory: int, file: int) -> dict[str, int]:
    return {".": directory, **{str(p.relative_to(root)): directory if p.is_dir() else file
                               for p in sorted(root.rglob("*"))}}


def test_an_atomic_file_gets_the_mode_of_open_not_mkstemps_private_one(tmp_path, modes):
    _, file = modes
    with atomic_file(tmp_path / "new.npz", "wb") as handle:
        handle.write(b"data")
    assert _mode(tmp_path / "new.npz") == file
    assert _mode(atomic_write_text(tmp_path / "r.json", "{}\n")) == file


def test_a_replaced_file_gets_the_umasks_mode_not_the_old_files(tmp_path, modes):
    _, file = modes
    old = atomic_write_text(tmp_path / "r.json", "old\n")
    os.chmod(old, 0o640)
    assert _mode(atomic_write_text(old, "new\n")) == file and old.read_text() == "new\n"


def test_a_lock_file_gets_the_umasks_mode(tmp_path, modes):
    # created 0o644 whatever the umask: under 0o002 a colleague of the group could not lock the same directory
    from qpnlp._atomic import LOCK_FILE, locked_directory

    with locked_directory(tmp_path / "state"):
        pass
    assert _mode(tmp_path / "state" / LOCK_FILE) == modes[1]


def test_an_atomic_directory_gets_the_mode_of_mkdir_not_mkdtemps_private_one(tmp_path, modes):
    directory, file = modes
    for _ in range(2):                                                    # new, then replacing the first
        with atomic_directory(tmp_path / "out") as tmp:
            (tmp / "a.txt").write_text("a")
            save_tensors({"x": torch.zeros(2)}, tmp / "t.safetensors", metadata={"format": "test"})
        assert _tree_modes(tmp_path / "out") == {".": directory, "a.txt": file, "t.safetensors": file}


def test_safetensors_files_get_the_mode_of_open(tmp_path, modes):
    save_tensors({"x": torch.zeros(2)}, tmp_path / "t.safetensors", metadata={"format": "test"})
    assert _mode(tmp_path / "t.safetensors") == modes[1]


def test_a_saved_model_directory_and_its_files_are_readable_as_the_umask_says(tmp_path, modes):
    torch.manual_seed(0)
    model = QPDN(QPDNConfig(num_words=12, dim=4, num_measurements=3, num_classes=2))
    vocabulary = Vocabulary.build([[f"w{i}" for i in range(10)]])         # 12 ids with the specials
    target = model.save_pretrained(tmp_path / "m", vocabulary=vocabulary, files={"README.md": "notes\n"})
    names = {p.name for p in target.iterdir()}
    assert {"config.json", "model.safetensors", "vocabulary.json", "README.md"} <= names
    assert _tree_modes(target) == _expected(target, *modes)


def test_a_training_state_directory_and_its_files_are_readable_as_the_umask_says(tmp_path, modes):
    model = torch.nn.Linear(3, 2)
    target = save_training_state(tmp_path / "s", model=model, best_state=None, optimisers=[], progress=dict(epoch=1),
                                 identity=dict(model="m", model_config=None, settings={}, data="d"))
    assert len(list(target.iterdir())) >= 2
    assert _tree_modes(target) == _expected(target, *modes)


def test_a_report_and_its_history_are_readable_as_the_umask_says(tmp_path, modes):
    report = Report(argparse.Namespace(report=str(tmp_path / "r.json"), seed=0), command="train toy")
    report.epoch(dict(epoch=1, train_loss=0.5, seconds=1.0))
    assert _mode(tmp_path / "r.json") == _mode(tmp_path / "r.history.csv") == modes[1]


@pytest.mark.parametrize("proc", [True, False], ids=["proc-status", "umask-round-trip"])
def test_the_umask_is_read_without_changing_it(monkeypatch, proc):
    old = os.umask(0o027)
    try:
        if not proc:                                   # no /proc (macOS, BSD): the locked os.umask round trip
            def no_proc(*args, **kwargs):
                raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), "/proc/self/status")
            monkeypatch.setattr(atomic, "open", no_proc, raising=False)
        assert current_umask() == 0o027
        assert os.umask(0o027) == 0o027                                    # left as it was
    finally:
        os.umask(old)


def test_a_file_system_refusing_chmod_still_saves(tmp_path, monkeypatch):
    def refused(*args, **kwargs):                                        # FAT, some CIFS mounts
        raise PermissionError(errno.EPERM, os.strerror(errno.EPERM))

    monkeypatch.setattr(atomic.os, "chmod", refused)
    assert atomic_write_text(tmp_path / "r.json", "{}\n").read_text() == "{}\n"
    with atomic_directory(tmp_path / "out") as tmp:
        (tmp / "a.txt").write_text("a")
    assert (tmp_path / "out" / "a.txt").read_text() == "a"


def test_windows_is_left_alone(tmp_path, monkeypatch):
    # chmod there sets only a read-only flag (a directory: nothing); nothing is asked of it
    (tmp_path / "f").write_text("x")
    os.chmod(tmp_path / "f", 0o600)
    monkeypatch.setattr(atomic.os, "name", "nt")
    give_default_mode(tmp_path / "f")
    monkeypatch.undo()
    assert _mode(tmp_path / "f") == 0o600

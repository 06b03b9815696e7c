"""Several processes or threads using qpnlp at once: saves of one directory, runs given one training state, the
model registry. Each race is reproduced deterministically (a rename or a lookup made to come in between)."""

import json
import multiprocessing
import os
import threading
from pathlib import Path

import pytest

from qpnlp import _atomic
from qpnlp._atomic import LOCK_FILE, atomic_directory, check_replaceable, locked_directory


def _save(directory: Path, text: str) -> None:
    with atomic_directory(directory, replaces="config.json") as tmp:
        (tmp / "config.json").write_text('{"format": "qpnlp-test"}')
        (tmp / "weights").write_text(text)


# --------------------------------------------------------------------------- saves of one directory
def test_a_save_whose_directory_another_save_moved_aside_meanwhile_is_kept_whole(tmp_path, monkeypatch):
    """Two processes saving one directory at once (folds started together, one --save): the second one's move of
    the old directory found it gone, moved aside by the first between its two renames, and the save raised
    FileNotFoundError after the whole training; it is tried again and the last save is kept."""
    target = tmp_path / "model"
    _save(target, "old")
    rename, raced = os.rename, []

    def other_save_moves_it_aside_first(src, dst):
        if Path(src) == target and not raced:           # the other process's first rename came first
            raced.append(True)
            rename(target, tmp_path / "elsewhere")
        return rename(src, dst)

    monkeypatch.setattr(_atomic.os, "rename", other_save_moves_it_aside_first)
    _save(target, "new")
    assert raced and (target / "weights").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere", "model"]     # no .model.*.tmp or .old


def test_a_save_that_finds_another_save_in_place_replaces_it_and_leaves_no_old_copy(tmp_path, monkeypatch):
    """The other process put its directory in place between this one's two renames: the second rename met a
    non-empty directory, and this one's old directory stayed aside (.model.*.old) with an error."""
    target = tmp_path / "model"
    _save(target, "old")
    rename, raced = os.rename, []

    def other_save_lands_in_between(src, dst):
        if Path(dst) == target and not raced:
            raced.append(True)
            target.mkdir()
            (target / "weights").write_text("other")
        return rename(src, dst)

    monkeypatch.setattr(_atomic.os, "rename", other_save_lands_in_between)
    _save(target, "new")
    assert raced and (target / "weights").read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["model"]


def test_the_check_before_a_save_does_not_refuse_a_directory_another_save_replaced_meanwhile(tmp_path, monkeypatch):
    """check_replaceable looked at the directory while another save moved it aside: "exists and is not a
    directory", or "holds no config.json written by qpnlp"; a save of a model refused as a user's directory."""
    target = tmp_path / "model"
    _save(target, "old")
    written_by_qpnlp, raced = _atomic.written_by_qpnlp, []

    def replaced_while_looked_at(path):
        if not raced:
            raced.append(True)
            _save(target, "other")                      # a new directory (another inode) at the same path
            return False                                 # the config.json was not there when it was read
        return written_by_qpnlp(path)

    monkeypatch.setattr(_atomic, "written_by_qpnlp", replaced_while_looked_at)
    assert check_replaceable(target, replaces="config.json") == target and raced
    (tmp_path / "user").mkdir()
    (tmp_path / "user" / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="refusing to replace it"):       # a user's directory still is refused
        check_replaceable(tmp_path / "user", replaces="config.json")


# --------------------------------------------------------------------------- one training state, two runs
def _hold(directory: str, held, release, beside: bool = False) -> None:
    with locked_directory(directory, beside=beside):
        held.set()
        release.wait(60)


def test_a_directory_locked_by_another_process_is_refused_naming_it(tmp_path):
    context = multiprocessing.get_context("spawn")
    held, release = context.Event(), context.Event()
    other = context.Process(target=_hold, args=(str(tmp_path / "state"), held, release))
    other.start()
    try:
        assert held.wait(60)
        with pytest.raises(BlockingIOError, match=rf"in use by another process \(process {other.pid} on "):
            with locked_directory(tmp_path / "state"):
                pass
    finally:
        release.set()
        other.join(60)
    with locked_directory(tmp_path / "state") as locked:                     # released when the process ended
        assert locked and (tmp_path / "state" / LOCK_FILE).is_file()


def test_a_second_run_given_the_training_state_of_a_running_one_is_refused_before_touching_it(tmp_path, capsys):
    """Two runs with one --save (or --checkpoint-dir) at once: the second cleared the first's training state as an
    earlier run's (or resumed from it) and wrote its own epochs among the first's, without a word."""
    from qpnlp.cli import main

    state = tmp_path / "state"
    argv = ["train", "qpdn", "--dataset", "mr", "--data", str(tmp_path / "data"), "--no-select",
            "--checkpoint-dir", str(state), "--no-progress"]
    with locked_directory(state):                      # the first run, still training
        (state / "training-run.json").write_text('{"format": "qpnlp-training-run/1"}')
        (state / "fold-1").mkdir()
        for extra in ([], ["--resume"]):
            assert main(argv + extra) == 1
            error = capsys.readouterr().err
            assert f"--checkpoint-dir: {state} is in use by another process (process {os.getpid()} on" in error
            assert "another run keeps its training state there" in error
        assert (state / "fold-1").is_dir()                                      # not cleared
    main(argv)                                         # the first run ended: the state is cleared, its lock kept
    error = capsys.readouterr().err
    assert "the training state of an earlier run" in error and "in use" not in error
    assert not (state / "fold-1").exists() and (state / LOCK_FILE).is_file()
    assert "exit_stack" not in json.loads((state / "training-run.json").read_text())["arguments"]     # the lock's


def test_a_second_word2fun_run_given_the_out_of_a_running_one_is_refused_before_reading_the_corpus(
        tmp_path, monkeypatch, capsys):
    """Two ``qpnlp train word2fun`` runs with one --out at once: each checkpoint was whole, but the last writer won
    and the runs overwrote each other's epochs, without a word. --out is replaced by every save, so its lock is the
    file .out.lock beside it, held by the first run (here another process); the second is refused naming it."""
    from qpnlp.cli import main
    from qpnlp.commands import word2fun

    read = []
    monkeypatch.setattr(word2fun, "_load_corpus", lambda *a: read.append(a) or pytest.fail("corpus read"))
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.delenv(word2fun.LOCKED_OUT_VARIABLE, raising=False)
    out = tmp_path / "runs" / "out"
    argv = ["train", "word2fun", "--corpus", "sotu", "--out", f"{out}/", "--no-progress"]
    context = multiprocessing.get_context("spawn")
    held, release = context.Event(), context.Event()
    other = context.Process(target=_hold, args=(str(tmp_path / "runs" / "." / "out"), held, release, True))
    other.start()
    try:
        assert held.wait(60)
        assert main(argv) == 1
        error = capsys.readouterr().err
        assert error.count("\n") == 1 and f"--out: {out} is in use by another process (process {other.pid} on" in error
        assert "another run keeps its checkpoints there" in error and not read and not out.exists()
    finally:
        release.set()
        other.join(60)
    assert (tmp_path / "runs" / ".out.lock").is_file() and sorted(os.listdir(tmp_path)) == ["runs"]
    with pytest.raises(pytest.fail.Exception, match="corpus read"):      # the first run ended: this one goes on
        main(argv)
    assert read


# --------------------------------------------------------------------------- threads
def test_a_thread_looking_up_a_model_while_another_loads_the_plugins_waits_for_them(monkeypatch):
    """Two threads asking for a plugin's model at once (a web server's first requests): the second found the
    plugins marked loaded while the first was still loading them and raised "unknown model"."""
    from qpnlp.models import QPDN, base, get_model_class, register_model, unregister_model

    class Plugin(QPDN):
        pass

    loading, second_waits = threading.Event(), threading.Event()

    class SlowEntryPoint:
        name, value = "slow", "tests.slow_plugin"

        def load(self):
            loading.set()
            second_waits.wait(30)
            register_model("threaded-plugin")(Plugin)

    class Probe:
        """The registry's lock, noting when the second thread asks for it."""

        def __init__(self):
            self.lock = threading.RLock()

        def __enter__(self):
            if threading.current_thread() is second:
                second_waits.set()
            return self.lock.__enter__()

        def __exit__(self, *exc):
            return self.lock.__exit__(*exc)

    monkeypatch.setattr(base.importlib.metadata, "entry_points", lambda group: [SlowEntryPoint()])
    monkeypatch.setattr(base, "_LOADED", False)
    monkeypatch.setattr(base, "_LOADING", Probe(), raising=False)
    found = {}

    def look_up(key):
        try:
            found[key] = get_model_class("threaded-plugin")
        except Exception as error:  # noqa: BLE001 - recorded for the assertion
            found[key] = error

    first = threading.Thread(target=look_up, args=("first",))
    second = threading.Thread(target=look_up, args=("second",))
    try:
        first.start()
        assert loading.wait(30)
        second.start()
        first.join(60)
        second.join(60)
    finally:
        unregister_model("threaded-plugin")
    assert found == {"first": Plugin, "second": Plugin}

"""``--report`` against what a command reads: refused over an input, taken beside it."""

from __future__ import annotations

import argparse
import json
import os

import pytest

from qpnlp.commands._errors import UsageError
from qpnlp.commands._outputs import check_report_apart, read_paths
from qpnlp.commands._report import Report


def _evaluate_args(model) -> argparse.Namespace:
    return argparse.Namespace(checkpoint=str(model), dataset=None, vectors=None)


def test_a_new_report_inside_the_model_directory_evaluate_reads_is_taken_and_one_over_its_files_refused(tmp_path):
    """``qpnlp evaluate MODEL --report MODEL/eval.json`` (the evaluation kept beside the model) was refused as "inside
    the checkpoint, which the command reads", though it overwrites nothing the command reads; so was running it a
    second time. A report over a file of the model (``MODEL/config.json``) is still refused."""
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    args = _evaluate_args(model)
    check_report_apart(model / "eval.json", {"--save": None}, read_paths(args))            # a new file: taken
    report = Report(argparse.Namespace(report=str(model / "eval.json")), command="evaluate")
    report.write()                                                                         # the first evaluation's
    assert json.loads((model / "eval.json").read_text())["schema"] == "qpnlp-report/1"
    check_report_apart(model / "eval.json", {"--save": None}, read_paths(args))            # written again: taken
    with pytest.raises(UsageError, match="the report .*config.json would be written inside"):
        check_report_apart(model / "config.json", {"--save": None}, read_paths(args))
    (model / "notes.json").write_text('{"schema": "mine"}')                                # not a report of qpnlp
    with pytest.raises(UsageError, match="notes.json would be written inside"):
        check_report_apart(model / "notes.json", {"--save": None}, read_paths(args))
    with pytest.raises(UsageError, match="would be written over"):
        check_report_apart(model, {"--save": None}, read_paths(args))


# --------------------------------------------------------------------------- leftovers of killed saves
def _leftover(target, kind: str, *, directory: bool = True):
    """A hidden sibling of ``target`` named as a killed save of it leaves one (``qpnlp._atomic``'s own naming)."""
    import tempfile
    from pathlib import Path

    from qpnlp import _atomic

    if directory:
        return Path(tempfile.mkdtemp(**_atomic._sibling(Path(target), kind)))
    fd, path = tempfile.mkstemp(**_atomic._sibling(Path(target), kind))
    os.close(fd)
    return Path(path)


def test_a_resume_removes_only_what_is_named_as_a_killed_writes_leftover(tmp_path):
    """``_remove_leftovers`` parsed the names itself: any hidden ``.X.tmp`` of the training-state directory (a
    user's ``.notes.tmp``) was deleted as an unfinished write."""
    from qpnlp.commands._outputs import _remove_leftovers

    (tmp_path / "fold-1").mkdir()
    (tmp_path / "fold-1" / "candidate-0").mkdir()
    candidate = tmp_path / "fold-1" / "candidate-0"
    stale = [_leftover(candidate, "tmp"), _leftover(candidate, "old"),
             _leftover(tmp_path / "training-run.json", "tmp", directory=False)]
    kept = [_leftover(tmp_path / "fold-1" / "candidate-1", "old"), tmp_path / ".notes.tmp", tmp_path / ".lock",
            tmp_path / "fold-1" / ".x.tmp.old"]
    for path in kept[1:]:
        path.write_text("kept")
    assert sorted(_remove_leftovers(tmp_path)) == sorted(stale)
    assert not any(p.exists() for p in stale) and all(p.exists() for p in kept)


_MATCHER = ["train", "cnm", "--dataset", "wikiqa", "--no-pretrained", "--dim", "4", "--no-progress"]


@pytest.mark.parametrize("state", [[], ["--no-training-state"]])
def test_a_run_removes_the_leftovers_of_killed_saves_of_its_save_directory(tmp_path, capsys, monkeypatch, state):
    """A run killed while saving ``--save`` left ``.SAVE.XXXXXXXX.tmp`` (a model's size) beside it; no later run
    removed it. Now a run given that ``--save`` deletes them once it holds ``--save`` locked, and says so."""
    from qpnlp.cli import main
    from qpnlp.commands import match

    monkeypatch.setattr(match, "_train", lambda *args: 0)          # what prepare_outputs does is all that counts
    save = tmp_path / "runs" / "model"
    save.parent.mkdir()
    unfinished, aside = _leftover(save, "tmp"), _leftover(save, "old")
    (unfinished / "weights.safetensors").write_text("half")
    others = [save.parent / ".model.notes.tmp", save.parent / ".model2.k1lled00.tmp", save.parent / "model.txt"]
    for path in others:
        path.write_text("the user's")
    assert main([*_MATCHER, *state, "--save", str(save)]) == 0
    err = capsys.readouterr().err
    assert f"--save: removed 1 unfinished write(s) of a killed run from {save.parent}: {unfinished.name}\n" in err
    assert not unfinished.exists() and aside.is_dir() and all(p.is_file() for p in others)   # model missing: kept
    save.mkdir()
    assert main([*_MATCHER, *state, "--save", str(save)]) == 0     # beside an existing model: a replaced one's
    assert f"--save: removed 1 unfinished write(s) of a killed run from {save.parent}: {aside.name}\n" \
        in capsys.readouterr().err
    assert not aside.exists() and all(p.is_file() for p in others)


def test_a_run_refused_the_save_directory_another_one_holds_removes_nothing(tmp_path, capsys, monkeypatch):
    from qpnlp._atomic import locked_directory
    from qpnlp.cli import main
    from qpnlp.commands import match

    monkeypatch.setattr(match, "_train", lambda *args: pytest.fail("trained"))
    save = tmp_path / "model"
    unfinished = _leftover(save, "tmp")                   # the other run's save in progress
    with locked_directory(save, beside=True):
        assert main([*_MATCHER, "--no-training-state", "--save", str(save)]) == 1
    err = capsys.readouterr().err
    assert f"--save: {save} is in use by another process" in err and "another run keeps its saved model" in err
    assert unfinished.is_dir()


def test_a_word2fun_run_removes_the_leftovers_of_killed_saves_of_its_out_directory(tmp_path, capsys, monkeypatch):
    from qpnlp.cli import main
    from qpnlp.commands import word2fun

    def stop(*args):
        raise RuntimeError("the corpus was read")
    monkeypatch.setattr(word2fun, "_load_corpus", stop)               # the leftovers go before the corpus is read
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.delenv(word2fun.LOCKED_OUT_VARIABLE, raising=False)
    out = tmp_path / "out"
    out.mkdir()
    stale = sorted([_leftover(out, "tmp"), _leftover(out, "old")])
    other = tmp_path / ".out.notes.tmp"
    other.write_text("the user's")
    assert main(["train", "word2fun", "--corpus", "sotu", "--out", str(out), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "the corpus was read" in err
    assert (f"--out: removed 2 unfinished write(s) of a killed run from {tmp_path}: "
            f"{stale[0].name}, {stale[1].name}\n") in err
    assert not any(p.exists() for p in stale) and other.is_file() and out.is_dir()

"""What the commands and the Python API write, and where: progress bars only on a terminal, the Python API silent by
default, a warning once per cause, naming the user's line (in a command: one line on stderr)."""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest

from qpnlp.cli import build_parser, main
from qpnlp.data import from_matrix, load_classification, splits


def _data(tmp_path):
    """A tiny CR (10-fold CV) data root: two clearly separated classes of 40 sentences each."""
    folder = tmp_path / "classification" / "CR"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for name, words in (("custrev.pos", "good great fine nice"), ("custrev.neg", "bad poor awful sad")):
        lines = [" ".join(rng.choice(words.split() + ["the", "phone", "is"], 6)) for _ in range(40)]
        (folder / name).write_text("\n".join(lines) + "\n")
    return tmp_path


def _parse(argv):
    return build_parser().parse_args(argv)


@pytest.mark.parametrize("argv", [["train", "qpdn", "--dataset", "CR"], ["train", "cnm", "--dataset", "trecqa"],
                                  ["demo"]])
def test_progress_bars_only_when_stderr_is_a_terminal(monkeypatch, argv):
    """`qpnlp train ... 2> log.txt` filled the log with bars redrawn by carriage returns, one per batch."""
    from qpnlp.commands._common import train_config
    from qpnlp.commands.match import matching_config

    config = matching_config if "cnm" in argv else train_config
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    assert config(_parse(argv)).progress is False
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    assert config(_parse(argv)).progress is True
    assert config(_parse([*argv, "--no-progress"])).progress is False


def test_word2fun_draws_no_bar_into_a_log(tmp_path, capsys):
    corpus = tmp_path / "c.tsv"
    corpus.write_text("1900\ta b c d\n1950\tb c d a\n2000\tc d a b\n")
    assert main(["train", "word2fun", "--corpus", str(corpus), "--dim", "4", "--min-count", "1", "--epochs", "1",
                 "--family", "static"]) == 0
    err = capsys.readouterr().err
    assert "\r" not in err and "tok/s" not in err, err


def test_the_python_api_is_silent_by_default_as_word2fun_is():
    """TrainConfig() drew a bar per epoch (qpnlp.word2fun.fit draws none unless asked); every test, notebook and
    reproduction passed progress=False."""
    import inspect

    from qpnlp.training import TrainConfig
    from qpnlp.training.matching import MatchingConfig
    from qpnlp.word2fun import fit

    assert TrainConfig().progress is False and MatchingConfig().progress is False
    assert inspect.signature(fit).parameters["progress"].default is False


def test_the_low_coverage_warning_names_the_users_line(tmp_path):
    """It named run_split's own line in qpnlp/training/classification.py (a fixed stacklevel=3)."""
    from qpnlp.training import TrainConfig
    from qpnlp.training.classification import run_split

    dataset = load_classification("CR", root=_data(tmp_path))
    wrong = from_matrix(["GOOD", "BAD"], np.ones((2, 4), dtype=np.float32))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        run_split("qpdn", dataset, next(splits(dataset)), wrong, {}, TrainConfig(epochs=1))
    coverage = [w for w in seen if "pretrained vectors cover" in str(w.message)]
    assert len(coverage) == 1 and coverage[0].filename == __file__, [(w.filename, w.lineno) for w in coverage]


def test_a_command_warns_once_per_cause_on_one_line(tmp_path, capsys):
    """Wrong vectors were warned about once per fold (ten times in a 10-fold CV), each time on two lines naming a
    file and a line of qpnlp's code."""
    wrong = tmp_path / "upper.txt"
    wrong.write_text("GOOD 1 2 3\nBAD 3 2 1\n")
    code = main(["train", "qpdn", "--dataset", "CR", "--data", str(_data(tmp_path)), "--vectors", str(wrong),
                 "--max-splits", "3", "--epochs", "1", "--no-select", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert err.count("pretrained vectors cover") == 1 and err.count("\n") == 1, err
    assert err.startswith("qpnlp train qpdn: warning: the pretrained vectors cover 0/"), err

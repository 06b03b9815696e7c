"""What the commands and the Python API write, and where: the results on stdout and nothing else there (the rule of
qpnlp.commands._console), progress bars only on a terminal and never cut by a line, the Python API silent by default,
a warning once per cause, naming the user's line (in a command: one line on stderr)."""

from __future__ import annotations

import io
import os
import re
import subprocess
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
    from qpnlp.commands._common import train_config as config

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
    warned = [line for line in err.splitlines() if "warning" in line]
    assert err.count("pretrained vectors cover") == 1 and len(warned) == 1, err
    assert warned[0].startswith("qpnlp train qpdn: warning: the pretrained vectors cover 0/"), err


# --------------------------------------------------------------------------- stdout: the results only
def _qa_root(tmp_path):
    """A tiny WikiQA root: the correct answer shares the question's adjective."""
    words = "good great fine superb lovely nice".split()
    for split, (start, n) in {"train": (0, 6), "dev": (6, 4), "test": (10, 4)}.items():
        lines = []
        for i in range(start, start + n):
            q = f"what is {words[i % 6]} thing {i} ?"
            lines += [f"{q}\tthe {words[i % 6]} thing is here .\t1", f"{q}\ta bad answer .\t0"]
        folder = tmp_path / "qa" / "wikiqa"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{split}.tsv").write_text("\n".join(lines) + "\n")
    return tmp_path


def _run(capsys, argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out.splitlines(), err


def test_train_and_evaluate_write_only_their_results_on_stdout(tmp_path, capsys):
    """`qpnlp train ... > results.txt` got the per-epoch lines and the notices of the files written
    ("training state kept in ...", "checkpoint written to ...", "report written to ...") among the results."""
    root, model, report, vectors = _data(tmp_path), tmp_path / "model", tmp_path / "r.json", tmp_path / "v.txt"
    rng = np.random.default_rng(1)
    vectors.write_text("".join(f"{w} " + " ".join(f"{x:.3f}" for x in rng.uniform(-1, 1, 4)) + "\n"
                               for w in "good great fine nice bad poor awful sad the phone is".split()))
    out, err = _run(capsys, ["train", "qpdn", "--dataset", "CR", "--data", root, "--vectors", vectors,
                             "--num-measurements", "4", "--max-splits", "1", "--epochs", "2", "--no-progress",
                             "--dropout", "0.3", "--report", report, "--save", model])
    assert len(out) == 2, out
    assert re.fullmatch(r"CR fold 1: test accuracy [\d.]+ \(dev [\d.]+, epoch \d, selected \{.*\}, \d+s\)", out[0]), out
    assert re.fullmatch(r"CR: test accuracy [\d.]+ \+- [\d.]+ over 1 split\(s\), seed 0", out[1]), out
    for line in ("default selection grid without dropout=0,0.3", "CR fold 1 [weighting=trainable] epoch 2: loss",
                 f"training state kept in {model}.training", f"checkpoint written to {model}",
                 f"report written to {report}"):
        assert line in err, (line, err)
    out, err = _run(capsys, ["evaluate", model, "--data", root, "--report", tmp_path / "e.json"])
    assert len(out) == 1 and re.fullmatch(r"CR fold 1 test: accuracy [\d.]+ on \d+ sentences \(qpdn\)", out[0]), out
    assert err == f"report written to {tmp_path / 'e.json'}\n", err


def test_a_matcher_writes_only_its_metrics_on_stdout(tmp_path, capsys):
    model, state = tmp_path / "model", tmp_path / "state"
    out, err = _run(capsys, ["train", "cnm", "--dataset", "wikiqa", "--data", _qa_root(tmp_path), "--no-pretrained",
                             "--dim", "4", "--num-measurements", "4", "--epochs", "1", "--no-progress",
                             "--save", model, "--checkpoint-dir", state])
    assert [line.split(":")[0] for line in out] == ["wikiqa dev (selection, epoch 1)", "wikiqa test"], out
    line_pattern = (r"MAP [\d.]+ MRR [\d.]+ P@1 [\d.]+ on \d+ questions"
                    r"( \(the '[\w-]+' filter removed \d+ of the file's \d+\))?$")
    assert all(re.search(line_pattern, line) for line in out), out
    for line in ("trained on wikiqa train: 6 questions", "wikiqa epoch 1: loss", f"training state kept in {state}",
                 f"checkpoint written to {model}"):
        assert line in err, (line, err)


def test_word2fun_writes_only_the_nearest_words_on_stdout(tmp_path, capsys):
    corpus, grid = tmp_path / "c.tsv", tmp_path / "g.npz"
    corpus.write_text("".join(f"{1900 + 10 * i}\ta b c d {'ab'[i % 2]}\n" for i in range(10)))
    out, err = _run(capsys, ["train", "word2fun", "--corpus", corpus, "--dim", "4", "--min-count", "1", "--epochs", "1",
                             "--family", "static", "--words", "a,b", "--eras", "2", "--topk", "2",
                             "--export-npz", grid, "--report", tmp_path / "r.json"])
    assert out[0].startswith("a  (change degree first vs last era: ") and out[3] == "", out
    assert out[4].startswith("b  (change degree") and len(out) == 7, out          # a word, its eras; a blank line
    assert all(re.fullmatch(r"  \d+-\d+: \w+, \w+", line) for line in out[1:3] + out[5:]), out
    for line in ("word2fun epoch 1: loss", "vocabulary 4 words", f"written to {grid}", "report written to"):
        assert line in err, (line, err)


def test_convert_says_what_it_wrote_on_stderr(tmp_path, capsys, monkeypatch):
    from qpnlp.commands import convert

    monkeypatch.setattr(convert, "convert_legacy_checkpoint", lambda old, new: new)
    out, err = _run(capsys, ["convert", tmp_path / "old.pt", tmp_path / "new"])
    assert out == [] and err == f"converted {tmp_path / 'old.pt'} -> {tmp_path / 'new'}\n"


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_status_line_is_not_written_into_a_progress_bar(monkeypatch):
    """word2fun's per-epoch line was printed into its bar, drawn over the whole training:
    `word2fun static:  50%|#####     | 20/40 [...]word2fun epoch 1: loss ...`."""
    from tqdm import tqdm

    from qpnlp.commands._console import status_line

    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    with tqdm(total=4, desc="bar", file=terminal, mininterval=0) as bar:
        bar.update(2)
        status_line("epoch 1: loss 0.5")
        bar.update(2)
    text = terminal.getvalue()
    assert re.search(r"(^|[\r\n])epoch 1: loss 0.5\n", text) and "|epoch" not in text and "]epoch" not in text, text
    assert text.rindex("bar: 100%") > text.index("epoch 1:")                     # the bar drawn again after it


def test_word2fun_epoch_lines_stay_out_of_its_bar_on_a_terminal(tmp_path, monkeypatch, capsys):
    corpus = tmp_path / "c.tsv"
    corpus.write_text("".join(f"{1900 + 10 * i}\ta b c d\n" for i in range(10)))
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(["train", "word2fun", "--corpus", str(corpus), "--dim", "4", "--min-count", "1", "--epochs", "2",
                 "--family", "static", "--sample", "0"]) == 0, terminal.getvalue()
    text = terminal.getvalue()
    assert "tok/s" in text or "tok]" in text, text                                    # a bar was drawn
    for epoch in (1, 2):
        assert re.search(rf"(^|[\r\n])word2fun epoch {epoch}: loss", text), text


# --------------------------------------------------------------------------- a closed stdout or stderr
def _corpus(tmp_path):
    corpus = tmp_path / "c.tsv"
    corpus.write_text("".join(f"{1900 + 10 * i}\ta b c d {'ab'[i % 2]}\n" for i in range(10)))
    return ["train", "word2fun", "--corpus", str(corpus), "--dim", "4", "--min-count", "1", "--epochs", "1",
            "--family", "static", "--eras", "2", "--topk", "2", "--no-progress"]


def test_with_stderr_none_status_lines_warnings_and_logs_go_nowhere(monkeypatch, capsys):
    """`qpnlp ... 2>&-` (sys.stderr None): a status line failed with "'NoneType' object has no attribute 'flush'"
    and the lines written to sys.stderr, the error line included, went to stdout among the results."""
    import logging

    from qpnlp.commands._console import result_line, standard_streams, status_line
    from qpnlp.commands._errors import one_line_warnings

    monkeypatch.setattr(sys, "stderr", None)
    with standard_streams(), one_line_warnings("qpnlp x"):
        status_line("a status line")
        warnings.warn("a warning")
        logging.getLogger("qpnlp.test").warning("a log record")
        print("an error line", file=sys.stderr)
        result_line("a result")
    assert capsys.readouterr().out == "a result\n" and sys.stderr is None


@pytest.mark.parametrize("words", [["--words", "a"], []])
def test_results_written_to_a_closed_stdout_end_with_an_error_line(tmp_path, capsys, monkeypatch, words):
    """`qpnlp ... >&-` (sys.stdout None): print wrote the results nowhere and the command exited 0."""
    report = tmp_path / "r.json"
    monkeypatch.setattr(sys, "stdout", None)
    code = main([*_corpus(tmp_path), *words, "--report", str(report)])
    err = capsys.readouterr().err.splitlines()
    assert report.is_file() and f"report written to {report}" in err and sys.stdout is None, err
    if words:
        assert code == 1 and err[-1] == ("qpnlp train word2fun: error: write error: stdout is closed (Bad file "
                                         "descriptor); the results were not written"), err
    else:                                                           # no results to write: nothing lost
        assert code == 0 and err[-1] == f"report written to {report}", err


def _qpnlp(tmp_path, argv, closed: int) -> subprocess.CompletedProcess:
    """``python -m qpnlp ARGV`` with descriptor ``closed`` closed (``>&-``, ``2>&-``), the other one read."""
    return subprocess.run([sys.executable, "-m", "qpnlp", *argv], text=True, preexec_fn=lambda: os.close(closed),
                          **{"stderr" if closed == 1 else "stdout": subprocess.PIPE}, timeout=300,
                          env={**os.environ, "OMP_NUM_THREADS": "1"}, cwd=tmp_path)


@pytest.mark.skipif(sys.platform == "win32", reason="Windows: no preexec_fn to close a descriptor of the child")
def test_the_command_line_with_stderr_closed_writes_its_results(tmp_path):
    """`qpnlp ... 2>&-` as a shell runs it failed with exit code 1, its status lines and error line on stdout."""
    run = _qpnlp(tmp_path, [*_corpus(tmp_path), "--words", "a"], closed=2)
    out = run.stdout.splitlines()
    assert run.returncode == 0 and out[0].startswith("a  (change degree first vs last era: "), run.stdout
    assert len(out) == 3 and all(re.fullmatch(r"  \d+-\d+: \w+, \w+", line) for line in out[1:]), run.stdout


@pytest.mark.skipif(sys.platform == "win32", reason="Windows: no preexec_fn to close a descriptor of the child")
def test_the_command_line_with_stdout_closed_fails_as_ls_does_and_no_file_takes_descriptor_1(tmp_path):
    """`qpnlp ... >&-` exited 0 with its results written nowhere (`ls >&-` says "write error" and fails); a file
    the command opened took the free descriptor 1, where the output of C libraries and of the processes it starts
    then landed (the plugin writes there as they do)."""
    plugin, report = tmp_path / "plugin.py", tmp_path / "r.json"
    plugin.write_text("import os\nwith open('mine.txt', 'w') as f:\n    os.write(1, b'stray ')\n    f.write('mine')\n")
    run = _qpnlp(tmp_path, ["--import", plugin, *_corpus(tmp_path), "--words", "a", "--report", report], closed=1)
    assert run.returncode == 1 and report.is_file(), run.stderr
    last = run.stderr.splitlines()[-1]
    assert last.startswith("qpnlp train word2fun: error: write error: stdout is closed"), run.stderr
    assert (tmp_path / "mine.txt").read_text() == "mine"


@pytest.mark.parametrize("option", ["--help", "--version"])
def test_help_and_version_with_stdout_none_are_on_stderr_as_argparse_writes_them(monkeypatch, capsys, option):
    monkeypatch.setattr(sys, "stdout", None)
    with pytest.raises(SystemExit) as exit:
        main([option])
    assert exit.value.code in (0, None) and re.match(r"usage: qpnlp|qpnlp \d", capsys.readouterr().err)

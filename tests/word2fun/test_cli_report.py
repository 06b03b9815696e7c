"""`qpnlp train word2fun` reports like every command: schema qpnlp-report/1, a line and a history entry per epoch,
and an unknown --words word is a one-line usage error before any training."""

import csv
import json

import numpy as np
import pytest

from qpnlp.cli import main
from qpnlp.data import TimestampedCorpus, write_tsv
from qpnlp.models.base import read_model_header
from qpnlp.word2fun import KeyedVectors

PROG = "qpnlp train word2fun"
WORDS = ["war", "peace", "trade", "army", "navy", "tax", "bank", "union"]


@pytest.fixture
def corpus_tsv(tmp_path):
    """A tiny corpus: 300 documents of 8 tokens over 20 years, eight words plus one rare word (seen twice)."""
    rng = np.random.default_rng(0)
    docs = [(1900 + i % 20, list(rng.choice(WORDS, 8))) for i in range(300)]
    docs[0][1][0] = docs[1][1][0] = "rare"
    path = tmp_path / "c.tsv"
    write_tsv(TimestampedCorpus.from_pairs(docs), path)
    return path


def _argv(corpus, *extra):
    return ["train", "word2fun", "--corpus", str(corpus), "--dim", "4", "--epochs", "2", "--batch-size", "256",
            "--negatives", "2", "--no-progress", *extra]


def test_report_schema_history_csv_and_epoch_lines(corpus_tsv, tmp_path, capsys):
    report, out = tmp_path / "run" / "r.json", tmp_path / "ck"
    code = main(_argv(corpus_tsv, "--words", "war,union", "--eras", "2", "--topk", "3", "--min-count", "3",
                      "--report", str(report), "--out", str(out), "--export-npz", str(tmp_path / "g.npz")))
    stdout, stderr = capsys.readouterr()
    assert code == 0, stderr
    assert [line.split(":")[0] for line in stderr.splitlines() if line.startswith("word2fun epoch")] == \
        ["word2fun epoch 1", "word2fun epoch 2"]                                    # a per-epoch line, on stderr
    assert "tokens/s" in next(line for line in stderr.splitlines() if line.startswith("word2fun epoch 2"))
    assert stdout.startswith("war  (change degree first vs last era: ")            # stdout: the results only
    assert "epoch" not in stdout and "written" not in stdout and f"report written to {report}" in stderr
    data = json.loads(report.read_text())
    assert data["schema"] == "qpnlp-report/1" and data["command"] == "train word2fun" and data["status"] == "completed"
    assert data["qpnlp_version"] and data["model"] == "word2fun" and data["dataset"] == str(corpus_tsv)
    assert data["split_counts"] == {"corpus": {"documents": 300, "tokens": 2400}}
    assert data["checkpoint"] == str(out) and (out / "config.json").is_file()
    assert data["config"]["train"]["epochs"] == 2 and data["config"]["fit"]["min_count"] == 3
    assert data["config"]["model"]["dim"] == 4 and data["config"]["model"]["family"] == "IV"
    assert data["arguments"]["words"] == "war,union" and data["error"] is None and data["warnings"] == []
    assert [h["epoch"] for h in data["history"]] == [1, 2]
    for entry in data["history"]:
        assert {"epoch", "train_loss", "seconds", "tokens_per_s"} <= set(entry) and entry["seconds"] > 0
        assert 0 < entry["epoch_seconds"] <= entry["seconds"]      # seconds: time so far, as the other trainers
    first, last = data["history"]
    assert last["seconds"] == pytest.approx(first["seconds"] + last["epoch_seconds"])
    metrics = data["metrics"]
    assert metrics["train_loss"] == data["history"][-1]["train_loss"] and metrics["tokens_per_s"] > 0
    assert metrics["vocabulary_size"] == 8 and metrics["pairs"] > 0
    details = data["details"]
    assert set(details["nearest"]) == {"war", "union"} and len(details["nearest"]["war"]) == 2
    assert len(details["nearest"]["war"][0]["nearest"]) == 3
    assert set(details["change_degree"]) == {"war", "union"} and details["training"]["processes"] == 1
    vectors = KeyedVectors.from_pretrained(out)                 # one view per era: the queries word by word agree
    for w in ("war", "union"):
        for era in details["nearest"][w]:
            found = vectors.most_similar(w, topn=3, year=era["year"], min_count=3)
            assert era["nearest"] == [[x, round(c, 4)] for x, c in found]
        first, last = details["nearest"][w][0]["era"], details["nearest"][w][-1]["era"]
        assert details["change_degree"][w] == pytest.approx(
            vectors.change_degree(w, first, last, step=vectors.default_step()), abs=1e-6)
    assert details["npz"] == str(tmp_path / "g.npz") and details["corpus"]["vocabulary"] == 8
    rows = list(csv.DictReader(report.with_suffix(".history.csv").read_text().splitlines()))
    assert [r["epoch"] for r in rows] == ["1", "2"] and "tokens_per_s" in rows[0]


@pytest.mark.parametrize("words, fragment", [
    ("war,nope", "'nope' (not in the corpus)"),
    ("rare", "'rare' (2 times); check the spelling, or lower --min-count (--min-count 2 keeps them)"),
    ("rare,nope", "(--min-count 2 keeps those the corpus has)"),
])
def test_an_unknown_word_is_a_usage_error_before_training(corpus_tsv, tmp_path, capsys, words, fragment):
    report, out = tmp_path / "r.json", tmp_path / "ck"
    code = main(_argv(corpus_tsv, "--words", words, "--report", str(report), "--out", str(out)))
    stdout, stderr = capsys.readouterr()
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1, stderr
    assert lines[0].startswith(f"{PROG}: error: --words: ") and fragment in lines[0], lines[0]
    assert "lower --min-count" in lines[0] and "--min-count 5 times" in lines[0]
    assert "epoch" not in stdout + stderr.replace(lines[0], "") and not out.exists() and not report.exists()


@pytest.mark.parametrize("words, fragment", [
    ("1\\,725,nope", "not in the vocabulary (9 words seen at least --min-count 5 times): 'nope' (not in the corpus)"),
    (",", "--words ',': names no word (words are separated by commas; write a comma inside a word as \\,)"),
])
def test_a_comma_inside_a_word_is_escaped_and_a_list_of_no_word_is_refused(tmp_path, capsys, words, fragment):
    # --words split "1,725" (a token of the PTB tokenizer) into '1' and '725', which the vocabulary lacked (or
    # reported two other words); "--words ," reported no word at all, silently
    rng = np.random.default_rng(0)
    corpus = tmp_path / "c.tsv"
    write_tsv(TimestampedCorpus.from_pairs([(1900 + i % 20, list(rng.choice([*WORDS, "1,725"], 8)))
                                            for i in range(300)]), corpus)
    code = main(_argv(corpus, "--words", words, "--out", str(tmp_path / "ck")))
    stdout, stderr = capsys.readouterr()
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and fragment in lines[0], stderr
    assert "epoch" not in stdout + stderr and not (tmp_path / "ck").exists()


def test_a_corpus_path_keeps_its_backslashes_but_an_escaped_comma():
    from qpnlp.commands.word2fun import _corpus_parts

    assert [part for part, _ in _corpus_parts(r"\\server\share\a.tsv,b\,c.tsv,d.tsv")] == [
        r"\\server\share\a.tsv", "b,c.tsv", "d.tsv"]


def test_a_comma_inside_a_corpus_path_is_escaped(corpus_tsv, tmp_path, capsys):
    # --corpus split every path at its commas: 'a,b.tsv' was the files 'a' and 'b.tsv', neither there
    (tmp_path / "a,b.tsv").write_bytes(corpus_tsv.read_bytes())
    report = tmp_path / "r.json"
    code = main(_argv(f"{tmp_path}/a\\,b.tsv,{corpus_tsv}", "--epochs", "1", "--report", str(report)))
    assert code == 0, capsys.readouterr().err
    assert json.loads(report.read_text())["split_counts"] == {"corpus": {"documents": 600, "tokens": 4800}}


def test_a_lower_min_count_admits_the_rare_word(corpus_tsv, tmp_path, capsys):
    report = tmp_path / "r.json"
    code = main(_argv(corpus_tsv, "--epochs", "1", "--words", "rare", "--min-count", "2", "--eras", "2",
                      "--report", str(report)))
    assert code == 0, capsys.readouterr().err
    data = json.loads(report.read_text())
    assert list(data["details"]["nearest"]) == ["rare"] and data["metrics"]["vocabulary_size"] == 9


def test_a_streamed_run_warns_after_training_and_reports_it(corpus_tsv, tmp_path, capsys):
    report = tmp_path / "r.json"
    code = main(_argv(corpus_tsv, "--epochs", "1", "--stream", "--words", "war,nope", "--eras", "2",
                      "--report", str(report)))
    _, stderr = capsys.readouterr()
    assert code == 0, stderr
    assert "warning: --words not in the vocabulary (min count 5): nope" in stderr
    data = json.loads(report.read_text())
    assert data["status"] == "completed" and list(data["details"]["nearest"]) == ["war"]
    assert data["warnings"] == ["--words not in the vocabulary (min count 5): nope"]
    assert data["split_counts"] == {"corpus": {"documents": 300, "tokens": 2400}} and len(data["history"]) == 1


def test_bad_output_paths_are_refused_before_training(corpus_tsv, tmp_path, capsys):
    (tmp_path / "notamodel").mkdir()
    (tmp_path / "notamodel" / "keep.txt").write_text("mine")
    for extra, fragment in [(["--report", str(tmp_path)], "--report"), (["--export-npz", str(tmp_path)],
                                                                         "--export-npz"),
                            (["--out", str(tmp_path / "notamodel")], "is not a saved qpnlp model")]:
        code = main(_argv(corpus_tsv, *extra))
        stdout, stderr = capsys.readouterr()
        assert code == 2 and stderr.startswith(f"{PROG}: error: ") and fragment in stderr, stderr
        assert "epoch 1:" not in stdout + stderr
    assert (tmp_path / "notamodel" / "keep.txt").read_text() == "mine"


def test_resume_reports_every_epoch(corpus_tsv, tmp_path, capsys):
    out, report = tmp_path / "ck", tmp_path / "r.json"
    assert main(_argv(corpus_tsv, "--epochs", "1", "--out", str(out))) == 0
    code = main(_argv(corpus_tsv, "--out", str(out), "--resume", "--report", str(report)))
    stdout, stderr = capsys.readouterr()
    assert code == 0, stderr
    data = json.loads(report.read_text())
    assert [h["epoch"] for h in data["history"]] == [1, 2] and data["history"][0]["restored"] is True
    assert "restored" not in data["history"][1] and data["metrics"]["epochs"] == 2
    assert [line.split(":")[0] for line in stderr.splitlines() if line.startswith("word2fun epoch")] == \
        ["word2fun epoch 1", "word2fun epoch 2"]          # the first run's line, then the resumed run's


def test_resume_of_a_run_that_did_not_record_settings_says_so_once_and_reports_it(corpus_tsv, tmp_path, capsys):
    # a checkpoint written before negative_weight existed resumed with today's 5.0 (the run had the thesis loss's
    # 1.0) and nothing said so; the report kept only the loss growths (recomputed), not fit's other warnings
    out, report = tmp_path / "ck", tmp_path / "r.json"
    assert main(_argv(corpus_tsv, "--epochs", "1", "--out", str(out))) == 0
    header = json.loads((out / "config.json").read_text())
    del header["metadata"]["training"]["negative_weight"]
    (out / "config.json").write_text(json.dumps(header))
    capsys.readouterr()
    assert main(_argv(corpus_tsv, "--out", str(out), "--resume", "--report", str(report))) == 0
    [line] = [line for line in capsys.readouterr().err.splitlines() if "does not record" in line]
    assert line.startswith(f"{PROG}: warning: the Word2Fun run saved at {out} does not record the settings "
                           "negative_weight (an earlier qpnlp wrote it, before they existed); the resumed epochs "
                           "train with negative_weight 5.0 (the run: 1.0)"), line
    assert json.loads(report.read_text())["warnings"] == [line.split("warning: ", 1)[1]]
    assert main(_argv(corpus_tsv, "--epochs", "3", "--out", str(out), "--resume")) == 0
    assert "does not record" not in capsys.readouterr().err                         # recorded by the resumed run


def test_resume_with_another_min_count_is_refused_naming_both_values(corpus_tsv, tmp_path, capsys):
    # --resume went on with the checkpoint's vocabulary and said nothing of the --min-count it ignored; left out,
    # --min-count is now the saved run's (tests/commands/test_resume_settings.py)
    out = tmp_path / "ck"
    assert main(_argv(corpus_tsv, "--epochs", "1", "--min-count", "1", "--out", str(out))) == 0
    code = main(_argv(corpus_tsv, "--out", str(out), "--resume", "--min-count", "5"))
    _, stderr = capsys.readouterr()
    assert code == 2 and "--min-count 5 here, 1 in the saved run" in stderr, stderr
    assert KeyedVectors.from_pretrained(out).vocabulary.word_freq("rare") == 2       # the checkpoint as it was


def test_a_failed_run_finishes_its_report_with_the_error(corpus_tsv, tmp_path, capsys):
    report = tmp_path / "r.json"
    code = main(_argv(corpus_tsv, "--min-count", "10000", "--words", "war", "--report", str(report)))
    _, stderr = capsys.readouterr()
    assert code == 1 and stderr.splitlines() == [f"report written to {report}", stderr.splitlines()[-1]], stderr
    assert stderr.splitlines()[-1].startswith(f"{PROG}: error: the vocabulary has 0 words"), stderr
    data = json.loads(report.read_text())
    assert data["status"] == "failed" and "Word2Fun needs at least two" in data["error"] and data["history"] == []


def test_a_corpus_whose_vocabulary_has_one_time_is_refused_naming_its_files(tmp_path, capsys):
    """fit's refusal "every token of the vocabulary ... is dated 1900" named no file: with a glob of shards the user
    could not tell which file held the other times' too rare words."""
    (tmp_path / "a.tsv").write_text("1900\twar tax peace war tax peace\n")
    (tmp_path / "b.tsv").write_text("1950\tnavy\n")
    report = tmp_path / "r.json"
    code = main(_argv(f"{tmp_path}/*.tsv", "--min-count", "2", "--words", "war", "--report", str(report)))
    error = capsys.readouterr().err.splitlines()[-1]
    assert code == 1 and error.startswith(f"{PROG}: error: --corpus {tmp_path}/a.tsv, {tmp_path}/b.tsv: every token "
                                          f"of the vocabulary (3 words) is dated 1900: "), error
    assert json.loads(report.read_text())["error"] == error.removeprefix(f"{PROG}: error: ")


@pytest.mark.parametrize("flag, expected", [((), True), (("--no-logistic",), False), (("--logistic",), True)])
def test_the_logistic_step_is_on_by_default_for_family_iv_and_can_be_switched_off(corpus_tsv, tmp_path, capsys,
                                                                                  flag, expected):
    report = tmp_path / "r.json"
    code = main(_argv(corpus_tsv, "--epochs", "1", "--min-count", "3", "--report", str(report), *flag))
    assert code == 0, capsys.readouterr().err
    data = json.loads(report.read_text())
    assert data["config"]["model"]["logistic"] is expected and data["config"]["fit"]["logistic"] is flag_value(flag)


def flag_value(flag):
    return {(): None, ("--no-logistic",): False, ("--logistic",): True}[flag]


@pytest.mark.parametrize("flag, expected", [((), "changepoint"), (("--step-centres", "middle"), "middle")])
def test_the_steps_start_at_the_change_points_unless_asked_for_the_middle(corpus_tsv, tmp_path, capsys, flag,
                                                                            expected):
    report = tmp_path / "r.json"
    code = main(_argv(corpus_tsv, "--epochs", "1", "--min-count", "3", "--report", str(report), *flag))
    assert code == 0, capsys.readouterr().err
    assert json.loads(report.read_text())["config"]["fit"]["step_centres"] == expected


def test_an_unknown_step_start_is_a_usage_error(corpus_tsv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(_argv(corpus_tsv, "--step-centres", "start"))
    assert exc.value.code == 2 and "--step-centres: invalid choice: 'start'" in capsys.readouterr().err


def test_a_diverging_run_fails_with_the_reason_and_a_diverged_report(tiny_drift, tmp_path, capsys):
    corpus, _ = tiny_drift
    write_tsv(corpus, tmp_path / "c.tsv")
    report = tmp_path / "r.json"
    code = main(["train", "word2fun", "--corpus", str(tmp_path / "c.tsv"), "--dim", "8", "--epochs", "2",
                 "--lr", "50", "--batch-size", "4096", "--min-count", "3", "--no-progress", "--report", str(report),
                 "--out", str(tmp_path / "ck")])
    stderr = capsys.readouterr().err
    assert code == 1 and "diverged in epoch 1" in stderr and "lower lr or batch_size" in stderr
    assert json.loads(report.read_text())["status"] == "diverged"


def test_a_report_that_cannot_be_written_after_an_epoch_stops_no_training(corpus_tsv, tmp_path, monkeypatch, capsys):
    """A full disk when the report was rewritten after epoch 1 ended the run there (exit 1); now a warning line,
    the run goes on to its model and its report, written again at the end; the classifiers' reports do the same
    (qpnlp.commands._report.Report.epoch)."""
    import errno

    import qpnlp.commands._report as module

    real, calls = module.atomic_write_text, []

    def full_once(path, text):
        calls.append(path)
        if len(calls) == 1:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real(path, text)

    monkeypatch.setattr(module, "atomic_write_text", full_once)
    report, out = tmp_path / "r.json", tmp_path / "ck"
    code = main(_argv(corpus_tsv, "--min-count", "3", "--report", str(report), "--out", str(out)))
    stderr = capsys.readouterr().err
    assert code == 0, stderr
    warned = [line for line in stderr.splitlines() if "could not be written" in line]
    assert warned == [f"{PROG}: warning: the report could not be written after epoch 1 ([Errno 28] No space left on "
                      f"device: '{report}'); the training goes on, the report is written again after each epoch and "
                      f"at the end"]
    written = json.loads(report.read_text())
    assert written["status"] == "completed" and [e["epoch"] for e in written["history"]] == [1, 2]
    assert KeyedVectors.from_pretrained(out).model.config.dim == 4


@pytest.mark.parametrize("flag, step_centre_lr", [((), 0.01), (("--step-centres", "middle"), 0.03)])
def test_the_report_records_the_settings_resolved_as_the_checkpoint(corpus_tsv, tmp_path, capsys, flag,
                                                                       step_centre_lr):
    # config.train recorded roughness_penalty and step_centre_lr None, the defaults of the qpnlp of the day
    report, out = tmp_path / "r.json", tmp_path / "ck"
    code = main(_argv(corpus_tsv, "--epochs", "1", "--min-count", "3", "--report", str(report), "--out", str(out),
                      *flag))
    assert code == 0, capsys.readouterr().err
    train = json.loads(report.read_text())["config"]["train"]
    assert train["roughness_penalty"] == 1e-4 and train["step_centre_lr"] == step_centre_lr
    assert train == read_model_header(out)["metadata"]["training"]

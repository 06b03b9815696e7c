"""The figures of a run agree wherever they appear: the results on stdout, the report (``--report``), its history
and the documented schema (docs/api/cli.rst)."""

from __future__ import annotations

import argparse
import json
import re
import statistics
from pathlib import Path

import numpy as np
import pytest

import qpnlp.commands.classify as classify
from qpnlp.cli import main
from qpnlp.commands._report import Report

DOCS = Path(__file__).resolve().parents[2] / "docs" / "api" / "cli.rst"
SPLIT_LINE = re.compile(r"CR (fold \d+): test accuracy (\S+) \(dev (\S+), epoch (\d+), (\d+)s\)")


def _cr(tmp_path: Path) -> list[str]:
    """A tiny CR data root (two separated classes of 40 sentences) and 4-d vectors of its words: the command's
    options for a 3-fold run of 2 epochs of real-bow on it."""
    folder = tmp_path / "classification" / "CR"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for name, words in (("custrev.pos", "good great fine nice"), ("custrev.neg", "bad poor awful sad")):
        lines = [" ".join(rng.choice(words.split() + ["the", "phone"], 6)) for _ in range(40)]
        (folder / name).write_text("\n".join(lines) + "\n")
    vectors = tmp_path / "v.vec"
    vectors.write_text("".join(f"{w} " + " ".join(f"{x:.3f}" for x in rng.normal(size=4)) + "\n"
                               for w in "good great fine nice bad poor awful sad the phone".split()))
    return ["train", "real-bow", "--dataset", "CR", "--data", str(tmp_path), "--vectors", str(vectors), "--folds", "3",
            "--epochs", "2", "--no-select", "--no-progress", "--report", str(tmp_path / "r.json")]


def test_the_printed_results_are_the_reports(tmp_path, capsys):
    """Each split's line and the summary on stdout are the report's figures rounded to four decimals; the best
    epoch is the first argmax of the split's dev accuracies in the history; the std is the sample std."""
    assert main(_cr(tmp_path)) == 0
    out = capsys.readouterr().out.splitlines()
    report = json.loads((tmp_path / "r.json").read_text())
    splits = report["details"]["splits"]
    assert [SPLIT_LINE.match(line).groups() for line in out[:-1]] == [
        (s["split"], f"{s['test_accuracy']:.4f}", f"{s['dev_accuracy']:.4f}", str(s["best_epoch"]),
         f"{s['seconds']:.0f}") for s in splits]
    for s in splits:
        dev = [e["dev_accuracy"] for e in report["history"] if e["split"] == s["split"]]
        assert dev.index(max(dev)) + 1 == s["best_epoch"] and max(dev) == s["dev_accuracy"]
    accuracies = [s["test_accuracy"] for s in splits]
    metrics = report["metrics"]
    assert metrics["accuracy_mean"] == pytest.approx(statistics.fmean(accuracies), abs=1e-12)
    assert metrics["accuracy_std"] == pytest.approx(statistics.stdev(accuracies), abs=1e-12)
    assert out[-1] == (f"CR: test accuracy {metrics['accuracy_mean']:.4f} +- {metrics['accuracy_std']:.4f} over 3 "
                       f"split(s), seed 0")
    assert report["n"] == sum(c["test"] for c in report["split_counts"].values())
    assert list(report["split_counts"]) == [s["split"] for s in splits]


def test_a_run_stopped_in_a_later_split_keeps_the_results_it_printed(tmp_path, capsys, monkeypatch):
    """Ctrl-C in fold 2 printed fold 1's test accuracy on stdout, but the report (interrupted) held no result of
    fold 1 (``details`` empty): its result was only in the console."""
    logger = classify.epoch_logger

    def stop_in_fold_2(report, label, **context):
        log = logger(report, label, **context)
        return (lambda entry: (_ for _ in ()).throw(KeyboardInterrupt)) if context["split"] == "fold 2" else log

    monkeypatch.setattr(classify, "epoch_logger", stop_in_fold_2)
    assert main(_cr(tmp_path)) == 130
    printed = SPLIT_LINE.match(capsys.readouterr().out.splitlines()[0]).groups()
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["status"] == "interrupted" and report["metrics"] == {}
    [kept] = report["details"]["splits"]
    assert (kept["split"], f"{kept['test_accuracy']:.4f}", kept["best_epoch"]) == \
        (printed[0], printed[1], int(printed[3]))


def test_the_documented_report_keys_are_the_keys_written():
    """The schema of docs/api/cli.rst (and of the Report docstring) lists every key a report holds, in order."""
    text = DOCS.read_text()
    listed = text.split(".. report-keys")[1].split(".. end of report-keys")[0]
    documented = [key for line in listed.splitlines() if line.startswith("- ")
                  for key in re.findall(r"``(\w+)``", line.split(":")[0])]
    written = list(Report(argparse.Namespace(), command="evaluate").data)
    assert documented == written
    assert set(re.findall(r"``(\w+)``", Report.__doc__.split("Keys:")[1].split("The JSON")[0])) >= set(written)


def test_a_classifier_reports_the_vectors_oov_rate_and_the_inputs_it_read(tmp_path, capsys, monkeypatch):
    """The classification report dropped each split's OOV rate (the matching one had it) and never named the data
    folder when ``$QPNLP_DATA`` gave it (``arguments.data`` null)."""
    argv = _cr(tmp_path)
    vectors = tmp_path / "v.vec"
    vectors.write_text("".join(line + "\n" for line in vectors.read_text().splitlines()
                               if not line.startswith("phone ")))          # 1 of the 10 training words left out
    assert argv[4:8] == ["--data", str(tmp_path), "--vectors", str(vectors)]
    monkeypatch.setenv("QPNLP_DATA", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert main([*argv[:4], "--vectors", "v.vec", *argv[8:]]) == 0                     # no --data, a relative file
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["arguments"]["data"] is None and report["arguments"]["vectors"] == "v.vec"
    details = report["details"]
    assert details["data_root"] == str(tmp_path.resolve()) and details["vectors"] == str(vectors.resolve())
    assert [s["oov_rate"] for s in details["splits"]] == [pytest.approx(0.1)] * 3


def test_a_classifier_reports_its_repeated_and_conflicting_texts(tmp_path, capsys):
    """``ClassificationDataset.n_duplicates`` and ``n_conflicting`` were counted but shown nowhere (MPQA has 98 texts
    with both labels); the report's details hold them, as documented, and one stderr line says them (never stdout)."""
    argv = _cr(tmp_path)
    folder = tmp_path / "classification" / "CR"
    pos, neg = ((folder / name).read_text().splitlines() for name in ("custrev.pos", "custrev.neg"))
    (folder / "custrev.pos").write_text("\n".join([*pos, pos[0], neg[0]]) + "\n")   # a repeat, a text of both labels
    assert main(argv) == 0
    out, err = capsys.readouterr()
    details = json.loads((tmp_path / "r.json").read_text())["details"]
    assert (details["n_duplicates"], details["n_conflicting"]) == (1, 1)
    said = [line for line in err.splitlines() if "repeated (text, label)" in line]
    assert said == ["CR: 1 repeated (text, label) items kept as distributed, 1 texts with more than one label "
                    "(report: details.n_duplicates, details.n_conflicting)"]
    assert "repeated" not in out and len(out.splitlines()) == 4                # 3 folds and the summary
    train_sections = DOCS.read_text().split("``train`` (both kinds")[1].split("``train`` a matcher")[0]
    documented = re.findall(r"``details\.(\w+)``", train_sections)
    assert set(documented) == set(details) == {"vectors", "data_root", "splits", "n_duplicates", "n_conflicting"}


def test_a_classifier_without_repeated_texts_says_nothing_of_them(tmp_path, capsys):
    assert main(_cr(tmp_path)) == 0
    assert "repeated (text, label)" not in capsys.readouterr().err
    details = json.loads((tmp_path / "r.json").read_text())["details"]
    assert (details["n_duplicates"], details["n_conflicting"]) == (0, 0)


def test_repeated_texts_returns_its_counts_and_prints_nothing(tmp_path, capsys):
    """The helper printed the command's stderr line itself; the command now says it (the test above)."""
    from qpnlp.data import load_classification

    argv = _cr(tmp_path)
    folder = tmp_path / "classification" / "CR"
    pos, neg = ((folder / name).read_text().splitlines() for name in ("custrev.pos", "custrev.neg"))
    (folder / "custrev.pos").write_text("\n".join([*pos, pos[0], neg[0]]) + "\n")
    dataset = load_classification("CR", root=argv[argv.index("--data") + 1])
    capsys.readouterr()
    assert classify.repeated_texts(dataset) == dict(n_duplicates=1, n_conflicting=1)
    assert capsys.readouterr() == ("", "")


def _counting_inputs_used(monkeypatch, module) -> list:
    calls, real = [], module.inputs_used
    monkeypatch.setattr(module, "inputs_used", lambda args: calls.append(args) or real(args))
    return calls


def test_a_classifier_works_out_the_inputs_it_read_once_for_its_report_and_its_checkpoint(tmp_path, monkeypatch):
    calls = _counting_inputs_used(monkeypatch, classify)
    assert main([*_cr(tmp_path), "--max-splits", "1", "--no-training-state", "--save", str(tmp_path / "m")]) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    saved = json.loads((tmp_path / "m" / "config.json").read_text())["metadata"]
    assert len(calls) == 1 and saved["vectors"] == report["details"]["vectors"] == str(tmp_path / "v.vec")


def _wikiqa(root: Path) -> Path:
    """A WikiQA folder: 4 training questions; dev and test files of 5 questions, 2 without a correct answer."""
    folder = root / "qa" / "wikiqa"
    folder.mkdir(parents=True)
    ranked = "".join(f"what film {i} ?\ta film .\t1\nwhat film {i} ?\ta plot .\t0\n" for i in range(3))
    (folder / "train.tsv").write_text(ranked + "what plot ?\ta plot .\t1\nwhat plot ?\ta film .\t0\n")
    for split in ("dev", "test"):
        (folder / f"{split}.tsv").write_text("none ?\tx .\t0\n" + ranked + "none 2 ?\ty .\t0\n")
    return root


def test_a_matcher_reports_its_seconds_and_the_inputs_it_read(tmp_path, capsys, monkeypatch):
    """With --no-pretrained the report said ``vectors: glove-6b-50d`` only (no vectors were used); with
    ``$QPNLP_DATA`` it named no data folder; its training seconds were dropped (a classifier's are reported)."""
    monkeypatch.setenv("QPNLP_DATA", str(_wikiqa(tmp_path)))
    assert main(["train", "cnm", "--dataset", "wikiqa", "--no-pretrained", "--dim", "4", "--epochs", "2",
                 "--no-progress", "--no-training-state", "--report", str(tmp_path / "r.json")]) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["arguments"]["vectors"] == "glove-6b-50d" and report["arguments"]["data"] is None   # as typed
    details = report["details"]
    assert details["vectors"] is None and details["data_root"] == str(tmp_path.resolve())
    assert details["seconds"] >= report["history"][-1]["seconds"] > 0


def test_a_matcher_works_out_the_inputs_it_read_once_for_its_report_and_its_checkpoint(tmp_path, monkeypatch):
    import qpnlp.commands.match as match

    calls = _counting_inputs_used(monkeypatch, match)
    assert main(["train", "cnm", "--dataset", "wikiqa", "--data", str(_wikiqa(tmp_path)), "--no-pretrained", "--dim",
                 "4", "--epochs", "1", "--no-progress", "--no-training-state", "--report", str(tmp_path / "r.json"),
                 "--save", str(tmp_path / "m")]) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    saved = json.loads((tmp_path / "m" / "config.json").read_text())["metadata"]
    assert len(calls) == 1 and saved["vectors"] is None and report["details"]["vectors"] is None


def test_the_questions_a_filter_removed_are_said_of_the_whole_file(tmp_path, capsys):
    """--max-questions 2 printed "on 2 questions (the 'no-correct' filter removed 2)", as if from those 2 questions;
    the 2 are of the file's 5."""
    assert main(["train", "cnm", "--dataset", "wikiqa", "--data", str(_wikiqa(tmp_path)), "--no-pretrained",
                 "--dim", "4", "--epochs", "1", "--max-questions", "2", "--no-progress", "--no-training-state",
                 "--report", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^wikiqa test: .* on 2 questions \(the 'no-correct' filter removed 2 of the file's 5\)$", out,
                     re.M), out
    removed = json.loads((tmp_path / "r.json").read_text())["details"]["questions_removed"]
    assert removed["test"] == {"filter": "no-correct", "removed": 2, "file_questions": 5}


def _evaluate_section() -> set[str]:
    """The ``details`` keys documented for ``evaluate`` in docs/api/cli.rst."""
    section = DOCS.read_text().split("\n``evaluate``\n")[1].split("\n``demo``\n")[0]
    return set(re.findall(r"``details\.(\w+)``", section))


def test_evaluate_reports_the_vectors_and_the_data_folder(tmp_path, capsys, monkeypatch):
    """An evaluate report named neither the data folder it read (with ``$QPNLP_DATA``, ``arguments.data`` null) nor
    the vectors the model was trained with (``train`` reports both); a checkpoint that does not record its vectors
    gives null, not a guess."""
    argv = _cr(tmp_path)
    monkeypatch.setenv("QPNLP_DATA", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert main([*argv[:4], "--vectors", "v.vec", *argv[8:], "--save", "m"]) == 0        # a relative vectors file
    assert main(["evaluate", "m", "--report", "e.json"]) == 0
    report = json.loads((tmp_path / "e.json").read_text())
    assert report["arguments"]["data"] is None
    details = report["details"]
    assert details == {"vectors": str((tmp_path / "v.vec").resolve()), "data_root": str(tmp_path.resolve())}
    assert _evaluate_section() >= set(details)
    config = tmp_path / "m" / "config.json"
    header = json.loads(config.read_text())
    del header["metadata"]["vectors"]                                      # a checkpoint of an earlier qpnlp
    config.write_text(json.dumps(header))
    assert main(["evaluate", "m", "--report", "e.json"]) == 0
    assert json.loads((tmp_path / "e.json").read_text())["details"]["vectors"] is None


def test_evaluate_reports_a_matcher_and_its_vectors(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("QPNLP_DATA", str(_wikiqa(tmp_path)))
    vectors = tmp_path / "v.vec"
    vectors.write_text("".join(f"{w} 0.1 0.2 0.3 {i}\n" for i, w in enumerate("what film plot a ? .".split())))
    for pretrained in (["--vectors", str(vectors)], ["--no-pretrained", "--dim", "4"]):
        assert main(["train", "cnm", "--dataset", "wikiqa", *pretrained, "--epochs", "1", "--no-progress",
                     "--no-training-state", "--save", str(tmp_path / "m")]) == 0
        assert main(["evaluate", str(tmp_path / "m"), "--report", str(tmp_path / "e.json")]) == 0
        details = json.loads((tmp_path / "e.json").read_text())["details"]
        assert details["data_root"] == str(tmp_path.resolve())
        assert details["vectors"] == (str(vectors) if pretrained[0] == "--vectors" else None)
        assert set(details) == _evaluate_section() == {"vectors", "data_root", "questions_removed"}


def test_train_and_evaluate_of_a_classifier_count_one_split_alike(tmp_path, capsys):
    """``n`` of a classifier's split: sentences in train's report, "items" in evaluate's (``split_counts``
    ``{"items": n}``, no ``split_unit``); both now name them, ``counts.sentences``, with one value for one split."""
    assert main([*_cr(tmp_path), "--max-splits", "1", "--save", str(tmp_path / "m")]) == 0
    trained = json.loads((tmp_path / "r.json").read_text())
    assert main(["evaluate", str(tmp_path / "m"), "--data", str(tmp_path), "--report", str(tmp_path / "e.json")]) == 0
    scored = json.loads((tmp_path / "e.json").read_text())
    assert trained["counts"] == scored["counts"] == {"sentences": trained["split_counts"]["fold 1"]["test"]}
    assert trained["n"] == scored["n"] == scored["counts"]["sentences"]
    assert trained["split_unit"] == scored["split_unit"] == "sentences"
    assert scored["split_counts"] == {"fold 1 test": scored["counts"]}
    assert capsys.readouterr().out.splitlines()[-1].endswith(f" on {scored['n']} sentences (real_bow)")


def test_train_and_evaluate_of_a_matcher_count_one_split_alike(tmp_path, capsys):
    """``n`` of a matcher's test split was its questions in train's report but its candidate answers in evaluate's;
    both reports now name both, ``counts.questions`` and ``counts.candidates``, with one value each; ``n`` is kept."""
    root = _wikiqa(tmp_path)
    assert main(["train", "cnm", "--dataset", "wikiqa", "--data", str(root), "--no-pretrained", "--dim", "4",
                 "--epochs", "1", "--no-progress", "--no-training-state", "--save", str(tmp_path / "m"),
                 "--report", str(tmp_path / "r.json")]) == 0
    trained = json.loads((tmp_path / "r.json").read_text())
    assert main(["evaluate", str(tmp_path / "m"), "--data", str(root), "--report", str(tmp_path / "e.json")]) == 0
    scored = json.loads((tmp_path / "e.json").read_text())
    assert trained["counts"] == scored["counts"] == {"questions": 3, "candidates": 6}   # 2 of 5 filtered out
    assert (trained["n"], scored["n"]) == (3, 6)
    assert trained["metrics"]["test"]["questions"] == scored["metrics"]["questions"] == 3

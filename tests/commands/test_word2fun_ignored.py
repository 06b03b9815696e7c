"""`qpnlp train word2fun`: an option given where the others leave it without effect (documented as ignored by the
library, recorded as None) did nothing, silently; now it is a warning line on stderr and in the report's
``warnings``, and a run that gives none (every such option at its default) says nothing."""

from __future__ import annotations

import json

import numpy as np
import pytest

from qpnlp.cli import main
from qpnlp.data import TimestampedCorpus, write_tsv

PROG = "qpnlp train word2fun"


@pytest.mark.parametrize("given, said", [
    (["--slices", "5"], "--slices 5 has no effect with --family IV: only the 'sliced' family has time slices"),
    (["--no-logistic", "--step-centres", "middle"],
     "--step-centres middle has no effect without the logistic step (--no-logistic)"),
    (["--family", "static", "--step-centres", "changepoint"],
     "--step-centres changepoint has no effect without the logistic step (--family static has none unless "
     "--logistic)"),
    (["--compass-epochs", "2"], "--compass-epochs 2 has no effect with --compass trainable: it counts the epochs of "
                                "the pre-training of --compass frozen"),
    (["--family", "II", "--frequency-init", "harmonic"],
     "--frequency-init harmonic has no effect with --family II: only families III and IV have per-word frequencies"),
    (["--frequency-init", "fixed", "--max-periods", "3"],
     "--max-periods 3 has no effect with --frequency-init fixed: it caps the harmonic ladder"),
    (["--family", "static", "--roughness-power", "1"],
     "--roughness-power 1 has no effect with --family static, which has no roughness penalty"),
    (["--roughness-penalty", "0", "--roughness-power", "1"],
     "--roughness-power 1 has no effect with --roughness-penalty 0"),
    (["--rare-lr-power", "0", "--rare-lr-max", "2"], "--rare-lr-max 2 has no effect with --rare-lr-power 0"),
    (["--family", "linear", "--rare-lr-power", "0", "--frequency-reference", "100"],
     "--frequency-reference 100 has no effect with no per-word weight"),
    (["--sync-every", "4"], "--sync-every 4 has no effect in a run of one process"),
    (["--parallel", "replicas"], "--parallel replicas has no effect with --workers 1"),
    (["--workers", "2", "--replica-sync-every", "8"],
     "--replica-sync-every 8 has no effect without --parallel replicas and --workers > 1"),
    (["--npz-words", "10"], "--npz-words 10 has no effect without --export-npz"),
    (["--topk", "3"], "--topk 3 has no effect without --words"),
])
def test_an_option_given_without_effect_is_a_warning_said_and_reported(tmp_path, capsys, given, said):
    report = tmp_path / "r.json"
    code = main(["train", "word2fun", "--corpus", str(tmp_path / "missing.tsv"), "--report", str(report), *given])
    err = capsys.readouterr().err
    assert code == 1 and "does not exist" in err.splitlines()[-1]        # warned before the corpus is read
    [line] = [line for line in err.splitlines() if ": warning: " in line]
    assert line.startswith(f"{PROG}: warning: {said}"), line
    assert json.loads(report.read_text())["warnings"] == [line.split(": warning: ", 1)[1]]


@pytest.mark.parametrize("given", [
    [],                                                                  # every such option at its default
    ["--family", "sliced", "--slices", "5"], ["--compass", "frozen", "--compass-epochs", "2"],
    ["--family", "III", "--frequency-init", "harmonic", "--max-periods", "3", "--step-centres", "middle"],
    ["--family", "static", "--logistic", "--step-centres", "middle", "--rare-lr-power", "0.5", "--rare-lr-max", "2"],
    ["--processes", "2", "--sync-every", "4"], ["--words", "war", "--topk", "3"],
    ["--workers", "2", "--parallel", "replicas", "--replica-sync-every", "8"],
    ["--roughness-power", "1", "--frequency-reference", "100"],
])
def test_an_option_left_at_its_default_or_with_an_effect_says_nothing(tmp_path, capsys, given):
    report = tmp_path / "r.json"
    main(["train", "word2fun", "--corpus", str(tmp_path / "missing.tsv"), "--report", str(report), *given])
    assert ": warning: " not in capsys.readouterr().err
    assert json.loads(report.read_text())["warnings"] == []


def test_a_trained_run_keeps_the_warnings_in_its_completed_report(tmp_path, capsys):
    rng = np.random.default_rng(0)
    corpus, report = tmp_path / "c.tsv", tmp_path / "r.json"
    write_tsv(TimestampedCorpus.from_pairs([(1900 + i % 20, list(rng.choice(["war", "peace", "tax", "bank"], 8)))
                                            for i in range(100)]), corpus)
    assert main(["train", "word2fun", "--corpus", str(corpus), "--dim", "4", "--epochs", "1", "--min-count", "1",
                 "--no-progress", "--slices", "3", "--report", str(report)]) == 0
    data = json.loads(report.read_text())
    assert data["status"] == "completed" and data["config"]["model"]["n_slices"] == 3     # given, and ignored
    assert data["warnings"] == ["--slices 3 has no effect with --family IV: only the 'sliced' family has time slices"]
    assert capsys.readouterr().err.count(": warning: --slices 3") == 1

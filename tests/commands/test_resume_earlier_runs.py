"""``--resume`` of a training state whose run file an earlier qpnlp wrote (before runs recorded their settings).

Found by writing training states with qpnlp 3a9a5d8 and acc2801 and resuming them with today's: the
earlier ``training-run.json`` records no resolved ``settings`` and holds the parser defaults of its day,
``--folds 10`` for every data set, ``--dim 50`` and ``--margin 0.1`` whatever the vectors and the loss. Every
TREC or SST-2 state was refused ("--folds 10: TREC has a fixed split ... leave --folds out", an option the command
line did not give), every matching state with vectors too ("--dim 50 has no effect with --vectors"), and a
recorded margin was dropped for today's default of the data set, then refused by the state's identity check
("margin (0.1 -> 0.02)") just after the status line said the run continued it. The run files here are today's,
rewritten as the earlier qpnlp wrote them (no ``settings``, the taken options not among ``explicit_options``).
"""

from __future__ import annotations

import json
import random

import pytest

from qpnlp.cli import main
from qpnlp.commands._outputs import RUN_FILE

WORDS = "what who where film city river song team name year".split()


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """A tiny TREC (24 + 8 questions of two classes), a tiny WikiQA (14 questions), 4-dimensional vectors."""
    root, rng = tmp_path_factory.mktemp("earlier"), random.Random(0)
    (root / "classification" / "TREC").mkdir(parents=True)
    for name, n in (("train_5500.label", 24), ("TREC_10.label", 8)):
        (root / "classification" / "TREC" / name).write_text("".join(
            f"{'HUM:ind who' if i % 2 else 'LOC:city where'} is the {rng.choice(WORDS)} {rng.choice(WORDS)} ?\n"
            for i in range(n)), encoding="latin-1")
    (root / "qa" / "wikiqa").mkdir(parents=True)
    for split, (start, n) in dict(train=(0, 6), dev=(6, 4), test=(10, 4)).items():
        (root / "qa" / "wikiqa" / f"{split}.tsv").write_text("".join(
            f"what is {WORDS[i % 10]} {i} ?\tthe {WORDS[i % 10]} is here .\t1\n"
            f"what is {WORDS[i % 10]} {i} ?\ta {WORDS[(i + 3) % 10]} answer .\t0\n" for i in range(start, start + n)))
    words = sorted(set(WORDS + "is the ? here . a answer ind hum loc".split()))
    (root / "vec.txt").write_text("".join(w + " " + " ".join(f"{rng.uniform(-1, 1):.3f}" for _ in range(4)) + "\n"
                                          for w in words))
    return root


def _command(kind, tree, state, *extra):
    data = ["--dataset", "trec"] if kind == "qpdn" else ["--dataset", "wikiqa"]
    return ["train", kind, *data, "--data", str(tree), "--vectors", str(tree / "vec.txt"), "--no-progress",
            "--checkpoint-dir", str(state), *extra]


def _as_earlier_qpnlp_wrote_it(state, **arguments) -> None:
    """Rewrite the run file of ``state`` as an earlier qpnlp wrote it: no ``settings``, no ``explicit_options``
    (the options given then are taken as not given), the parser defaults of its day in ``arguments``."""
    path = state / RUN_FILE
    run = json.loads(path.read_text())
    del run["settings"]
    run["arguments"].pop("explicit_options")
    run["arguments"].update(arguments)
    path.write_text(json.dumps(run))


def _run(argv, capsys) -> tuple[int, str]:
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err


def test_a_fixed_split_run_that_recorded_the_default_folds_resumes(tree, tmp_path, capsys):
    # refused: "--folds 10: TREC has a fixed split, not cross-validation folds; leave --folds out"
    settings = ["--no-select", "--num-measurements", "3", "--pretrained-fallback", "0"]
    code, err = _run(_command("qpdn", tree, tmp_path / "state", *settings, "--epochs", "1"), capsys)
    assert code == 0, err
    _as_earlier_qpnlp_wrote_it(tmp_path / "state", folds=10)
    code, err = _run(_command("qpdn", tree, tmp_path / "state", "--epochs", "2", "--resume", "--report",
                              tmp_path / "r.json"), capsys)
    assert code == 0, err
    # said "continuing with the saved run's --folds 10": a fixed split has no folds to continue
    assert "continuing with the saved run's --no-select" in err and "--folds" not in err, err
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["arguments"]["folds"] is None and [e["epoch"] for e in report["history"]] == [1, 2]
    code, err = _run(_command("qpdn", tree, tmp_path / "other", "--folds", "10", "--epochs", "1"), capsys)
    assert code == 2 and "--folds 10: TREC has a fixed split" in err, err      # given: refused as before


def test_a_matching_run_that_recorded_the_default_dim_and_margin_continues_its_margin(tree, tmp_path, capsys):
    # refused: "--dim 50 has no effect with --vectors", then "the training settings margin (0.1 -> 0.02)"
    settings = ["--num-measurements", "3", "--batch-size", "4", "--margin", "0.1", "--pretrained-fallback", "0"]
    code, err = _run(_command("cnm", tree, tmp_path / "state", *settings, "--epochs", "1"), capsys)
    assert code == 0, err
    _as_earlier_qpnlp_wrote_it(tmp_path / "state", dim=50)
    code, err = _run(_command("cnm", tree, tmp_path / "state", "--epochs", "2", "--resume", "--report",
                              tmp_path / "r.json"), capsys)
    assert code == 0, err
    assert "continuing with the saved run's --margin 0.1" in err and "--dim" not in err, err
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["config"]["train"]["margin"] == 0.1 and report["config"]["train"]["batch_size"] == 4
    assert report["arguments"]["dim"] is None and [e["epoch"] for e in report["history"]] == [1, 2]


def test_a_pointwise_run_that_recorded_a_margin_resumes(tree, tmp_path, capsys):
    # refused: "--margin 0.02 has no effect with --loss pointwise", an option the command line did not give
    settings = ["--num-measurements", "3", "--loss", "pointwise", "--pretrained-fallback", "0"]
    code, err = _run(_command("cnm", tree, tmp_path / "state", *settings, "--epochs", "1"), capsys)
    assert code == 0, err
    _as_earlier_qpnlp_wrote_it(tmp_path / "state", margin=0.02)
    code, err = _run(_command("cnm", tree, tmp_path / "state", "--epochs", "2", "--resume"), capsys)
    assert code == 0, err
    code, err = _run(_command("cnm", tree, tmp_path / "other", *settings, "--margin", "0.02", "--epochs", "1"),
                     capsys)
    assert code == 2 and "--margin 0.02 has no effect with --loss pointwise" in err, err

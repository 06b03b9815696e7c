"""``--resume`` continues the saved run's settings for every option the command line does not give.

The train commands rebuilt a resumed run's settings from the command line and today's defaults, then refused the
resume where one differed from the saved run's: a resume with only the data and the state directory was refused for
every non-default setting of the run, and a default changed since (the project changes them when a benchmark finds
better ones) refused the same command line. Now an option left out takes the saved run's value (the status line
names them, the report records the settings continued), and one given with another value is refused, named with
both values, before any file is read.
"""

from __future__ import annotations

import json
import random
import re
import shutil

import numpy as np
import pytest

from qpnlp.cli import main
from qpnlp.data import TimestampedCorpus, write_tsv
from qpnlp.models import get_model_class

POSITIVE = "good great fine superb lovely nice".split()
NEGATIVE = "bad awful dull poor boring weak".split()
COMMON = "the film a plot is was".split()


def _sentences(words, n, rng):
    return "".join(" ".join(rng.choice(words) if i % 2 else rng.choice(COMMON) for i in range(rng.randint(3, 6)))
                   + " .\n" for _ in range(n))


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """A tiny MR (30 sentences), a tiny WikiQA (14 questions) and 4-dimensional vectors of their words."""
    root, rng = tmp_path_factory.mktemp("resume"), random.Random(0)
    (root / "classification" / "MR").mkdir(parents=True)
    (root / "classification" / "MR" / "rt-polarity.pos").write_text(_sentences(POSITIVE, 15, rng))
    (root / "classification" / "MR" / "rt-polarity.neg").write_text(_sentences(NEGATIVE, 15, rng))
    (root / "qa" / "wikiqa").mkdir(parents=True)
    for split, (start, n) in dict(train=(0, 6), dev=(6, 4), test=(10, 4)).items():
        (root / "qa" / "wikiqa" / f"{split}.tsv").write_text("".join(
            f"what is {POSITIVE[i % 6]} thing {i} ?\tthe {POSITIVE[i % 6]} thing is here .\t1\n"
            f"what is {POSITIVE[i % 6]} thing {i} ?\ta {NEGATIVE[i % 6]} answer .\t0\n"
            for i in range(start, start + n)))
    words = sorted(set(POSITIVE + NEGATIVE + COMMON + ["."]))
    (root / "vec.txt").write_text("".join(w + " " + " ".join(f"{rng.uniform(-1, 1):.3f}" for _ in range(4)) + "\n"
                                          for w in words))
    return root


def _classify(tree, *extra):
    return ["train", "qpdn", "--dataset", "mr", "--data", str(tree), "--vectors", str(tree / "vec.txt"),
            "--max-splits", "1", "--no-progress", *extra]


def _match(tree, *extra):
    return ["train", "cnm", "--dataset", "wikiqa", "--data", str(tree), "--no-pretrained", "--no-progress", *extra]


# the settings of the interrupted run, none of them a default
SETTINGS = {"qpdn": ["--no-select", "--num-measurements", "3", "--batch-size=4", "--lr", "0.02", "--dropout", "0.2",
                     "--patience", "5", "--no-train-measurements"],
            "cnm": ["--dim", "4", "--num-measurements", "3", "--batch-size=4", "--lr", "0.02", "--margin", "0.2",
                    "--patience", "5"]}
COMMANDS = {"qpdn": _classify, "cnm": _match}


def _run(argv, capsys) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _first_epoch(kind, tree, tmp_path, capsys):
    """One epoch of the run of :data:`SETTINGS`, its state in ``tmp_path/state``, copied to ``tmp_path/copy``."""
    code, _, err = _run(COMMANDS[kind](tree, *SETTINGS[kind], "--epochs", "1", "--checkpoint-dir", tmp_path / "state"),
                        capsys)
    assert code == 0, err
    shutil.copytree(tmp_path / "state", tmp_path / "copy")


@pytest.mark.parametrize("kind", ["qpdn", "cnm"])
def test_a_resume_given_the_data_only_continues_the_saved_settings_as_the_full_command_line_does(
        kind, tree, tmp_path, capsys):
    # refused: "this run differs from the one that wrote it in the model config dropout (0.2 -> 0.0), ..."
    _first_epoch(kind, tree, tmp_path, capsys)
    full = COMMANDS[kind](tree, *SETTINGS[kind], "--epochs", "2", "--checkpoint-dir", tmp_path / "state", "--resume",
                          "--report", tmp_path / "full.json")
    code, full_out, err = _run(full, capsys)
    assert code == 0, err
    assert "continuing with the saved run's" not in err                  # the full command line: nothing continued
    short = COMMANDS[kind](tree, "--epochs", "2", "--checkpoint-dir", tmp_path / "copy", "--resume",
                           "--report", tmp_path / "short.json")
    code, short_out, err = _run(short, capsys)
    assert code == 0, err
    said = next(line for line in err.splitlines() if "continuing with the saved run's" in line)
    assert "--batch-size 4" in said and "--lr 0.02" in said and "--num-measurements 3" in said, said
    assert short_out == full_out                                           # the same results
    full_report, short_report = (json.loads((tmp_path / f"{name}.json").read_text()) for name in ("full", "short"))
    assert short_report["config"] == full_report["config"]                  # the settings it continued with
    assert short_report["config"]["train"]["batch_size"] == 4
    assert short_report["config"]["model"]["num_measurements"] == 3
    assert short_report["config"]["train"]["epochs"] == 2 and short_report["config"]["train"]["patience"] == 5
    assert short_report["metrics"] == full_report["metrics"]
    assert short_report["arguments"]["batch_size"] == 4                     # the command line continued
    assert [e["epoch"] for e in short_report["history"]] == [1, 2]


@pytest.mark.parametrize("kind", ["qpdn", "cnm"])
def test_a_default_changed_since_the_run_does_not_enter_it(kind, tree, tmp_path, capsys, monkeypatch):
    # a later qpnlp with other defaults refused the same command line ("the training settings weight_decay ...")
    model = get_model_class(kind)
    _first_epoch(kind, tree, tmp_path, capsys)
    monkeypatch.setattr(model, "training_defaults", {**model.training_defaults, "weight_decay": 0.5, "seed": 7})
    code, _, err = _run(COMMANDS[kind](tree, *SETTINGS[kind], "--epochs", "2", "--checkpoint-dir", tmp_path / "state",
                                       "--resume", "--report", tmp_path / "r.json"), capsys)
    assert code == 0, err
    train = json.loads((tmp_path / "r.json").read_text())["config"]["train"]
    assert train["weight_decay"] == 0.0 and train["seed"] == 0


@pytest.mark.parametrize("kind", ["qpdn", "cnm"])
def test_an_option_given_with_another_value_is_refused_naming_both(kind, tree, tmp_path, capsys):
    _first_epoch(kind, tree, tmp_path, capsys)
    resume = COMMANDS[kind](tree, "--epochs", "2", "--checkpoint-dir", tmp_path / "state", "--resume")
    code, _, err = _run([*resume, "--batch-size", "8", "--num-measurements=2"], capsys)
    assert code == 2 and "--batch-size 8 here, 4 in the saved run" in err, err
    assert "--num-measurements 2 here, 3 in the saved run" in err and "Traceback" not in err
    code, _, err = _run([*resume, "--train-measurements"] if kind == "qpdn" else [*resume, "--dim", "8"], capsys)
    flag = "--train-measurements true here, false" if kind == "qpdn" else "--dim 8 here, 4"
    assert code == 2 and f"{flag} in the saved run" in err, err
    code, _, err = _run([*resume, "--patience", "9", "--lr=0.02"], capsys)  # may change / the run's own value
    assert code == 0, err


# options the run left unset, which the command resolves once it reads the data or the vectors: another value given
# on resume, and what the unset option stood for
DEFAULTED = {"qpdn": ([(["--folds", "3"], "--folds 3 here, the default (10)"),
                       (["--pretrained-fallback", "5"], "--pretrained-fallback 5 here, the default (0)"),
                       (["--vectors-backoff", "on"], "--vectors-backoff on here, the default (off)")],
                      ["--folds", "10", "--pretrained-fallback", "0", "--vectors-backoff", "off"]),
             "cnm": ([(["--max-questions", "2"], "--max-questions 2 here, the default (all)"),
                      (["--train-split", "train-all"], "--train-split train-all here, the default (train)")],
                     ["--train-split", "train"])}


@pytest.mark.parametrize("kind", ["qpdn", "cnm"])
def test_an_option_the_run_left_unset_is_compared_with_what_it_stood_for(kind, tree, tmp_path, capsys):
    """The saved command line holds these options as None, which passed every value given on resume: the run then
    failed once it had loaded the data and the vectors, on a training state whose data differed ("... differs from
    the one that wrote it in the model config num_words", exit code 1, the option not named), or
    continued under a value it did not train with (--vectors-backoff on, the report recording it)."""
    _first_epoch(kind, tree, tmp_path, capsys)
    resume = COMMANDS[kind](tree, "--epochs", "2", "--checkpoint-dir", tmp_path / "state", "--resume")
    refused, same = DEFAULTED[kind]
    for extra, said in refused:
        code, _, err = _run([*resume, *extra], capsys)
        assert code == 2 and f"{said} in the saved run" in err and err.count("\n") == 1, err
    code, _, err = _run([*resume, *same], capsys)                 # the value the unset option stood for
    assert code == 0, err


def test_a_saved_setting_this_qpnlp_lacks_does_not_break_the_resume(tree, tmp_path, capsys):
    """A setting the saved run recorded that a later qpnlp removed went into ``TrainConfig(**settings)``: the resume
    failed with "TypeError: TrainConfig.__init__() got an unexpected keyword argument". It is left out (the
    training state's identity check names it where the run trained with it)."""
    from qpnlp.commands._outputs import RUN_FILE

    _first_epoch("qpdn", tree, tmp_path, capsys)
    path = tmp_path / "state" / RUN_FILE
    run = json.loads(path.read_text())
    run["settings"]["train"]["retired_setting"], run["settings"]["model"]["retired_option"] = 1, 2
    path.write_text(json.dumps(run))
    code, _, err = _run(COMMANDS["qpdn"](tree, "--epochs", "2", "--checkpoint-dir", tmp_path / "state", "--resume"),
                        capsys)
    assert code == 0 and "retired" not in err, err


def test_a_given_option_that_the_saved_run_selects_on_dev_is_refused(tree, tmp_path, capsys):
    code, _, err = _run(_classify(tree, "--select", "dropout=0,0.3", "--epochs", "1", "--checkpoint-dir",
                                  tmp_path / "state"), capsys)
    assert code == 0, err
    resume = _classify(tree, "--epochs", "2", "--checkpoint-dir", tmp_path / "state", "--resume")
    code, _, err = _run([*resume, "--dropout", "0"], capsys)
    assert code == 2 and "--dropout: the saved run selects dropout on dev" in err, err
    code, _, err = _run([*resume, "--no-select"], capsys)
    assert code == 2 and "--no-select: no grid here, the grid [{" in err, err


def test_a_resume_says_the_grid_notes_and_what_it_continues(tree, tmp_path, capsys):
    # the resume status line replaced the notes: "default selection grid without dropout" was not said on resume
    first = _classify(tree, "--dropout", "0.2", "--batch-size=4", "--epochs", "1", "--checkpoint-dir",
                      tmp_path / "state")
    code, _, err = _run(first, capsys)
    assert code == 0 and "default selection grid without dropout" in err, err
    code, _, err = _run(_classify(tree, "--dropout", "0.2", "--epochs", "2", "--checkpoint-dir", tmp_path / "state",
                                  "--resume"), capsys)
    assert code == 0, err
    assert "default selection grid without dropout" in err and "continuing with the saved run's --batch-size 4" in err


def _killed_writes(state):
    """What runs SIGKILLed while writing the state of ``state`` (``qpnlp._atomic``) leave: an unfinished write of
    candidate 0 and of the run file, a replaced candidate 1 deleted halfway, and candidate 0 moved aside between the
    two renames of its replacement (``candidate-0`` missing)."""
    fold = state / "fold-1"
    shutil.copytree(fold / "candidate-0", fold / ".candidate-0.k1lled00.tmp")
    (state / ".training-run.json.k1lled01.tmp").write_text("{")
    shutil.copytree(fold / "candidate-1", fold / ".candidate-1.k1lled02.old" / "candidate-1")
    (fold / ".candidate-0.k1lled03.old").mkdir()
    (fold / "candidate-0").rename(fold / ".candidate-0.k1lled03.old" / "candidate-0")


def test_a_resume_removes_the_unfinished_writes_of_a_killed_run_and_puts_back_a_state_left_aside(
        tree, tmp_path, capsys):
    # every kill left a copy of a candidate's state in the locked state directory, which --resume kept (a fresh run
    # alone cleared it); a state moved aside by a kill between two renames was trained afresh and kept aside too
    grid = ("--select", "dropout=0,0.3", "--batch-size=4")
    code, expected, err = _run(_classify(tree, *grid, "--epochs", "2", "--checkpoint-dir", tmp_path / "whole"), capsys)
    assert code == 0, err
    code, _, err = _run(_classify(tree, *grid, "--epochs", "1", "--checkpoint-dir", tmp_path / "state"), capsys)
    assert code == 0, err
    _killed_writes(tmp_path / "state")
    code, out, err = _run(_classify(tree, "--epochs", "2", "--checkpoint-dir", tmp_path / "state", "--resume",
                                    "--report", tmp_path / "r.json"), capsys)
    assert code == 0, err
    assert "removed 3 unfinished write(s) of a killed run" in err and "put back the training state" in err, err
    seconds = re.compile(r", \d+s\)")
    assert seconds.sub(")", out) == seconds.sub(")", expected)             # the uninterrupted run's results
    restored = [(e["candidate"], e["epoch"]) for e in json.loads((tmp_path / "r.json").read_text())["history"]
                if e.get("restored")]
    assert restored == [(0, 1), (1, 1)]                                      # candidate 0 resumed, not retrained
    assert sorted(p.name for p in (tmp_path / "state").iterdir()) == [".lock", "fold-1", "training-run.json"]
    assert sorted(p.name for p in (tmp_path / "state" / "fold-1").iterdir()) == ["candidate-0", "candidate-1"]


# --------------------------------------------------------------------------- word2fun
WORDS = ["war", "peace", "trade", "army", "navy", "tax", "bank", "union"]
W2F_SETTINGS = ["--dim", "4", "--batch-size", "256", "--negatives", "2", "--min-count=1", "--lr", "0.03",
                "--family", "II", "--no-shared-negatives"]


@pytest.fixture
def corpus(tmp_path):
    rng = np.random.default_rng(0)
    docs = [(1900 + i % 20, list(rng.choice(WORDS, 8))) for i in range(300)]
    docs[0][1][0] = docs[1][1][0] = "rare"
    write_tsv(TimestampedCorpus.from_pairs(docs), tmp_path / "c.tsv")
    return tmp_path / "c.tsv"


def _word2fun(corpus, *extra):
    return ["train", "word2fun", "--corpus", str(corpus), "--no-progress", *extra]


def _first_word2fun_epoch(corpus, tmp_path, capsys):
    code, _, err = _run(_word2fun(corpus, *W2F_SETTINGS, "--epochs", "1", "--out", tmp_path / "ck"), capsys)
    assert code == 0, err
    shutil.copytree(tmp_path / "ck", tmp_path / "copy")


def test_word2fun_resumed_with_the_corpus_only_continues_the_saved_settings(corpus, tmp_path, capsys):
    # refused: "the model: dim (4 there, 100 here), family ('II' there, 'IV' here); ... the run: min_count ..."
    _first_word2fun_epoch(corpus, tmp_path, capsys)
    code, full_out, err = _run(_word2fun(corpus, *W2F_SETTINGS, "--epochs", "2", "--out", tmp_path / "ck", "--resume",
                                         "--words", "war", "--report", tmp_path / "full.json"), capsys)
    assert code == 0, err
    code, short_out, err = _run(_word2fun(corpus, "--epochs", "2", "--out", tmp_path / "copy", "--resume", "--words",
                                          "war", "--report", tmp_path / "short.json"), capsys)
    assert code == 0, err
    said = next(line for line in err.splitlines() if "continuing with the saved run's" in line)
    assert "--min-count 1" in said and "--family II" in said and "--shared-negatives false" in said, said
    assert short_out == full_out
    full_report, short_report = (json.loads((tmp_path / f"{name}.json").read_text()) for name in ("full", "short"))
    assert short_report["config"] == full_report["config"]
    assert short_report["metrics"]["train_loss"] == full_report["metrics"]["train_loss"]
    assert short_report["config"]["train"]["lr"] == 0.03 and short_report["config"]["fit"]["min_count"] == 1
    assert short_report["config"]["train"]["shared_negatives"] is False


def test_word2fun_continues_a_saved_setting_whose_default_changed_since(corpus, tmp_path, capsys, monkeypatch):
    from qpnlp.commands import word2fun

    _first_word2fun_epoch(corpus, tmp_path, capsys)
    defaults = word2fun._defaults

    def later_defaults():
        train, fit = defaults()
        return {**train, "window": train["window"] + 2, "sample": 0.5}, {**fit, "compass_epochs": 9}

    monkeypatch.setattr(word2fun, "_defaults", later_defaults)
    code, _, err = _run(_word2fun(corpus, *W2F_SETTINGS, "--epochs", "2", "--out", tmp_path / "ck", "--resume",
                                  "--report", tmp_path / "r.json"), capsys)
    assert code == 0, err
    train = json.loads((tmp_path / "r.json").read_text())["config"]["train"]
    assert (train["window"], train["sample"]) == (defaults()[0]["window"], defaults()[0]["sample"])


def test_word2fun_refuses_a_given_setting_other_than_the_saved_runs_naming_both(corpus, tmp_path, capsys):
    _first_word2fun_epoch(corpus, tmp_path, capsys)
    resume = _word2fun(corpus, "--epochs", "2", "--out", tmp_path / "ck", "--resume")
    code, _, err = _run([*resume, "--min-count", "5", "--family=IV", "--shared-negatives"], capsys)
    assert code == 2 and "--min-count 5 here, 1 in the saved run" in err, err
    assert "--family IV here, II in the saved run" in err and "--shared-negatives true here, false" in err
    code, _, err = _run([*resume, "--per-pair-negatives", "--workers", "2", "--lr", "0.03"], capsys)   # an alias,
    assert code == 0, err                                                    # a setting that may change, the same lr


def test_the_options_given_are_told_from_their_defaults_whatever_their_spelling():
    from qpnlp.cli import build_parser
    from qpnlp.commands._resume import given_options

    parser = build_parser()
    argv = ["train", "qpdn", "--dataset", "mr", "--drop", "0.0", "--glove=v.txt", "--no-train-measurements",
            "--epochs", "30", "--resume", "--no-select"]
    given = given_options(parser, argv, parser.parse_args(argv))
    assert given == {"dataset": "--dataset", "config__dropout": "--dropout", "vectors": "--vectors",
                     "config__train_measurements": "--train-measurements", "epochs": "--epochs",
                     "resume": "--resume", "select": "--select"}      # an abbreviation, an alias, a default given
    assert parser.parse_args(["train", "qpdn", "--dataset", "mr"]).epochs is not None     # the defaults put back

"""The qpnlp command: demo, train, evaluate, reports and errors."""

import json
import sys

import pytest

from qpnlp.cli import main


def test_help_lists_the_verbs(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "demo" in out and "train" in out and "evaluate" in out


def test_unknown_dataset_is_rejected(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["train", "qpdn", "--dataset", "imdb"])
    assert exc.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_missing_data_folder_says_how_to_set_qpnlp_data(tmp_path, capsys):
    code = main(["train", "qpdn", "--dataset", "mr", "--data", str(tmp_path / "nowhere"), "--no-progress"])
    assert code == 1                                          # a failure while running, not a usage error
    assert "QPNLP_DATA" in capsys.readouterr().err


def test_bad_config_value_is_a_clear_error(data_root, capsys):
    code = main(["train", "qpdn", "--dataset", "trec", "--num-measurements", "0", "--epochs", "1", "--no-progress"])
    assert code == 2
    assert "num_measurements must be >= 1" in capsys.readouterr().err


@pytest.mark.parametrize("value, fragment", [("{bad", "expected a JSON object; got '{bad' (Expecting property"),
                                             ("[1]", "expected a JSON object; got '[1]'")])
def test_a_json_option_that_is_not_a_json_object_names_what_it_expects(capsys, value, fragment):
    # text that is not JSON was "invalid _json_object value: '{bad'", the name of a Python function
    with pytest.raises(SystemExit) as exc:
        main(["train", "order-classifier", "--dataset", "mr", "--embedding-options", value])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and fragment in err and "_json_object" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("value, expected", [("off", None), ("0", 0), ("512", 512)])
def test_length_chunks_reach_the_training_config(value, expected):
    from qpnlp.cli import build_parser
    from qpnlp.commands._common import train_config

    for model, dataset in (("qpdn", "mr"), ("cnm", "trecqa")):
        args = build_parser().parse_args(["train", model, "--dataset", dataset, "--length-chunks", value])
        config = train_config(args)
        assert config.length_chunks == expected


def test_a_bad_length_chunks_value_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["train", "cnm", "--dataset", "trecqa", "--length-chunks", "-1"])
    assert exc.value.code == 2 and "--length-chunks" in capsys.readouterr().err


@pytest.mark.parametrize("flags, lr, scale", [
    (["--dataset", "wikiqa"], 1e-2, 1.0),
    (["--dataset", "trecqa"], 3e-3, 1.0),
    (["--dataset", "wikiqa", "--vectors", "spacy-md-300d"], 1e-3, 1 / 32),
    (["--dataset", "trecqa", "--vectors", "spacy-md-300d"], 1e-3, 1 / 32),
    (["--dataset", "trecqa", "--vectors", "spacy-md-300d", "--lr", "0.02", "--vectors-scale", "0.5"], 0.02, 0.5),
])
def test_cnm_defaults_follow_the_data_set_and_the_vector_set(flags, lr, scale):
    """The settings chosen on dev for the 300-d vectors are what `qpnlp train cnm --vectors spacy-md-300d` gets;
    flags still win."""
    from qpnlp.cli import build_parser
    from qpnlp.commands.match import vectors_scale
    from qpnlp.commands._common import train_config

    args = build_parser().parse_args(["train", "cnm", *flags])
    assert train_config(args).lr == lr and vectors_scale(args) == scale


@pytest.mark.parametrize("flags, margin", [
    (["--dataset", "wikiqa"], 0.02),
    (["--dataset", "trecqa"], 0.05),
    (["--dataset", "wikiqa", "--margin", "0.1"], 0.1),
    (["--dataset", "trecqa", "--margin", "0"], 0.0),
])
def test_cnm_margin_follows_the_data_set_and_the_flag_wins(flags, margin):
    """The margins chosen on dev (WikiQA 0.02, TREC-QA 0.05) are what `qpnlp train cnm --dataset ...` gets."""
    from qpnlp.cli import build_parser
    from qpnlp.commands._common import train_config

    assert train_config(build_parser().parse_args(["train", "cnm", *flags])).margin == margin


@pytest.mark.parametrize("kind, flags", [("cnm", ["--dataset", "trecqa"]), ("qpdn", ["--dataset", "MR"])])
def test_compile_reaches_the_training_config_and_stays_off_by_default(kind, flags):
    from qpnlp.cli import build_parser
    from qpnlp.commands._common import train_config

    config = train_config
    parse = build_parser().parse_args
    assert config(parse(["train", kind, *flags])).compile is None
    assert config(parse(["train", kind, *flags, "--compile", "reduce-overhead"])).compile == "reduce-overhead"


@pytest.mark.parametrize("kind, flags", [("cnm", ["--dataset", "trecqa"]), ("qpdn", ["--dataset", "MR"]),
                                         ("order-classifier", ["--dataset", "SST2"])])
def test_pad_to_multiple_of_reaches_the_training_config(kind, flags, capsys):
    from qpnlp.cli import build_parser
    from qpnlp.commands._common import train_config

    config = train_config
    parse = build_parser().parse_args
    assert config(parse(["train", kind, *flags])).pad_to_multiple_of is None       # 8 under reduce-overhead only
    assert config(parse(["train", kind, *flags, "--pad-to-multiple-of", "16"])).pad_to_multiple_of == 16
    with pytest.raises(SystemExit) as exc:
        parse(["train", kind, *flags, "--pad-to-multiple-of", "0"])
    assert exc.value.code == 2 and "--pad-to-multiple-of" in capsys.readouterr().err


@pytest.mark.parametrize("kind, dataset, module", [("qpdn", "trec", "classify"), ("cnm", "trecqa", "match")])
def test_threads_hold_while_the_run_trains_and_are_restored(monkeypatch, capsys, kind, dataset, module):
    import importlib

    import torch

    commands = importlib.import_module(f"qpnlp.commands.{module}")
    seen = []
    monkeypatch.setattr(commands, "_train", lambda *args: seen.append(torch.get_num_threads()) or 0)
    before = torch.get_num_threads()                    # 1 in this suite (tests/conftest.py)
    assert main(["train", kind, "--dataset", dataset, "--threads", "2"]) == 0
    assert main(["train", kind, "--dataset", dataset]) == 0          # 0, the default: torch's setting is kept
    assert seen == [2, before] and torch.get_num_threads() == before
    with pytest.raises(SystemExit) as exc:
        main(["train", kind, "--dataset", dataset, "--threads", "-1"])
    assert exc.value.code == 2 and "--threads" in capsys.readouterr().err


def test_demo_threads_hold_while_the_demo_trains_and_are_restored(monkeypatch):
    """``qpnlp demo --threads 2`` trained on torch's threads: the option, listed in its help, was left unused."""
    import torch

    from qpnlp.commands import demo

    seen = []
    monkeypatch.setattr(demo, "_demo", lambda *args: seen.append(torch.get_num_threads()) or 0)
    before = torch.get_num_threads()
    assert main(["demo", "--threads", "2"]) == 0
    assert seen == [2] and torch.get_num_threads() == before


def test_word2fun_threads_hold_while_the_command_runs_and_are_restored(monkeypatch):
    import torch

    from qpnlp.commands import word2fun

    seen = []
    monkeypatch.setattr(word2fun, "_run", lambda args: seen.append(torch.get_num_threads()) or 0)
    before = torch.get_num_threads()
    assert main(["train", "word2fun", "--corpus", "sotu", "--threads", "2"]) == 0
    assert seen == [2] and torch.get_num_threads() == before


def test_demo_trains_and_interprets(tmp_path, capsys):
    report = tmp_path / "demo.json"
    code = main(["demo", "--train-size", "300", "--epochs", "1", "--no-progress", "--report", str(report)])
    assert code == 0
    out, err = capsys.readouterr()
    assert "test accuracy" in out and "most important words" in out and "|<v_k|w>|^2" in out
    assert out.startswith("test accuracy ") and "epoch 1:" not in out and "written" not in out    # the results only
    assert "loading the SOTU era task" in err and "sotu-era epoch 1:" in err and "wall time" in err, err
    assert f"report written to {report}" in err
    data = json.loads(report.read_text())
    assert data["dataset"] == "sotu-era" and 0.4 <= data["metrics"]["accuracy"] <= 1.0
    assert data["seed"] == 0 and data["wall_seconds"] > 0 and len(data["details"]["measurements"]) == 6
    assert data["schema"] == "qpnlp-report/1" and data["status"] == "completed" and len(data["history"]) == 1


@pytest.mark.data
@pytest.mark.parametrize("extra", [["--no-select", "--pretrained-fallback", "0"],
                                   ["--no-select", "--pretrained-fallback", "3000", "--phase-init", "uniform"]])
def test_train_save_and_evaluate_round_trip(data_root, tmp_path, extra):
    ckpt, train_report, eval_report = tmp_path / "trec.pt", tmp_path / "train.json", tmp_path / "eval.json"
    assert main(["train", "qpdn", "--dataset", "trec", "--epochs", "2", "--num-measurements", "10", "--no-progress",
                 "--save", str(ckpt), "--report", str(train_report), *extra]) == 0
    assert main(["evaluate", str(ckpt), "--split", "test", "--report", str(eval_report)]) == 0
    trained, evaluated = json.loads(train_report.read_text()), json.loads(eval_report.read_text())
    assert trained["dataset"] == evaluated["dataset"] == "TREC"
    assert evaluated["n"] == 500
    assert evaluated["metrics"]["accuracy"] == pytest.approx(trained["details"]["splits"][0]["test_accuracy"],
                                                             abs=1e-6)
    assert trained["metrics"]["accuracy_mean"] > 1 / 6


def test_folds_on_a_fixed_split_are_refused_before_any_file_is_read_or_written(tmp_path, capsys):
    """Refused once TREC was read (here: a failure to read it, exit code 1), after the training state next to --save
    was cleared and a failed report written."""
    report = tmp_path / "r.json"
    code = main(["train", "qpdn", "--dataset", "trec", "--data", str(tmp_path / "nowhere"), "--folds", "3",
                 "--save", str(tmp_path / "model"), "--report", str(report), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert "--folds 3: TREC has a fixed split, not cross-validation folds" in err and not report.exists()


@pytest.mark.parametrize("kind, dataset, extra", [
    ("real-bow", "trec", ["--no-select"]), ("order-classifier", "trec", []),
    ("cnm-real", "wikiqa", []), ("fasttext-maxpool", "trecqa", []),
    ("real-bow", "trec", ["--select", "phase_lr=0.01,0.001"]),            # each candidate of a grid is checked
])
def test_phase_lr_without_a_phase_table_is_refused_before_any_file_is_read_or_written(tmp_path, capsys, kind,
                                                                                         dataset, extra):
    """Refused by the optimiser once the data and vectors were read, after the training state beside --save was
    cleared and a report written: now a usage error from the command line alone, with the same message."""
    report, save = tmp_path / "r.json", tmp_path / "model"
    code = main(["train", kind, "--dataset", dataset, "--data", str(tmp_path / "nowhere"), "--phase-lr", "0.01",
                 "--save", str(save), "--report", str(report), "--no-progress", *extra])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert "phase_lr (--phase-lr) 0.01 would be ignored: " in err and "has no trainable phase table" in err
    assert sorted(tmp_path.iterdir()) == []                         # no report, no model, no training state


def test_phase_lr_of_a_model_with_a_phase_table_is_not_refused(tmp_path, capsys):
    code = main(["train", "qpdn", "--dataset", "trec", "--data", str(tmp_path / "nowhere"), "--phase-lr", "0.01",
                 "--no-select", "--no-progress"])
    assert code == 1 and "would be ignored" not in capsys.readouterr().err     # it got as far as reading the data


def test_select_with_a_malformed_axis_is_a_clear_error(tmp_path, capsys):
    code = main(["train", "qpdn", "--dataset", "trec", "--data", str(tmp_path / "nowhere"), "--epochs", "1",
                 "--no-progress", "--select", "dropout"])
    assert code == 2
    assert "name=v1,v2" in capsys.readouterr().err


@pytest.mark.data
def test_train_with_selection_reports_the_chosen_setting_and_saves_its_model(data_root, tmp_path, capsys):
    ckpt, report = tmp_path / "trec.pt", tmp_path / "train.json"
    # one epoch and the training words only (no 400k-word GloVe fallback): the selection, not the training, is tested
    assert main(["train", "real-bow", "--dataset", "trec", "--epochs", "1", "--no-progress", "--lr", "0.05",
                 "--pretrained-fallback", "0", "--select", "dropout=0,0.5", "lr=0.01,0.003", "--save", str(ckpt),
                 "--report", str(report)]) == 0
    trained = json.loads(report.read_text())
    split = trained["details"]["splits"][0]
    assert len(trained["config"]["grid"]) == 4 and split["selected"] in trained["config"]["grid"]
    assert len(split["candidate_dev_accuracies"]) == 4
    assert split["dev_accuracy"] == max(split["candidate_dev_accuracies"])
    assert "selected {" in capsys.readouterr().out
    from qpnlp.training import load_checkpoint
    meta = load_checkpoint(ckpt).metadata
    assert meta["selected"] == split["selected"]
    assert meta["train"]["lr"] == split["selected"]["lr"] != 0.05  # what the saved model was trained with
    eval_report = tmp_path / "eval.json"
    assert main(["evaluate", str(ckpt), "--split", "test", "--report", str(eval_report)]) == 0
    assert json.loads(eval_report.read_text())["metrics"]["accuracy"] == pytest.approx(split["test_accuracy"],
                                                                                       abs=1e-6)


def test_a_given_model_option_leaves_the_default_grid(monkeypatch, capsys):
    # the default grid (dropout=0,0.3 weighting=amplitude_norm,trainable) used to override --dropout / --weighting
    from qpnlp.commands import classify

    seen = {}

    def fake_train(args, report, config, options, candidates, state_root):
        seen.update(options=options, candidates=candidates)
        return 0

    monkeypatch.setattr(classify, "_train", fake_train)
    assert main(["train", "qpdn", "--dataset", "trec", "--drop", "0.5"]) == 0          # an abbreviation counts too
    assert seen["options"]["dropout"] == 0.5
    assert seen["candidates"] == [{"weighting": "amplitude_norm"}, {"weighting": "trainable"}]
    assert "default selection grid without dropout=0,0.3" in capsys.readouterr().err          # a status line
    assert main(["train", "qpdn", "--dataset", "trec", "--dropout", "0.5", "--weighting", "idf"]) == 0
    assert seen["candidates"] is None and seen["options"]["weighting"] == "idf"
    assert main(["train", "qpdn", "--dataset", "trec", "--unit-amplitudes"]) == 0        # not an axis: full grid
    assert len(seen["candidates"]) == 4
    capsys.readouterr()
    assert main(["train", "qpdn", "--dataset", "trec", "--dropout", "0.5", "--select", "dropout=0,0.1"]) == 0
    assert seen["candidates"] == [{"dropout": 0}, {"dropout": 0.1}]                     # an explicit grid is kept
    assert "--select dropout=0,0.1 replaces the --dropout given on the command line" in capsys.readouterr().err
    assert main(["train", "qpdn", "--dataset", "trec", "--lr", "0.5", "--select", "lr=0.1,0.01"]) == 0   # and says so
    assert "--select lr=0.1,0.01 replaces the --lr given on the command line" in capsys.readouterr().err


def test_order_classifier_defaults_are_the_complex_order_reproductions(monkeypatch, capsys):
    """`qpnlp train order-classifier` with no training flag gets the settings of benchmarks/reproduce_complex_order.py
    (lr 1e-3 for the dense parameters and the tables, lr 1e-3 / 1e-4 chosen on dev, <= 30 epochs, patience 5); a
    training setting given on the command line leaves its axis out of the default grid."""
    from qpnlp.commands import classify

    seen = {}

    def fake_train(args, report, config, options, candidates, state_root):
        seen.update(config=config, candidates=candidates)
        return 0

    monkeypatch.setattr(classify, "_train", fake_train)
    assert main(["train", "order-classifier", "--dataset", "mr"]) == 0
    config = seen["config"]
    assert (config.epochs, config.patience, config.batch_size, config.lr, config.embedding_lr) == (30, 5, 32, 1e-3, 1e-3)
    assert seen["candidates"] == [{"lr": 1e-3}, {"lr": 1e-4}]
    assert main(["train", "order-classifier", "--dataset", "mr", "--lr", "0.01"]) == 0   # was overridden by the grid
    assert seen["candidates"] is None and seen["config"].lr == 0.01
    assert "default selection grid without lr=1e-3,1e-4" in capsys.readouterr().err
    assert main(["train", "order-classifier", "--dataset", "mr", "--lr", "1e-3"]) == 0   # given at its default value
    assert seen["candidates"] is None


def test_the_complex_order_reproduction_uses_the_cli_defaults():
    import sys
    from pathlib import Path

    from qpnlp.models.order_classifier import OrderClassifier

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    try:
        import reproduce_complex_order as script
    finally:
        sys.path.pop(0)
    args = script.parse_arguments(["--datasets", "TREC"])
    defaults = OrderClassifier.training_defaults
    assert (args.epochs, args.patience, args.batch_size, args.lr, args.embedding_lr) == tuple(
        defaults[k] for k in ("epochs", "patience", "batch_size", "lr", "embedding_lr"))
    assert args.grid == defaults["select"] and args.settings == [{"lr": 1e-3}, {"lr": 1e-4}]
    assert script.parse_arguments(["--lr", "0.01"]).settings == [{}]             # a given lr leaves the lr axis
    assert script.parse_arguments(["--no-grid"]).settings == [{}]
    from qpnlp.data.vectors import VECTOR_SETS
    for vectors in ("glove-6b-50d", "spacy-md-300d"):                          # the CLI's vocabulary fallback
        # the vectors the command loads record their set's fallback (tests/test_cli_defaults.py checks the command)
        assert script.parse_arguments(["--vectors", vectors]).pretrained_fallback == VECTOR_SETS[vectors].fallback


def test_the_complex_order_reproduction_keeps_and_resumes_each_runs_state(tmp_path, monkeypatch):
    """--state-dir gives every (cell, grid setting) its own fit() checkpoint directory; --resume continues the runs
    whose state exists and starts the others (fit refuses resume=True without a state)."""
    import argparse
    import sys
    from pathlib import Path

    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    try:
        import reproduce_complex_order as script
    finally:
        sys.path.pop(0)
    calls = []
    monkeypatch.setattr(script, "_build", lambda *a: torch.nn.Linear(1, 1))
    monkeypatch.setattr(script, "fit", lambda *a, checkpoint_dir, resume, **k: calls.append((checkpoint_dir, resume)))
    args = script.parse_arguments(["--state-dir", str(tmp_path), "--resume"])
    cell = script._state_dir(args, "SST2", "fixed", 3, "transformer", "complex_order")
    assert cell == tmp_path / "SST2-fixed-seed3-transformer-complex_order"
    (cell / "lr=0.001").mkdir(parents=True)                         # the first setting had started
    prepared = argparse.Namespace(train=[], dev=[])
    for setting in args.settings:
        script._train("transformer", "complex_order", prepared, 2, script._with(args, setting), 3,
                      cell / script._setting_name(setting))
    assert calls == [(cell / "lr=0.001", True), (cell / "lr=0.0001", False)]
    no_state = script.parse_arguments(["--resume"])
    assert script._state_dir(no_state, "SST2", "fixed", 3, "transformer", "pe") is None
    assert script._setting_name({}) == "flags" and script._setting_name({"lr": 1e-4, "hidden": 64}) == \
        "hidden=64,lr=0.0001"
    assert script._train_config(no_state, 0).length_chunks == 256                  # chunks, as qpnlp train does
    assert script._train_config(script.parse_arguments(["--length-chunks", "off"]), 0).length_chunks is None


@pytest.mark.parametrize("model, extra, fixed", [
    ("cgrnn-classifier", [], None), ("order-classifier", [], 1e-3),        # the order classifier's own default
    ("order-classifier", ["--embedding-lr", "0.5"], 0.5),
    ("order-classifier", ["--select", "lr=0.1,0.001", "embedding_lr=0.2"], 0.2),
    ("qpdn", [], 1e-3)])                                                   # QPDN's own default embedding_lr
def test_the_embedding_lr_follows_each_grid_points_lr_by_default(monkeypatch, model, extra, fixed):
    """--embedding-lr defaults to --lr: a grid point lr=0.1 trained the embeddings at the command line's lr."""
    from qpnlp.commands import classify
    from qpnlp.training.classification import apply_setting

    seen = {}

    def fake_train(args, report, config, options, candidates, state_root):
        seen.update(config=config, options=options, candidates=candidates)
        return 0

    monkeypatch.setattr(classify, "_train", fake_train)
    select = [] if "--select" in extra else ["--select", "lr=0.1,0.001"]
    assert main(["train", model, "--dataset", "mr", "--lr", "0.01", *select, *extra]) == 0
    used = [apply_setting(c, seen["options"], seen["config"])[1] for c in seen["candidates"]]
    assert sorted({u.lr for u in used}) == [0.001, 0.1]
    if fixed is None:
        assert [u.embedding_lr for u in used] == [u.lr for u in used]
    else:
        assert [u.embedding_lr for u in used] == [fixed] * len(used)


@pytest.mark.parametrize("extra, fragment", [
    (["--lr", "0"], "must be positive and finite: {'lr': 0.0}"), (["--sample", "-1"], "sample and roughness_penalty"),
    (["--time-scale", "-1"], "time_scale must be positive"), (["--dim", "7", "--family", "IV"], "even dim"),
    (["--max-periods", "-2"], "max_periods must be positive"),
    # a penalty given to a family without one: refused before the corpus is read (was: by fit, once it was read)
    (["--family", "static", "--roughness-penalty", "0.5"], "(--roughness-penalty) 0.5 needs a sinusoidal family"),
    (["--family", "sliced", "--roughness-penalty", "1e-4"], "got 'sliced'")])
def test_word2fun_option_values_the_library_refuses_are_usage_errors(tmp_path, capsys, extra, fragment):
    corpus = tmp_path / "c.tsv"
    corpus.write_text("1900\ta b c\n2000\tb c d\n")
    code = main(["train", "word2fun", "--corpus", str(corpus), "--epochs", "1", "--no-progress", *extra])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and fragment in err, err              # was exit code 1


def test_word2fun_eras_are_at_most_the_distinct_times_of_the_corpus(tmp_path, capsys):
    """--eras 1000000 trained, then built a report over a million eras (minutes); most of them held no document."""
    corpus = tmp_path / "c.tsv"
    corpus.write_text("1900\ta b c\n1950\tb c d\n2000\tc d a\n1950\td a b\n")
    argv = ["train", "word2fun", "--corpus", str(corpus), "--dim", "4", "--min-count", "1", "--epochs", "1",
            "--no-progress"]
    code = main([*argv, "--eras", "1000000"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert "--eras 1000000: the corpus has 3 distinct times, so at least 999997 eras would hold no document" in err
    report = tmp_path / "r.json"
    assert main([*argv, "--eras", "3", "--report", str(report)]) == 0
    assert len(json.loads(report.read_text())["details"]["eras"]) == 3
    assert main([*argv, "--report", str(report)]) == 0                 # the default, 4, lowered to the 3 times
    data = json.loads(report.read_text())
    assert len(data["details"]["eras"]) == 3 and data["arguments"]["eras"] == 3


def test_import_takes_two_plugin_files_of_the_same_name(tmp_path):
    """``--import a/plugin.py --import b/plugin.py`` imported a/plugin.py only: b's shared its module name."""
    import sys

    from qpnlp.cli import import_plugins

    files = []
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        files.append(tmp_path / folder / "same_name_plugin.py")
        files[-1].write_text(f"WHICH = {folder!r}\n")
    before = set(sys.modules)
    try:
        import_plugins(["--import", str(files[0]), "--import", str(files[1]), "--import", str(files[0])])
        import_plugins(["--import", str(files[1])])                      # main() called again: nothing new
        loaded = sorted(getattr(sys.modules[n], "WHICH", None) for n in set(sys.modules) - before
                        if n.startswith("qpnlp_plugin_same_name_plugin"))
        assert loaded == ["a", "b"]
    finally:
        for name in set(sys.modules) - before:
            if name.startswith("qpnlp_plugin_"):
                del sys.modules[name]


def test_an_imported_plugin_file_imports_its_sibling_module(tmp_path):
    """``--import dir/plugin.py`` whose ``import sibling`` found no module: unlike ``python dir/plugin.py``, the
    file's directory was not on ``sys.path``. It is while the file loads, and is taken off again."""
    import sys

    from qpnlp.cli import import_plugins

    (tmp_path / "qpnlp_test_sibling_helper.py").write_text("VALUE = 'from the helper'\n")
    plugin = tmp_path / "sibling_plugin.py"
    plugin.write_text("from qpnlp_test_sibling_helper import VALUE\nWHICH = VALUE\n")
    path, before = list(sys.path), set(sys.modules)
    try:
        import_plugins(["--import", str(plugin)])
        assert sys.modules["qpnlp_plugin_sibling_plugin"].WHICH == "from the helper"
        assert sys.path == path                                           # left as it was found
    finally:
        for name in set(sys.modules) - before:
            if name.startswith(("qpnlp_plugin_", "qpnlp_test_sibling")):
                del sys.modules[name]


@pytest.mark.skipif(sys.platform == "win32", reason="Windows: the job runner is a bash script")
def test_the_job_runner_keeps_each_runs_log_and_walltime(tmp_path):
    """benchmarks/parallel_jobs.sh appends to a job's log (a resumable job run again keeps its earlier output) and
    records every run's exit status."""
    import subprocess
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "benchmarks" / "parallel_jobs.sh"
    jobs = tmp_path / "jobs.txt"
    jobs.write_text("# a comment\nok|echo ran in $JOB_OUT\nfails|exit 3\n")
    for _ in range(2):
        subprocess.run(["bash", str(script), str(jobs), "2", str(tmp_path / "out")], check=True, cwd=tmp_path)
    log = (tmp_path / "out" / "ok.log").read_text().splitlines()
    assert [line.startswith("=== started ") for line in log] == [True, False, True, False]
    assert log[1] == log[3] == f"ran in {tmp_path / 'out' / 'ok'}"
    walltimes = sorted(line.split(" s")[0].rsplit(" ", 1)[0] for line in
                       (tmp_path / "out" / "walltimes.txt").read_text().splitlines())
    assert walltimes == ["fails rc=3", "fails rc=3", "ok rc=0", "ok rc=0"]
    bad = subprocess.run(["bash", str(script), str(tmp_path / "missing.txt"), "2", str(tmp_path / "out")],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "usage" in bad.stderr


def test_word2fun_step_threads_reach_the_training_settings(tmp_path):
    """--step-threads is TrainConfig.step_threads (the report records it as given; default 0: torch's thread count
    where numba's threads survive fork, one in the tests, which run torch on one thread)."""
    corpus = tmp_path / "c.tsv"
    corpus.write_text("1900\ta b c\n1950\tb c d\n2000\tc d a\n1950\td a b\n")
    for threads in (None, "1"):
        report = tmp_path / f"r{threads}.json"
        argv = ["train", "word2fun", "--corpus", str(corpus), "--dim", "4", "--min-count", "1", "--epochs", "1",
                "--no-progress", "--report", str(report)]
        assert main(argv + (["--step-threads", threads] if threads else [])) == 0
        assert json.loads(report.read_text())["config"]["train"]["step_threads"] == (0 if threads is None else 1)

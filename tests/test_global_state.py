"""The library leaves a user's process as it found it: importing it, training and the CLI run in-process.

A notebook or a larger program imports qpnlp beside its own code: its random streams, torch's settings, the warnings
filters, the logging setup and the signal handlers stay theirs. Seeding for a run's reproducibility is scoped to the
run (:func:`qpnlp.training.trainer.seeded`); only :func:`~qpnlp.training.seed_everything`, asked for by name, seeds.
"""

from __future__ import annotations

import json
import logging
import os
import random
import signal
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import qpnlp
from qpnlp.cli import main
from qpnlp.data import ClassificationDataset
from qpnlp.data.protocols import Split
from qpnlp.hilbert import get_validation
from qpnlp.training import TrainConfig, fit
from qpnlp.training.classification import run_split, run_split_selected

ROOT = Path(qpnlp.__file__).parents[1]
SUBPACKAGES = ["qpnlp", "qpnlp.hilbert", "qpnlp.measurement", "qpnlp.nn", "qpnlp.models", "qpnlp.word2fun",
               "qpnlp.data", "qpnlp.evaluation", "qpnlp.training", "qpnlp.interpret", "qpnlp.testing",
               "qpnlp.commands", "qpnlp.cli"]
#: Optional or heavy packages that only the functions needing them import.
HEAVY = ["matplotlib", "scipy", "sklearn", "spacy", "gensim", "numba", "tensorboard", "torch.utils.tensorboard",
         "faiss", "qutip", "torch._dynamo"]


def _settings() -> dict:
    """Process-wide settings a library call could change behind its caller's back."""
    root = logging.getLogger()
    return dict(threads=torch.get_num_threads(), interop=torch.get_num_interop_threads(),
                dtype=torch.get_default_dtype(), grad=torch.is_grad_enabled(),
                inference=torch.is_inference_mode_enabled(),
                deterministic=torch.are_deterministic_algorithms_enabled(), anomaly=torch.is_anomaly_enabled(),
                matmul=torch.get_float32_matmul_precision(), validation=get_validation(),
                filters=list(warnings.filters), showwarning=warnings.showwarning,
                logging=(list(root.handlers), root.level), path=list(sys.path), cwd=os.getcwd(),
                signals=[signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)], excepthook=sys.excepthook,
                streams=(sys.stdout, sys.stderr), numpy_errors=np.geterr())


def _draws() -> tuple:
    """The next draw of each global random stream (Python's, NumPy's, torch's)."""
    return random.random(), float(np.random.rand()), float(torch.rand(()))


def _after_seeding(call) -> tuple:
    """The draws after seeding every global stream with 7 and running ``call()``."""
    random.seed(7)
    np.random.seed(7)
    torch.manual_seed(7)
    call()
    return _draws()


def _toy_dataset(n=120):
    """Class 0 draws words a0..a7, class 1 words b0..b7; a fixed 80/20/20 split."""
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, n)
    texts = [[f"{'ab'[y]}{i}" for i in rng.integers(0, 8, rng.integers(2, 7))] for y in labels]
    return (ClassificationDataset("toy", texts, labels, ("a", "b")),
            Split("fixed", train=np.arange(80), dev=np.arange(80, 100), test=np.arange(100, n)))


CONFIG = TrainConfig(epochs=1, lr=0.05, embedding_lr=0.05, batch_size=16, progress=False, seed=1)
OPTIONS = dict(dim=6, num_measurements=4, dropout=0.3)


@pytest.mark.parametrize("run", [
    lambda data, split: run_split("qpdn", data, split, None, OPTIONS, CONFIG),
    lambda data, split: run_split_selected("qpdn", data, split, None, OPTIONS, CONFIG, [{}, dict(dropout=0.1)]),
], ids=["run_split", "run_split_selected"])
def test_training_a_split_leaves_the_callers_random_streams_where_they_were(run):
    """run_split reseeded Python's, NumPy's and torch's global RNGs with the run's seed and left them there: a
    notebook's draws after it were the run's, not its own, whatever it had seeded."""
    data, split = _toy_dataset()
    expected = _after_seeding(lambda: None)
    before = _settings()
    assert _after_seeding(lambda: run(data, split)) == expected
    assert _settings() == before


def test_the_seeded_run_is_what_seeding_globally_gave():
    """Scoping the seed changes nothing inside the run: the same model as after seed_everything by hand."""
    from qpnlp.training import seed_everything
    from qpnlp.training.classification import build_classifier, prepare, train_prepared

    data, split = _toy_dataset()
    prepared = prepare(data, split, None, seed=CONFIG.seed)
    torch.manual_seed(123)
    _, model, _ = train_prepared("qpdn", prepared, 2, OPTIONS, CONFIG)
    seed_everything(CONFIG.seed)
    by_hand, _ = build_classifier("qpdn", prepared, 2, OPTIONS, CONFIG.seed)
    fit(by_hand, prepared.train, prepared.dev, CONFIG)
    for a, b in zip(model.state_dict().values(), by_hand.state_dict().values()):
        assert torch.equal(a, b)


@pytest.mark.data
def test_run_matching_leaves_the_callers_random_streams_where_they_were(data_root):
    from qpnlp.training.matching import MatchingConfig, run_matching

    config = MatchingConfig(epochs=1, progress=False, seed=2)
    expected = _after_seeding(lambda: None)
    assert _after_seeding(lambda: run_matching("wikiqa", dict(dim=8), config, pretrained=None, root=data_root,
                                               max_questions=20)) == expected


def test_training_leaves_torch_and_python_settings_as_they_were(tmp_path):
    """fit, Word2Fun's fit (one thread per worker while it trains) and the CLI run in-process."""
    from qpnlp import word2fun
    from qpnlp.data import TimestampedCorpus

    data, split = _toy_dataset()
    docs = [(1900 + i % 10, ["war", "peace", "treaty", "army"][i % 3:] + ["trade"]) for i in range(100)]
    corpus = tmp_path / "c.tsv"
    corpus.write_text("1900\ta b c\n1950\tb c d\n2000\tc d a\n1950\td a b\n")
    before = _settings()
    run_split("qpdn", data, split, None, OPTIONS, CONFIG)
    word2fun.fit(TimestampedCorpus.from_pairs(docs), word2fun.TrainConfig(epochs=1), dim=4, min_count=1)
    assert main(["train", "word2fun", "--corpus", str(corpus), "--dim", "4", "--min-count", "1", "--epochs", "1",
                 "--no-progress", "--threads", "2", "--report", str(tmp_path / "r.json")]) == 0
    assert json.loads((tmp_path / "r.json").read_text())["status"] == "completed"
    assert _settings() == before


_PROBE = """
import importlib, json, logging, os, sys, threading, warnings
import torch
report = {}
for name in sys.argv[1].split(","):
    threads, interop = torch.get_num_threads(), torch.get_num_interop_threads()
    names, environ, filters = {t.name for t in threading.enumerate()}, dict(os.environ), list(warnings.filters)
    handlers, rng = list(logging.getLogger().handlers), torch.get_rng_state()
    importlib.import_module(name)
    changed = dict(
        threads=[torch.get_num_threads(), torch.get_num_interop_threads()] != [threads, interop],
        new_threads=sorted({t.name for t in threading.enumerate()} - names),
        environ=sorted(k for k in set(os.environ) | set(environ) if os.environ.get(k) != environ.get(k)),
        # sympy, which torch loads for qpnlp.testing's warm-up comparison, sets its own deprecation filter
        filters=[repr(f) for f in warnings.filters if f not in filters and not f[2].__module__.startswith("sympy")],
        logging=logging.getLogger().handlers != handlers, rng=not torch.equal(rng, torch.get_rng_state()),
        heavy=[m for m in sys.argv[2:] if m in sys.modules])
    report[name] = {k: v for k, v in changed.items() if v}
print(json.dumps(report))
"""


def test_importing_the_subpackages_warns_of_nothing_and_changes_nothing():
    """Each public subpackage imports under ``-W error`` in a fresh interpreter without loading the optional or heavy
    packages, starting threads or touching torch's threads, the environment, the warnings filters, the root logger
    or the RNG. One interpreter for all, lowest layer first, each import checked on its own (that each also imports
    alone follows from the imports pointing down the layers and having no cycles: tests/test_architecture.py)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    out = subprocess.run([sys.executable, "-W", "error", "-c", _PROBE, ",".join(SUBPACKAGES), *HEAVY],
                         capture_output=True, text=True, cwd=ROOT, env=env)
    assert out.returncode == 0 and not out.stderr, out.stderr
    assert json.loads(out.stdout) == {name: {} for name in SUBPACKAGES}


def _model_state(model: torch.nn.Module) -> tuple:
    """What a query must leave as it found it: each submodule's train/eval mode, each parameter's value and
    ``requires_grad``, each buffer."""
    return ({n: m.training for n, m in model.named_modules()},
            {n: (p.detach().clone(), p.requires_grad) for n, p in model.named_parameters()},
            {n: b.clone() for n, b in model.named_buffers()})


def _same_model_state(a: tuple, b: tuple) -> bool:
    return (a[0] == b[0] and a[1].keys() == b[1].keys() and a[2].keys() == b[2].keys()
            and all(torch.equal(a[1][k][0], b[1][k][0]) and a[1][k][1] == b[1][k][1] for k in a[1])
            and all(torch.equal(a[2][k], b[2][k]) for k in a[2]))


def _queries(tmp_path) -> list:
    """(name, model, call) for the functions a notebook calls between steps of its own experiment, each on a
    model in training mode (dropout on) holding a submodule the caller switched to eval mode."""
    from qpnlp import interpret
    from qpnlp.data import EncodedTexts, Vocabulary
    from qpnlp.evaluation import ranking_metrics
    from qpnlp.models import CNM, CNMConfig, QPDN, QPDNConfig
    from qpnlp.training import accuracy, load_checkpoint, predict, save_checkpoint
    from qpnlp.training.matching import EncodedQA, evaluate_ranking

    generator = torch.Generator().manual_seed(0)
    qpdn = QPDN(QPDNConfig(num_words=12, num_classes=2, dim=4, num_measurements=3, dropout=0.3),
                generator=generator).train()
    vocab = Vocabulary.build([["cat", "dog", "fish", "bird"]])
    cnm = CNM(CNMConfig(num_words=len(vocab), dim=4, num_measurements=3, windows=[1, 2], dropout=0.3),
              generator=generator).train()
    for model in (qpdn, cnm):
        model.dropout.eval()
    texts = EncodedTexts([[2, 3, 4], [5, 6], [7, 8, 9, 10]], [0, 1, 0])
    qa = EncodedQA([[2, 3], [4]], [[2], [3, 5], [4], [2, 3]], np.array([0, 0, 1, 1]), np.array([1, 0, 0, 1]),
                   (np.arange(2), np.arange(2, 4)))
    words = [f"w{i}" for i in range(12)]
    save_checkpoint(tmp_path / "qpdn", qpdn, vocabulary=None)
    return [
        ("predict", qpdn, lambda: predict(qpdn, texts)),
        ("accuracy", qpdn, lambda: accuracy(qpdn, texts)),
        ("evaluate_ranking", cnm, lambda: evaluate_ranking(cnm, qa)),
        ("matching_patterns", cnm, lambda: interpret.matching_patterns(cnm, ["cat", "dog"], ["dog"], vocab)),
        ("importance_table", qpdn, lambda: interpret.importance_table(qpdn, words)),
        ("measurement_words", qpdn, lambda: interpret.measurement_words(qpdn, words, top=2)),
        ("word_scores", qpdn, lambda: interpret.word_scores(qpdn)),
        ("load_checkpoint", qpdn, lambda: load_checkpoint(tmp_path / "qpdn")),
        ("ranking_metrics", qpdn, lambda: ranking_metrics(np.array([0.3, 0.1]), np.array([1, 0]), [np.arange(2)])),
    ]


def test_queries_leave_the_callers_random_streams_settings_and_model_as_they_were(tmp_path):
    """Scoring, interpreting and loading change nothing of their caller's: not the random streams (loading a model
    drew its placeholder initial values from torch's), not the process settings, not the model's modes (predict
    left it in eval mode: the caller's own training went on without dropout), values or ``requires_grad``."""
    for name, model, call in _queries(tmp_path):
        expected = _after_seeding(lambda: None)
        before, state = _settings(), _model_state(model)
        assert _after_seeding(call) == expected, f"{name} drew from a global random stream"
        assert _settings() == before, name
        assert _same_model_state(_model_state(model), state), f"{name} changed the model's mode or parameters"


def test_importing_qpnlp_leaves_a_plain_sparse_embedding_with_adam_to_torch():
    """qpnlp's optimiser step hook acts on its own tables only (tests/nn/test_embedding.py has the cases)."""
    table = torch.nn.Embedding(5, 3, sparse=True)
    table(torch.tensor([1, 2])).sum().backward()
    with pytest.raises(RuntimeError, match=r"^Adam does not support sparse gradients, please consider SparseAdam "
                                           r"instead$") as raised:
        torch.optim.Adam(table.parameters()).step()
    assert type(raised.value) is RuntimeError

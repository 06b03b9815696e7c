"""Fixtures for the Word2Fun tests: a model factory, a randomiser and a tiny planted-drift corpus."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from qpnlp.data.synthetic_drift import DriftSpec, generate_drift_corpus
from qpnlp.word2fun import TimeScale, Word2Fun, Word2FunConfig
from qpnlp.word2fun.sources import ArraySource

TS = TimeScale(1900.0, 2000.0, 60.0)




def _make(vocab_size: int, dim: int, family: str = "II", time_scale: TimeScale = TS, seed: int = 0, **kw) -> Word2Fun:
    config = Word2FunConfig(vocab_size=vocab_size, dim=dim, family=family, span_start=time_scale.start,
                            span_end=time_scale.end, time_scale=time_scale.scale, **kw)
    return Word2Fun(config, seed=seed)


@pytest.fixture
def own_process(request) -> bool:
    """Run the calling test again in a process of its own and fail if it fails there: True inside that process,
    False here (the test then returns). For the tests that run Word2Fun's threaded kernel: where numba's threading
    layer is GNU OpenMP (no TBB), its threads make a child forked afterwards from this pytest worker hang
    (``tests/test_threads_and_forks.py`` forks from the same workers; under TBB, the layer the extra ``fast``
    installs on Linux x86-64, they pass with the threaded tests in the same workers, 2026-12-03)."""
    if os.environ.get("QPNLP_OWN_PROCESS") == request.node.nodeid:
        return True
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", request.node.nodeid],
                          cwd=request.config.rootpath, env={**os.environ, "QPNLP_OWN_PROCESS": request.node.nodeid},
                          capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "\n1 passed" in "\n" + proc.stdout, proc.stdout[-2000:]      # it ran, and was not skipped there
    return False


@pytest.fixture
def make():
    """``make(V, D, family="II", time_scale=TS, seed=0, **config)``: a Word2Fun (span 1900-2000, S = 60 by default)."""
    return _make


def _randomise(model, seed=0):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g))
    return model


@pytest.fixture
def randomise():
    """``randomise(model, seed)``: every parameter set to standard normal values, in place."""
    return _randomise


def _random_source(n_docs: int = 120):
    rs = np.random.default_rng(0)
    tokens = rs.integers(0, 50, n_docs * 100)
    return ArraySource(tokens, np.repeat(np.arange(n_docs), 100), 1900.0 + np.arange(n_docs) % 100), \
        np.bincount(tokens, minlength=50)


@pytest.fixture
def random_source():
    """``random_source(n_docs=120) -> (ArraySource, counts)``: ``n_docs`` documents of 100 uniform draws from 50
    words (seed 0), dated 1900 + d % 100, and the words' counts."""
    return _random_source


@pytest.fixture(scope="session")
def tiny_drift():
    """``(corpus, truth)``: a small planted-drift corpus (30 years, 120k tokens)."""
    spec = DriftSpec(n_years=30, n_tokens=120_000, n_topics=5, words_per_topic=15, n_background=30, n_drift=6,
                     n_stable=4, n_trap=2, rate=40.0, trap_rate_start=4.0, strength_range=(0.7, 1.0),
                     gradual_fraction=0.0, seed=5)
    return generate_drift_corpus(spec)

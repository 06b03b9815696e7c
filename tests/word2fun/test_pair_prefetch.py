"""`train_source` draws the pairs of its epochs on a thread of their own, an epoch ahead, with the results the
calling thread's draws gave.

Before, one worker drew each epoch's pairs in the training thread (about a tenth of its time on the CPU, a chunk's
preparation at the start of every epoch), so the first test failed: the pairs came from the main thread. The
others pin what the drawing thread must not change: the parameters, the generator's state that a checkpoint saves
after each epoch (the thread draws from a copy, a whole epoch ahead), and no thread left once a run has raised.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import numpy as np
import pytest
import torch

from qpnlp.data.skipgram import keep_probabilities
from qpnlp.word2fun import TrainConfig, loop
from qpnlp.word2fun.sources import ArraySource

CFG = TrainConfig(epochs=3, batch_size=64, chunk_tokens=4000, seed=5)


def _source(n_docs: int = 120):
    rs = np.random.default_rng(0)
    tokens = rs.integers(0, 50, n_docs * 100)
    return ArraySource(tokens, np.repeat(np.arange(n_docs), 100), 1900.0 + np.arange(n_docs) % 100), \
        np.bincount(tokens, minlength=50)


def _train(make, on_epoch=None, config=CFG):
    """The trained tables and the pair generator's state after each epoch, as ``on_epoch`` sees it."""
    source, counts = _source()
    model, rng, states = make(50, 8, family="IV"), np.random.default_rng(11), []

    def note(epoch, stats):
        states.append(rng.bit_generator.state)
        if on_epoch is not None:
            on_epoch(epoch, stats)

    loop.train_source(model, source, counts, config, rng=rng, on_epoch=note)
    return [p.detach().clone() for p in model.parameters()], states


def _inline(runs, stop):
    """``prefetch`` without its thread: the runs are drawn by the thread that trains them."""
    ended = threading.Event()
    ended.set()
    return iter(runs), ended


def test_one_worker_trains_on_pairs_drawn_by_another_thread(make, monkeypatch):
    drawn_by = []
    real_runs = loop._epoch_runs

    def noting_thread(*args):
        drawn_by.append(threading.current_thread() is threading.main_thread())
        yield from real_runs(*args)

    monkeypatch.setattr(loop, "_epoch_runs", noting_thread)
    _train(make)
    assert drawn_by == [False] * CFG.epochs


def test_the_drawing_thread_trains_what_the_calling_thread_would_and_leaves_the_generator_as_it_would(
        make, monkeypatch):
    ahead, states = _train(make)
    source, counts = _source()
    expected, rng = [], np.random.default_rng(11)
    for _ in range(CFG.epochs):    # the epochs' draws from the caller's generator, one after another
        for _run in loop._epoch_runs(source, CFG, rng, keep_probabilities(counts, CFG.sample), torch.device("cpu")):
            pass
        expected.append(rng.bit_generator.state)
    assert states == expected, "a checkpoint saves the generator's state after the epoch: it must be the drawn one"
    monkeypatch.setattr(loop, "prefetch", _inline)
    inline, inline_states = _train(make)
    assert inline_states == expected
    assert all(torch.equal(a, b) for a, b in zip(ahead, inline))


@pytest.mark.parametrize("workers", [1, 2])
def test_no_thread_draws_pairs_once_a_run_has_raised_between_epochs(make, workers):
    def stop_after_the_first(epoch, stats):
        if epoch == 0:
            raise RuntimeError("stopped")

    before = set(threading.enumerate())
    with pytest.raises(RuntimeError, match="stopped"):
        _train(make, stop_after_the_first, replace(CFG, workers=workers))
    left = [t.name for t in set(threading.enumerate()) - before if t.is_alive()]
    deadline = time.monotonic() + 5.0
    while left and time.monotonic() < deadline:   # a thread that has set its end event may still be exiting
        time.sleep(0.05)
        left = [t.name for t in set(threading.enumerate()) - before if t.is_alive()]
    assert left == []

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

CFG = TrainConfig(epochs=3, batch_size=64, chunk_tokens=4000, seed=5)


def _train(make, random_source, on_epoch=None, config=CFG):
    """The trained tables and the pair generator's state after each epoch, as ``on_epoch`` sees it."""
    source, counts = random_source()
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


def test_one_worker_trains_on_pairs_drawn_by_another_thread(make, random_source, monkeypatch):
    drawn_by = []
    real_runs = loop._epoch_runs

    def noting_thread(*args):
        drawn_by.append(threading.current_thread() is threading.main_thread())
        yield from real_runs(*args)

    monkeypatch.setattr(loop, "_epoch_runs", noting_thread)
    _train(make, random_source)
    assert drawn_by == [False] * CFG.epochs


def test_the_drawing_thread_trains_what_the_calling_thread_would_and_leaves_the_generator_as_it_would(
        make, random_source, monkeypatch):
    ahead, states = _train(make, random_source)
    source, counts = random_source()
    expected, rng = [], np.random.default_rng(11)
    for _ in range(CFG.epochs):    # the epochs' draws from the caller's generator, one after another
        for _run in loop._epoch_runs(source, CFG, rng, keep_probabilities(counts, CFG.sample), torch.device("cpu")):
            pass
        expected.append(rng.bit_generator.state)
    assert states == expected, "a checkpoint saves the generator's state after the epoch: it must be the drawn one"
    monkeypatch.setattr(loop, "prefetch", _inline)
    inline, inline_states = _train(make, random_source)
    assert inline_states == expected
    assert all(torch.equal(a, b) for a, b in zip(ahead, inline))


@pytest.mark.parametrize("workers", [1, 2])
def test_no_thread_draws_pairs_once_a_run_has_raised_between_epochs(make, random_source, workers):
    def stop_after_the_first(epoch, stats):
        if epoch == 0:
            raise RuntimeError("stopped")

    before = set(threading.enumerate())
    with pytest.raises(RuntimeError, match="stopped"):
        _train(make, random_source, stop_after_the_first, replace(CFG, workers=workers))
    left = [t.name for t in set(threading.enumerate()) - before if t.is_alive()]
    deadline = time.monotonic() + 5.0
    while left and time.monotonic() < deadline:   # a thread that has set its end event may still be exiting
        time.sleep(0.05)
        left = [t.name for t in set(threading.enumerate()) - before if t.is_alive()]
    assert left == []


def test_a_ctrl_c_while_a_chunk_is_drawn_returns_once_the_drawing_thread_has_stopped(make, random_source, monkeypatch):
    """Ctrl-C in the training thread while the drawing thread is in the middle of a chunk (here asleep in it): the
    call raises only once that thread has ended, and nothing is drawn after it."""
    drawing, drawn, real_runs, real_epoch = threading.Event(), [], loop._epoch_runs, loop._one_epoch

    def slow_runs(*args):
        for i, run in enumerate(real_runs(*args)):
            if i == 2:
                drawing.set()
                time.sleep(0.5)
            drawn.append(i)
            yield run

    def interrupted(stream, rng):
        for i, run in enumerate(real_epoch(stream, rng)):
            if i == 1:
                assert drawing.wait(5.0)
                raise KeyboardInterrupt
            yield run

    monkeypatch.setattr(loop, "_epoch_runs", slow_runs)
    monkeypatch.setattr(loop, "_one_epoch", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _train(make, random_source)
    seen = len(drawn)
    assert seen >= 3, "the call returned while the drawing thread was still in its chunk"
    time.sleep(0.3)
    assert len(drawn) == seen, "the drawing thread drew on after the call had returned"


def test_the_drawing_thread_holds_about_two_chunks_however_many_the_epochs_have(make, random_source, monkeypatch):
    """The bound of ``docs/word2fun-at-scale.md``: the chunk trained and the next, drawn ahead (chunks of 18 runs
    or more, so that the 16 runs kept ready hold one chunk at most), not every chunk of the epochs ahead: nine
    chunks (three epochs of three), each chunk's tensors counted from their making to their release."""
    import weakref

    alive, peak, runs, real_runs, real_epoch = set(), [0], {}, loop.iter_centre_runs, loop._one_epoch
    def counted(*args, **kwargs):
        for run in real_runs(*args, **kwargs):
            key = getattr(run.words, "chunk_number", None)    # not id(): a freed chunk's id is reused
            if key is None:
                key = run.words.chunk_number = len(runs)
                alive.add(key)
                weakref.finalize(run.words, alive.discard, key)
            peak[0], runs[key] = max(peak[0], len(alive)), runs.get(key, 0) + 1
            yield run

    def slow(stream, rng):           # the drawing thread fills its queue
        for run in real_epoch(stream, rng):
            time.sleep(0.001)
            yield run

    monkeypatch.setattr(loop, "iter_centre_runs", counted)
    monkeypatch.setattr(loop, "_one_epoch", slow)
    _train(make, random_source, config=replace(CFG, sample=0.0))
    assert len(runs) == 9 and min(runs.values()) >= 18
    assert 1 <= peak[0] <= 3


class _MovedTo(Exception):
    """Raised by a model's ``to`` in place of moving it: the device the loop trains on."""


def test_a_bare_cuda_device_is_the_calling_threads_gpu_in_the_threads_the_loop_starts(make, random_source, monkeypatch):
    """The current CUDA device is each thread's own: ``distributed.setup`` sets process ``LOCAL_RANK``'s in the main
    thread, and the drawing thread (and a hogwild worker), on ``cuda:0``, made a bare ``"cuda"``'s pairs there, beside
    a model on ``cuda:LOCAL_RANK`` (a process but the first of a run on several GPUs failed in its first step). The
    loop trains on ``cuda:N``, ``N`` the calling thread's device, which every thread it starts reads the same."""
    from qpnlp import _device

    monkeypatch.setattr(torch.cuda, "current_device", lambda: 3)
    assert _device.with_current_index(torch.device("cuda")) == torch.device("cuda", 3)
    assert _device.with_current_index(torch.device("cuda", 1)) == torch.device("cuda", 1)
    assert _device.with_current_index(torch.device("cpu")) == torch.device("cpu")
    monkeypatch.setattr(loop, "resolve_device", lambda value: torch.device("cuda"))    # no GPU needed
    model = make(50, 8, family="IV")

    def moved_to(device):
        raise _MovedTo(device)

    monkeypatch.setattr(model, "to", moved_to)
    source, counts = random_source()
    with pytest.raises(_MovedTo) as moved:
        loop.train_source(model, source, counts, CFG)
    assert moved.value.args[0] == torch.device("cuda", 3)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA devices")
def test_a_run_on_the_second_gpu_by_set_device_trains_there(make, random_source):
    """What ``distributed.setup`` does in process 1 of a node of GPUs: ``set_device(1)``, then ``device="cuda"``."""
    previous = torch.cuda.current_device()
    torch.cuda.set_device(1)
    try:
        source, counts = random_source()
        model = make(50, 8, family="IV")
        loop.train_source(model, source, counts, replace(CFG, device="cuda", epochs=1))
        assert {p.device for p in model.parameters()} == {torch.device("cuda", 1)}
    finally:
        torch.cuda.set_device(previous)

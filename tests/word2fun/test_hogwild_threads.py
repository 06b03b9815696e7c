"""The hogwild threads of `train_source` (``workers`` > 1) have all ended when it returns or raises.

Both tests failed before the fix: a worker failing while the producer's queue was full left the producer blocked
on it for good (one thread and its sixteen runs more per failed call), and after Ctrl-C the workers went on
training the model after the call had raised.
"""

from __future__ import annotations

import signal
import sys
import threading
import time

import pytest

from qpnlp.word2fun import TrainConfig, loop


def _threads_left(before: set, within: float = 5.0) -> list[str]:
    """The threads started since ``before`` still alive ``within`` seconds from now (none as soon as none is)."""
    deadline = time.monotonic() + within
    while (left := set(threading.enumerate()) - before) and time.monotonic() < deadline:
        time.sleep(0.05)
    return sorted(t.name for t in left)


def test_a_worker_failing_with_the_queue_full_leaves_no_producer_behind(make, random_source, monkeypatch):
    exhausted = threading.Event()
    real_runs = loop._epoch_runs

    def eighteen_runs(*args):
        run = next(real_runs(*args))
        yield from [run] * 18       # one taken by each worker, sixteen fill the queue
        exhausted.set()             # the producer's next put, its end mark, finds the queue full

    def failing_steps(*args, **kwargs):
        def failing(*a, **k):
            exhausted.wait(10)
            raise RuntimeError("boom")
        return failing

    monkeypatch.setattr(loop, "_epoch_runs", eighteen_runs)
    monkeypatch.setattr(loop, "batch_step", failing_steps)
    source, counts = random_source(200)
    before = set(threading.enumerate())
    with pytest.raises(RuntimeError, match="boom"):
        loop.train_source(make(50, 8, family="IV"), source, counts, TrainConfig(epochs=1, batch_size=64, workers=2))
    assert exhausted.is_set()
    assert _threads_left(before) == [], "the prefetch producer stayed blocked on its full queue"


@pytest.mark.skipif(sys.platform == "win32", reason="Windows: no pthread_kill or pthread_sigmask to send a Ctrl-C")
@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="Ctrl-C goes to the main thread")
def test_ctrl_c_returns_once_the_workers_have_stopped_training(make, random_source, monkeypatch):
    real, calls = loop.batch_step, [0]

    def steps(*args, **kwargs):
        step = real(*args, **kwargs)

        def interrupting(*a, **k):
            calls[0] += 1
            if calls[0] == 1:
                signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)    # Ctrl-C mid-epoch
            time.sleep(0.005)
            return step(*a, **k)
        return interrupting

    monkeypatch.setattr(loop, "batch_step", steps)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    # a harness may start the suite with SIGINT blocked (as the signal tests of test_distributed.py allow for): the
    # Ctrl-C would stay pending and train_source end normally
    mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    source, counts = random_source(200)
    before = set(threading.enumerate())
    try:
        with pytest.raises(KeyboardInterrupt):
            loop.train_source(make(50, 8, family="IV"), source, counts,
                              TrainConfig(epochs=1, batch_size=64, workers=2))
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        signal.signal(signal.SIGINT, previous)
    steps_when_raised = calls[0]
    assert _threads_left(before, within=1.0) == []
    time.sleep(0.2)
    assert calls[0] == steps_when_raised, "a worker trained the model on after train_source had raised"

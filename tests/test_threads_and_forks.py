"""qpnlp called from a thread pool (a web service scoring with a trained model) and from processes made by
``fork`` (torch DataLoader workers, ``multiprocessing`` pools on Linux): the same call from eight threads released
together gives what one thread gives, and a forked child calls what its parent used, also while another thread of
the parent held one of qpnlp's locks at the fork (that thread is not in the child: a lock it held stays held)."""

import multiprocessing
import os
import platform
import sys
import threading
import traceback

import pytest
import torch

from qpnlp import _numba
from qpnlp._cache import locked_cache

_FORK = multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() else None
needs_fork = pytest.mark.skipif(_FORK is None, reason="no fork start method on this platform")
# Python 3.12+ warns of a fork while other threads run, which is the very case tested here.
fork_with_threads = pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
THREADS = 8


def _in_forked_child(check) -> int | None:
    """The exit code of a child made by fork that runs ``check()``: 0 where it returned True, 1 where False, 2 where
    it raised (the traceback on stderr); None where it had not ended after a minute (it waited for ever)."""
    def child():
        try:
            ok = check()
        except BaseException:  # noqa: BLE001 - reported by the exit code
            traceback.print_exc()
            os._exit(2)
        os._exit(0 if ok else 1)

    process = _FORK.Process(target=child)
    process.start()
    process.join(60)
    if process.is_alive():
        process.kill()
        process.join()
        return None
    return process.exitcode


def _while_a_thread_is_inside(block, check) -> int | None:
    """:func:`_in_forked_child` of ``check`` forked while another thread runs ``block(inside, leave)`` (which sets
    the event ``inside`` where it holds what is tested, then waits for ``leave``)."""
    inside, leave = threading.Event(), threading.Event()
    holder = threading.Thread(target=block, args=(inside, leave))
    holder.start()
    try:
        assert inside.wait(30)
        return _in_forked_child(check)
    finally:
        leave.set()
        holder.join(30)


def _from_threads(call) -> list:
    """``call()`` in :data:`THREADS` threads released together by a barrier: their results, in thread order."""
    start, results = threading.Barrier(THREADS), [None] * THREADS

    def run(i):
        start.wait(30)
        try:
            results[i] = call()
        except Exception as error:  # noqa: BLE001 - compared below
            results[i] = error

    threads = [threading.Thread(target=run, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return results


# --------------------------------------------------------------------------- locks held at the fork
@needs_fork
@fork_with_threads
@pytest.mark.parametrize("maxsize", [1, None])
def test_a_forked_child_computes_the_value_a_thread_of_its_parent_was_computing(maxsize):
    """``locked_cache`` (the pretrained vectors, the compiled loops) holds a lock per value while it is computed:
    a process forked meanwhile (a DataLoader worker started while another thread reads the vectors, seconds) kept
    that lock held, with no thread to release it, and its own first call for the value waited for ever."""
    parent = os.getpid()

    @locked_cache(maxsize=maxsize)
    def read(name):
        if os.getpid() == parent:
            entered.set()
            assert released.wait(30)
        return f"{name} read by {os.getpid()}"

    entered = released = None

    def reading(inside, leave):
        nonlocal entered, released
        entered, released = inside, leave
        read("glove")

    code = _while_a_thread_is_inside(reading, lambda: read("glove") == f"glove read by {os.getpid()}")
    assert code == 0, "the forked child waited for ever for its parent's lock" if code is None else code
    assert read("glove") == f"glove read by {parent}"            # the parent's thread filled the parent's cache


@needs_fork
@fork_with_threads
def test_a_forked_child_builds_the_model_it_builds_alone_while_a_parent_thread_builds_one():
    """A measurement built from a generator draws torch's orthogonal completion inside ``drawing_from``, under
    one process-wide lock: a child forked while another thread of its parent built a model (models built in a
    thread pool, a DataLoader started meanwhile) inherited that lock held, and its first such model waited for
    ever."""
    from qpnlp.measurement import ProjectiveMeasurement
    from qpnlp.measurement._module import drawing_from

    def build():
        m = ProjectiveMeasurement(8, 3, orthonormal=True, generator=torch.Generator().manual_seed(0))
        return m.state_dict()

    alone = build()

    def building(inside, leave):
        with drawing_from(torch.Generator().manual_seed(1)):
            inside.set()
            assert leave.wait(30)

    def same_model():
        built = build()
        return built.keys() == alone.keys() and all(torch.equal(built[k], alone[k]) for k in alone)

    code = _while_a_thread_is_inside(building, same_model)
    assert code == 0, "the forked child waited for ever for its parent's lock" if code is None else code


# --------------------------------------------------------------------------- compiled loops (numba)
compiled = pytest.mark.skipif(not _numba.enabled("QPNLP_TRIG_COMPILED"), reason="numba is not installed")


def _angles() -> torch.Tensor:
    """float32 angles enough for ``qpnlp._trig``'s compiled loop (:data:`~qpnlp._trig.NUMPY_MIN_NUMEL`)."""
    from qpnlp import _trig

    return torch.linspace(-40.0, 40.0, _trig.NUMPY_MIN_NUMEL)


@compiled
def test_eight_threads_calling_a_fresh_compiled_loop_at_once_get_what_one_thread_gets():
    """The first call of a numba dispatcher compiles it (or loads it from the disk cache): eight threads making
    that first call at once (a fresh dispatcher, ``jit``'s cache emptied) share one dispatcher and compute what one
    thread computes."""
    from qpnlp import _trig

    x = _angles()
    alone = _trig.cos_sin(x)
    _numba.jit.cache_clear()
    results = _from_threads(lambda: (_numba.jit(_trig._elementary.sincos), _trig.cos_sin(x)))
    assert not [r for r in results if isinstance(r, Exception)], results
    assert len({id(loop) for loop, _ in results}) == 1
    assert all(torch.equal(c, alone[0]) and torch.equal(s, alone[1]) for _, (c, s) in results)


def _tiny_word2fun():
    from qpnlp import word2fun
    from qpnlp.data import TimestampedCorpus

    docs = [(1900 + i % 10, ["war", "peace", "treaty", "army"][i % 3:] + ["trade"]) for i in range(60)]
    result = word2fun.fit(TimestampedCorpus.from_pairs(docs), word2fun.TrainConfig(epochs=1), dim=4, min_count=1)
    return result.vectors.model.state_dict()


def _same_tensors(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@needs_fork
@fork_with_threads
def test_a_forked_child_trains_word2fun_with_the_loops_its_parent_compiled():
    """Word2Fun's step is a numba loop, compiled in the parent: a DataLoader worker or a pool process forked after
    the parent trained runs the same machine code (and its own prefetch and worker threads) to the same vectors."""
    alone = _tiny_word2fun()
    assert _in_forked_child(lambda: _same_tensors(_tiny_word2fun(), alone)) == 0


def _tiny_word2fun_in_threads():
    """:func:`_tiny_word2fun` with its step in two threads (numba's), on a batch of more tokens than the parts."""
    from qpnlp import word2fun
    from qpnlp.data import TimestampedCorpus

    docs = [(1900 + i % 10, [f"w{(i * 7 + j) % 50}" for j in range(20)]) for i in range(200)]
    config = word2fun.TrainConfig(epochs=1, batch_size=256, step_threads=2)
    result = word2fun.fit(TimestampedCorpus.from_pairs(docs), config, dim=8, min_count=1)
    return result.vectors.model.state_dict()


@needs_fork
@fork_with_threads
@compiled
def test_a_child_forked_after_the_step_ran_in_threads_trains_in_threads_too():
    """Word2Fun's step in threads runs on numba's TBB threading layer (the package ``tbb`` of the extra ``fast``,
    loaded by ``qpnlp._numba``), which survives fork: a child forked after the parent's threads ran trains in
    threads again, to the same vectors (a step makes the same updates in any number of threads), instead of
    waiting for ever on GNU OpenMP's threads, numba's layer without TBB. The layer is numba's for the process, so
    the test asserts it where the extra installs TBB (Linux x86-64) and is meaningless elsewhere."""
    if not _numba.threads_fork_safe():
        assert not (sys.platform == "linux" and platform.machine() == "x86_64"), \
            "numba's threading layer is not TBB: is the tbb package installed (extra 'fast')?"
        pytest.skip("numba's threading layer here is not TBB (no tbb wheel for this platform)")
    alone = _tiny_word2fun_in_threads()
    assert _in_forked_child(lambda: _same_tensors(_tiny_word2fun_in_threads(), alone)) == 0


def test_eight_word2fun_trainings_in_threads_at_once_are_the_training_alone_and_put_torch_threads_back():
    """Eight Word2Fun fits at once (each in a one-torch-thread block of ``qpnlp._threads.torch_threads``, each
    with its own prefetch thread) train what one fit trains, and the count of torch threads is the caller's
    afterwards, whatever order the blocks ended in."""
    alone, before = _tiny_word2fun(), torch.get_num_threads()
    results = _from_threads(_tiny_word2fun)
    assert not [r for r in results if isinstance(r, Exception)], results
    assert all(_same_tensors(r, alone) for r in results)
    assert torch.get_num_threads() == before


def test_eight_torch_threads_blocks_ending_in_any_order_leave_the_count_they_found():
    """``torch.set_num_threads`` is process-wide: eight threads each setting their own count for a block, all open
    at once and ending in the order the scheduler gives, leave the count that was set before the first began."""
    from qpnlp._threads import torch_threads

    before, ended = torch.get_num_threads(), threading.Barrier(THREADS)

    def block():
        with torch_threads(1 + threading.get_ident() % 3):
            ended.wait(30)                      # every block is open here
        return torch.get_num_threads()

    assert not [r for r in _from_threads(block) if isinstance(r, Exception)]
    assert torch.get_num_threads() == before

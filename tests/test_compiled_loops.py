"""qpnlp._numba: the switches of the compiled loops (numba) and their index guard."""

import pytest
import torch

from qpnlp import _numba
from qpnlp.nn import polar_rows
from qpnlp.training import adam_rows
from qpnlp.word2fun import pair_loop

pytest.importorskip("numba", reason="the compiled loops need numba (the extra 'fast', in 'test')")


def test_qpnlp_compiled_0_turns_every_compiled_loop_off(monkeypatch):
    assert adam_rows.available() and polar_rows.available() and pair_loop.available()
    monkeypatch.setenv("QPNLP_COMPILED", "0")
    assert not (adam_rows.available() or polar_rows.available() or pair_loop.available())


def test_each_loop_has_its_own_switch(monkeypatch):
    monkeypatch.setenv("QPNLP_LOOKUP_COMPILED", "0")
    assert not polar_rows.available() and adam_rows.available() and pair_loop.available()


def test_without_numba_nothing_is_compiled(monkeypatch):
    monkeypatch.setattr(_numba, "HAVE_NUMBA", False)
    assert not (adam_rows.available() or polar_rows.available() or pair_loop.available())


def test_takes_contiguous_cpu_tensors_of_one_float_dtype():
    x = torch.zeros(3, 4)
    assert _numba.takes(x, x.clone()) and _numba.takes(x.double())
    assert not _numba.takes(x, x.double()) and not _numba.takes(x.t()) and not _numba.takes(x.half())
    assert not _numba.takes(torch.zeros(3, dtype=torch.int64))


def test_check_rows_names_the_range():
    _numba.check_rows(torch.tensor([0, 4]), 5, "row")
    _numba.check_rows(torch.tensor([], dtype=torch.int64), 0, "row")
    with pytest.raises(IndexError, match=r"token ids must lie in \[0, 5\); got 0..5"):
        _numba.check_rows(torch.tensor([0, 5]), 5, "token")


def test_a_numba_that_does_not_import_leaves_the_torch_ops_on(monkeypatch):
    """An installed numba that fails to import (built for another NumPy) is found by ``find_spec``; every compiled
    path raised its ImportError (a QPDN step, Word2Fun's ``fit``) instead of falling back to the torch ops."""
    import importlib.util
    import sys

    from qpnlp import _optional
    from qpnlp.training.sparse_rmsprop import RowSparseAdam

    monkeypatch.setattr(_numba, "HAVE_NUMBA", True)
    monkeypatch.setattr(_optional, "IMPORTS", {})                      # not tried yet in this process
    find_spec = importlib.util.find_spec                               # installed, ...
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: object() if name == "numba" else find_spec(name, *a))
    monkeypatch.setitem(sys.modules, "numba", None)                    # ... but import numba -> ImportError
    emb = torch.nn.Embedding(10, 4, sparse=True)
    optimiser = RowSparseAdam(emb.parameters(), lr=0.1)
    emb(torch.tensor([1, 3, 3])).sum().backward()
    with pytest.warns(RuntimeWarning, match="numba is installed but does not import"):
        optimiser.step()
    assert not (adam_rows.available() or polar_rows.available() or pair_loop.available())
    assert pair_loop.describe("cpu") == "SGD step: torch ops (numba is installed but does not import)"


def test_the_training_log_names_the_switch_that_is_off(monkeypatch):
    monkeypatch.setenv("QPNLP_COMPILED", "0")
    assert pair_loop.describe("cpu") == "SGD step: torch ops (QPNLP_COMPILED=0)"


def test_a_loop_compiles_without_a_writable_cache_directory(monkeypatch):
    """numba refuses cache=True where neither the package's __pycache__ nor the user's cache directory is writable
    (qpnlp installed by root, a read-only home): every compiled path raised RuntimeError "cannot cache function"."""
    from numba.core import caching

    monkeypatch.setattr(caching.CacheImpl, "_locator_classes", [])      # what numba finds in such a place
    _numba._warn_no_cache.cache_clear()

    def add_one(x):  # pragma: no cover - compiled
        return x + 1

    with pytest.warns(RuntimeWarning, match="NUMBA_CACHE_DIR") as record:
        loop = _numba.jit.__wrapped__(add_one)
    assert loop(2) == 3
    assert record[0].filename == __file__           # the caller's line, as qpnlp's other warnings name it

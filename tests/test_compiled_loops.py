"""qpnlp._numba: the switches of the compiled loops (numba), their index guard and their disk cache."""

import os
import subprocess
import sys
import textwrap

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


#: A package of three modules, as qpnlp's word2fun loops: ``outer`` calls ``middle``'s compiled kernel
#: (``fused_runs`` -> ``_fused_kernel``), whose own helper ``_inner`` calls ``helper.helper`` in a third file.
_FILES = {
    "__init__.py": "",
    "helper.py": """
        def helper(x):
            return x + 1.0
        """,
    "middle.py": """
        from qpnlp import _numba
        from stale.helper import helper as _helper

        def _inner(x):
            return _helper(x) * 2.0

        def middle(x):
            return _inner(x) + 0.5

        _PYTHON = {"_inner": _inner, "_helper": _helper}

        def kernel():
            return _numba.jit_calling(middle, {name: _numba.jit(f) for name, f in _PYTHON.items()})
        """,
    "outer.py": """
        from qpnlp import _numba
        from stale import middle
        from stale.middle import middle as _middle

        def outer(x):
            return _middle(x) - 0.5

        def kernel():
            return _numba.jit_calling(outer, {"_middle": middle.kernel()})
        """,
}

#: One process: the outer loop's result for 1.0, and whether it was loaded from the disk cache.
_RUN = """
from stale import outer
k = outer.kernel()
value = k(1.0)
print(value, sum(k.stats.cache_hits.values()), sum(k.stats.cache_misses.values()))
"""


def _run_in_new_process(root):
    """``_RUN``'s three numbers in a new process (the package under ``root``, numba's cache in its
    ``__pycache__``)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    env.pop("NUMBA_CACHE_DIR", None)
    out = subprocess.run([sys.executable, "-c", _RUN], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    value, hits, misses = out.stdout.split()
    return float(value), int(hits), int(misses)


def test_a_changed_helper_in_another_module_is_compiled_again(tmp_path):
    """numba checks only the source file of the function it loads from its cache: a loop whose helper in another
    module had changed kept the old helper's machine code, inlined, until its ``__pycache__`` entries were deleted
    (seen with ``qpnlp._elementary.sincos`` under ``qpnlp.nn.order_mean_loop``). The loop's entry now follows the
    helpers it reaches, also through another compiled loop; unchanged, the next process loads it from the cache."""
    package = tmp_path / "stale"
    package.mkdir()
    for name, text in _FILES.items():
        (package / name).write_text(textwrap.dedent(text))
    assert _run_in_new_process(tmp_path) == (4.0, 0, 1)            # 2 * (1 + 1): compiled and saved
    assert _run_in_new_process(tmp_path) == (4.0, 1, 0)            # nothing changed: loaded from the cache
    helper = package / "helper.py"
    helper.write_text(textwrap.dedent(_FILES["helper.py"]).replace("1.0", "2.0"))
    stat = helper.stat()
    os.utime(helper, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))    # a later mtime, whatever the clock
    assert _run_in_new_process(tmp_path) == (6.0, 0, 1)            # 2 * (1 + 2): the new helper, compiled again
    assert _run_in_new_process(tmp_path) == (6.0, 1, 0)


def test_an_inlined_helper_is_compiled_only_inside_its_loop(tmp_path, monkeypatch):
    """A helper compiled on its own is linked into each loop that calls it and optimised again there; a process binds
    calls to the copy it loaded first, so under fast-math flags a process that compiled a loop and one that loaded it
    from the cache could round differently. An inlined helper (``jit(..., inline=True)``) has no copy of its own."""
    (tmp_path / "inlined_loop.py").write_text(textwrap.dedent("""
        def _helper(x):
            return x * 2.0

        def loop(x):
            return _helper(x) + 1.0
        """))
    monkeypatch.syspath_prepend(str(tmp_path))
    import inlined_loop

    helper = _numba.jit(inlined_loop._helper, frozenset({"reassoc", "contract"}), inline=True)
    loop = _numba.jit_calling(inlined_loop.loop, {"_helper": helper}, frozenset({"reassoc", "contract"}))
    assert loop(1.5) == 4.0
    assert loop.signatures and not helper.signatures


def _fork_safe_in_a_fresh_process(**env) -> subprocess.CompletedProcess:
    """``qpnlp._numba.threads_fork_safe()`` and numba's layer, printed by a new process (the layer is chosen once per
    process) with ``env`` set in its environment (None: removed)."""
    code = ("import warnings; warnings.simplefilter('always')\n"
            "from qpnlp import _numba; safe = _numba.threads_fork_safe()\n"
            "import numba, numba.np.ufunc.parallel as p\n"
            "print(safe, numba.threading_layer() if p._is_initialized else None)\n")
    environment = {k: v for k, v in {**os.environ, **env}.items() if v is not None}
    return subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(not (sys.platform == "linux" and os.uname().machine == "x86_64"),
                    reason="the extra 'fast' installs TBB on Linux x86-64 only")
def test_numba_takes_pips_tbb_whose_threads_survive_fork():
    """numba opens ``libtbb.so.12`` by name, which the loader does not find in a virtual environment's ``lib``
    where pip's ``tbb`` puts it: qpnlp loads it first, so numba's layer is TBB (it fell back to GNU OpenMP)."""
    out = _fork_safe_in_a_fresh_process(NUMBA_THREADING_LAYER=None)
    assert out.stdout.split() == ["True", "tbb"], out.stdout + out.stderr


def test_a_threading_layer_that_does_not_start_gives_one_thread_with_a_warning():
    """``NUMBA_THREADING_LAYER`` naming no layer (or one that does not load): numba raises where its threads
    start; the step's threads fall back to one, and the warning says why."""
    out = _fork_safe_in_a_fresh_process(NUMBA_THREADING_LAYER="no-such-layer")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "None"], out.stdout
    assert "numba's threads do not start" in out.stderr and "no-such-layer" in out.stderr


def test_gnu_openmp_is_not_counted_as_fork_safe():
    """The layer asked for is kept (``NUMBA_THREADING_LAYER=omp``), and it is not TBB: no threads by default."""
    out = _fork_safe_in_a_fresh_process(NUMBA_THREADING_LAYER="omp")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "omp"], out.stdout

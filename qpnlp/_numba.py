"""Optional compiled loops (numba): availability, lazy compilation and the checks they need.

A few hot paths have no fused torch kernel on CPU (a gather, some arithmetic and
a scatter over the same rows); qpnlp writes them once as plain loops and
compiles them with numba (the extra ``fast``). Each such module keeps its torch
ops as the fallback and asks this module whether to take the loop:

* :data:`HAVE_NUMBA`: numba is installed (it is imported, and a loop compiled,
  on first use, so ``import qpnlp`` does not pay for it);
* :func:`imports`: numba also imports (one that is installed but broken, e.g.
  built for another NumPy, warns once and leaves the torch ops on);
* :func:`enabled`: installed, importable, and the loop's environment variable is not ``0`` (read at each call, by
  :func:`qpnlp._env.flag`: ``0``/``false``/``no``/``off`` turn a loop off);
* :func:`takes`: the tensors are CPU, contiguous and of one float dtype;
* :func:`jit`: the compiled loop (cached per function and on disk; threads asking for one loop at once wait for
  one compilation);
* :func:`threads_at_most`: the threads a parallel loop (``jit(..., parallel=True)``) may be given;
* :func:`threads_fork_safe`: whether those threads survive ``fork`` (numba's TBB threading layer, which pip's
  ``tbb`` package gives it through :func:`_load_pip_tbb`);
* :func:`jit_calling`: a loop compiled after the helpers it calls are bound to their compiled (or inlined) versions;
* :func:`check_rows`: a compiled loop that does not check its indices has
  their range checked before it runs, whatever the validation setting (the
  loops that check each index as they read, and stop, call it for the message).

numba's disk cache reuses a loop's machine code while the loop's own source file is unchanged, also when a function
it calls in another file has changed (the old one is inlined in it; numba's docs list this among the cache's
limitations). So :func:`jit` gives a loop that reaches functions of other files (the Python functions, or numba
dispatchers, that its code names as globals or closure variables, and theirs in turn: ``_fused_kernel._run`` ->
``_fused_kernel._step`` -> ``_elementary.sincos``) a cache entry of its own per version of those files: it compiles
a copy of the loop (the same code, globals and line) named ``<name>__callees_<hash>``, the hash of their sources,
and numba names its cache files after that name. Changed helpers give a new name and a fresh compilation (the old
entries stay in ``__pycache__``, unused, until deleted); unchanged, every process loads the loop from the cache.
Not followed: a function reached as a module's attribute (``module.f`` in the loop) and a constant imported from
another file.

Users: :mod:`qpnlp.word2fun.pair_loop` (``QPNLP_WORD2FUN_COMPILED``),
:mod:`qpnlp.training.adam_rows` (``QPNLP_SPARSE_ADAM_COMPILED``),
:mod:`qpnlp.nn.polar_rows` (``QPNLP_LOOKUP_COMPILED``),
:mod:`qpnlp.nn.order_mean_loop` (``QPNLP_ORDER_MEAN_COMPILED``) and ``qpnlp._trig``
(``QPNLP_TRIG_COMPILED``). ``QPNLP_COMPILED=0``
turns all of them off.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import importlib.metadata
import importlib.util
import inspect
import sys
import types
import warnings
from collections.abc import Callable, Mapping

import numpy as np
import torch

from qpnlp import _env, _optional
from qpnlp._cache import locked_cache
from qpnlp._stacklevel import outside_qpnlp

#: Whether numba (the extra ``fast``) is installed.
HAVE_NUMBA = importlib.util.find_spec("numba") is not None

#: The switches of the compiled loops: all of them, then each loop's own.
SWITCHES = ("QPNLP_COMPILED", "QPNLP_WORD2FUN_COMPILED", "QPNLP_SPARSE_ADAM_COMPILED", "QPNLP_LOOKUP_COMPILED",
            "QPNLP_ORDER_MEAN_COMPILED", "QPNLP_TRIG_COMPILED")

__all__ = ["HAVE_NUMBA", "SWITCHES", "imports", "enabled", "check_switches", "takes", "scalar", "jit",
           "threads_at_most", "threads_fork_safe", "jit_calling", "check_rows"]

#: The TBB library that numba's ``tbb`` threading layer opens by this name (Linux).
_TBB_LIBRARY = "libtbb.so.12"

def imports() -> bool:
    """Whether numba imports, tried once (``qpnlp._optional.imports``): an installed numba that fails to import
    (built for another NumPy, a mismatched llvmlite) warns and is treated as missing, so that the torch ops run
    instead of every compiled path raising."""
    _load_pip_tbb()
    return _optional.imports("numba", "qpnlp's compiled loops are off and torch ops run instead")


@functools.cache
def _load_pip_tbb() -> None:
    """Load the TBB library of pip's ``tbb`` package (``<environment>/lib/libtbb.so.12``, installed with the extra
    ``fast`` on Linux x86-64), so that numba's threads run on its ``tbb`` threading layer, which survives ``fork``.

    numba looks TBB up by the library's name (``ctypes.CDLL("libtbb.so.12")``), which the dynamic loader finds in
    the system's directories but not in a virtual environment's ``lib``; so numba fell back to its ``omp`` layer
    (GNU OpenMP), whose threads a child forked after they ran can wait on for ever. A library already loaded is
    found by its name: loading it here, before numba starts its threads, is enough. Nothing where the package is
    absent (numba then takes its next layer, as before) or the platform is not Linux.
    """
    if sys.platform != "linux":
        return
    try:
        files = importlib.metadata.files("tbb") or ()
    except importlib.metadata.PackageNotFoundError:
        return
    for file in files:
        if file.name == _TBB_LIBRARY:
            try:
                ctypes.CDLL(str(file.locate()), mode=ctypes.RTLD_GLOBAL)
            except OSError:             # another architecture, a broken install: numba takes its next layer
                pass
            return


def enabled(variable: str) -> bool:
    """Whether a compiled loop may run: numba is installed and imports (:func:`imports`, tried at the first call
    that gets this far), and neither ``QPNLP_COMPILED`` nor the loop's own environment ``variable`` is off
    (:func:`qpnlp._env.flag`; a value that is no switch raises ``ValueError``, with numba or without)."""
    switches = [_env.flag(name, True) for name in ("QPNLP_COMPILED", variable)]     # both read: each is checked
    return HAVE_NUMBA and all(switches) and imports()


def check_switches() -> None:
    """Raise ``ValueError`` for a switch of :data:`SWITCHES` whose value is no switch (the CLI checks them before a
    command runs, instead of where a loop is first asked)."""
    for name in SWITCHES:
        _env.flag(name, True)


def takes(*tensors: torch.Tensor) -> bool:
    """Whether a compiled loop can read these float tensors in place: CPU, one dtype (float32 or float64), contiguous."""
    dtype = tensors[0].dtype
    return dtype in (torch.float32, torch.float64) and all(
        t.device.type == "cpu" and t.dtype == dtype and t.is_contiguous() for t in tensors)


def scalar(t: torch.Tensor, value: float):
    """``value`` as a numpy scalar of ``t``'s float dtype: what a loop's constants must be so that the arithmetic
    stays in that dtype (torch casts a Python scalar to the tensor's dtype the same way)."""
    return (np.float32 if t.dtype == torch.float32 else np.float64)(value)


#: numba's parallel transformations that :func:`jit` turns on with ``parallel``: only the loops written ``prange``
#: (array expressions and allocations stay serial, so that only the written parts run in threads).
_PRANGE_ONLY = dict(prange=True, comprehension=False, numpy=False, reduction=False, setitem=False, stencil=False,
                    fusion=False, inplace_binop=False)


@locked_cache(maxsize=None)
def jit(fn, fastmath: frozenset[str] = frozenset(), inline: bool = False, parallel: bool = False):
    """``fn`` compiled by numba in nopython mode, without the GIL, cached on disk.

    One dispatcher per process and arguments, also when threads ask for the same loop at once: the others wait for
    the first (``qpnlp._cache.locked_cache``) and get its dispatcher, which numba compiles once per signature, at
    its first call. With ``functools.cache`` each thread could make a dispatcher of its own, and each compiled (or
    loaded from the disk cache) the loop again, seconds each.

    ``fastmath`` names the LLVM flags allowed (e.g. ``{"reassoc", "contract"}`` to vectorise a sum);
    empty, the loop keeps IEEE arithmetic operation for operation. Floating-point errors follow numpy (and
    torch): a division by zero gives inf or NaN instead of raising, which also lets LLVM vectorise divisions.

    numba keeps its cache beside the module (``__pycache__``) or else in the user's cache directory, and writes it
    atomically (processes compiling at once each leave whole files). Where neither is writable (qpnlp installed
    by root, a read-only home) it refuses ``cache=True``: the loop is then compiled in every process, with a
    warning (``_warn_no_cache``), instead of every compiled path raising RuntimeError. A loop that calls functions
    of other files is cached under a name that carries their sources' hash (:func:`_keyed_by_callees`).

    ``inline``: a helper that numba inlines where a loop calls it (``inline="always"``: its IR is pasted into the
    caller's before typing, and compiled with the caller's ``fastmath``), instead of a function compiled on its own.
    numba links a copy of a function compiled on its own into each loop that calls it, optimised again there, and a
    process binds each call to the copy it loaded first: under ``reassoc`` or ``contract`` the copies may round
    differently, so a process that compiled a loop and one that loaded it from the disk cache could differ in the
    last bits. An inlined helper has no copy of its own: the loop is one function, the same code in every process.

    ``parallel``: the loops written ``numba.prange`` run in numba's threads (``_PRANGE_ONLY``; serial without it,
    where ``prange`` is ``range``). numba's cache does not tell the two apart (its key is the code and the argument
    types), so the parallel loop is compiled as a copy named ``<name>__parallel``.
    """
    _load_pip_tbb()                     # before numba starts its threads (a parallel loop's first call)
    import numba

    fn = _keyed_by_callees(_renamed(fn, "parallel") if parallel else fn)
    options = dict(nogil=True, error_model="numpy", fastmath=set(fastmath) or False,
                   inline="always" if inline else "never", parallel=_PRANGE_ONLY if parallel else False)
    try:
        return numba.njit(cache=True, **options)(fn)
    except RuntimeError as error:           # numba's "cannot cache function ...: no locator available for file ..."
        if "cannot cache" not in str(error):
            raise
        _warn_no_cache()
        return numba.njit(cache=False, **options)(fn)


def threads_at_most(threads: int) -> int:
    """``threads`` (at least 1), at most numba's own number (``NUMBA_NUM_THREADS``, the cores by default): what
    ``numba.set_num_threads`` accepts for a loop compiled with ``parallel``."""
    if threads <= 1:
        return 1
    import numba

    return min(int(threads), numba.config.NUMBA_NUM_THREADS)


@functools.cache
def threads_fork_safe() -> bool:
    """Whether the threads of a parallel loop (``jit(..., parallel=True)``) survive ``fork``: numba's threading
    layer, started here where it has not started yet (the first layer that loads of ``tbb``, ``omp``,
    ``workqueue``, or ``NUMBA_THREADING_LAYER``), is ``tbb``. False without numba.

    Under ``omp`` (GNU OpenMP, numba's layer where TBB is missing) a child forked after the threads ran can hang in
    its first parallel loop; ``workqueue`` survives ``fork`` but wakes its threads too slowly to gain on two cores
    (Word2Fun's step, 2026-12-03). So Word2Fun's step runs in threads by default only where this is True
    (:func:`qpnlp.word2fun.config.step_threads`). False, with a warning, where numba's threads do not start
    (``NUMBA_THREADING_LAYER`` names a layer that is unknown or does not load).
    """
    if not (HAVE_NUMBA and imports()):
        return False
    import numba

    try:
        numba.get_num_threads()         # starts numba's threads, so that its layer is known
    except ValueError as error:         # NUMBA_THREADING_LAYER names a layer that is unknown or does not load
        warnings.warn(f"numba's threads do not start ({error}); Word2Fun's step runs in one thread",
                      RuntimeWarning, stacklevel=outside_qpnlp())
        return False
    return numba.threading_layer() == "tbb"


def jit_calling(loop, helpers: Mapping[str, Callable], fastmath: frozenset[str] = frozenset(), parallel: bool = False):
    """``loop`` compiled by :func:`jit` after each name of ``helpers`` is bound, in ``loop``'s module, to the given
    function (the helper's compiled version): numba resolves a global when it compiles the function that calls it,
    and a plain Python function there does not compile. The loop's disk cache follows the helpers' source files
    (:func:`jit`): a changed helper compiles the loop again.

    Parameters
    ----------
    loop : function
        The loop to compile, defined at the top level of its module (its globals are that module's).
    helpers : mapping of str to function
        Global name of ``loop``'s module -> the compiled function it names from now on (``jit(helper)``, or a loop
        compiled by another ``jit_calling``).
    fastmath : frozenset of str
        The LLVM flags allowed in ``loop`` (:func:`jit`).
    parallel : bool
        Whether the ``prange`` loops run in threads (:func:`jit`).
    """
    loop.__globals__.update(helpers)
    return jit(loop, fastmath, parallel=parallel)


def _keyed_by_callees(fn):
    """``fn``, or, where it reaches functions of other source files (:func:`_reached`), a copy of it (same code,
    globals, defaults and first line: the same compiled code) whose ``__qualname__`` is
    ``<qualname>__callees_<hash>``, the hash (SHA-256, 16 hex digits) of those files' sources.

    numba names a function's cache files after its qualified name and line, and checks only its own file: the
    copy's entry is found again while those files are unchanged, and a new one is compiled when any changes.
    """
    own = inspect.getfile(fn)
    sources = sorted({_source(g) for g in _reached(fn) if inspect.getfile(g) != own})
    if not sources:
        return fn
    digest = hashlib.sha256(b"".join(hashlib.sha256(s).digest() for s in sources)).hexdigest()[:16]
    return _renamed(fn, f"callees_{digest}")


def _renamed(fn, suffix: str):
    """A copy of ``fn`` (same code, globals, defaults and first line) whose ``__qualname__`` is
    ``<qualname>__<suffix>``: the name numba gives its cache files."""
    copy = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__, copy.__doc__ = fn.__kwdefaults__, fn.__doc__
    copy.__qualname__ = f"{fn.__qualname__}__{suffix}"
    return copy


def _reached(fn) -> set:
    """The Python functions ``fn`` calls, and those they call, transitively (:func:`_called`; ``fn`` too)."""
    seen, todo = {fn}, [fn]
    while todo:
        for g in _called(todo.pop()):
            if g not in seen:
                seen.add(g)
                todo.append(g)
    return seen


def _called(fn):
    """The Python functions that ``fn``'s code (nested code too) names as globals, and those of its closure: a
    numba dispatcher stands for the function it compiles (``py_func``). A name that is also an attribute's
    (``np.empty``) is looked up too: a function found that way only adds to the hash."""
    codes, names = [fn.__code__], set()
    while codes:
        code = codes.pop()
        names.update(code.co_names)
        codes += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    values = [fn.__globals__.get(name) for name in names]
    values += [cell.cell_contents for cell in fn.__closure__ or ()]
    values = [getattr(v, "py_func", v) for v in values]
    return [v for v in values if isinstance(v, types.FunctionType)]


def _source(fn) -> bytes:
    """The source of ``fn``'s module (``inspect.getsource``, which also reads a zipped one), or ``fn``'s bytecode
    where there is none (a function made by ``exec``)."""
    try:
        return inspect.getsource(inspect.getmodule(fn)).encode()
    except (OSError, TypeError):
        return fn.__code__.co_code


@functools.cache
def _warn_no_cache() -> None:
    """Say once per process that numba has no writable cache directory."""
    warnings.warn("numba finds no writable directory for its cache (beside qpnlp, or the user's cache directory): "
                  "qpnlp's compiled loops are compiled again in every process (set NUMBA_CACHE_DIR to a writable "
                  "directory to keep them)", RuntimeWarning, stacklevel=outside_qpnlp())


def check_rows(index: torch.Tensor, rows: int, what: str) -> None:
    """Raise ``IndexError`` unless every entry of ``index`` lies in ``[0, rows)``.

    Not ``qpnlp.nn._checks.check_ids``: that value check is off while validation is off, and this one
    guards memory (a compiled loop would write outside the table), so it always runs.
    """
    if index.numel():
        lo, hi = (int(x) for x in torch.aminmax(index))
        if lo < 0 or hi >= rows:
            raise IndexError(f"{what} ids must lie in [0, {rows}); got {lo}..{hi}")

"""hypothesis strategies for states, mixtures, unitaries, isometries, projectors and POVMs.

Each strategy draws the structural parameters (dimension, batch shape,
dtype) and a seed, then samples with a seeded ``torch.Generator``, so failing
examples shrink to small dimensions and reproduce exactly. Parameters accept a
fixed value or a strategy.

A fixed value that no draw could honour (``dim=0``, ``rank=-1``, a real
``dtype``, an unknown ``device``, ``rank > dim``) is a ValueError or TypeError
naming the argument when the strategy is built, not an opaque error of torch
at the first draw; a value drawn from a strategy is checked the same way when
it is drawn.

Examples
--------
>>> from hypothesis import given
>>> @given(density_matrices(dim=3, batch_shape=()))
... def test_trace_one(rho):
...     assert abs(complex(rho.tr()) - 1) < 1e-4
>>> test_trace_one()
"""

from __future__ import annotations

import functools

import torch

try:
    from hypothesis import strategies as st
    from hypothesis.strategies import SearchStrategy
except ImportError as error:  # pragma: no cover - the extra is installed with the tests
    from qpnlp._optional import missing

    raise missing("hypothesis", "testing", "qpnlp.testing (hypothesis strategies)") from error

from qpnlp._device import resolve_device
from qpnlp.hilbert import (DensityMatrix, Ensemble, PureState, normalize, random_density_matrix, random_isometry,
                           random_unitary)
from qpnlp.hilbert._validation import check_batch_shape, check_dimension, real_dtype_of
from qpnlp.measurement import POVM, Projector, random_povm

COMPLEX_DTYPES = (torch.complex64, torch.complex128)
_DENSITY_METHODS = ("ensemble", "ginibre", "hilbert-schmidt", "bures", "pure")
_POVM_METHODS = ("haar", "frame", "projective")


def _strategy(value) -> SearchStrategy:
    return value if isinstance(value, SearchStrategy) else st.just(value)


def _fixed(value) -> bool:
    """Whether ``value`` is given outright (not a strategy, not None): it can be checked when the strategy is built."""
    return value is not None and not isinstance(value, SearchStrategy)


def _dtype(value) -> torch.dtype:
    """``value`` if it is complex64 or complex128 (TypeError naming ``dtype`` otherwise)."""
    if not isinstance(value, torch.dtype) or value not in COMPLEX_DTYPES:
        raise TypeError(f"dtype must be torch.complex64 or torch.complex128; got {value!r}")
    return value


_CHECKS = {**{name: functools.partial(check_dimension, name)
              for name in ("dim", "rank", "num_outcomes", "rows", "cols", "max_states")},
           "batch_shape": check_batch_shape, "dtype": _dtype}


def _check_fixed(**arguments) -> None:
    """Check every argument given outright (strategies and None are checked when drawn, by ``_draw``)."""
    for name, value in arguments.items():
        if _fixed(value):
            _CHECKS[name](value)


def _draw(draw, name: str, value):
    """Draw ``value`` (a fixed value or a strategy) and check it as the argument ``name``."""
    return _CHECKS[name](draw(_strategy(value)))


def _space(draw, dim, batch_shape, dtype) -> tuple[int, tuple[int, ...], torch.dtype]:
    """The dimension, batch shape and dtype of one example, drawn in that order and checked (``_draw``)."""
    return _draw(draw, "dim", dim), _draw(draw, "batch_shape", batch_shape), _draw(draw, "dtype", dtype)


def _check_rank(rank: int, dim: int) -> None:
    """ValueError for a drawn rank above the drawn dimension (a state or an effect has rank at most d)."""
    if rank > dim:
        raise ValueError(f"rank {rank} exceeds dim {dim}")


def _device(device, available: bool = False) -> torch.device:
    """``device`` as a torch.device; ValueError naming it.

    When the strategy is built only the name is checked (``available=False``: a test module collects on any
    machine); each draw checks that this machine has it (``available=True``), before any tensor is moved there.
    """
    try:
        return resolve_device(device, available=available)
    except ValueError as error:
        raise ValueError(f"device: {error}") from None


def _at_most(name: str, value, limit_name: str, limit) -> None:
    """ValueError when both are given outright and ``value > limit`` (e.g. a rank above the dimension)."""
    if _fixed(value) and _fixed(limit) and value > limit:
        raise ValueError(f"{name}={value} exceeds {limit_name}={limit}")


def _method(method, allowed: tuple[str, ...]) -> None:
    """ValueError for a ``method`` given outright that is not one of ``allowed``."""
    if _fixed(method) and method not in allowed:
        raise ValueError(f"unknown method {method!r}; expected one of {allowed}")


def dims(min_dim: int = 1, max_dim: int = 8) -> SearchStrategy[int]:
    """Hilbert-space dimensions in ``[min_dim, max_dim]``, integers with ``1 <= min_dim <= max_dim``.

    Parameters
    ----------
    min_dim, max_dim : int, optional
        The smallest (default 1) and largest (default 8) dimension drawn.
    """
    min_dim = check_dimension("min_dim", min_dim)
    max_dim = check_dimension("max_dim", max_dim, min_dim)
    return st.integers(min_dim, max_dim)


def batch_shapes(max_dims: int = 2, max_side: int = 3) -> SearchStrategy[tuple[int, ...]]:
    """Batch shapes with up to ``max_dims`` (>= 0) dims of size 1..max_side (>= 1) (including ``()``).

    Parameters
    ----------
    max_dims : int, optional
        The most dims drawn, >= 0 (default 2).
    max_side : int, optional
        The largest size of a dim, >= 1 (default 3).
    """
    max_dims, max_side = check_dimension("max_dims", max_dims, 0), check_dimension("max_side", max_side)
    return st.lists(st.integers(1, max_side), max_size=max_dims).map(tuple)


def complex_dtypes() -> SearchStrategy[torch.dtype]:
    """complex64 or complex128."""
    return st.sampled_from(COMPLEX_DTYPES)


def _honour(how: str, method, allowed: tuple[str, ...], fallback: str, fixed: str) -> str:
    """``how``, or ``fallback`` when ``how`` (not in ``allowed``) cannot give the ``fixed`` parameters.

    A method given as a plain string that cannot give them is a ValueError; a method drawn from a
    strategy (the default) falls back, so that the fixed parameters always hold.
    """
    if how in allowed:
        return how
    if not isinstance(method, SearchStrategy):
        raise ValueError(f"method={how!r} cannot give {fixed}; use one of {allowed}")
    return fallback


def _generator(draw) -> torch.Generator:
    return torch.Generator().manual_seed(draw(st.integers(0, 2**32 - 1)))


def _gaussian(shape, dtype, gen) -> torch.Tensor:
    real = real_dtype_of(dtype)
    return torch.complex(torch.randn(shape, dtype=real, generator=gen), torch.randn(shape, dtype=real, generator=gen))


def _state_tensor(draw, d: int, shape: tuple[int, ...], dtype, gen) -> torch.Tensor:
    """Random unit vectors, sometimes sparse (basis states, two-term superpositions) to hit edge cases."""
    kind = draw(st.sampled_from(("haar", "haar", "basis", "pair")))
    if kind == "haar" or d == 1:
        return normalize(_gaussian((*shape, d), dtype, gen))
    z = torch.zeros((*shape, d), dtype=dtype)
    idx = torch.randint(d, (*shape, 1), generator=gen)
    z.scatter_(-1, idx, torch.ones_like(idx, dtype=dtype))
    if kind == "pair":
        other = (idx + 1 + torch.randint(d - 1, (*shape, 1), generator=gen)) % d
        phase = torch.polar(torch.ones(*shape, 1, dtype=real_dtype_of(dtype)),
                            torch.rand(*shape, 1, dtype=real_dtype_of(dtype), generator=gen) * 6.283)
        z.scatter_(-1, other, phase)
        z = normalize(z)
    return z


@st.composite
def _pure_states(draw, dim, batch_shape, dtype, device) -> PureState:
    _device(device, available=True)
    d, shape, dt = _space(draw, dim, batch_shape, dtype)
    gen = _generator(draw)
    return PureState(_state_tensor(draw, d, shape, dt, gen).to(device))


def pure_states(dim=dims(), batch_shape=batch_shapes(), dtype=complex_dtypes(), device="cpu") -> SearchStrategy:
    """:class:`~qpnlp.hilbert.PureState` objects: Haar-random, basis states and two-term superpositions.

    Parameters
    ----------
    dim : int or SearchStrategy
        The dimension d, an integer >= 1 (default :func:`dims`, 1..8).
    batch_shape : tuple of int, int or SearchStrategy
        Integers >= 0 (one int n reads as ``(n,)``, as torch reads a size); default :func:`batch_shapes`.
    dtype : torch.dtype or SearchStrategy
        complex64 or complex128 (default :func:`complex_dtypes`, either).
    device : str or torch.device, optional
        Where the tensors are put, as ``qpnlp._device.resolve_device`` names it (default ``"cpu"``).
    """
    _check_fixed(dim=dim, batch_shape=batch_shape, dtype=dtype)
    return _pure_states(dim, batch_shape, dtype, _device(device))


@st.composite
def _ensembles(draw, dim, batch_shape, dtype, max_states, masked, device) -> Ensemble:
    _device(device, available=True)
    d, shape, dt = _space(draw, dim, batch_shape, dtype)
    n = draw(st.integers(1, _draw(draw, "max_states", max_states)))
    gen = _generator(draw)
    states = _state_tensor(draw, d, (*shape, n), dt, gen)
    real = real_dtype_of(dt)
    # flat Dirichlet from the seeded generator (normalised exponentials): torch.distributions samples
    # from the global RNG, so an example would not reproduce from its seed
    weights = torch.empty((*shape, n), dtype=real).exponential_(generator=gen).clamp_min(torch.finfo(real).tiny)
    weights = weights / weights.sum(-1, keepdim=True)
    mask = None
    if draw(_strategy(masked)) and n > 1:
        lengths = torch.randint(1, n + 1, shape, generator=gen)
        mask = torch.arange(n) < lengths.unsqueeze(-1)
        weights = weights * mask
        weights = weights / weights.sum(-1, keepdim=True)
        mask = mask.to(device)
    return Ensemble(states.to(device), weights.to(device), mask)


def ensembles(dim=dims(), batch_shape=batch_shapes(), dtype=complex_dtypes(), max_states: int = 6,
              masked: bool | SearchStrategy = st.booleans(), device="cpu") -> SearchStrategy:
    """Lazy :class:`~qpnlp.hilbert.Ensemble` mixtures of 1..max_states states with Dirichlet weights, optionally padded.

    Parameters
    ----------
    dim : int or SearchStrategy
        The dimension d, an integer >= 1 (default :func:`dims`, 1..8).
    batch_shape : tuple of int, int or SearchStrategy
        Integers >= 0 (one int n reads as ``(n,)``, as torch reads a size); default :func:`batch_shapes`.
    dtype : torch.dtype or SearchStrategy
        complex64 or complex128 (default :func:`complex_dtypes`, either).
    max_states : int or SearchStrategy, optional
        The most states n of an ensemble, an integer >= 1 (default 6); n is drawn in 1..max_states.
    masked : bool or SearchStrategy, optional
        Whether to pad: a random length per batch element, with a ``mask`` (default: drawn).
    device : str or torch.device, optional
        Where the tensors are put, as ``qpnlp._device.resolve_device`` names it (default ``"cpu"``).
    """
    _check_fixed(dim=dim, batch_shape=batch_shape, dtype=dtype, max_states=max_states)
    if not isinstance(masked, (bool, SearchStrategy)):
        raise TypeError(f"masked must be a bool or a strategy of bools; got {type(masked).__name__} {masked!r}")
    return _ensembles(dim, batch_shape, dtype, max_states, masked, _device(device))


@st.composite
def _density_matrices(draw, dim, batch_shape, dtype, method, rank, device) -> DensityMatrix:
    _device(device, available=True)
    r = None if rank is None else _draw(draw, "rank", rank)
    how = draw(_strategy(method))
    if r is not None and how in ("ensemble", "pure"):
        how = _honour(how, method, ("ginibre", "hilbert-schmidt", "bures") + (("pure",) if r == 1 else ()),
                      "ginibre", f"rank={r}")
    if how == "ensemble":
        return draw(ensembles(dim, batch_shape, dtype, masked=False, device=device)).dense()
    if how == "pure":
        return draw(pure_states(dim, batch_shape, dtype, device=device)).proj()
    if how not in ("ginibre", "hilbert-schmidt", "bures"):
        raise ValueError(f"unknown method {how!r}")
    d, shape, dt = _space(draw, dim, batch_shape, dtype)
    r = draw(st.integers(1, d)) if r is None else r
    _check_rank(r, d)
    rho = random_density_matrix(d, rank=r, measure="bures" if how == "bures" else "hilbert-schmidt",
                                batch_shape=shape, dtype=dt, generator=_generator(draw))
    return DensityMatrix(rho.data.to(device))


def density_matrices(dim=dims(), batch_shape=batch_shapes(), dtype=complex_dtypes(),
                     method=st.sampled_from(("ensemble", "ginibre", "bures", "pure")), rank=None,
                     device="cpu") -> SearchStrategy:
    r""":class:`~qpnlp.hilbert.DensityMatrix` objects.

    ``method``: ``"ensemble"`` (dense form of :func:`ensembles`),
    ``"ginibre"`` or ``"hilbert-schmidt"`` (:math:`G G^\dagger / \operatorname{Tr} G G^\dagger`,
    the induced Hilbert-Schmidt measure), ``"bures"`` (the Bures measure),
    or ``"pure"``; see :func:`~qpnlp.hilbert.random_density_matrix`.
    With a ``rank``, a drawn ``"ensemble"``
    (whose rank is not controlled) becomes ``"ginibre"``, and so does
    ``"pure"`` unless the rank is 1; given as a plain string, such a method
    is a ValueError.

    Parameters
    ----------
    dim : int or SearchStrategy
        The dimension d, an integer >= 1 (default :func:`dims`, 1..8).
    batch_shape : tuple of int, int or SearchStrategy
        Integers >= 0 (one int n reads as ``(n,)``, as torch reads a size); default :func:`batch_shapes`.
    dtype : torch.dtype or SearchStrategy
        complex64 or complex128 (default :func:`complex_dtypes`, either).
    method : str or SearchStrategy, optional
        One of the methods above (default: drawn from ensemble, ginibre, bures and pure).
    rank : int or SearchStrategy, optional
        The rank, an integer in ``1..d`` (ginibre / hilbert-schmidt / bures); default (None): any rank in ``1..d``.
    device : str or torch.device, optional
        Where the tensors are put, as ``qpnlp._device.resolve_device`` names it (default ``"cpu"``).
    """
    _check_fixed(dim=dim, batch_shape=batch_shape, dtype=dtype, rank=rank)
    _at_most("rank", rank, "dim", dim)
    _method(method, _DENSITY_METHODS)
    return _density_matrices(dim, batch_shape, dtype, method, rank, _device(device))


@st.composite
def _unitaries(draw, dim, batch_shape, dtype, device) -> torch.Tensor:
    _device(device, available=True)
    d, shape, dt = _space(draw, dim, batch_shape, dtype)
    return random_unitary(d, batch_shape=shape, dtype=dt, generator=_generator(draw)).to(device)


def unitaries(dim=dims(), batch_shape=batch_shapes(), dtype=complex_dtypes(), device="cpu") -> SearchStrategy:
    """Haar-random unitary tensors ``(*batch_shape, d, d)``.

    Parameters
    ----------
    dim : int or SearchStrategy
        The dimension d, an integer >= 1 (default :func:`dims`, 1..8).
    batch_shape : tuple of int, int or SearchStrategy
        Integers >= 0 (one int n reads as ``(n,)``, as torch reads a size); default :func:`batch_shapes`.
    dtype : torch.dtype or SearchStrategy
        complex64 or complex128 (default :func:`complex_dtypes`, either).
    device : str or torch.device, optional
        Where the tensors are put, as ``qpnlp._device.resolve_device`` names it (default ``"cpu"``).
    """
    _check_fixed(dim=dim, batch_shape=batch_shape, dtype=dtype)
    return _unitaries(dim, batch_shape, dtype, _device(device))


@st.composite
def _projectors(draw, dim, rank, batch_shape, dtype, device) -> Projector:
    _device(device, available=True)
    d, shape, dt = _space(draw, dim, batch_shape, dtype)
    r = draw(st.integers(1, d)) if rank is None else _draw(draw, "rank", rank)
    _check_rank(r, d)
    u = random_unitary(d, batch_shape=shape, dtype=dt, generator=_generator(draw))
    return Projector(u[..., :r, :].to(device))


def projectors(dim=dims(), rank=None, batch_shape=batch_shapes(), dtype=complex_dtypes(),
               device="cpu") -> SearchStrategy:
    """Random rank-r :class:`~qpnlp.measurement.Projector` batches, onto the span of r orthonormal rows of a Haar
    unitary.

    Parameters
    ----------
    dim : int or SearchStrategy
        The dimension d, an integer >= 1 (default :func:`dims`, 1..8).
    rank : int or SearchStrategy, optional
        The rank r, an integer in 1..d; default (None): any rank in 1..d.
    batch_shape : tuple of int, int or SearchStrategy
        Integers >= 0 (one int n reads as ``(n,)``, as torch reads a size); default :func:`batch_shapes`.
    dtype : torch.dtype or SearchStrategy
        complex64 or complex128 (default :func:`complex_dtypes`, either).
    device : str or torch.device, optional
        Where the tensors are put, as ``qpnlp._device.resolve_device`` names it (default ``"cpu"``).
    """
    _check_fixed(dim=dim, rank=rank, batch_shape=batch_shape, dtype=dtype)
    _at_most("rank", rank, "dim", dim)
    return _projectors(dim, rank, batch_shape, dtype, _device(device))


@st.composite
def _isometries(draw, rows, cols, batch_shape, dtype, device) -> torch.Tensor:
    _device(device, available=True)
    m = _draw(draw, "rows", rows)
    n = draw(st.integers(1, m)) if cols is None else _draw(draw, "cols", cols)
    if n > m:
        raise ValueError(f"an isometry needs cols <= rows; got {n} > {m}")
    shape, dt = _draw(draw, "batch_shape", batch_shape), _draw(draw, "dtype", dtype)
    return random_isometry(m, n, batch_shape=shape, dtype=dt, generator=_generator(draw)).to(device)


def isometries(rows=st.integers(1, 8), cols=None, batch_shape=batch_shapes(), dtype=complex_dtypes(),
               device="cpu") -> SearchStrategy:
    r"""Haar-random isometries ``(*batch_shape, rows, cols)``, :math:`V^\dagger V = I` (``cols=None``: any in 1..rows).

    Parameters
    ----------
    rows : int or SearchStrategy
        The number of rows m, an integer >= 1 (default 1..8).
    cols : int or SearchStrategy, optional
        The number of columns n, an integer in 1..m; default (None): any in 1..m.
    batch_shape : tuple of int, int or SearchStrategy
        Integers >= 0 (one int n reads as ``(n,)``, as torch reads a size); default :func:`batch_shapes`.
    dtype : torch.dtype or SearchStrategy
        complex64 or complex128 (default :func:`complex_dtypes`, either).
    device : str or torch.device, optional
        Where the tensors are put, as ``qpnlp._device.resolve_device`` names it (default ``"cpu"``).
    """
    _check_fixed(rows=rows, cols=cols, batch_shape=batch_shape, dtype=dtype)
    _at_most("cols", cols, "rows", rows)
    return _isometries(rows, cols, batch_shape, dtype, _device(device))


@st.composite
def _povms(draw, dim, num_outcomes, rank, batch_shape, dtype, method, device) -> POVM:
    _device(device, available=True)
    how = draw(_strategy(method))
    if how not in _POVM_METHODS:
        raise ValueError(f"unknown method {how!r}")
    d, shape, dt = _space(draw, dim, batch_shape, dtype)
    gen = _generator(draw)
    k = None if num_outcomes is None else _draw(draw, "num_outcomes", num_outcomes)
    r = None if rank is None else _draw(draw, "rank", rank)
    if r is not None:
        _check_rank(r, d)
    allowed = ("haar",) + (("frame",) if r in (None, 1) and (k is None or k >= d) else ()) \
        + (("projective",) if r in (None, 1) and k in (None, d) else ())
    how = _honour(how, method, allowed, "haar", f"num_outcomes={k}, rank={r} in dimension {d}")
    if how == "projective":
        u = random_unitary(d, batch_shape=shape, dtype=dt, generator=gen)
        return POVM(u.unsqueeze(-2).to(device))
    if how == "frame":
        k = draw(st.integers(d, d + 4)) if k is None else k
        return POVM.from_frame(_gaussian((*shape, k, d), dt, gen).to(device))
    k_min = 1 if r is None else -(-d // r)                                  # k r >= d
    k = draw(st.integers(k_min, max(k_min, d + 4))) if k is None else k
    r = draw(st.integers(-(-d // k), max(-(-d // k), min(3, d)))) if r is None else r
    return random_povm(d, k, rank=r, batch_shape=shape, dtype=dt, generator=gen).to(device)


def povms(dim=dims(), num_outcomes=None, rank=None, batch_shape=batch_shapes(), dtype=complex_dtypes(),
          method=st.sampled_from(("haar", "haar", "frame", "projective")), device="cpu") -> SearchStrategy:
    """Random :class:`~qpnlp.measurement.POVM` objects.

    ``method``: ``"haar"`` (:func:`~qpnlp.measurement.random_povm`, k outcomes
    of rank r with k r >= d), ``"frame"`` (rank 1 from a random Gaussian frame
    of k >= d vectors, :meth:`POVM.from_frame <qpnlp.measurement.POVM.from_frame>`) or ``"projective"`` (a random
    orthonormal basis, k = d). When ``num_outcomes`` or ``rank`` are given, a drawn
    method that cannot give them (``"projective"`` unless k = d and r = 1,
    ``"frame"`` unless r = 1 and k >= d) becomes ``"haar"``; given as a plain
    string, such a method is a ValueError.

    Parameters
    ----------
    dim : int or SearchStrategy
        The dimension d, an integer >= 1 (default :func:`dims`, 1..8).
    num_outcomes, rank : int or SearchStrategy, optional
        The number of outcomes k and the rank r of each effect, integers >= 1 with ``r <= d`` (an effect has rank
        at most d) and ``k r >= d``; default (None): random values compatible with the method.
    batch_shape : tuple of int, int or SearchStrategy
        Integers >= 0 (one int n reads as ``(n,)``, as torch reads a size); default :func:`batch_shapes`.
    dtype : torch.dtype or SearchStrategy
        complex64 or complex128 (default :func:`complex_dtypes`, either).
    method : str or SearchStrategy, optional
        One of the methods above (default: drawn, haar twice as often as frame and projective).
    device : str or torch.device, optional
        Where the tensors are put, as ``qpnlp._device.resolve_device`` names it (default ``"cpu"``).
    """
    _check_fixed(dim=dim, num_outcomes=num_outcomes, rank=rank, batch_shape=batch_shape, dtype=dtype)
    _at_most("rank", rank, "dim", dim)
    if _fixed(dim) and _fixed(num_outcomes) and _fixed(rank) and num_outcomes * rank < dim:
        raise ValueError(f"a POVM on C^{dim} needs num_outcomes * rank >= dim; got {num_outcomes} * {rank}")
    _method(method, _POVM_METHODS)
    return _povms(dim, num_outcomes, rank, batch_shape, dtype, method, _device(device))

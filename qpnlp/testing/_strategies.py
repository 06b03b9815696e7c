"""hypothesis strategies for states, mixtures, unitaries, isometries, projectors and POVMs.

Each strategy draws the structural parameters (dimension, batch shape,
dtype) and a seed, then samples with a seeded ``torch.Generator``, so failing
examples shrink to small dimensions and reproduce exactly. Parameters accept a
fixed value or a strategy.

Examples
--------
>>> from hypothesis import given
>>> @given(density_matrices(dim=3, batch_shape=()))
... def test_trace_one(rho):
...     assert abs(complex(rho.tr()) - 1) < 1e-4
>>> test_trace_one()
"""

from __future__ import annotations

import torch

try:
    from hypothesis import strategies as st
    from hypothesis.strategies import SearchStrategy
except ImportError as error:  # pragma: no cover - the extra is installed with the tests
    from qpnlp._optional import missing

    raise missing("hypothesis", "testing", "qpnlp.testing (hypothesis strategies)") from error

from qpnlp.hilbert import (DensityMatrix, Ensemble, PureState, normalize, random_density_matrix, random_isometry,
                           random_unitary)
from qpnlp.hilbert._validation import real_dtype_of
from qpnlp.measurement import POVM, Projector, random_povm

COMPLEX_DTYPES = (torch.complex64, torch.complex128)


def _strategy(value) -> SearchStrategy:
    return value if isinstance(value, SearchStrategy) else st.just(value)


def dims(min_dim: int = 1, max_dim: int = 8) -> SearchStrategy[int]:
    """Hilbert-space dimensions in ``[min_dim, max_dim]``."""
    return st.integers(min_dim, max_dim)


def batch_shapes(max_dims: int = 2, max_side: int = 3) -> SearchStrategy[tuple[int, ...]]:
    """Batch shapes with up to ``max_dims`` dims of size 1..max_side (including ``()``)."""
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
def pure_states(draw, dim=dims(), batch_shape=batch_shapes(), dtype=complex_dtypes(), device="cpu") -> PureState:
    """:class:`PureState` objects: Haar-random, basis states and two-term superpositions."""
    d, shape, dt = draw(_strategy(dim)), draw(_strategy(batch_shape)), draw(_strategy(dtype))
    gen = _generator(draw)
    return PureState(_state_tensor(draw, d, tuple(shape), dt, gen).to(device))


@st.composite
def ensembles(draw, dim=dims(), batch_shape=batch_shapes(), dtype=complex_dtypes(), max_states: int = 6,
              masked: bool | SearchStrategy = st.booleans(), device="cpu") -> Ensemble:
    """Lazy :class:`Ensemble` mixtures of 1..max_states states with Dirichlet weights, optionally padded."""
    d, shape, dt = draw(_strategy(dim)), tuple(draw(_strategy(batch_shape))), draw(_strategy(dtype))
    n = draw(st.integers(1, max_states))
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


@st.composite
def density_matrices(draw, dim=dims(), batch_shape=batch_shapes(), dtype=complex_dtypes(),
                     method=st.sampled_from(("ensemble", "ginibre", "bures", "pure")), rank=None,
                     device="cpu") -> DensityMatrix:
    r""":class:`DensityMatrix` objects.

    ``method``: ``"ensemble"`` (dense form of :func:`ensembles`),
    ``"ginibre"`` or ``"hilbert-schmidt"`` (:math:`G G^\dagger / \operatorname{Tr} G G^\dagger`,
    the induced Hilbert-Schmidt measure), ``"bures"`` (the Bures measure),
    or ``"pure"``; see :func:`~qpnlp.hilbert.random_density_matrix`.
    ``rank`` (ginibre / hilbert-schmidt / bures): a value or strategy,
    default any rank in ``1..d``. With a ``rank``, a drawn ``"ensemble"``
    (whose rank is not controlled) becomes ``"ginibre"``, and so does
    ``"pure"`` unless the rank is 1; given as a plain string, such a method
    is a ValueError.
    """
    r = None if rank is None else draw(_strategy(rank))
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
    d, shape, dt = draw(_strategy(dim)), tuple(draw(_strategy(batch_shape))), draw(_strategy(dtype))
    r = draw(st.integers(1, d)) if r is None else r
    rho = random_density_matrix(d, rank=r, measure="bures" if how == "bures" else "hilbert-schmidt",
                                batch_shape=shape, dtype=dt, generator=_generator(draw))
    return DensityMatrix(rho.data.to(device))


@st.composite
def unitaries(draw, dim=dims(), batch_shape=batch_shapes(), dtype=complex_dtypes(), device="cpu") -> torch.Tensor:
    """Haar-random unitary tensors ``(*batch_shape, d, d)``."""
    d, shape, dt = draw(_strategy(dim)), tuple(draw(_strategy(batch_shape))), draw(_strategy(dtype))
    return random_unitary(d, batch_shape=shape, dtype=dt, generator=_generator(draw)).to(device)


@st.composite
def projectors(draw, dim=dims(), rank=None, batch_shape=batch_shapes(), dtype=complex_dtypes(),
               device="cpu") -> Projector:
    """Random rank-r :class:`Projector` batches (``rank=None``: any rank in 1..d)."""
    d, shape, dt = draw(_strategy(dim)), tuple(draw(_strategy(batch_shape))), draw(_strategy(dtype))
    r = draw(st.integers(1, d)) if rank is None else draw(_strategy(rank))
    if r > d:
        raise ValueError(f"rank {r} exceeds dim {d}")
    u = random_unitary(d, batch_shape=shape, dtype=dt, generator=_generator(draw))
    return Projector(u[..., :r, :].to(device))


@st.composite
def isometries(draw, rows=st.integers(1, 8), cols=None, batch_shape=batch_shapes(), dtype=complex_dtypes(),
               device="cpu") -> torch.Tensor:
    r"""Haar-random isometries ``(*batch_shape, rows, cols)``, :math:`V^\dagger V = I` (``cols=None``: any in 1..rows)."""
    m = draw(_strategy(rows))
    n = draw(st.integers(1, m)) if cols is None else draw(_strategy(cols))
    if n > m:
        raise ValueError(f"an isometry needs cols <= rows; got {n} > {m}")
    shape, dt = tuple(draw(_strategy(batch_shape))), draw(_strategy(dtype))
    return random_isometry(m, n, batch_shape=shape, dtype=dt, generator=_generator(draw)).to(device)


@st.composite
def povms(draw, dim=dims(), num_outcomes=None, rank=None, batch_shape=batch_shapes(), dtype=complex_dtypes(),
          method=st.sampled_from(("haar", "haar", "frame", "projective")), device="cpu") -> POVM:
    """Random :class:`~qpnlp.measurement.POVM` objects.

    ``method``: ``"haar"`` (:func:`~qpnlp.measurement.random_povm`, k outcomes
    of rank r with k r >= d), ``"frame"`` (rank 1 from a random Gaussian frame
    of k >= d vectors, :meth:`POVM.from_frame`) or ``"projective"`` (a random
    orthonormal basis, k = d). ``num_outcomes`` and ``rank`` default to
    random values compatible with the method. When they are given, a drawn
    method that cannot give them (``"projective"`` unless k = d and r = 1,
    ``"frame"`` unless r = 1 and k >= d) becomes ``"haar"``; given as a plain
    string, such a method is a ValueError.
    """
    how = draw(_strategy(method))
    if how not in ("haar", "frame", "projective"):
        raise ValueError(f"unknown method {how!r}")
    d, shape, dt = draw(_strategy(dim)), tuple(draw(_strategy(batch_shape))), draw(_strategy(dtype))
    gen = _generator(draw)
    k = None if num_outcomes is None else draw(_strategy(num_outcomes))
    r = None if rank is None else draw(_strategy(rank))
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
    r = draw(st.integers(-(-d // k), max(-(-d // k), 3))) if r is None else r
    return random_povm(d, k, rank=r, batch_shape=shape, dtype=dt, generator=gen).to(device)

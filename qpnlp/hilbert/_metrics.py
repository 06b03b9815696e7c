r"""Fidelities and distances between two states.

Every function takes :class:`PureState`, :class:`DensityMatrix`,
:class:`Ensemble` objects or plain complex ``(..., d, d)`` tensors, broadcasts
over batch dims, returns a real ``(...)`` tensor and is differentiable.

Conventions (they differ between references, so each docstring says which):
the *fidelity* is squared, :math:`F = (\operatorname{Tr}|\sqrt\rho\sqrt\sigma|)^2`
(Jozsa 1994), and :math:`\sqrt F` is the *root fidelity* of Nielsen & Chuang
(QuTiP's ``fidelity``). The Bures distance and angle, QuTiP's ``bures_dist``
and ``bures_angle``, are functions of :math:`\sqrt F`.

How the fidelity is computed exactly
------------------------------------
With factors :math:`\rho = A A^\dagger` and :math:`\sigma = B B^\dagger`,
:math:`\sqrt\rho = (A A^\dagger)^{1/2}` and the polar decomposition give

.. math:: \sqrt{F(\rho, \sigma)} = \big\|\sqrt\rho\sqrt\sigma\big\|_1 = \big\|A^\dagger B\big\|_1
          = \sum_j s_j(A^\dagger B),

the sum of the singular values of the small r x m matrix :math:`A^\dagger B`.
For ensembles the factors are exact (:math:`A = [\sqrt{p_i}\,w_i]`, d x n),
so no matrix square root of a rank-deficient matrix is ever taken (it loses
half the digits: errors of :math:`\sqrt\epsilon`). When one side is pure,
:math:`F = \langle\psi|\sigma|\psi\rangle`, linear in :math:`\sigma`. Dense
matrices are factored through ``eigh``, with eigenvalues below
``qpnlp.hilbert._operands.rank_tolerance`` treated as zero.
"""

from __future__ import annotations

import math

import torch

from . import _validation as V
from ._ensemble import Ensemble
from ._linalg import decompose, promote, safe_sqrt, squared_frobenius_norm, squared_modulus
from ._low_rank import half_trace_norm as _half_trace_norm
from ._low_rank import low_rank_hilbert_schmidt, low_rank_trace_distance
from ._operands import as_density_tensor, check_pair, factor_product, members, root_overlap
from ._overlaps import in_slices, overlaps
from ._states import DensityMatrix, PureState

__all__ = ["fidelity", "infidelity", "trace_distance", "bures_distance", "bures_angle", "hellinger_affinity",
           "hellinger_distance", "hilbert_schmidt_distance", "sub_fidelity", "super_fidelity"]


def _squared_row_norms(rows: torch.Tensor) -> torch.Tensor:
    r""":math:`\|w_j\|^2` ``(..., m)`` of complex rows ``(..., m, d)``, without a temporary of their size.

    ``vector_norm`` of the real view, squared (a sum of squares held a real tensor of the rows' size); the norm is
    that of the conjugate, so a lazy ``conj()`` view is read through its base, not copied.
    """
    plain = rows.conj() if rows.is_conj() else rows
    return torch.linalg.vector_norm(torch.view_as_real(plain.resolve_neg()), dim=(-2, -1)).square()


def _check_dims(rho, sigma) -> None:
    """Types, dimensions, batch shapes and devices of two states (static checks, before any maths)."""
    check_pair(rho, sigma)


def _dense_pair(rho, sigma) -> tuple[torch.Tensor, torch.Tensor]:
    check_pair(rho, sigma)
    r, s = promote(as_density_tensor(rho, "rho"), as_density_tensor(sigma, "sigma"))
    V.check_dims_match("rho", r.shape[-1], "sigma", s.shape[-1])
    return r, s


def _low_rank_or_dense(low_rank: torch.Tensor | None, rho, sigma, norm) -> torch.Tensor:
    r"""A distance ``(...)``: ``low_rank`` (the (n+m) x (n+m) route's value), or where it is None (the dense route)
    ``norm`` of the dense difference :math:`\rho - \sigma` ``(..., d, d)`` (``_dense_pair``)."""
    if low_rank is not None:
        return low_rank
    r, s = _dense_pair(rho, sigma)
    return norm(r - s)


def _is_dense(x) -> bool:
    return isinstance(x, (DensityMatrix, torch.Tensor))


def _factor_side(x) -> bool:
    return isinstance(x, (PureState, Ensemble))


def _pure_first(rho, sigma) -> tuple[PureState, object, str]:
    """``(psi, other, name)``: the :class:`PureState` of a pair (``rho`` when both are), the other state, and the
    user's name of that other state (``"sigma"``, or ``"rho"`` when the roles swap), for ``_pure_expectation``."""
    return (rho, sigma, "sigma") if isinstance(rho, PureState) else (sigma, rho, "rho")


def _pure_expectation(psi: PureState, sigma, *, dense: bool = False, name: str = "sigma") -> torch.Tensor:
    r""":math:`\langle\psi|\sigma|\psi\rangle` ``(...)`` of a :class:`PureState` and any state, batch dims broadcasting.

    :math:`\sum_j |\langle\psi|b_j\rangle|^2` from a factor :math:`\sigma = BB^\dagger` (a pure state or an
    ensemble), or :math:`\langle\psi|` times the d x d matrix times :math:`|\psi\rangle` for a dense side (or
    ``dense=True``). Either way through ``einsum``, so memory is O(d + r) per pair of the broadcast batch besides the
    operands: ``@`` copied every ensemble's factor (every dense matrix) once per pure state of a ``(V, 1)`` batch.
    An ensemble's weights enter linearly, :math:`\sum_j q_j |\langle\psi|w_j\rangle|^2` (not through the factor's
    :math:`\sqrt{q_j}`, whose gradient at a zero weight is taken as 0): the gradient at a zero weight is its
    derivative :math:`|\langle\psi|w_j\rangle|^2`, as :func:`_pure_infidelity`'s. ``name`` is the user's name
    of ``sigma`` in its errors (``"rho"`` when the caller swapped the roles: ``_pure_first``).
    """
    if dense or _is_dense(sigma):
        state, s = promote(psi.data, as_density_tensor(sigma, name))
        return (torch.einsum("...d,...de->...e", state.conj(), s) * state).sum(-1).real
    (state, _), (rows, weights) = members(psi), members(sigma, name)
    squares = squared_modulus(overlaps(*promote(state, rows)))                   # (..., 1, m)
    if weights is not None:
        squares = squares * weights.to(squares.dtype).unsqueeze(-2)
    return squares.sum((-2, -1))


def _residual_norms(rows: torch.Tensor, psi: torch.Tensor) -> torch.Tensor:
    r""":math:`\|P_\perp w_j\|^2` ``(..., m)`` of rows ``(..., m, d)`` against :math:`\psi` ``(..., 1, d)``.

    :math:`P_\perp w_j = w_j - \psi\,\langle\psi|w_j\rangle/\|\psi\|^2`, subtracted elementwise (``addcmul``, no
    product tensor); exactly 0 for a row equal to :math:`\psi` (its coefficient is exactly 1).
    """
    coefficients = overlaps(psi, rows) / overlaps(psi, psi).real                # (..., 1, m)
    return _squared_row_norms(torch.addcmul(rows, coefficients.mT, psi, value=-1))


def _pure_infidelity(rho, sigma) -> torch.Tensor | None:
    r""":math:`1 - F` of a :class:`PureState` and a pure state or ensemble without cancellation, or None.

    With :math:`\sigma = \sum_j q_j |w_j\rangle\langle w_j|` (``members``; a pure state: one row, weight one) and
    :math:`P_\perp = I - \psi\psi^\dagger/\|\psi\|^2`,

    .. math:: 1 - F = \frac{\sum_j q_j \|P_\perp w_j\|^2}{\sum_j q_j \|w_j\|^2}
              = \frac{\operatorname{Tr}\sigma - \langle\psi|\sigma|\psi\rangle/\|\psi\|^2}{\operatorname{Tr}\sigma},

    exact for states (unit :math:`\psi`, :math:`\operatorname{Tr}\sigma = 1`), O(d m) and scale-invariant for
    two pure states (rays: their norms' round-off does not enter). :math:`P_\perp w_j` is small for close
    states and comes with an absolute error of a few :math:`\epsilon`, so :math:`1 - F` keeps its relative
    accuracy down to about :math:`\epsilon^2`, where ``1 - fidelity(...)`` is round-off below about
    :math:`\epsilon` (float32: states closer than an angle of ~3e-4 came out equal). None (the caller's
    general route) unless one side is a PureState and the other a PureState or an Ensemble. The weights enter
    linearly (the factor :math:`[\sqrt{q_j} w_j]` is not built), so the gradient at a zero weight is its derivative.

    Memory: the residual rows ``(..., m, d)`` of one slice of the batch at a time (``in_slices``), and their
    norms; :math:`\langle\psi|w_j\rangle` through ``overlaps`` (no copy of the states). The whole residual
    per pair of the broadcast batch, the factor (a scaled copy of the states) and a real square of each held three
    times the batch (one pure state against 2000 ensembles of 20 words, d = 300, complex128: 38 MiB added at the
    peak, was 551 MiB; ``benchmarks/metric_memory.py``).
    """
    check_pair(rho, sigma)
    if isinstance(sigma, PureState) and not isinstance(rho, PureState):
        rho, sigma = sigma, rho
    if not (isinstance(rho, PureState) and _factor_side(sigma)):
        return None
    (psi, _), (rows, weights) = members(rho), members(sigma)
    psi, rows = promote(psi, rows)                                          # (..., 1, d), (..., m, d)
    pairs = math.prod(torch.broadcast_shapes(psi.shape[:-2], rows.shape[:-2]))
    copies = pairs * rows.shape[-2] * rows.shape[-1] * rows.element_size()          # the residual
    residual = in_slices(_residual_norms, rows, psi, copies=copies)
    total = _squared_row_norms(rows)
    if weights is not None:
        residual, total = residual * weights, total * weights
    return (residual.sum(-1) / total.sum(-1)).clamp(0.0, 1.0)


def fidelity(rho, sigma, *, squared: bool = True) -> torch.Tensor:
    r"""Uhlmann fidelity between two states, real ``(...)`` in [0, 1].

    We use the *squared* convention (Jozsa 1994):

    .. math:: F(\rho, \sigma) = \left(\operatorname{Tr}\sqrt{\sqrt{\rho}\,\sigma\sqrt{\rho}}\right)^2,

    which for pure states is the transition probability
    :math:`|\langle\psi|\phi\rangle|^2`. ``squared=False`` gives Nielsen &
    Chuang's root fidelity :math:`\operatorname{Tr}\sqrt{\sqrt{\rho}\sigma\sqrt{\rho}}`.
    Symmetric, and 1 exactly when the states are equal.

    Computed without a matrix square root (see the module docstring):
    :math:`\langle\psi|\sigma|\psi\rangle` when one side is a
    :class:`PureState`, the singular values of :math:`A^\dagger B` (n x m)
    for two :class:`Ensemble` objects, and factors from ``eigh`` for dense
    matrices. Exact to the dtype's precision for rank-deficient states given
    as pure states or ensembles; dense inputs lose nothing when their rank
    is well separated from the round-off (module docstring). ``1 - fidelity(...)`` of close states cancels:
    it is round-off below about :math:`\epsilon` (float32: 1e-7, states at angles below ~3e-4 come out
    equal); use :func:`infidelity` for :math:`1 - F` (a loss), or read distances of close states from
    :func:`bures_angle` or :func:`trace_distance`: for a pure state against a pure state or an ensemble
    they compute :math:`1 - F` without cancellation.

    Gradients are finite everywhere, including repeated eigenvalues (the
    Daleckii-Krein backward of the square root) and orthogonal states. Where
    a dense side is rank-deficient, F grows like the square root of a
    perturbation that raises its rank (an infinite slope): those directions
    (between eigenvalues below the rank tolerance) get gradient 0. Where
    :math:`A^\dagger B` is rank-deficient (e.g. orthogonal states), the sum of
    its singular values has a kink and the SVD's subgradient is taken. With a pure side, an ensemble's weights
    enter linearly: the gradient at a zero weight :math:`q_j` is the derivative
    :math:`|\langle\psi|w_j\rangle|^2`, as :func:`infidelity`'s; between two ensembles (the factors'
    :math:`\sqrt{q_j}`, an infinite slope there) it is taken as 0.

    Parameters
    ----------
    rho, sigma : PureState, Ensemble, DensityMatrix or torch.Tensor
        States of the same dimension d; batch dims broadcast.
    squared : bool
        ``True`` (default): :math:`F`; ``False``: :math:`\sqrt F`.

    Examples
    --------
    >>> a = PureState.from_real(torch.tensor([1.0, 0.0]))
    >>> b = PureState.from_real(torch.tensor([0.6, 0.8]))
    >>> round(float(fidelity(a, b)), 6)
    0.36
    >>> round(float(fidelity(a, DensityMatrix.maximally_mixed(2), squared=False) ** 2), 6)
    0.5
    """
    _check_dims(rho, sigma)
    if isinstance(rho, PureState) or isinstance(sigma, PureState):
        psi, other, name = _pure_first(rho, sigma)                # the pure side first
        f = _pure_expectation(psi, other, name=name).clamp(0.0, 1.0)
        return f if squared else safe_sqrt(f)
    root = decompose(torch.linalg.svdvals, factor_product(rho, sigma)).sum(-1).clamp(max=1.0)
    return root.square() if squared else root


def infidelity(rho, sigma, *, squared: bool = True) -> torch.Tensor:
    r"""Infidelity :math:`1 - F(\rho, \sigma)` of :func:`fidelity`'s :math:`F`, real ``(...)`` in [0, 1].

    ``squared=False`` gives :math:`1 - \sqrt F` (one minus the root fidelity), as :func:`fidelity`'s
    ``squared`` picks :math:`F` or :math:`\sqrt F`; same inputs, batching and conventions. 0 for equal states
    (its minimum), where the gradient is finite (0 for pure states and a pure state against an ensemble).

    For a :class:`PureState` against a PureState or an :class:`Ensemble`, :math:`1 - F` is computed from
    the part of :math:`\sigma`'s factor orthogonal to :math:`\psi` (``_pure_infidelity``), without
    cancellation: in float32 (d = 16) its relative error is ~1e-5 at an angle of 1e-3 between pure states
    and ~1e-3 at 1e-5, where ``1 - fidelity(...)`` errs by ~30% at 1e-3 (:math:`1 - F \approx 10^{-6}`) and is
    round-off below; :math:`1 - \sqrt F = (1 - F)/(1 + \sqrt F)`. Other pairs (a dense side, two ensembles)
    are ``1 - fidelity(...)``, with fidelity's float32 limits: an absolute error of a few times 1e-7, so
    values below ~1e-6 are round-off.

    Parameters
    ----------
    rho, sigma : PureState, Ensemble, DensityMatrix or torch.Tensor
        States of the same dimension d; batch dims broadcast.
    squared : bool
        ``True`` (default): :math:`1 - F`; ``False``: :math:`1 - \sqrt F`.

    Examples
    --------
    >>> a = PureState.from_real(torch.tensor([1.0, 0.0]))
    >>> b = PureState.from_real(torch.tensor([0.6, 0.8]))
    >>> round(float(infidelity(a, b)), 6)
    0.64
    >>> round(float(infidelity(a, b, squared=False)), 6)
    0.4
    """
    pure = _pure_infidelity(rho, sigma)
    if pure is None:
        return 1.0 - fidelity(rho, sigma, squared=squared)
    return pure if squared else pure / (1.0 + safe_sqrt(1.0 - pure))              # 1 - sqrt F = (1 - F)/(1 + sqrt F)


def trace_distance(rho, sigma) -> torch.Tensor:
    r"""Trace distance :math:`T(\rho,\sigma) = \tfrac12 \|\rho - \sigma\|_1 = \tfrac12\sum_k |\lambda_k(\rho-\sigma)|`.

    A metric on states with values in [0, 1] (Nielsen & Chuang eq. 9.11;
    QuTiP's ``tracedist``). Real ``(...)``. Two pure states or ensembles
    with n + m < d words go through an (n+m) x (n+m) matrix, with or without autograd
    (``qpnlp.hilbert._low_rank.low_rank_trace_distance``: never a d x d matrix), other pairs through ``eigvalsh`` of
    the dense difference. Gradient: :math:`\tfrac12 U\operatorname{sign}(\Lambda)U^\dagger`
    from the eigen-decomposition of :math:`\rho - \sigma`, finite at repeated eigenvalues; a
    zero eigenvalue (the kink of :math:`|\cdot|`; on the small route, one within the QR's round-off of 0)
    contributes 0, so at :math:`\rho = \sigma` the gradient is 0. Two pure states: :math:`T = \sqrt{1 - F}` from
    the component of one orthogonal to the other (``_pure_infidelity``), accurate in float32 down to distances of
    ~1e-6 (a 1e-3 relative error at 1e-5); the eigenvalue routes resolve :math:`T` to a few :math:`\epsilon`
    absolute.

    Parameters
    ----------
    rho, sigma : PureState, Ensemble, DensityMatrix or torch.Tensor
        States of the same dimension d; batch dims broadcast.

    Examples
    --------
    >>> a, b = PureState.basis_state(0, 2), PureState.basis_state(1, 2)
    >>> float(trace_distance(a, b))
    1.0
    """
    check_pair(rho, sigma)
    if isinstance(rho, PureState) and isinstance(sigma, PureState):
        return safe_sqrt(_pure_infidelity(rho, sigma))                         # T = sqrt(1 - F) for pure states
    return _low_rank_or_dense(low_rank_trace_distance(rho, sigma), rho, sigma, _half_trace_norm)


def _frobenius_norm(x: torch.Tensor) -> torch.Tensor:
    r""":math:`\|X\|_F` ``(...)`` of ``(..., k, k)`` matrices, with gradient 0 at X = 0 (``safe_sqrt``)."""
    return safe_sqrt(squared_frobenius_norm(x))


#: The least dimension d at which the Hilbert-Schmidt distance of pure states or ensembles takes the QR route: below
#: it the dense d x d difference is small and faster (one thread, complex64, one pair: d = 8 48 us dense, 110 us
#: QR; d = 32 120 us, 190 us; d = 50 305 us, 187 us; d = 300 20.2 ms, 3.0 ms).
HILBERT_SCHMIDT_LOW_RANK_FROM = 40


def bures_distance(rho, sigma) -> torch.Tensor:
    r"""Bures distance :math:`D_B(\rho,\sigma) = \sqrt{2\,(1 - \sqrt{F(\rho,\sigma)})}`, real ``(...)`` in :math:`[0, \sqrt2]`.

    :math:`\sqrt F` is the root fidelity (Bengtsson & Zyczkowski,
    *Geometry of Quantum States*, eq. 9.31; QuTiP's ``bures_dist``). A
    metric; where the distance is zero (its derivative unbounded nearby) the gradient is taken as 0.
    With a :class:`PureState` on one side and a PureState or :class:`Ensemble` on the other,
    :math:`1 - \sqrt F = (1 - F)/(1 + \sqrt F)` with :math:`1 - F` free of cancellation
    (``_pure_infidelity``): relative accuracy ~1e-4 in float32 at distances of 1e-4. Otherwise
    :math:`1 - \sqrt F` cancels: in float32, distances below ~3e-4 (dense: ~1e-3) are not resolved.

    Parameters
    ----------
    rho, sigma : PureState, Ensemble, DensityMatrix or torch.Tensor
        States of the same dimension d; batch dims broadcast.

    Examples
    --------
    >>> a, b = PureState.basis_state(0, 2), PureState.basis_state(1, 2)
    >>> round(float(bures_distance(a, b)) ** 2, 6)
    2.0
    """
    return safe_sqrt(2.0 * infidelity(rho, sigma, squared=False))


def bures_angle(rho, sigma) -> torch.Tensor:
    r"""Bures angle (quantum angle) :math:`A(\rho,\sigma) = \arccos\sqrt{F(\rho,\sigma)}`, real ``(...)`` in :math:`[0, \pi/2]`.

    The geodesic distance of the Bures metric (Nielsen & Chuang eq. 9.80
    with their root fidelity; QuTiP's ``bures_angle``). Computed as
    :math:`A = 2\arcsin(D_B/2)` from the Bures distance :math:`D_B = \sqrt{2(1 - \sqrt F)}`
    (the same angle): :math:`\arccos` has an infinite derivative at 1, so equal states gave a
    NaN gradient; like the distance, the angle's gradient is 0 there (its minimum).

    Parameters
    ----------
    rho, sigma : PureState, Ensemble, DensityMatrix or torch.Tensor
        States of the same dimension d; batch dims broadcast.

    Examples
    --------
    >>> a = PureState.basis_state(0, 2); b = PureState.from_real(torch.tensor([1.0, 1.0]), normalize_vectors=True)
    >>> round(float(bures_angle(a, b)), 6)   # pi / 4
    0.785398
    """
    return 2.0 * torch.arcsin(0.5 * bures_distance(rho, sigma))


def hellinger_affinity(rho, sigma) -> torch.Tensor:
    r"""Quantum affinity :math:`A(\rho,\sigma) = \operatorname{Tr}\sqrt\rho\sqrt\sigma`, real ``(...)`` in [0, 1].

    Luo & Zhang, Phys. Rev. A 69, 032106 (2004). With the eigen-decompositions
    :math:`\rho = \sum_i \lambda_i |u_i\rangle\langle u_i|` and
    :math:`\sigma = \sum_j \mu_j |v_j\rangle\langle v_j|`,
    :math:`A = \sum_{ij} \sqrt{\lambda_i\mu_j}\,|\langle u_i|v_j\rangle|^2`
    (for ensembles from the SVD of their factors, no d x d matrix). It is
    at most :math:`\sqrt F`. The gradient is the Daleckii-Krein one of the
    square root, finite where eigenvalues or singular values repeat (padded
    ensembles, equal weights on orthogonal words, the maximally mixed state;
    see ``qpnlp.hilbert._operands.root_overlap``). Directions that raise a zero
    eigenvalue, where the square root has an infinite slope, get gradient 0.

    Parameters
    ----------
    rho, sigma : PureState, Ensemble, DensityMatrix or torch.Tensor
        States of the same dimension d; batch dims broadcast.

    Examples
    --------
    >>> rho = DensityMatrix.maximally_mixed(2); psi = PureState.basis_state(0, 2)
    >>> round(float(hellinger_affinity(rho, psi)), 6)    # sqrt(1/2)
    0.707107
    """
    _check_dims(rho, sigma)
    return root_overlap(rho, sigma).clamp(0.0, 1.0)


def hellinger_distance(rho, sigma) -> torch.Tensor:
    r"""Quantum Hellinger distance :math:`D_H(\rho,\sigma) = \sqrt{2 - 2\operatorname{Tr}\sqrt\rho\sqrt\sigma}`, real ``(...)``.

    Luo & Zhang (2004), QuTiP's ``hellinger_dist``:
    :math:`D_H^2 = \operatorname{Tr}(\sqrt\rho - \sqrt\sigma)^2`, values in
    :math:`[0, \sqrt 2]`; see :func:`hellinger_affinity` for the gradient. Where the
    distance is zero (equal states) the gradient is taken as 0. Two pure states: :math:`D_H^2 = 2(1 - F)`,
    with :math:`1 - F` free of cancellation (as :func:`bures_distance`); other pairs go through
    :math:`2 - 2A`, which cancels: in float32, distances below ~1e-3 are not resolved.

    Parameters
    ----------
    rho, sigma : PureState, Ensemble, DensityMatrix or torch.Tensor
        States of the same dimension d; batch dims broadcast.

    Examples
    --------
    >>> a, b = PureState.basis_state(0, 3), PureState.basis_state(2, 3)
    >>> round(float(hellinger_distance(a, b)) ** 2, 6)
    2.0
    """
    if isinstance(rho, PureState) and isinstance(sigma, PureState):
        return safe_sqrt(2.0 * _pure_infidelity(rho, sigma))                 # the affinity is F: D_H^2 = 2 (1 - F)
    return safe_sqrt(2.0 - 2.0 * hellinger_affinity(rho, sigma))


def hilbert_schmidt_distance(rho, sigma) -> torch.Tensor:
    r"""Hilbert-Schmidt distance :math:`D_{HS}(\rho,\sigma) = \|\rho-\sigma\|_2 = \sqrt{\operatorname{Tr}(\rho-\sigma)^2}`, real ``(...)``.

    The Frobenius norm of the difference (Bengtsson & Zyczkowski eq. 9.20),
    a metric with values in :math:`[0, \sqrt2]`. Note that QuTiP's
    ``hilbert_dist`` returns its square, :math:`\operatorname{Tr}(\rho-\sigma)^2`.
    Not from a Gram formula (:math:`\operatorname{Tr}\rho^2 + \operatorname{Tr}\sigma^2 - 2\operatorname{Tr}\rho\sigma`
    cancels digits for close states): two pure states or ensembles with n + m < d words and d >= 40 go through the
    (n+m) x (n+m) matrix of :func:`trace_distance` (backward stable, never a d x d matrix per pair), with or without
    autograd: the gradient is analytic, from overlaps (``qpnlp.hilbert._low_rank.low_rank_hilbert_schmidt``; finite
    for a sentence that repeats a word, where QR's backward is not). Other pairs go through the dense difference. At
    :math:`\rho = \sigma` (the kink of the norm) the gradient is 0, as ``torch.linalg.norm``'s.

    Parameters
    ----------
    rho, sigma : PureState, Ensemble, DensityMatrix or torch.Tensor
        States of the same dimension d; batch dims broadcast.

    Examples
    --------
    >>> a, b = PureState.basis_state(0, 2), PureState.basis_state(1, 2)
    >>> round(float(hilbert_schmidt_distance(a, b)) ** 2, 6)
    2.0
    """
    return _low_rank_or_dense(low_rank_hilbert_schmidt(rho, sigma, HILBERT_SCHMIDT_LOW_RANK_FROM), rho, sigma,
                              _frobenius_norm)


def _cross_is_larger(rho, sigma) -> bool:
    r"""Whether the r x m cross matrix :math:`A^\dagger B` of two factors (pure: r = 1, ensemble: r = n) would
    hold more entries than a d x d matrix; the traces of products then go through the dense matrices."""
    if not (isinstance(rho, (PureState, Ensemble)) and isinstance(sigma, (PureState, Ensemble))):
        return False
    width = lambda x: 1 if isinstance(x, PureState) else x.num_states  # noqa: E731
    return width(rho) * width(sigma) > rho.dim * rho.dim


def _trace_product(rho, sigma) -> torch.Tensor:
    r""":math:`\operatorname{Tr}\rho\sigma`: :math:`\|A^\dagger B\|_F^2` from factors ``(d, n)``, ``(d, m)``, unless a
    side is dense or n m > d^2 (``_cross_is_larger``): memory O(min(n m, d^2)) besides the states. With a pure side
    it is :math:`\langle\psi|\sigma|\psi\rangle` (``_pure_expectation``), never :math:`|\psi\rangle\langle\psi|`."""
    if isinstance(rho, PureState) or isinstance(sigma, PureState):
        _check_dims(rho, sigma)
        psi, other, name = _pure_first(rho, sigma)
        return _pure_expectation(psi, other, dense=_cross_is_larger(rho, sigma), name=name)
    if _is_dense(rho) or _is_dense(sigma) or _cross_is_larger(rho, sigma):
        r, s = _dense_pair(rho, sigma)
        return (r * s.mT).sum((-2, -1)).real
    _check_dims(rho, sigma)
    return squared_frobenius_norm(factor_product(rho, sigma))


def _overlap_moments(rho, sigma) -> tuple[torch.Tensor, torch.Tensor]:
    r""":math:`\operatorname{Tr}\rho\sigma` and :math:`\operatorname{Tr}(\rho\sigma)^2`, from factors when no side is dense
    and their n x m cross matrix is no larger than d x d (``_cross_is_larger``)."""
    if _is_dense(rho) or _is_dense(sigma) or _cross_is_larger(rho, sigma):
        r, s = _dense_pair(rho, sigma)
        m = r @ s
        return (r * s.mT).sum((-2, -1)).real, (m * m.mT).sum((-2, -1)).real
    _check_dims(rho, sigma)
    x = factor_product(rho, sigma)                                 # (..., n, m)
    return squared_frobenius_norm(x), squared_frobenius_norm(x @ x.mH)


def _purity(obj) -> torch.Tensor:
    r""":math:`\operatorname{Tr}\rho^2` ``(...)`` of a state :func:`super_fidelity` has read through ``_trace_product``.

    A raw tensor is read as is: ``_trace_product``, which :func:`super_fidelity` calls first, has checked it as a
    density matrix (a second check here repeated that work and could only pass).
    """
    if isinstance(obj, PureState):
        return torch.ones(obj.batch_shape, dtype=V.real_dtype_of(obj.dtype), device=obj.device)
    if isinstance(obj, torch.Tensor):
        return squared_frobenius_norm(obj)
    return obj.purity()


def sub_fidelity(rho, sigma) -> torch.Tensor:
    r"""Sub-fidelity :math:`E(\rho,\sigma) = \operatorname{Tr}\rho\sigma + \sqrt{2[(\operatorname{Tr}\rho\sigma)^2 - \operatorname{Tr}(\rho\sigma)^2]}`.

    A lower bound of the *squared* fidelity, :math:`E \le F`, with equality
    when one state is pure (Miszczak, Puchala, Horodecki, Uhlmann &
    Zyczkowski, Quantum Inf. Comput. 9, 103 (2009), eq. 8). Needs no matrix
    square root: two traces of products, from the n x m cross matrix for
    ensembles. The gradient of the square root is taken as zero where its
    argument vanishes. Real ``(...)``.

    Parameters
    ----------
    rho, sigma : PureState, Ensemble, DensityMatrix or torch.Tensor
        States of the same dimension d; batch dims broadcast.

    Examples
    --------
    >>> rho = DensityMatrix.maximally_mixed(2); psi = PureState.basis_state(0, 2)
    >>> round(float(sub_fidelity(rho, psi)), 6)
    0.5
    """
    if isinstance(rho, PureState) or isinstance(sigma, PureState):
        return _trace_product(rho, sigma)            # the radicand is 0: only its round-off (sqrt eps) would remain
    t1, t2 = _overlap_moments(rho, sigma)
    return t1 + safe_sqrt(2.0 * (t1.square() - t2))


def super_fidelity(rho, sigma) -> torch.Tensor:
    r"""Super-fidelity :math:`G(\rho,\sigma) = \operatorname{Tr}\rho\sigma + \sqrt{(1 - \operatorname{Tr}\rho^2)(1 - \operatorname{Tr}\sigma^2)}`.

    An upper bound of the *squared* fidelity, :math:`F \le G`, with equality
    when one state is pure (Miszczak et al. 2009, eq. 9); needs only traces
    of products (lazy for ensembles). The gradient of the square root is
    taken as zero where its argument vanishes (a pure side). Real ``(...)``.

    Parameters
    ----------
    rho, sigma : PureState, Ensemble, DensityMatrix or torch.Tensor
        States of the same dimension d; batch dims broadcast.

    Examples
    --------
    >>> a = DensityMatrix.maximally_mixed(2)
    >>> round(float(super_fidelity(a, a)), 6)
    1.0
    """
    overlap = _trace_product(rho, sigma)                  # checks a raw tensor, once: _purity reads it unchecked
    return overlap + safe_sqrt((1.0 - _purity(rho)) * (1.0 - _purity(sigma)))

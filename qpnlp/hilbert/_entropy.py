r"""Purity and entropies of one state, relative entropy and the quantum Jensen-Shannon divergence.

All spectral quantities are functions of the eigenvalues :math:`\lambda_k`
of :math:`\rho`; for an :class:`Ensemble` of n < d states they come from the
n x n Gram matrix (same non-zero spectrum), never from the d x d matrix.
Entropies are in nats by default (``base=2`` for bits), with
:math:`0 \log 0 = 0`.

Positivity: a :class:`DensityMatrix` is checked for positive
semi-definiteness at construction only in the strict validation mode (it
needs an eigen-decomposition). The spectral functions here compute the
eigenvalues anyway, so in the default mode they check them for free: a
Hermitian, trace-one matrix with a negative eigenvalue (not a state) raises
ValueError naming the eigenvalue instead of giving a meaningless (e.g.
negative) entropy. With validation off the negative eigenvalues are clamped
to zero, as before.
"""

from __future__ import annotations

import math

import torch

from . import _mixture as M
from . import _validation as V
from ._contract import contract
from ._ensemble import Ensemble
from ._linalg import decompose, promote
from ._metrics import infidelity
from ._operands import (as_density_tensor, check_pair, first_order_backward, first_order_only, members,
                        rank_tolerance, spectrum)
from ._overlaps import scaled_overlaps
from ._states import DensityMatrix, PureState

__all__ = ["von_neumann_entropy", "purity", "linear_entropy", "renyi_entropy", "relative_entropy",
           "quantum_jensen_shannon_divergence"]


def log_base(base: float) -> float:
    r""":math:`\log b` of a logarithm base :math:`b > 0`, :math:`b \ne 1` (ValueError otherwise: b = 1 divides by zero)."""
    value = float(base)
    if not (0 < value < math.inf and value != 1):
        raise ValueError(f"base must be a finite number > 0 other than 1 (e.g. 2 for bits); got {base!r}")
    return math.log(value)


def _xlogx(lam: torch.Tensor) -> torch.Tensor:
    r""":math:`\lambda\log\lambda` element-wise, 0 at :math:`\lambda \le 0`; NaN stays NaN (validation off: a NaN
    state's spectrum, :func:`~qpnlp.hilbert._linalg.decompose`), never a plausible 0."""
    kept = (lam > 0) | torch.isnan(lam)
    return torch.where(kept, lam * torch.log(lam.clamp_min(torch.finfo(lam.dtype).tiny)), torch.zeros_like(lam))


def von_neumann_entropy(rho, *, base: float = math.e) -> torch.Tensor:
    r"""Von Neumann entropy :math:`S(\rho) = -\operatorname{Tr}\rho\log\rho = -\sum_k \lambda_k \log\lambda_k`.

    In nats by default (``base=2`` for bits); :math:`0 \log 0 = 0`. Zero for
    pure states, :math:`\log d` for the maximally mixed state. Real ``(...)``. The eigenvalues carry
    absolute errors of a few :math:`\epsilon`: in float32 the entropy of a nearly pure state is 1% off at
    S ~ 1e-4, and :math:`\log d - S` of a nearly maximally mixed one is round-off below ~1e-6.
    The gradient, :math:`-U\operatorname{diag}(\log\lambda_k + 1)U^\dagger`, is finite at
    repeated eigenvalues; a zero eigenvalue (derivative :math:`+\infty`: a pure or
    rank-deficient state) contributes 0.

    Parameters
    ----------
    rho : PureState, Ensemble, DensityMatrix or torch.Tensor
        A state of dimension d (a complex ``(..., d, d)`` tensor is read as a density matrix).
    base : float, optional
        Base of the logarithm: e (nats, the default), 2 for bits.

    Examples
    --------
    >>> round(float(von_neumann_entropy(DensityMatrix.maximally_mixed(4), base=2)), 6)
    2.0
    """
    return -_xlogx(spectrum(rho)).sum(-1) / log_base(base)


def purity(rho) -> torch.Tensor:
    r"""Purity :math:`\operatorname{Tr}\rho^2` in :math:`[1/d, 1]` (lazy for ensembles), real ``(...)``.

    Parameters
    ----------
    rho : PureState, Ensemble, DensityMatrix or torch.Tensor
        A state of dimension d (a complex ``(..., d, d)`` tensor is read as a density matrix).

    Examples
    --------
    >>> float(purity(DensityMatrix.maximally_mixed(4)))
    0.25
    """
    if isinstance(rho, (DensityMatrix, Ensemble)):
        return rho.purity()
    if isinstance(rho, PureState):
        return torch.ones(rho.batch_shape, dtype=V.real_dtype_of(rho.dtype), device=rho.device)
    return DensityMatrix(rho).purity()


def linear_entropy(rho) -> torch.Tensor:
    r"""Linear entropy :math:`S_L(\rho) = 1 - \operatorname{Tr}\rho^2` in :math:`[0, 1 - 1/d]`, real ``(...)``.

    The convention of QuTiP's ``entropy_linear`` (some authors rescale by
    :math:`d/(d-1)` to reach 1). The first-order expansion of :math:`S` around
    a pure state; needs no eigenvalues (lazy for ensembles).

    Parameters
    ----------
    rho : PureState, Ensemble, DensityMatrix or torch.Tensor
        A state of dimension d (a complex ``(..., d, d)`` tensor is read as a density matrix).

    Examples
    --------
    >>> round(float(linear_entropy(DensityMatrix.maximally_mixed(4))), 6)
    0.75
    """
    return 1.0 - purity(rho)


def renyi_entropy(rho, alpha: float, *, base: float = math.e) -> torch.Tensor:
    r"""Renyi entropy of order :math:`\alpha \ge 0`: :math:`S_\alpha(\rho) = \frac{1}{1-\alpha}\log\operatorname{Tr}\rho^\alpha`.

    The limits are taken exactly: :math:`\alpha = 1` is the von Neumann
    entropy, :math:`\alpha = 0` the log of the rank (eigenvalues above
    :math:`2\sqrt{d}\,\epsilon\,\lambda_{\max}`), :math:`\alpha = \infty` the min-entropy
    :math:`-\log\lambda_{\max}`; :math:`S_2 = -\log\operatorname{Tr}\rho^2`. For
    :math:`\alpha < 1` eigenvalues below that threshold count as zero too.
    Non-increasing in :math:`\alpha` (Renyi 1961; Bengtsson & Zyczkowski
    eq. 2.79). Real ``(...)``, nats by default. Gradients: the eigenvalues
    counted as zero contribute 0 (for :math:`\alpha < 1` their derivative is
    :math:`+\infty`); for :math:`\alpha = \infty` tied largest eigenvalues share
    it equally (``torch.amax``); :math:`\alpha = 0` is piecewise constant (no gradient).

    Parameters
    ----------
    rho : PureState, Ensemble, DensityMatrix or torch.Tensor
        A state of dimension d (a complex ``(..., d, d)`` tensor is read as a density matrix).
    alpha : float
        The order, >= 0; ``math.inf`` for the min-entropy.
    base : float, optional
        Base of the logarithm: e (nats, the default), 2 for bits.

    Examples
    --------
    >>> rho = DensityMatrix.maximally_mixed(4)
    >>> [round(float(renyi_entropy(rho, a, base=2)), 6) for a in (0.5, 1, 2, math.inf)]
    [2.0, 2.0, 2.0, 2.0]
    """
    alpha = float(alpha)
    if not alpha >= 0:
        raise ValueError(f"alpha must be >= 0 (or math.inf); got {alpha}")
    if alpha == 1.0:
        return von_neumann_entropy(rho, base=base)
    lam = spectrum(rho)
    if math.isinf(alpha):
        value = -torch.log(lam.amax(-1))
    elif alpha == 0.0:
        rank = (lam > rank_tolerance(lam, lam.shape[-1])).sum(-1)
        value = torch.where(torch.isnan(lam).any(-1), math.nan, torch.log(rank.to(lam.dtype)))    # NaN: no rank
    else:
        # below 1, lambda^alpha would turn round-off eigenvalues of a rank-deficient state (~eps) into
        # errors of eps^alpha; they are zero, as for alpha = 0
        positive = (lam > (rank_tolerance(lam, lam.shape[-1]) if alpha < 1 else 0)) | torch.isnan(lam)
        powers = torch.where(positive, torch.where(positive, lam, torch.ones_like(lam)) ** alpha,
                             torch.zeros_like(lam))
        value = torch.log(powers.sum(-1)) / (1.0 - alpha)
    return value / log_base(base)


def _log_divided_differences(mu: torch.Tensor, tol: float) -> torch.Tensor:
    r"""Divided differences :math:`K_{ij} = (f(\mu_i) - f(\mu_j))/(\mu_i - \mu_j)` of :math:`f(\mu) = \log\max(\mu, \mathrm{tol})`, ``(..., k, k)``.

    :math:`f'(\mu_i)` where :math:`\mu_i = \mu_j`: :math:`1/\mu_i` above
    ``tol``, 0 below (the clamp is constant there). Above ``tol`` they are
    computed as :math:`\log(1 + x)/(x\,\mu_{\min})`, :math:`x = (\mu_{\max} - \mu_{\min})/\mu_{\min}`,
    which tends to :math:`1/\mu` as the gap closes without the cancellation
    of :math:`\log\mu_i - \log\mu_j`.
    """
    c = mu.clamp_min(tol)
    lo, hi = torch.minimum(c.unsqueeze(-1), c.unsqueeze(-2)), torch.maximum(c.unsqueeze(-1), c.unsqueeze(-2))
    x = (hi - lo) / lo
    log_ratio = torch.log1p(x)                                     # f(hi) - f(lo)
    slope = torch.where(x > 0, log_ratio / torch.where(x > 0, x, torch.ones_like(x)), torch.ones_like(x)) / lo
    above = mu > tol
    both, one = above.unsqueeze(-1) & above.unsqueeze(-2), above.unsqueeze(-1) ^ above.unsqueeze(-2)
    gap = (mu.unsqueeze(-1) - mu.unsqueeze(-2)).abs()              # > 0 where exactly one is above tol
    across = log_ratio / torch.where(one, gap, torch.ones_like(gap))
    return torch.where(both, slope, torch.where(one, across, torch.zeros_like(x)))


class _TraceLog(torch.autograd.Function):
    r""":math:`\operatorname{Tr}\rho\log\sigma = \sum_k p_k \log\mu_k` in the eigenbasis of sigma, with :math:`p_k = \langle s_k|\rho|s_k\rangle`.

    ``forward(rho, sigma, tol)`` returns the trace ``(...)`` and, not
    differentiable, the eigenvalues :math:`\mu` and populations :math:`p`
    ``(..., d)``. Terms with :math:`p_k \le` ``tol`` are dropped
    (:math:`0\log 0 = 0`) and :math:`\log\mu` is clamped at ``log(tol)``.

    A custom Function because ``eigh``'s backward divides by the gaps between
    eigenvalues of sigma: at the maximally mixed state (any repeated
    eigenvalue) the gradient with respect to sigma is 0/0 = NaN, although
    :math:`\log\sigma` is smooth there. The backward is the Daleckii-Krein
    formula :math:`\bar\sigma = U[(U^\dagger\rho U)\circ K]U^\dagger` with the
    divided differences K of the log (``_log_divided_differences``),
    finite at repeated eigenvalues. :math:`\bar\rho = U\operatorname{diag}(\log\mu_k\,[p_k > \mathrm{tol}])U^\dagger`,
    as autograd gave it through the forward.

    The eigenvectors and the terms :math:`\log\mu_k\,[p_k > \mathrm{tol}]` are returned too (not
    differentiable, for the backward): the forward sets nothing on ``ctx`` (``setup_context`` does), so
    ``torch.func.grad`` and ``vmap`` run it too. The trace is real, so the ``jvp`` is the real inner product
    of those two gradients with the tangents, taken in the eigenbasis of sigma:
    :math:`\sum_k \log\mu_k [p_k > \mathrm{tol}]\operatorname{Re}(U^\dagger d\rho\,U)_{kk}
    + \operatorname{Re}\sum_{ij} \overline{((U^\dagger\rho U)\circ K)_{ij}}\,(U^\dagger d\sigma\,U)_{ij}`.
    """

    generate_vmap_rule = True

    @staticmethod
    def forward(r, s, tol):
        mu, vecs = decompose(torch.linalg.eigh, s)
        populations = contract("...ak,...ab,...bk->...k", vecs.conj(), r, vecs).real
        log_mu = torch.log(mu.clamp_min(tol))
        kept = (populations > tol) | torch.isnan(populations)        # a NaN sigma (validation off): NaN, not 0
        terms = torch.where(kept, log_mu, torch.zeros_like(mu))
        cross = torch.where(kept, populations * log_mu, torch.zeros_like(mu)).sum(-1)
        return cross, mu, populations, vecs, terms

    @staticmethod
    def setup_context(ctx, inputs, output):
        r, s, tol = inputs
        _, mu, populations, vecs, terms = output
        ctx.tol, ctx.shapes = tol, (r.shape, s.shape)
        ctx.mark_non_differentiable(mu, populations, vecs, terms)
        ctx.save_for_backward(r, mu, vecs, terms, s)                 # s: a second derivative raises
        ctx.save_for_forward(r, mu, vecs, terms)

    @staticmethod
    @first_order_backward("Tr rho log sigma")
    def backward(ctx, grad, grad_mu, grad_populations, grad_vecs, grad_terms):
        r, mu, vecs, terms, _ = ctx.saved_tensors
        g = grad.to(vecs.dtype).unsqueeze(-1).unsqueeze(-1)
        grad_r = grad_s = None
        if ctx.needs_input_grad[0]:
            grad_r = (((vecs * terms.to(vecs.dtype).unsqueeze(-2)) @ vecs.mH) * g).sum_to_size(ctx.shapes[0])
        if ctx.needs_input_grad[1]:
            kernel = _log_divided_differences(mu, ctx.tol).to(vecs.dtype)
            grad_s = ((vecs @ ((vecs.mH @ r @ vecs) * kernel) @ vecs.mH) * g).sum_to_size(ctx.shapes[1])
        return grad_r, grad_s, None

    @staticmethod
    def jvp(ctx, dr, ds, _tol):
        first_order_only("jvp", "Tr rho log sigma", ctx)
        r, mu, vecs, terms = ctx.saved_tensors
        value = torch.zeros_like(terms.sum(-1))
        if dr is not None:
            value = value + (terms * contract("...ak,...ab,...bk->...k", vecs.conj(), dr, vecs).real).sum(-1)
        if ds is not None:
            weights = (vecs.mH @ r @ vecs) * _log_divided_differences(mu, ctx.tol).to(vecs.dtype)
            value = value + (weights.conj() * (vecs.mH @ ds @ vecs)).real.sum((-2, -1))
        return value, None, None, None, None


def relative_entropy(rho, sigma, *, base: float = math.e) -> torch.Tensor:
    r"""Quantum relative entropy :math:`S(\rho\|\sigma) = \operatorname{Tr}\rho(\log\rho - \log\sigma)`.

    Non-negative, zero iff :math:`\rho = \sigma`, and :math:`+\infty` when the
    support of :math:`\rho` is not inside that of :math:`\sigma`. Computed in
    the eigenbasis of :math:`\sigma`: :math:`\operatorname{Tr}\rho\log\sigma =
    \sum_k \langle s_k|\rho|s_k\rangle \log\mu_k`. Real ``(...)``, nats by default.
    It subtracts two terms of order 1 whose difference is small for close states: their round-off,
    ~1e-6 in float32, limits it (10% error at a value of 1e-5; states closer than ~1e-3 are not resolved).
    The gradient with respect to :math:`\sigma` is the Daleckii-Krein one of
    the logarithm, finite at repeated eigenvalues of :math:`\sigma` (see
    ``_TraceLog``); zero eigenvalues of :math:`\rho` contribute 0 (as in
    :func:`von_neumann_entropy`), and where the value is :math:`+\infty` the gradient is 0.

    Parameters
    ----------
    rho, sigma : PureState, Ensemble, DensityMatrix or torch.Tensor
        States of the same dimension d; batch dims broadcast.
    base : float, optional
        Base of the logarithm: e (nats, the default), 2 for bits.

    Examples
    --------
    >>> pure, mixed = PureState.basis_state(0, 2), DensityMatrix.maximally_mixed(2)
    >>> round(float(relative_entropy(pure, mixed, base=2)), 6)
    1.0
    """
    check_pair(rho, sigma)
    r, s = as_density_tensor(rho, "rho"), as_density_tensor(sigma, "sigma")
    coarse = V.real_dtype_of(r.dtype if r.dtype == torch.complex64 else s.dtype)   # the inputs' own precision
    r, s = promote(r, s)
    tol = V.tolerance(coarse, r.shape[-1])
    cross, mu, populations, _, _ = _TraceLog.apply(r, s, tol)
    if V.enabled():
        V.check_spectrum("sigma", mu.to(coarse), s.shape[-1])
    outside = (mu <= tol) & (populations > tol)
    neg_entropy = -von_neumann_entropy(rho)                    # at rho's own precision (exactly 0 when pure)
    value = ((neg_entropy - cross) / log_base(base)).clamp_min(0)   # >= 0 (Klein), not -eps from round-off
    return torch.where(outside.any(-1), torch.full_like(value, math.inf), value)


def _as_ensemble(obj) -> Ensemble | None:
    if isinstance(obj, Ensemble):
        return obj
    if isinstance(obj, PureState):
        weights = torch.ones(obj.batch_shape + (1,), dtype=V.real_dtype_of(obj.dtype), device=obj.device)
        return Ensemble._trusted(states=obj.data.unsqueeze(-2), weights=weights)
    return None


def _dense_at(obj, name: str, dtype: torch.dtype) -> torch.Tensor:
    """The d x d matrix of a state at the complex ``dtype``, at its own batch shape: a pure state's or an
    ensemble's from its members widened first (:func:`~qpnlp.hilbert._mixture.dense`), a dense one widened."""
    a = _as_ensemble(obj)
    if a is None:
        return as_density_tensor(obj, name).to(dtype)
    return M.dense(a._states.to(dtype), a.weights.to(V.real_dtype_of(dtype)))


def _average(rho, sigma) -> DensityMatrix:
    r"""The equal mixture :math:`(\rho + \sigma)/2` ``(..., d, d)``, batch dims broadcasting, at the common dtype.

    Each side's d x d matrix once at its own batch shape (:func:`_dense_at`), then one broadcast sum, halved in
    place: neither side is expanded to the other's batch. The divergence uses it only where the spectrum goes
    through the d x d matrix anyway (n + m >= d, or a dense side: ``_factor_spectra`` is None). It concatenated the
    member lists per pair of the broadcast batch, ``(..., n + m, d)``: one state against N ensembles was copied N
    times with every ensemble's states before the d x d matrices were built."""
    dtype = torch.promote_types(rho.dtype, sigma.dtype)
    total = _dense_at(rho, "rho", dtype) + _dense_at(sigma, "sigma", dtype)
    return DensityMatrix._trusted(data=total.mul_(0.5))


def _width(obj) -> int:
    """Columns of the factor of a :class:`PureState` (1) or an :class:`Ensemble` (n)."""
    return 1 if isinstance(obj, PureState) else obj.num_states


def _average_gram(aa: torch.Tensor, ab: torch.Tensor, bb: torch.Tensor) -> torch.Tensor:
    r"""Twice the Gram matrix ``(..., n + m, n + m)`` of the factor :math:`[A, B]/\sqrt2` of :math:`(\rho + \sigma)/2`.

    From the blocks :math:`A^\dagger A` ``(..., n, n)``, :math:`A^\dagger B` ``(..., n, m)`` and :math:`B^\dagger B`
    ``(..., m, m)`` of factors :math:`\rho = AA^\dagger`, :math:`\sigma = BB^\dagger` (``_factor_spectra``), batch dims
    broadcasting:

    .. math:: 2G = \begin{pmatrix} A^\dagger A & A^\dagger B \\ B^\dagger A & B^\dagger B \end{pmatrix},

    whose halved eigenvalues are the nonzero eigenvalues of :math:`(\rho + \sigma)/2` (those of the Gram matrix
    of the concatenated factors up to round-off; the halving is exact). Memory O(N (n + m)^2) for N pairs, where
    concatenating :math:`[A, B]` held ``(N, d, n + m)`` (one state against N ensembles: a copy of the whole batch).
    """
    batch = ab.shape[:-2]
    rows = ((aa, ab), (ab.mH, bb))
    return torch.cat([torch.cat([x.expand(*batch, *x.shape[-2:]) for x in row], -1) for row in rows], -2)


def _factor_spectra(rho, sigma) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None:
    r"""Spectra of :math:`\rho`, :math:`\sigma` and :math:`(\rho + \sigma)/2` (clamped at zero) from Gram matrices, for
    two pure states or ensembles with n + m < d members; None otherwise (a dense side, or n + m >= d: the average's
    spectrum goes through the d x d matrix, ``_average``).

    The blocks :math:`A^\dagger A`, :math:`A^\dagger B`, :math:`B^\dagger B` come from the states' overlaps
    (``scaled_overlaps`` of ``members``): neither factor is built, nor copied per pair of the broadcast batch, and
    :math:`B^\dagger B` gives both :math:`\sigma`'s spectrum and a block of the average's (one state against N
    ensembles: one Gram matrix of the batch, not three copies of its states). Each side's own spectrum is at its
    own dtype; a side of the coarser dtype has its block recomputed at the common one for the average.
    """
    if not (isinstance(rho, (PureState, Ensemble)) and isinstance(sigma, (PureState, Ensemble))):
        return None
    if _width(rho) + _width(sigma) >= rho.dim:
        return None
    (a, p), (b, q) = members(rho), members(sigma)
    grams = scaled_overlaps(a, p, a, p), scaled_overlaps(b, q, b, q)
    own = [spectrum(x) if isinstance(x, PureState) else decompose(torch.linalg.eigvalsh, g).clamp_min(0)
           for x, g in zip((rho, sigma), grams)]
    a, b = promote(a, b)
    aa, bb = (g if g.dtype == x.dtype else scaled_overlaps(x, w, x, w) for g, x, w in zip(grams, (a, b), (p, q)))
    average = 0.5 * decompose(torch.linalg.eigvalsh, _average_gram(aa, scaled_overlaps(a, p, b, q), bb)).clamp_min(0)
    return own[0], own[1], average


def _pure_divergence(rho: PureState, sigma: PureState) -> torch.Tensor:
    r"""J of two pure states in nats: binary entropy of :math:`\lambda = (1 - \sqrt F)/2 = (1 - F)/(2(1 + \sqrt F))`.

    :math:`(\rho + \sigma)/2` has the eigenvalues :math:`\lambda` and :math:`1 - \lambda`; with
    :math:`1 - \sqrt F` from :func:`~qpnlp.hilbert.infidelity` (no cancellation for two pure states) and
    :math:`\log(1 - \lambda)` as ``log1p``, J keeps its relative accuracy for close states, where the eigenvalues of the Gram matrix resolve :math:`\lambda` only to
    :math:`\epsilon` (float32: J of states closer than an angle of ~1e-3 was round-off, 15% off to 50x).
    """
    small = 0.5 * infidelity(rho, sigma, squared=False)                     # lambda = (1 - sqrt F) / 2
    return -(_xlogx(small) + (1.0 - small) * torch.log1p(-small))


def quantum_jensen_shannon_divergence(rho, sigma, *, base: float = math.e) -> torch.Tensor:
    r"""Quantum Jensen-Shannon divergence :math:`J(\rho,\sigma) = S\big(\tfrac{\rho+\sigma}{2}\big) - \tfrac12 S(\rho) - \tfrac12 S(\sigma)`.

    Symmetric, bounded by :math:`\log 2` (1 bit, reached by orthogonal
    states), zero iff the states are equal (Majtey, Lamberti & Prato, Phys.
    Rev. A 72, 052310 (2005)); its square root is a metric on states
    (Virosztek, Adv. Math. 380, 107595 (2021)). For two pure states or
    ensembles the average is the ensemble of both member lists, so the
    spectrum comes from an (n + m) x (n + m) Gram matrix when n + m < d (else from the d x d matrix, each side's
    own summed with broadcasting, ``_average``: one pure state against 500 ensembles of 40 states, d = 32,
    complex128, adds 20 MiB at the peak, 31 MiB through the member lists concatenated per pair), built
    block by block from the overlaps of the member states (``_factor_spectra``): one state against a batch of N
    is never copied N times, nor is the batch concatenated with it (no ``(N, d, n + m)`` tensor), nor are the
    factors built (one pure state against 2000 ensembles of 20 words, d = 300, complex128: 54 MiB at the peak,
    380 MiB through the factors, 583 MiB concatenated; ``benchmarks/metric_memory.py``). Real ``(...)``,
    nats by default. Gradients as in :func:`von_neumann_entropy` (zero eigenvalues
    contribute 0): finite for pure, equal and orthogonal states, 0 at :math:`\rho = \sigma`. Two pure
    states: the binary entropy of :math:`(1 - \sqrt F)/2` with :math:`1 - F` free of cancellation
    (``_pure_divergence``), accurate in float32 down to angles of ~1e-5. Other pairs subtract entropies of
    order 1: in float32 values below ~1e-6 (states closer than ~1e-3) are round-off.

    Parameters
    ----------
    rho, sigma : PureState, Ensemble, DensityMatrix or torch.Tensor
        States of the same dimension d; batch dims broadcast.
    base : float, optional
        Base of the logarithm: e (nats, the default), 2 for bits.

    Examples
    --------
    >>> a, b = PureState.basis_state(0, 2), PureState.basis_state(1, 2)
    >>> round(float(quantum_jensen_shannon_divergence(a, b, base=2)), 6)
    1.0
    """
    check_pair(rho, sigma)
    if isinstance(rho, PureState) and isinstance(sigma, PureState):
        return _pure_divergence(rho, sigma) / log_base(base)
    spectra = _factor_spectra(rho, sigma)
    if spectra is None:
        # each side is checked at its own dtype; their average is then a state, and checking it again would hold
        # a complex64 side promoted to complex128 to the float64 tolerance
        spectra = spectrum(rho, "rho"), spectrum(sigma, "sigma"), spectrum(_average(rho, sigma), validate=False)
    own = -(_xlogx(spectra[0]).sum(-1) + _xlogx(spectra[1]).sum(-1))
    mixed = -_xlogx(spectra[2]).sum(-1)
    return ((mixed - 0.5 * own) / log_base(base)).clamp_min(0)

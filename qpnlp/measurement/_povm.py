r"""General measurements: positive operator-valued measures (POVMs).

A POVM with k outcomes on :math:`\mathbb{C}^d` is a set of effects
:math:`E_1, \dots, E_k \succeq 0` with :math:`\sum_k E_k = I`; outcome k
has probability :math:`\operatorname{Tr}(\rho E_k)` (Nielsen & Chuang
section 2.2.6). Projective measurements are the POVMs whose effects are
orthogonal projectors; a POVM may have more outcomes than dimensions
(k > d), e.g. the three "trine" states of a qubit.

Every effect is kept through factor vectors, :math:`E_k = \sum_{s=1}^r
|v_{ks}\rangle\langle v_{ks}| = M_k^\dagger M_k`, where the Kraus operator
:math:`M_k` (r x d) has the rows :math:`\langle v_{ks}|`. So the effects are
positive by construction, and Born probabilities of a lazy mixture are
:math:`\sum_i p_i \|M_k w_i\|^2` (:func:`~qpnlp.measurement.povm_probabilities`),
never a d x d matrix. Stacking the Kraus operators gives an isometry
:math:`V \in \mathbb{C}^{kr \times d}`, :math:`V^\dagger V = \sum_k M_k^\dagger M_k = I`
(the Naimark picture, :func:`~qpnlp.measurement.naimark_dilation`).
"""

from __future__ import annotations

from typing import overload

import torch

from qpnlp.hilbert import DensityMatrix, Ensemble, PureState, random_isometry
from qpnlp.hilbert import _validation as V
from qpnlp.hilbert import _widen
from qpnlp.hilbert._batched import Batched
from qpnlp.hilbert._linalg import decompose
from qpnlp.hilbert._operands import first_order_backward, first_order_only, hermitian_root_pullback, rank_tolerance

from ._born import povm_probabilities, povm_probabilities_dense
from ._checks import _where, check_completeness, check_outcome
from ._kraus import kraus_update, lueders_operator
from ._projector import Projector

__all__ = ["POVM", "random_povm"]


class _PolarFactor(torch.autograd.Function):
    r"""The polar factor :math:`Q = U W^\dagger` of :math:`F = U \Sigma W^\dagger` (thin SVD given), with its own backward.

    Autograd through ``torch.linalg.svd`` divides by :math:`\sigma_i^2 - \sigma_j^2`: NaN or wrong
    gradients at repeated singular values, i.e. at every tight frame. Q itself is smooth
    wherever F has full column rank; with :math:`G` the gradient of Q and :math:`B = U^\dagger G W`,
    the gradient of F is
    :math:`U [(B - B^\dagger) / (\sigma_i + \sigma_j)] W^\dagger + (I - U U^\dagger) G W \Sigma^{-1} W^\dagger`.
    The same map takes a tangent dF to dQ (from :math:`dF = dQ\,P + Q\,dP`, :math:`P = W\Sigma W^\dagger`,
    :math:`Q^\dagger dQ` skew-Hermitian: the derivative of the polar factor is self-adjoint), so it is the ``jvp``
    too. The forward sets nothing on ``ctx`` (``setup_context`` does), so ``torch.func.grad`` runs it too.
    """

    generate_vmap_rule = True

    @staticmethod
    def forward(frame, u, s, vh):
        return u @ vh

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs[1:], inputs[0])                # the frame: a second derivative raises
        ctx.save_for_forward(*inputs[1:])

    @staticmethod
    def _frechet(u: torch.Tensor, s: torch.Tensor, vh: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """The self-adjoint derivative of the polar factor applied to ``x`` (a gradient or a tangent of F)."""
        w = vh.mH
        b = u.mH @ x @ w
        inner = u @ ((b - b.mH) / (s.unsqueeze(-1) + s.unsqueeze(-2))) @ vh
        outer = (x - u @ (u.mH @ x)) @ (w / s.unsqueeze(-2)) @ vh
        return inner + outer

    @staticmethod
    @first_order_backward("the polar factor of a frame")
    def backward(ctx, grad):
        return _PolarFactor._frechet(*ctx.saved_tensors[:3], grad), None, None, None

    @staticmethod
    def jvp(ctx, tangent, *_decomposition):                   # the SVD comes from the detached frame
        first_order_only("jvp", "the polar factor of a frame", ctx)
        return _PolarFactor._frechet(*ctx.saved_tensors, tangent)


class _EffectFactor(torch.autograd.Function):
    r"""Factor vectors :math:`v_s = \sqrt{\lambda_s}\,u_s` (rows, ``(..., d, d)``) of Hermitian effects, from ``eigh``.

    A custom Function because ``eigh``'s backward divides by the gaps between eigenvalues: a projective
    effect, one of rank < d - 1 or :math:`I/2` (any repeated eigenvalue) gave NaN gradients, and the square
    root at a zero eigenvalue inf. With :math:`R = \sqrt E` the rows are :math:`(RU)^T`; U is not a function
    of E where eigenvalues repeat (any unitary within an eigenspace does), and a change of U is a unitary
    mixing of the rows, which leaves the effect, its probabilities and its Lueders update unchanged. So the
    backward holds U fixed and differentiates R with the Daleckii-Krein formula
    (``qpnlp.hilbert._operands.root_pullback``): exact for everything that depends on the effects, finite
    everywhere. The rows take the positive part of E, which has a kink at a zero eigenvalue: the block of
    the gradient between zero eigenvalues (those below ``qpnlp.hilbert._operands.rank_tolerance``, which
    round-off leaves) is 0. A smooth parametrisation that keeps E positive cannot move that block to first
    order, so its gradient is exact there too. Returns the rows and, not differentiable, U and the roots
    (0 below the tolerance): the forward sets nothing on ``ctx`` (``setup_context`` does), so
    ``torch.func.grad`` and ``vmap`` run it too. The ``jvp`` is the adjoint map, U held fixed as well:
    :math:`dR` from the self-adjoint Daleckii-Krein formula applied to the Hermitian part of dE, rows
    :math:`(dR\,U)^T`; so the derivatives of the effects, probabilities and updates are exact, those of
    the rows themselves are not (they would follow U).
    """

    generate_vmap_rule = True

    @staticmethod
    def forward(effects):
        lam, u = decompose(torch.linalg.eigh, effects)
        roots = lam.clamp_min(0).sqrt()                                   # negative round-off clamped to zero
        resolved = torch.where(lam > rank_tolerance(lam, lam.shape[-1]), roots, torch.zeros_like(roots))
        return (u * roots.to(u.dtype).unsqueeze(-2)).mT, u, resolved     # row s: sqrt(lam_s) u_s

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.mark_non_differentiable(*output[1:])
        ctx.save_for_backward(*output[1:], inputs[0])                 # the effects: a second derivative raises
        ctx.save_for_forward(*output[1:])

    @staticmethod
    @first_order_backward("the factor vectors of dense effects")
    def backward(ctx, grad, *_grad_decomposition):
        u, roots, _ = ctx.saved_tensors
        return hermitian_root_pullback("dense", roots, u, None, grad.mT @ u.mH)          # the gradient of R

    @staticmethod
    def jvp(ctx, tangent):
        first_order_only("jvp", "the factor vectors of dense effects", ctx)
        u, roots = ctx.saved_tensors
        return (hermitian_root_pullback("dense", roots, u, None, tangent) @ u).mT, None, None  # (dR U)^T


class POVM(Batched):
    r"""An immutable POVM :math:`\{E_k = \sum_s |v_{ks}\rangle\langle v_{ks}|\}_{k=1}^{K}` with :math:`\sum_k E_k = I`.

    Holds the factor vectors ``(..., k, r, d)``; the leading dims are batch
    dims (several POVMs), the outcomes are an event dim. Build one with
    :meth:`from_frame` (rank 1, from any spanning set of vectors),
    :meth:`from_effects` (dense effects), :meth:`from_kraus`,
    :meth:`from_isometry` or :meth:`from_projectors`.

    Parameters
    ----------
    vectors : torch.Tensor
        Complex ``(..., k, r, d)``.
    validate : bool or "strict", optional
        Check finiteness and :math:`\sum_k E_k = I` (O(k r d^2)); the effects
        are positive by construction.

    Examples
    --------
    >>> trine = torch.tensor([[1, 0], [-0.5, 0.75 ** 0.5], [-0.5, -0.75 ** 0.5]], dtype=torch.complex64)
    >>> povm = POVM.from_frame(trine)                                  # E_k = 2/3 |t_k><t_k|
    >>> povm.num_outcomes, povm.rank, povm.dim
    (3, 1, 2)
    >>> povm.probabilities(PureState.basis_state(0, 2))
    tensor([0.6667, 0.1667, 0.1667])
    """

    _fields = ("vectors",)
    _event_ndims = (3,)
    _repr_sizes = ("num_outcomes", "rank")
    __slots__ = ("_vectors",)

    def __init__(self, vectors: torch.Tensor, *, validate: V.Validate = None) -> None:
        V.check_tensor("vectors", vectors)
        V.check_complex("vectors", vectors)
        V.check_min_ndim("vectors", vectors, 3, "(..., k, r, d)")
        if V.resolve(validate):
            V.check_finite("vectors", vectors, event_ndim=3)
            check_completeness("POVM", vectors)
        object.__setattr__(self, "_vectors", vectors)

    @classmethod
    def _widened(cls, fields):
        r"""Factor vectors whose stack is an isometry, :math:`\sum_k E_k = V^\dagger V = I`, to float64's round-off
        where float32's round-off left it off (``qpnlp.hilbert._widen.orthonormal_columns``: a QR)."""
        vectors = fields["vectors"]
        stacked = _widen.orthonormal_columns(vectors.flatten(-3, -2))   # rows v_ks, (..., k r, d): V conjugated
        return {"vectors": stacked.reshape(vectors.shape)}

    # -- constructors -------------------------------------------------------
    @classmethod
    def from_kraus(cls, operators: torch.Tensor, *, validate: V.Validate = None) -> "POVM":
        r"""From Kraus operators :math:`M_k` ``(..., k, r, d)``: :math:`E_k = M_k^\dagger M_k`."""
        V.check_tensor("operators", operators)
        return cls(operators.conj(), validate=validate)

    @classmethod
    def from_isometry(cls, isometry: torch.Tensor, num_outcomes: int, *, validate: V.Validate = None) -> "POVM":
        r"""From an isometry :math:`V` ``(..., k r, d)`` (:math:`V^\dagger V = I`): outcome k gets rows ``k r .. k r + r - 1``.

        :math:`E_k = V_k^\dagger V_k` with :math:`V_k` the k-th block of r rows.
        """
        V.check_tensor("isometry", isometry)
        V.check_min_ndim("isometry", isometry, 2, "(..., k r, d)")
        num_outcomes = V.check_dimension("num_outcomes", num_outcomes)      # 2.0 or True: not torch's reshape error
        rows, d = isometry.shape[-2:]
        if rows % num_outcomes:
            raise ValueError(f"the {rows} rows of the isometry must split into num_outcomes={num_outcomes} "
                             f"equal blocks")
        ops = isometry.reshape(*isometry.shape[:-2], num_outcomes, rows // num_outcomes, d)
        return cls.from_kraus(ops, validate=validate)

    @classmethod
    def from_effects(cls, effects: torch.Tensor, *, validate: V.Validate = None) -> "POVM":
        r"""From dense effects ``(..., k, d, d)``: Hermitian (checked), PSD (strict mode), summing to I.

        Factored through ``eigh``: :math:`v_{ks} = \sqrt{\lambda_{ks}}\,u_{ks}`
        (r = d, negative round-off clamped to zero). Differentiable with finite gradients at repeated and
        zero eigenvalues (projective effects, :math:`I/k`): the gradient is that of :math:`\sqrt{E_k}`
        (Daleckii-Krein), exact for the probabilities, effects and Lueders updates, which do not depend on
        the choice of eigenvectors; the block between zero eigenvalues, where the factor (the positive part
        of :math:`E_k`) has a kink, gets 0 (``_EffectFactor``).
        """
        V.check_tensor("effects", effects)
        V.check_complex("effects", effects)
        V.check_square("effects", effects)
        V.check_min_ndim("effects", effects, 3, "(..., k, d, d)")
        V.check_nonempty("effects", effects, -1, "dimensions (d = 0)")         # not torch's IndexError in eigh
        mode = V.resolve(validate)
        if mode:
            V.check_finite("effects", effects, event_ndim=3)
            V.check_hermitian("effects", effects)
        if mode == "strict":
            V.check_psd("effects", effects)
        return cls(_EffectFactor.apply(effects)[0], validate=validate)

    @classmethod
    def from_frame(cls, frame: torch.Tensor, *, validate: V.Validate = None) -> "POVM":
        r"""Rank-1 POVM from k >= d vectors ``(..., k, d)`` that span :math:`\mathbb{C}^d`.

        With the frame operator :math:`S = \sum_k |f_k\rangle\langle f_k|`,
        the effects are :math:`E_k = |g_k\rangle\langle g_k|`,
        :math:`g_k = S^{-1/2} f_k` (the canonical tight frame, so
        :math:`\sum_k E_k = I`; Casazza & Kutyniok, *Finite Frames*, 2013).
        With the SVD :math:`F = U\Sigma W^\dagger` of the k x d matrix of
        the rows :math:`f_k`, the rows :math:`g_k` form :math:`U W^\dagger` (the
        polar factor of F), computed without squaring F's condition number.
        A tight frame (:math:`S = I`) is kept as it is. Raises ValueError when
        the vectors do not span the space.
        """
        V.check_tensor("frame", frame)
        V.check_complex("frame", frame)
        V.check_min_ndim("frame", frame, 2, "(..., k, d)")
        V.check_nonempty("frame", frame, -1, "dimensions (d = 0)")             # sv[..., -1] below needs k, d >= 1
        V.check_nonempty("frame", frame, -2, "vectors (k = 0)")
        if V.resolve(validate):
            V.check_finite("frame", frame, event_ndim=2)
        u, sv, vh = decompose(torch.linalg.svd, frame.detach(), full_matrices=False)
        smallest = (sv[..., -1] / sv[..., 0].clamp_min(torch.finfo(sv.dtype).tiny)).reshape(-1)
        tol = V.tolerance(frame.dtype, frame.shape[-1])
        degenerate = smallest.numel() and V.has_values(smallest) and float(smallest.min()) <= tol  # meta: no values
        if frame.shape[-2] < frame.shape[-1] or degenerate:
            worst = int(smallest.argmin()) if frame.shape[-2] >= frame.shape[-1] else 0
            value = float(smallest[worst]) if frame.shape[-2] >= frame.shape[-1] else 0.0
            raise ValueError(f"frame vectors must span C^{frame.shape[-1]}; the frame has relative smallest "
                             f"singular value {value:.3g}{_where(worst, frame.shape[:-2])} "
                             f"(shape {tuple(frame.shape)}, tolerance {tol:.2g})")
        polar = _PolarFactor.apply(frame, u, sv, vh)       # u @ vh; under torch.func.jvp frame.requires_grad is False
        return cls(polar.unsqueeze(-2), validate=validate)                  # rows g_k = S^{-1/2} f_k

    @classmethod
    def from_projectors(cls, projectors: Projector, *, validate: V.Validate = None) -> "POVM":
        """A projective measurement: a :class:`Projector` batch ``(..., k)`` whose projectors sum to I."""
        if not isinstance(projectors, Projector):
            raise TypeError(f"from_projectors takes a Projector (a batch of k projectors); got "
                            f"{type(projectors).__name__} (vectors (..., k, r, d): POVM(...) or from_kraus)")
        if not projectors.batch_shape:
            raise ValueError("from_projectors needs a batch of k projectors (batch shape (..., k)); got one")
        return cls(projectors.vectors, validate=validate)

    # -- accessors ---------------------------------------------------------
    @property
    def vectors(self) -> torch.Tensor:
        r"""Complex ``(..., k, r, d)`` factor vectors: :math:`E_k = \sum_s |v_{ks}\rangle\langle v_{ks}|`."""
        return self._vectors

    @property
    def num_outcomes(self) -> int:
        """Number k of outcomes."""
        return self._vectors.shape[-3]

    @property
    def rank(self) -> int:
        """Number r of factor vectors per effect (an upper bound of each effect's rank)."""
        return self._vectors.shape[-2]

    def kraus(self) -> torch.Tensor:
        r"""Kraus operators :math:`M_k` ``(..., k, r, d)`` with :math:`E_k = M_k^\dagger M_k`."""
        return self._vectors.conj()

    def effects(self) -> torch.Tensor:
        r"""Dense effects :math:`E_k` ``(..., k, d, d)``."""
        return self._vectors.mT @ self._vectors.conj()

    def isometry(self) -> torch.Tensor:
        r"""The stacked Kraus operators :math:`V` ``(..., k r, d)``, :math:`V^\dagger V = I`."""
        return self.kraus().flatten(-3, -2)

    # -- physics -----------------------------------------------------------
    def probabilities(self, system) -> torch.Tensor:
        r"""Born probabilities :math:`\operatorname{Tr}(\rho E_k) = \sum_i p_i \sum_s |\langle v_{ks}|w_i\rangle|^2`.

        ``system`` is a :class:`~qpnlp.hilbert.PureState`, an :class:`~qpnlp.hilbert.Ensemble` (lazy, no
        d x d matrix) or a :class:`~qpnlp.hilbert.DensityMatrix` of batch shape ``S``; its
        batch dims broadcast with the POVM's ``P`` (ValueError when they do
        not broadcast): real ``(*torch.broadcast_shapes(S, P), k)``. The
        contraction broadcasts through ``einsum``: ``(N, 1)`` systems with
        ``(M,)`` POVMs copy neither the states once per POVM nor the vectors
        once per state (only the overlaps, ``(N, M, n, k r)``, are per pair).
        """
        if not isinstance(system, (PureState, Ensemble, DensityMatrix)):
            raise TypeError(f"probabilities() takes a PureState, Ensemble or DensityMatrix; "
                            f"got {type(system).__name__}")
        V.check_broadcast("system", system.batch_shape, "POVM", self.batch_shape)
        if isinstance(system, PureState):               # validated objects: nothing left to check
            return povm_probabilities(system.data, None, self._vectors, validate=False)
        if isinstance(system, Ensemble):
            return povm_probabilities(system.states.data, system.weights, self._vectors, validate=False)
        if isinstance(system, DensityMatrix):
            return povm_probabilities_dense(system.data, self._vectors, validate=False)

    @overload
    def post_measurement_state(self, system: PureState, outcome: int, *,
                               instrument: str = ...) -> PureState: ...
    @overload
    def post_measurement_state(self, system: Ensemble, outcome: int, *,
                               instrument: str = ...) -> Ensemble: ...
    @overload
    def post_measurement_state(self, system: DensityMatrix, outcome: int, *,
                               instrument: str = ...) -> DensityMatrix: ...

    def post_measurement_state(self, system: PureState | Ensemble | DensityMatrix, outcome: int, *,
                               instrument: str = "lueders") -> PureState | Ensemble | DensityMatrix:
        r"""State after observing ``outcome`` (see :func:`~qpnlp.measurement.kraus_update`).

        ``instrument="lueders"`` (default) applies :math:`\sqrt{E_k}`, so the
        state stays in :math:`\mathbb{C}^d` and a projective measurement
        gives the Lueders rule; ``"kraus"`` applies the stored
        :math:`M_k` (r x d), whose output lives in :math:`\mathbb{C}^r`.
        ``outcome`` is an integer in ``[0, k)``: 1.0 is a TypeError and 5 of
        k = 3 a ValueError, as in
        :meth:`~qpnlp.measurement.ProjectiveMeasurement.post_measurement_state`.
        """
        outcome = check_outcome(outcome, self.num_outcomes)
        if instrument == "kraus":
            return kraus_update(system, self.kraus()[..., outcome, :, :])
        if instrument == "lueders":
            return kraus_update(system, lueders_operator(self._vectors[..., outcome, :, :]))
        raise ValueError(f"instrument must be 'lueders' or 'kraus'; got {instrument!r}")


def random_povm(dim: int, num_outcomes: int, *, rank: int = 1, batch_shape=(), dtype=torch.complex64, device=None,
                generator: torch.Generator | None = None) -> POVM:
    r"""Random POVMs induced by Haar isometries, k outcomes of rank r on :math:`\mathbb{C}^d` (k r >= d).

    :math:`E_k = V_k^\dagger V_k` for a Haar isometry :math:`V \in
    \mathbb{C}^{kr \times d}` (:func:`~qpnlp.hilbert.random_isometry`), the
    measure of Heinosaari, Jivulescu & Nechita, J. Math. Phys. 61, 042202
    (2020); k r = d gives a Haar-random projective measurement.

    Parameters
    ----------
    dim : int
        Dimension d of the space measured.
    num_outcomes : int
        Number k of effects.
    rank : int, optional
        Rank r of each effect (default 1).
    batch_shape : tuple of int, optional
        Leading batch dims of the result (default: none).
    dtype : torch.dtype, optional
        complex64 (default) or complex128.
    device : torch.device or str, optional
        Where the result lives (default: the default device).
    generator : torch.Generator, optional
        Source of randomness, for reproducible draws.

    Examples
    --------
    >>> povm = random_povm(3, 5, generator=torch.Generator().manual_seed(0))
    >>> povm.num_outcomes, round(float(povm.probabilities(PureState.basis_state(0, 3)).sum()), 5)
    (5, 1.0)
    """
    dim, num_outcomes, rank = (V.check_dimension(n, v) for n, v in (("dim", dim), ("num_outcomes", num_outcomes),
                                                                     ("rank", rank)))
    batch_shape = V.check_batch_shape(batch_shape)              # an int n is (n,), as for every sampler
    if num_outcomes * rank < dim:
        raise ValueError(f"a POVM on C^{dim} needs num_outcomes * rank >= dim; got {num_outcomes} * {rank}")
    v = random_isometry(num_outcomes * rank, dim, batch_shape=batch_shape, dtype=dtype, device=device,
                        generator=generator)
    return POVM.from_isometry(v, num_outcomes, validate=False)

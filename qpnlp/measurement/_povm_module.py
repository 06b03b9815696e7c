"""Trainable general measurements (POVMs), valid by construction."""

from __future__ import annotations

import math
from typing import overload

import torch
from torch import nn

from qpnlp._module_precision import ComplexPrecisionMixin, widen_orthogonal_base
from qpnlp._parametrized import PicklableParametrizations
from qpnlp.hilbert import DensityMatrix, Ensemble, PureState, random_isometry
from qpnlp.hilbert import _validation as V

from . import _checks
from ._born import povm_probabilities, povm_probabilities_dense
from ._checks import masked_weights
from ._module import object_inputs, orthogonal_weight
from ._povm import POVM

INITS = ("orthogonal", "identity")


class POVMMeasurement(PicklableParametrizations, ComplexPrecisionMixin, nn.Module):
    r"""k trainable effects :math:`E_k = V_k^\dagger V_k` on :math:`\mathbb{C}^d` that always sum to the identity.

    The parameter is an isometry :math:`V \in \mathbb{C}^{kr \times d}`,
    kept at :math:`V^\dagger V = I` under any optimiser step by
    ``torch.nn.utils.parametrizations.orthogonal`` (orthonormal columns);
    outcome k owns the block :math:`V_k` of rows ``k r .. k r + r - 1``. So
    every effect is positive and :math:`\sum_k E_k = V^\dagger V = I`: the
    probabilities of a state always sum to one, for any number of outcomes.
    With r = 1 the effects are rank one, :math:`E_k = |v_k\rangle\langle v_k|`
    with :math:`\langle v_k| =` row k of V, and k may exceed d (the
    measurement is then not projective); k r = d is a trainable projective
    measurement.

    What "always" means in floating point: :math:`V^\dagger V = I`, hence positivity and completeness, hold to the
    rounding of torch's matrix exponential of the unconstrained parameter A, about
    :math:`\epsilon \|A\|`: A stays near its start in ordinary training (1e-6 in complex64 after 5000 Adam steps
    of lr 1e-2), but very large steps grow it (SGD with momentum, lr 10: the sums of the probabilities drift by
    ~1e-2 in complex64 after 400 steps, ~1e-11 in complex128). The same holds for an orthonormal
    :class:`~qpnlp.measurement.ProjectiveMeasurement`.

    The call interface is that of :class:`~qpnlp.measurement.ProjectiveMeasurement`
    (``forward(states, weights, mask)``, ``forward_dense``, ``vectors()``,
    ``num_outcomes``, ``dim``, ``freeze()``, ``post_measurement_state``), so a
    model can use either; :meth:`as_povm` hands out an immutable :class:`POVM`.

    Parameters
    ----------
    dim : int
        Hilbert-space dimension d.
    num_outcomes : int, optional
        Number k of outcomes; default ``dim``.
    rank : int, optional
        Rows r per effect; default the smallest with k r >= d
        (``ceil(d / k)``, i.e. 1 when k >= d).
    init : {"orthogonal", "identity"}
        A Haar-random isometry, or the first d columns of the identity
        of :math:`\mathbb{C}^{kr}` (effects on canonical basis vectors).
    trainable : bool
        ``False`` freezes the measurement.
    dtype : torch.dtype
        complex64 or complex128. A move reads a dtype as a precision and keeps the vectors complex:
        ``to(torch.float64)`` and ``double()`` give complex128, ``to(torch.float32)`` and ``float()`` complex64
        (``nn.Module.to(torch.float64)`` dropped the imaginary parts, ``double()`` did nothing); half precisions
        are refused (``qpnlp._module_precision``).
    device : torch.device or str, optional
        Where the isometry is made and lives (default: the default device).
    generator : torch.Generator, optional
        For a reproducible initialisation: the isometry (``"orthogonal"``),
        then (k r > d) one seed for the parametrisation's random completion;
        the global random state is untouched.

    Examples
    --------
    >>> m = POVMMeasurement(4, 6)                        # 6 rank-1 outcomes on C^4
    >>> states = torch.nn.functional.normalize(torch.randn(2, 3, 4, dtype=torch.complex64), dim=-1)
    >>> p = m(states, torch.full((2, 3), 1 / 3))         # lazy mixtures of 3 words
    >>> p.shape, torch.allclose(p.sum(-1), torch.ones(2), atol=1e-5)
    (torch.Size([2, 6]), True)
    """

    complete = True   # the probabilities always sum to one

    def __init__(self, dim: int, num_outcomes: int | None = None, *, rank: int | None = None,
                 init: str = "orthogonal", trainable: bool = True, dtype: torch.dtype = torch.complex64,
                 device=None, generator: torch.Generator | None = None):
        super().__init__()
        dim = V.check_dimension("dim", dim)                     # 2.5 or True refused, not truncated
        k = dim if num_outcomes is None else V.check_dimension("num_outcomes", num_outcomes)
        r = math.ceil(dim / k) if rank is None else V.check_dimension("rank", rank)
        if k * r < dim:
            raise ValueError(f"num_outcomes * rank must be >= dim for the effects to sum to the identity; "
                             f"got {k} * {r} < {dim}")
        if dtype not in (torch.complex64, torch.complex128):
            raise TypeError(f"dtype must be complex64 or complex128; got {dtype}")
        if init == "orthogonal":
            initial = random_isometry(k * r, dim, dtype=dtype, device=device, generator=generator)
        elif init == "identity":
            initial = torch.eye(k * r, dim, dtype=dtype, device=device)
        else:
            raise ValueError(f"init must be one of {INITS}; got {init!r}")
        self.dim, self.num_outcomes, self.rank = dim, k, r
        self.weight = nn.Parameter(initial.clone())
        # V^dagger V = I under any optimiser step; k r > d: random completion
        orthogonal_weight(self, initial, generator, device, completion=k * r != dim)
        self.requires_grad_(trainable)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, num_outcomes={self.num_outcomes}, rank={self.rank}, dtype={self.weight.dtype}"

    def _widened(self) -> None:
        r"""After ``double()`` (also a model's): :math:`V^\dagger V = I` to float64's round-off, not float32's
        (``qpnlp._module_precision.widen_orthogonal_base``; ~2e-7 before)."""
        widen_orthogonal_base(self)

    def isometry(self) -> torch.Tensor:
        r"""The isometry :math:`V` ``(k r, d)``, :math:`V^\dagger V = I` (differentiable)."""
        return self.weight

    def vectors(self) -> torch.Tensor:
        r"""Effect factor vectors: ``(k, d)`` for rank 1, else ``(k, r, d)``; :math:`E_k = \sum_s |v_{ks}\rangle\langle v_{ks}|`.

        They are the conjugated rows of V, neither unit nor orthogonal in
        general, so the projective :func:`~qpnlp.measurement.word_probabilities`
        and :func:`~qpnlp.measurement.born_probabilities` refuse them (while
        validation is on); :func:`~qpnlp.measurement.povm_probabilities` (with
        ``vectors.reshape(k, r, d)``) or this module's forward give
        :math:`\operatorname{Tr}(\rho E_k)`, per word with ``weights=None``.
        """
        v = self._effect_vectors()
        return v.squeeze(-2) if self.rank == 1 else v

    def _effect_vectors(self) -> torch.Tensor:
        """The effects' vectors as ``(k, r, d)`` (the view the POVM Born functions take)."""
        return self.weight.conj().reshape(self.num_outcomes, self.rank, self.dim)

    def freeze(self) -> "POVMMeasurement":
        """Stop training the measurement."""
        return self.requires_grad_(False)

    def forward(self, states: torch.Tensor | PureState | Ensemble | DensityMatrix, weights: torch.Tensor | None = None,
                mask: torch.Tensor | None = None, *, validate: V.Validate = None) -> torch.Tensor:
        r"""Born probabilities of pure states or lazy mixtures.

        Parameters
        ----------
        states : torch.Tensor, or PureState, Ensemble or DensityMatrix
            Complex ``(..., d)`` pure states, or ``(..., n, d)`` mixture members
            when ``weights`` is given; or a :class:`~qpnlp.hilbert.PureState`, :class:`~qpnlp.hilbert.Ensemble`
            (its members and weights) or :class:`~qpnlp.hilbert.DensityMatrix` (:meth:`forward_dense`), alone.
        weights : torch.Tensor, optional
            Real ``(..., n)`` mixture weights.
        mask : torch.Tensor, optional
            Bool ``(..., n)`` (the shape of ``weights``; only with ``weights``: ValueError without); masked
            members get weight 0.

        validate : bool or "strict", optional
            Override the global validation mode for the checks of
            :func:`~qpnlp.measurement.born_probabilities`.

        Returns
        -------
        torch.Tensor
            Real ``(..., k)``: :math:`p_k = \sum_i p_i \|V_k w_i\|^2`, summing to one.
        """
        unpacked = object_inputs(states, weights, mask)
        if unpacked is not None:
            kind, tensors = unpacked
            return (self.forward_dense if kind == "dense" else self.forward)(*tensors, validate=validate)
        weights = masked_weights(weights, mask)
        v = self._effect_vectors()
        # complete by construction: only the states and weights are checked
        _checks.born_inputs(states, weights, v, validate, vectors_name="vectors", povm=True, check_vectors=False)
        return povm_probabilities(states, weights, v, validate=False)

    def forward_dense(self, rho: torch.Tensor, *, validate: V.Validate = None) -> torch.Tensor:
        r""":math:`\operatorname{Tr}(\rho E_k)` for dense ``(..., d, d)`` -> real ``(..., k)``."""
        v = self._effect_vectors()
        _checks.dense_inputs(rho, v, validate, vectors_name="vectors", povm=True, check_vectors=False)
        return povm_probabilities_dense(rho, v, validate=False)

    def as_povm(self) -> POVM:
        """Immutable :class:`POVM` of the current effects (detached), for interpretation."""
        return POVM.from_isometry(self.weight.detach(), self.num_outcomes, validate=False)

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
        """State after observing ``outcome`` (see :meth:`POVM.post_measurement_state`)."""
        return self.as_povm().post_measurement_state(system, outcome, instrument=instrument)

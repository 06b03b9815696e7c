"""Pure states (words) and density matrices (sentences).

The two classes share a module because each hands out the other:
:meth:`PureState.proj` is a :class:`DensityMatrix` and
:meth:`DensityMatrix.eigh` returns its eigenstates as a :class:`PureState`.
The checks and the mixture maths they use are in ``qpnlp.hilbert._mixture``, so this
module imports nothing that imports it back.
"""

from __future__ import annotations

import torch

from . import _mixture as M
from . import _validation as V
from . import _widen
from ._batched import Batched
from ._linalg import decompose, inner, normalize, outer, promote, squared_frobenius_norm, squared_modulus, trace


class PureState(Batched):
    r"""A batch of pure states :math:`|w\rangle = \sum_j r_j e^{i\phi_j} |e_j\rangle`.

    Wraps one complex tensor of shape ``(..., d)`` whose rows have unit norm.
    In the papers a word is such a state over a basis of sememes
    (thesis section 3.2.2).

    Parameters
    ----------
    data : torch.Tensor
        complex64 or complex128 tensor ``(..., d)`` with ``||data[..., :]|| = 1``.
    validate : bool or "strict", optional
        Override the global validation mode for this object.

    Examples
    --------
    >>> import math
    >>> w = PureState.from_polar(torch.tensor([0.6, 0.8]), torch.tensor([0.0, math.pi / 2]))
    >>> w.dim, tuple(w.batch_shape)
    (2, ())
    >>> round(float(w.proj().purity()), 6)
    1.0
    """

    _fields = ("data",)
    _event_ndims = (1,)
    __slots__ = ("_data",)
    _data: torch.Tensor

    def __init__(self, data: torch.Tensor, *, validate: V.Validate = None) -> None:
        M.check_state_tensor("states", data, validate)
        object.__setattr__(self, "_data", data)

    # -- constructors -------------------------------------------------------
    @classmethod
    def normalized(cls, data: torch.Tensor, *, validate: V.Validate = None) -> "PureState":
        """Normalise complex ``(..., d)`` data to unit norm (zero vectors raise)."""
        V.check_tensor("states", data)
        V.check_complex("states", data)
        if V.resolve(validate):
            V.check_finite("states", data, event_ndim=1)
        return cls._trusted(data=normalize(data, validate=validate))

    @classmethod
    def from_polar(cls, amplitude: torch.Tensor, phase: torch.Tensor, *, normalize_amplitude: bool = False,
                   validate: V.Validate = None) -> "PureState":
        r"""Build :math:`\sum_j r_j e^{i \phi_j} |e_j\rangle` from amplitudes and phases.

        Parameters
        ----------
        amplitude : torch.Tensor
            Real ``(..., d)`` amplitudes :math:`r_j \ge 0` with unit L2 norm,
            or any real vector with ``normalize_amplitude=True``.
        phase : torch.Tensor
            Real ``(..., d)`` phases :math:`\phi_j`, broadcastable with ``amplitude``.
        normalize_amplitude : bool
            Divide the amplitudes, broadcast against the phases, by their L2 norm first.
        """
        for name, value in (("amplitude", amplitude), ("phase", phase)):
            V.check_tensor(name, value)
            V.check_real(name, value)
        V.check_broadcast("amplitude", amplitude.shape, "phase", phase.shape, what="shape")
        V.check_same_device(("amplitude", amplitude), ("phase", phase))
        real = torch.float64 if torch.float64 in (amplitude.dtype, phase.dtype) else torch.float32
        amplitude, phase = amplitude.to(real), phase.to(real)
        if V.resolve(validate) and V.has_values(amplitude) and bool((amplitude < 0).any()):
            raise ValueError(f"amplitude must be non-negative; got {float(amplitude.min()):.3g} "
                             f"(shape {tuple(amplitude.shape)})")
        amplitude, phase = torch.broadcast_tensors(amplitude, phase)
        if normalize_amplitude:
            amplitude = normalize(amplitude, validate=validate)
        return cls(torch.polar(amplitude, phase), validate=validate)

    @classmethod
    def from_real(cls, vectors: torch.Tensor, *, normalize_vectors: bool = False,
                  validate: V.Validate = None) -> "PureState":
        """Real ``(..., d)`` vectors as states with zero phase (float64 -> complex128)."""
        V.check_real("vectors", vectors)
        data = vectors.to(V.complex_dtype_of(vectors.dtype))
        return cls.normalized(data, validate=validate) if normalize_vectors else cls(data, validate=validate)

    @classmethod
    def basis_state(cls, index: int, dim: int, *, dtype=torch.complex64, device=None) -> "PureState":
        """The canonical basis state :math:`|e_{index}\\rangle` of C^dim (float32/64 ``dtype`` -> complex64/128)."""
        position = V.as_integer(index)          # numpy integers too; 1.5, 1.0 or True: no basis index
        if position is None:
            raise TypeError(f"basis index must be an integer; got {type(index).__name__} {index!r}")
        if not 0 <= position < dim:
            raise ValueError(f"basis index must be in [0, {dim}); got {position}")
        data = torch.zeros(dim, dtype=V.complex_dtype_of(dtype), device=device)
        data[position] = 1
        return cls._trusted(data=data)

    @classmethod
    def _widened(cls, fields):
        """Rows rescaled to unit norm where float32's round-off left them off one (zero rows kept)."""
        return {"data": _widen.unit_rows(fields["data"])}

    # -- accessors ---------------------------------------------------------
    @property
    def data(self) -> torch.Tensor:
        """The complex tensor ``(..., d)``."""
        return self._data

    @property
    def amplitude(self) -> torch.Tensor:
        """Moduli :math:`r_j = |w_j|`, real ``(..., d)``."""
        return self._data.abs()

    @property
    def phase(self) -> torch.Tensor:
        r"""Phases :math:`\phi_j = \arg w_j` in :math:`(-\pi, \pi]`, real ``(..., d)``."""
        return self._data.angle()

    # -- physics -----------------------------------------------------------
    def inner(self, other: "PureState") -> torch.Tensor:
        r"""Inner products :math:`\langle self|other\rangle`, broadcast over batch dims -> ``(...)``."""
        if not isinstance(other, PureState):
            raise TypeError(f"other must be a PureState; got {type(other).__name__} (wrap a tensor in PureState(...))")
        V.check_dims_match("self", self.dim, "other", other.dim)
        V.check_broadcast("self", self.batch_shape, "other", other.batch_shape)
        a, b = promote(self._data, other.data)
        return inner(a, b)

    def overlap(self, other: "PureState") -> torch.Tensor:
        r"""Transition probabilities :math:`|\langle self|other\rangle|^2`, real ``(...)``."""
        amp = self.inner(other)
        return squared_modulus(amp)

    def probabilities(self) -> torch.Tensor:
        """Born probabilities ``|w_j|^2`` in the canonical (sememe) basis, real ``(..., d)``."""
        return squared_modulus(self._data)

    def proj(self) -> DensityMatrix:
        r"""The density matrix :math:`|w\rangle\langle w|` ``(..., d, d)``."""
        return DensityMatrix._trusted(data=outer(self._data))

    def global_phase(self, angle: float | torch.Tensor) -> "PureState":
        r"""Multiply by :math:`e^{i\,angle}` (the same physical state).

        ``angle`` is a float or a real tensor whose shape broadcasts with the batch shape (ValueError naming both
        otherwise); the result has the broadcast batch shape.
        """
        if isinstance(angle, torch.Tensor):     # never copied to the state's device silently
            V.check_same_device(("the state", self._data), ("angle", angle))
        angle = torch.as_tensor(angle, dtype=V.real_dtype_of(self.dtype), device=self.device)
        V.check_broadcast("the state", self.batch_shape, "angle", angle.shape)   # was torch's RuntimeError
        return self._trusted(data=self._data * torch.polar(torch.ones_like(angle), angle).unsqueeze(-1))

    def evolve(self, unitary: torch.Tensor) -> "PureState":
        r"""Apply a unitary ``(..., d, d)``: :math:`|w\rangle \mapsto U|w\rangle`.

        While validation is on, a matrix that does not keep the norm (not unitary) raises ValueError.
        """
        M.check_operator("unitary", unitary, self.dim, self.batch_shape)
        u, data = promote(unitary, self._data)
        out = (u @ data.unsqueeze(-1)).squeeze(-1)
        if V.enabled():            # at the precision of the coarser operand (complex64 unitaries on complex128 states)
            V.check_unit_norm("evolve(unitary): U|w>", M.at_precision_of(out, unitary, self._data))
        return self._trusted(data=out)


class DensityMatrix(Batched):
    r"""A batch of density matrices :math:`\rho` of shape ``(..., d, d)``.

    :math:`\rho = \rho^\dagger`, :math:`\rho \succeq 0`, :math:`\operatorname{Tr}\rho = 1`.
    A sentence is the mixture :math:`\rho = \sum_i p_i |w_i\rangle\langle w_i|`
    of its word states (thesis section 3.2.3); see :meth:`from_ensemble`. When
    only measurement probabilities are needed, prefer the lazy
    :class:`~qpnlp.hilbert.Ensemble`, which never builds the d x d matrix.

    Parameters
    ----------
    data : torch.Tensor
        complex64 or complex128 tensor ``(..., d, d)``, Hermitian with unit trace (and positive semi-definite,
        checked only under ``"strict"``).
    validate : bool or "strict", optional
        Override the global validation mode for this object.

    Examples
    --------
    >>> rho = DensityMatrix.maximally_mixed(4)
    >>> float(rho.purity())
    0.25
    >>> float(rho.tr().real)
    1.0
    """

    _fields = ("data",)
    _event_ndims = (2,)
    __slots__ = ("_data",)
    _data: torch.Tensor

    def __init__(self, data: torch.Tensor, *, validate: V.Validate = None) -> None:
        M.check_density_tensor("rho", data, validate)
        object.__setattr__(self, "_data", data)

    # -- constructors -------------------------------------------------------
    @classmethod
    def from_ensemble(cls, states, weights: torch.Tensor | None = None, mask: torch.Tensor | None = None,
                      *, validate: V.Validate = None) -> "DensityMatrix":
        r""":math:`\rho = \sum_i p_i |w_i\rangle\langle w_i|` from states ``(..., n, d)`` and weights ``(..., n)``.

        ``mask`` (bool ``(..., n)``, True = real word) excludes padded
        positions; ``weights=None`` means uniform over the unmasked states.
        See :class:`~qpnlp.hilbert.Ensemble` for the checks.
        """
        trusted = isinstance(states, PureState)
        data, w = M.mixture(states.data if trusted else states, weights, mask, validate, trusted)
        return cls._trusted(data=M.dense(data, w))

    @classmethod
    def from_pure(cls, state) -> "DensityMatrix":
        r""":math:`|w\rangle\langle w|` of a :class:`PureState`."""
        return state.proj()

    @classmethod
    def maximally_mixed(cls, dim: int, *, batch_shape=(), dtype=torch.complex64, device=None) -> "DensityMatrix":
        """The state ``I / d`` with the given batch shape (a tuple of sizes, or one int: 4 is ``(4,)``)."""
        dim, batch_shape = V.check_dimension("dim", dim), V.check_batch_shape(batch_shape)
        eye = torch.eye(dim, dtype=V.complex_dtype_of(dtype), device=device) / dim
        return cls._trusted(data=eye.expand(*batch_shape, dim, dim).clone())

    @classmethod
    def _widened(cls, fields):
        """The Hermitian part over its trace where float32's round-off left it off (other matrices kept)."""
        return {"data": _widen.unit_trace_hermitian(fields["data"])}

    # -- accessors -----------------------------------------------------------
    @property
    def data(self) -> torch.Tensor:
        """The complex tensor ``(..., d, d)``."""
        return self._data

    def tr(self) -> torch.Tensor:
        r"""Traces :math:`\operatorname{Tr}\rho`, complex ``(...)``."""
        return trace(self._data)

    def dag(self) -> "DensityMatrix":
        r"""Conjugate transpose :math:`\rho^\dagger` (equal to :math:`\rho` for valid states)."""
        return self._trusted(data=self._data.mH)

    def purity(self) -> torch.Tensor:
        r"""Purity :math:`\operatorname{Tr}\rho^2 = \sum_{ij} |\rho_{ij}|^2` in :math:`[1/d, 1]`, real ``(...)``."""
        return squared_frobenius_norm(self._data)

    def eigh(self) -> tuple[torch.Tensor, PureState]:
        r"""Eigen-decomposition ``rho = sum_k lambda_k |v_k><v_k|``.

        Returns
        -------
        eigenvalues : torch.Tensor
            Real ``(..., d)``, ascending.
        eigenstates : PureState
            Batch shape ``(..., d)``: ``eigenstates[..., k]`` is :math:`|v_k\rangle`.
        """
        values, vectors = decompose(torch.linalg.eigh, self._data)
        return values, PureState._trusted(data=vectors.mT)

    def eigvals(self) -> torch.Tensor:
        """Eigenvalues, real ``(..., d)`` ascending."""
        return decompose(torch.linalg.eigvalsh, self._data)

    def expectation(self, observable: torch.Tensor) -> torch.Tensor:
        r""":math:`\operatorname{Tr}(\rho A)` for Hermitian ``A`` ``(..., d, d)``; real ``(...)``.

        While validation is on, a non-Hermitian ``A`` (whose expectation is not real) raises ValueError.
        """
        rho, a = M.checked_observable(observable, self._data, self.batch_shape)
        return (rho * a.mT).sum((-2, -1)).real

    def evolve(self, unitary: torch.Tensor) -> "DensityMatrix":
        r""":math:`U \rho U^\dagger` for unitaries ``(..., d, d)``.

        While validation is on, a matrix that does not keep the trace (not unitary) raises ValueError.
        """
        M.check_operator("unitary", unitary, self.dim, self.batch_shape)
        u, rho = promote(unitary, self._data)
        out = u @ rho @ u.mH
        if V.enabled():            # at the precision of the coarser operand, as PureState.evolve
            V.check_unit_trace("evolve(unitary): U rho U^dagger", M.at_precision_of(out, unitary, self._data))
        return self._trusted(data=out)

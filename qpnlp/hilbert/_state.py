"""Pure states: words as superpositions of sememes."""

from __future__ import annotations

import torch

from . import _validation as V
from ._batched import Batched
from ._linalg import inner, normalize, outer, promote


def _validate_states(name: str, data: torch.Tensor, validate: V.Validate) -> None:
    V.check_tensor(name, data)
    V.check_complex(name, data)
    V.check_min_ndim(name, data, 1, "(..., d)")
    if V.resolve(validate):
        V.check_finite(name, data, event_ndim=1)
        V.check_unit_norm(name, data)


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

    def __init__(self, data: torch.Tensor, *, validate: V.Validate = None) -> None:
        _validate_states("states", data, validate)
        object.__setattr__(self, "_data", data)

    # -- constructors -------------------------------------------------------
    @classmethod
    def normalized(cls, data: torch.Tensor, *, validate: V.Validate = None) -> "PureState":
        """Normalise complex ``(..., d)`` data to unit norm (zero vectors raise)."""
        V.check_tensor("states", data)
        V.check_complex("states", data)
        if V.resolve(validate):
            V.check_finite("states", data, event_ndim=1)
        return cls._trusted(data=normalize(data))

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
            Divide the amplitudes by their L2 norm first.
        """
        V.check_real("amplitude", amplitude)
        V.check_real("phase", phase)
        real = torch.float64 if torch.float64 in (amplitude.dtype, phase.dtype) else torch.float32
        amplitude, phase = amplitude.to(real), phase.to(real)
        if V.resolve(validate) and bool((amplitude < 0).any()):
            raise ValueError(f"amplitude must be non-negative; got {float(amplitude.min()):.3g} "
                             f"(shape {tuple(amplitude.shape)})")
        if normalize_amplitude:
            amplitude = normalize(amplitude)
        amplitude, phase = torch.broadcast_tensors(amplitude, phase)
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
        """The canonical basis state :math:`|e_{index}\\rangle` of C^dim."""
        if not 0 <= index < dim:
            raise ValueError(f"basis index must be in [0, {dim}); got {index}")
        data = torch.zeros(dim, dtype=dtype, device=device)
        data[index] = 1
        return cls._trusted(data=data)

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
        V.check_dims_match("self", self.dim, "other", other.dim)
        a, b = promote(self._data, other.data)
        return inner(a, b)

    def overlap(self, other: "PureState") -> torch.Tensor:
        r"""Transition probabilities :math:`|\langle self|other\rangle|^2`, real ``(...)``."""
        amp = self.inner(other)
        return amp.real.square() + amp.imag.square()

    def probabilities(self) -> torch.Tensor:
        """Born probabilities ``|w_j|^2`` in the canonical (sememe) basis, real ``(..., d)``."""
        return self._data.real.square() + self._data.imag.square()

    def proj(self):
        r"""The density matrix :math:`|w\rangle\langle w|` ``(..., d, d)``."""
        from ._density import DensityMatrix

        return DensityMatrix._trusted(data=outer(self._data))

    def global_phase(self, angle: float | torch.Tensor) -> "PureState":
        r"""Multiply by :math:`e^{i\,angle}` (the same physical state)."""
        angle = torch.as_tensor(angle, dtype=V.real_dtype_of(self.dtype), device=self.device)
        return self._trusted(data=self._data * torch.polar(torch.ones_like(angle), angle).unsqueeze(-1))

    def evolve(self, unitary: torch.Tensor) -> "PureState":
        r"""Apply a unitary ``(..., d, d)``: :math:`|w\rangle \mapsto U|w\rangle`."""
        u, data = promote(unitary, self._data)
        return self._trusted(data=(u @ data.unsqueeze(-1)).squeeze(-1))

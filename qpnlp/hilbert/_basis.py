"""Sememe bases: orthonormal bases of C^d whose vectors carry meanings."""

from __future__ import annotations

from typing import Sequence, overload

import torch

from qpnlp._precision_shortcuts import PrecisionShortcuts

from . import _mixture as M
from . import _validation as V
from . import _widen
from ._batched import to_arguments
from ._linalg import promote, random_unitary
from ._states import DensityMatrix, PureState


class SememeBasis(PrecisionShortcuts):
    r"""An orthonormal basis :math:`\{|e_j\rangle\}_{j=1}^d` of :math:`\mathbb{C}^d`, optionally labelled.

    In the papers the basis vectors are sememes, the minimal units of meaning
    (thesis section 3.2.1); words are superpositions of them. ``vectors[j]``
    is :math:`|e_j\rangle` written in the canonical basis. ``double()`` and ``float()`` are
    ``to(torch.float64)`` and ``to(torch.float32)``, as for the states (``qpnlp._precision_shortcuts``).

    Parameters
    ----------
    vectors : torch.Tensor
        Complex ``(d, d)`` with orthonormal rows.
    labels : sequence of str, optional
        One name per basis vector.
    validate : bool or "strict", optional
        Check orthonormality (``E E^dagger = I`` within tolerance).

    Examples
    --------
    >>> basis = SememeBasis.canonical(3, labels=["animal", "colour", "size"])
    >>> w = PureState.from_real(torch.tensor([0.0, 0.6, 0.8]))
    >>> basis.coordinates(w).probabilities()
    tensor([0.0000, 0.3600, 0.6400])
    >>> basis.label(2)
    'size'
    """

    __slots__ = ("_vectors", "_labels")
    _vectors: torch.Tensor
    _labels: tuple[str, ...] | None

    def __init__(self, vectors: torch.Tensor, labels: Sequence[str] | None = None, *,
                 validate: V.Validate = None) -> None:
        V.check_tensor("vectors", vectors)
        V.check_complex("vectors", vectors)
        if vectors.dim() != 2 or vectors.shape[0] != vectors.shape[1]:
            raise ValueError(f"basis vectors must have shape (d, d); got {tuple(vectors.shape)}")
        V.check_nonempty("vectors", vectors, -1, "dimensions (d = 0)")
        if V.resolve(validate):
            V.check_finite("vectors", vectors, event_ndim=2)
            eye = torch.eye(vectors.shape[0], dtype=vectors.dtype, device=vectors.device)
            err = (vectors.detach() @ vectors.detach().mH - eye).abs().amax().reshape(1)
            tol = V.tolerance(vectors.dtype, vectors.shape[0])
            if V._exceeds(err, tol):             # not on the meta device, nor under torch.func.vmap
                raise ValueError(f"basis vectors must be orthonormal; got max |E E^dagger - I| = {float(err):.3g} "
                                 f"(shape {tuple(vectors.shape)}, tolerance {tol:.2g})")
        if labels is not None:
            labels = tuple(str(x) for x in labels)
            if len(labels) != vectors.shape[0]:
                raise ValueError(f"got {len(labels)} labels for a basis of dimension {vectors.shape[0]}")
        object.__setattr__(self, "_vectors", vectors)
        object.__setattr__(self, "_labels", labels)

    def __setattr__(self, name, value):
        raise AttributeError("SememeBasis is immutable")

    def __getstate__(self) -> dict:
        """The vectors and labels, for ``pickle``, ``copy`` and ``torch.save``."""
        return {"vectors": self._vectors, "labels": self._labels}

    def __setstate__(self, state: dict) -> None:
        """Restore ``__getstate__``'s fields (the default restores through ``__setattr__``, which refuses)."""
        object.__setattr__(self, "_vectors", state["vectors"])
        object.__setattr__(self, "_labels", state["labels"])

    @classmethod
    def canonical(cls, dim: int, labels: Sequence[str] | None = None, *, dtype=torch.complex64,
                  device=None) -> "SememeBasis":
        """The canonical basis ``e_j = (0, .., 1, .., 0)``."""
        return cls(torch.eye(dim, dtype=V.complex_dtype_of(dtype), device=device), labels, validate=False)

    @classmethod
    def random(cls, dim: int, labels: Sequence[str] | None = None, *, dtype=torch.complex64, device=None,
               generator: torch.Generator | None = None) -> "SememeBasis":
        """A Haar-random orthonormal basis."""
        return cls(random_unitary(dim, dtype=dtype, device=device, generator=generator), labels, validate=False)

    @property
    def vectors(self) -> torch.Tensor:
        """Complex ``(d, d)``; row j is the basis vector :math:`|e_j\\rangle`."""
        return self._vectors

    @property
    def labels(self) -> tuple[str, ...] | None:
        return self._labels

    @property
    def dim(self) -> int:
        return self._vectors.shape[0]

    @property
    def dtype(self) -> torch.dtype:
        return self._vectors.dtype

    @property
    def device(self) -> torch.device:
        return self._vectors.device

    def to(self, *args, device=None, dtype=None) -> "SememeBasis":
        """Move to a device and/or dtype; a real dtype gives its complex one, as for the states (float64 -> complex128).

        From single to double precision the vectors are re-orthonormalised where float32's round-off left them
        off (``qpnlp.hilbert._widen.orthonormal_rows``), so the moved basis passes its own check at float64's
        tolerance.
        """
        device, dtype = to_arguments(args, device, dtype)
        target = None if dtype is None else V.complex_dtype_of(dtype)
        vectors = self._vectors.to(device=device, dtype=target)
        if target is not None and _widen.widening(self.dtype, target):
            vectors = _widen.orthonormal_rows(vectors)
        return SememeBasis(vectors, self._labels, validate=False)

    def _position(self, j) -> int:
        """Basis index ``j`` in ``[0, d)``: Python's rules (``-1`` is the last), IndexError outside ``[-d, d)``.

        An integer as ``qpnlp.hilbert._validation.as_integer`` reads it (numpy integers too); 1.0 and a bool
        are a TypeError.
        """
        index = V.as_integer(j)
        if index is None:
            raise TypeError(f"basis index must be an integer; got {type(j).__name__} {j!r}")
        if not -self.dim <= index < self.dim:
            raise IndexError(f"basis index {index} is out of range for a basis of dimension {self.dim}")
        return index % self.dim

    def label(self, j: int) -> str:
        """Name of basis vector j (``"e{j}"`` with j in ``[0, d)`` when unlabelled); indexed as :meth:`state`."""
        j = self._position(j)
        return self._labels[j] if self._labels else f"e{j}"

    def state(self, j: int) -> PureState:
        """The basis vector :math:`|e_j\\rangle` as a :class:`PureState` (``j = -1``: the last one)."""
        return PureState._trusted(data=self._vectors[self._position(j)])

    @overload
    def coordinates(self, obj: PureState) -> PureState: ...
    @overload
    def coordinates(self, obj: DensityMatrix) -> DensityMatrix: ...

    def coordinates(self, obj: PureState | DensityMatrix) -> PureState | DensityMatrix:
        r"""Express a state or density matrix in this basis.

        For a :class:`PureState` ``(..., d)``: :math:`c_j = \langle e_j|w\rangle`.
        For a :class:`DensityMatrix`: :math:`\rho'_{jk} = \langle e_j|\rho|e_k\rangle`.
        """
        if not isinstance(obj, (PureState, DensityMatrix)):     # a tensor's .dim is a method, not an int
            raise TypeError(f"coordinates() takes a PureState or DensityMatrix; got {type(obj).__name__}")
        if obj.dim != self.dim:
            raise ValueError(f"dimension mismatch: basis has d={self.dim} but the argument has d={obj.dim}")
        if isinstance(obj, PureState):
            e, w = promote(self._vectors, obj.data)
            return PureState._trusted(data=w @ e.mH)
        e, rho = promote(self._vectors, obj.data)
        return DensityMatrix._trusted(data=e.conj() @ rho @ e.mT)

    def from_coordinates(self, coordinates: PureState | torch.Tensor) -> PureState:
        r"""The state :math:`\sum_j c_j |e_j\rangle` from coordinates ``(..., d)`` in this basis.

        ValueError for coordinates whose last dim is not the basis's d (its number of vectors).
        """
        if not isinstance(coordinates, (PureState, torch.Tensor)):
            raise TypeError(f"from_coordinates() takes a PureState or a complex tensor (..., d); got "
                            f"{type(coordinates).__name__}")
        c = coordinates.data if isinstance(coordinates, PureState) else coordinates
        e, c = promote(self._vectors, c)
        if not isinstance(coordinates, PureState):
            # The coordinates are checked, not the state built from them: the basis is orthonormal, so
            # ||c @ e|| = ||c|| and a NaN stays at its batch index, and the error names the caller's argument and
            # shows the value passed (checking c @ e named "states" and showed inf * 0 = nan for an inf).
            M.check_state_tensor("coordinates", c, None)
        V.check_dims_match("coordinates", c.shape[-1], "the basis", self.dim)   # not torch's "mat1 and mat2 shapes"
        return PureState._trusted(data=c @ e)

    def change_of_basis(self, other: "SememeBasis") -> torch.Tensor:
        r"""Unitary ``U`` ``(d, d)`` with :math:`U_{kj} = \langle f_k|e_j\rangle`.

        Coordinates in ``self`` map to coordinates in ``other`` by ``c' = U c``. ``other`` must be a
        :class:`SememeBasis` of the same dimension (else TypeError, ValueError).
        """
        if not isinstance(other, SememeBasis):
            raise TypeError(f"other must be a SememeBasis; got {type(other).__name__}")
        V.check_dims_match("other", other.dim, "this basis", self.dim)
        e, f = promote(self._vectors, other.vectors)
        return f.conj() @ e.mT

    def __repr__(self) -> str:
        return (f"SememeBasis(dim={self.dim}, labelled={self._labels is not None}, dtype={self.dtype}, "
                f"device={self.device})")

"""Immutable wrappers around tensors with batch dims in front and event dims behind."""

from __future__ import annotations

from typing import Any, ClassVar

import torch

from qpnlp._precision_shortcuts import PrecisionShortcuts

from ._validation import complex_dtype_of, real_dtype_of
from ._widen import widening


def to_arguments(args: tuple, device=None, dtype=None) -> tuple:
    """``(device, dtype)`` of ``to(*args, device=, dtype=)``: positional dtypes and devices in any order."""
    for arg in args:
        if isinstance(arg, torch.dtype):
            dtype = arg
        else:
            device = arg
    return device, dtype


def _dims_named(item) -> int:
    """How many dims one item of an index names: 0 for ``None``, ``...`` and Python bools (they insert a dim),
    a mask's number of dims (bool, or uint8 which torch still reads as a mask), else 1 (an int, a slice, an
    integer tensor or list)."""
    if item is None or item is Ellipsis or isinstance(item, bool):
        return 0
    if isinstance(item, (int, slice)):
        return 1
    try:
        item = torch.as_tensor(item)
    except (TypeError, ValueError, RuntimeError):
        return 1                                 # torch itself refuses what it cannot read
    return item.dim() if item.dtype in (torch.bool, torch.uint8) else 1


def batch_index(index, batch_shape: tuple[int, ...], owner: str) -> tuple:
    """``index`` as a tuple that names batch dims only: ``...`` spelled out as full slices over the batch dims
    the other items leave, so the event dims behind are never indexed (IndexError when it names too many)."""
    items = index if isinstance(index, tuple) else (index,)
    ellipses = [i for i, item in enumerate(items) if item is Ellipsis]
    if len(ellipses) > 1:
        raise IndexError(f"an index of {owner} can have only one ellipsis ('...'); got {len(ellipses)}")
    named = sum(_dims_named(item) for item in items)
    if named > len(batch_shape):
        raise IndexError(f"too many indices for batch shape {tuple(batch_shape)} of {owner}: the index names "
                         f"{named} dims (event dims are never indexed; a bool mask names as many as it has)")
    if ellipses:
        at = ellipses[0]
        items = items[:at] + (slice(None),) * (len(batch_shape) - named) + items[at + 1:]
    return items


class Batched(PrecisionShortcuts):
    """Base of the first-class objects: one or more tensors sharing batch dims.

    Subclasses list their tensor fields in ``_fields`` and how many trailing
    (event) dims each has in ``_event_ndims``. Instances are immutable:
    every operation returns a new object.

    ``==`` and ``hash`` are those of :class:`object`, identity, as for
    ``torch.distributions.Distribution`` and ``nn.Module``: ``a == b`` is
    ``a is b`` (one bool, never an elementwise tensor nor an error), and an
    object is a dict key or set member by identity (its tensors are not
    hashed). Two objects holding the same values are compared with
    :meth:`equal` or :meth:`allclose`.

    ``to``, ``cpu``, ``double``, ``float``, ``detach`` and ``clone`` are the tensor methods, except that a dtype is
    read as a precision: ``double()`` is ``to(torch.float64)``, complex128 states with float64 weights
    (``torch.Tensor.double()`` of a complex tensor would drop its imaginary part;
    :class:`~qpnlp._precision_shortcuts.PrecisionShortcuts`).
    """

    _fields: ClassVar[tuple[str, ...]] = ()
    _event_ndims: ClassVar[tuple[int, ...]] = ()
    #: Size properties the repr shows after ``dim`` (e.g. an ensemble's ``num_states``), read from shapes only.
    _repr_sizes: ClassVar[tuple[str, ...]] = ()
    __slots__ = ()

    @classmethod
    def _trusted(cls, **fields: torch.Tensor):
        """Build without validation (for results the library has just computed)."""
        obj = object.__new__(cls)
        for name in cls._fields:
            object.__setattr__(obj, "_" + name, fields[name])
        return obj

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __getstate__(self) -> dict[str, torch.Tensor]:
        """The tensor fields by name, for ``pickle``, ``copy`` and ``torch.save``."""
        return {name: getattr(self, "_" + name) for name in self._fields}

    def __setstate__(self, state: dict[str, torch.Tensor]) -> None:
        """Restore ``__getstate__``'s fields (the default restores through ``__setattr__``, which refuses)."""
        for name in self._fields:
            object.__setattr__(self, "_" + name, state[name])

    def _first(self) -> torch.Tensor:
        return getattr(self, "_" + self._fields[0])

    @property
    def batch_shape(self) -> torch.Size:
        """Leading batch dims."""
        t = self._first()
        return t.shape[: t.dim() - self._event_ndims[0]]

    @property
    def dtype(self) -> torch.dtype:
        return self._first().dtype

    @property
    def device(self) -> torch.device:
        return self._first().device

    @property
    def dim(self) -> int:
        """Hilbert-space dimension d."""
        return self._first().shape[-1]

    def to(self, *args, device=None, dtype=None):
        """Move to a device and/or dtype, like ``torch.Tensor.to``.

        ``to(torch.float64)`` and ``to(torch.complex128)`` both give complex128
        states (and float64 weights); lower precision is only used when asked for.
        From single to double precision the object is projected back onto its
        invariants (unit norm, weights summing to one, Hermitian of trace one)
        where float32's round-off broke them, so that it passes its own checks
        at float64's tolerance (see :meth:`_widened`).
        """
        device, dtype = to_arguments(args, device, dtype)
        wide = None if dtype is None else complex_dtype_of(dtype)      # an Ensemble's weights follow its states
        moved = {}
        for name in self._fields:
            t = getattr(self, "_" + name)
            target = None if wide is None else wide if t.is_complex() else real_dtype_of(wide)
            moved[name] = t.to(device=device, dtype=target)
        if wide is not None and widening(self.dtype, wide):
            moved = self._widened(moved)
        return self._trusted(**moved)

    @classmethod
    def _widened(cls, fields: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The fields just cast from single to double precision, without float32's round-off (default: as they
        are; the states, ensembles and density matrices rescale, see ``qpnlp.hilbert._widen``)."""
        return fields

    def detach(self):
        return self._trusted(**{n: getattr(self, "_" + n).detach() for n in self._fields})

    def cpu(self):
        """``self.to("cpu")``, as ``torch.Tensor.cpu`` (the same tensors when they are on the CPU already)."""
        return self.to("cpu")

    def clone(self):
        """A copy holding its own memory, as ``torch.Tensor.clone`` (differentiable): an object indexed out of a
        large batch otherwise keeps the whole batch's storage alive (indexing returns views)."""
        return self._trusted(**{n: getattr(self, "_" + n).clone() for n in self._fields})

    def _same_kind(self, other, method: str) -> None:
        if type(other) is not type(self):
            raise TypeError(f"{type(self).__name__}.{method} compares with a {type(self).__name__}; got "
                            f"{type(other).__name__}")

    def equal(self, other) -> bool:
        """Whether ``other`` holds the same values: ``torch.equal`` of every field (same shapes and values).

        TypeError when ``other`` is not of this class (a :class:`PureState` and its ``proj()`` are the same
        state in two forms: convert one first). ``==`` is identity (see the class docstring).
        """
        self._same_kind(other, "equal")
        return all(torch.equal(getattr(self, "_" + n), getattr(other, "_" + n)) for n in self._fields)

    def allclose(self, other, *, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False) -> bool:
        r"""Whether every field is close to ``other``'s: :math:`|a - b| \le atol + rtol\,|b|`, as ``torch.allclose``.

        Fields of different shapes are not close (no broadcasting, as :meth:`equal`); dtypes are widened to a
        common one (complex64 against complex128 compares at complex128). The fields are compared as stored: a
        :class:`PureState` and the same state times :math:`e^{i\alpha}` are not close (compare physical states
        with ``overlap`` or :func:`~qpnlp.hilbert.fidelity`). TypeError when ``other`` is not of this class.
        """
        self._same_kind(other, "allclose")
        for n in self._fields:
            a, b = getattr(self, "_" + n), getattr(other, "_" + n)
            if a.shape != b.shape:
                return False
            common = torch.promote_types(a.dtype, b.dtype)
            if not torch.allclose(a.to(common), b.to(common), rtol=rtol, atol=atol, equal_nan=equal_nan):
                return False
        return True

    def __getitem__(self, index):
        """Index over batch dims only, with the rules of ``torch.Tensor`` indexing (event dims are never indexed).

        Ints (negative too), slices, integer and bool tensors, ``...`` and ``None`` select and insert batch dims:
        ``...`` stands for the batch dims no other index names (``eigenstates[..., k]`` is the k-th of the last
        batch dim), and a bool mask spans as many batch dims as it has dims. Every field (an Ensemble's states
        and weights alike) gets the same index, so they stay aligned. An index that names more dims than the
        batch has is an IndexError (a bool mask reaching the event dims would merge states or split vectors).
        """
        items = batch_index(index, tuple(self.batch_shape), type(self).__name__)
        return self._trusted(**{n: getattr(self, "_" + n)[items] for n in self._fields})

    def __iter__(self):
        """The objects ``self[0], self[1], ...`` along the first batch dim (TypeError when unbatched, as ``len``)."""
        if not self.batch_shape:                 # else Python iterates through __getitem__: silently nothing
            raise TypeError(f"iteration over an unbatched {type(self).__name__}")
        return (self[i] for i in range(self.batch_shape[0]))

    def __len__(self) -> int:
        if not self.batch_shape:
            raise TypeError(f"len() of an unbatched {type(self).__name__}")
        return self.batch_shape[0]

    def __repr__(self) -> str:
        sizes = "".join(f", {name}={getattr(self, name)}" for name in self._repr_sizes)
        return (f"{type(self).__name__}(batch_shape={tuple(self.batch_shape)}, dim={self.dim}{sizes}, "
                f"dtype={self.dtype}, device={self.device})")

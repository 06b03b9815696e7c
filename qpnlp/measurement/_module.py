"""Trainable projective measurements."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from typing import overload

import torch
from torch import nn
from torch.nn.utils.parametrizations import orthogonal

from qpnlp._module_precision import ComplexPrecisionMixin, widen_orthogonal_base
from qpnlp._parametrized import PicklableParametrizations
from qpnlp.hilbert import DensityMatrix, Ensemble, PureState, normalize, random_unitary
from qpnlp.hilbert import _validation as V

from ._born import born_probabilities, born_probabilities_dense
from . import _checks
from ._checks import masked_weights
from ._lueders import lueders_update
from ._projector import Projector

INITS = ("orthogonal", "identity", "random")

#: Held while a :func:`drawing_from` block runs the global RNG from its seed: the RNG is one per process, so two
#: blocks of two threads at once (models built in a thread pool) each drew from the other's seed.
_GLOBAL_RNG_LOCK = threading.RLock()


def _new_rng_lock() -> None:
    """In a child made by ``os.fork`` (a DataLoader worker, a ``multiprocessing`` pool on Linux): a fresh lock. The
    copy of one that another thread of the parent held at the fork stays held for ever there (that thread is not
    in the child), and the child's first model built from a generator waited for ever."""
    global _GLOBAL_RNG_LOCK
    _GLOBAL_RNG_LOCK = threading.RLock()


if hasattr(os, "register_at_fork"):         # POSIX
    os.register_at_fork(after_in_child=_new_rng_lock)


def _initial_vectors(init: str, k: int, d: int, dtype, device, generator) -> torch.Tensor:
    if init == "identity":
        if k > d:
            raise ValueError(f"init='identity' needs num_outcomes <= dim; got {k} > {d}")
        return torch.eye(d, dtype=dtype, device=device)[:k].clone()
    if init == "orthogonal" and k <= d:
        return random_unitary(d, dtype=dtype, device=device, generator=generator)[:k].clone()
    if init in ("orthogonal", "random"):  # more outcomes than dimensions cannot be orthogonal
        real = V.real_dtype_of(dtype)
        z = torch.complex(torch.randn(k, d, dtype=real, device=device, generator=generator),
                          torch.randn(k, d, dtype=real, device=device, generator=generator))
        return normalize(z)
    raise ValueError(f"init must be one of {INITS}; got {init!r}")


@contextlib.contextmanager
def drawing_from(generator: torch.Generator | None, device=None, *, needed: bool = True) -> Iterator[None]:
    """Make code that draws from the global RNG reproducible from ``generator``, leaving the global state as it was.

    torch's ``orthogonal`` parametrisation completes a non-square matrix with
    random columns drawn from the global RNG (its ``base``, which steers
    every later optimiser step). With a generator, one seed is drawn from it
    (only when ``needed``) and the global RNG runs from that seed inside a
    fork; without one, nothing changes.

    The global RNG is one per process, not per thread: blocks of several threads take turns (a lock), so that
    each draws from its own seed. Draws that another thread makes from the global RNG meanwhile (its own
    ``torch.randn``) still come from the block's seed, and are rewound when the block ends.
    """
    if generator is None or not needed:
        yield
        return
    seed = int(torch.randint(0, 2 ** 62, (1,), generator=generator, device=generator.device))
    device = torch.device("cpu" if device is None else device)
    cuda = device.type == "cuda"
    index = (device.index if device.index is not None else torch.cuda.current_device()) if cuda else None
    with _GLOBAL_RNG_LOCK, torch.random.fork_rng(devices=[index] if cuda else []):
        torch.default_generator.manual_seed(seed)
        if cuda:
            with torch.cuda.device(index):
                torch.cuda.manual_seed(seed)
        yield


def orthogonal_weight(module: nn.Module, initial: torch.Tensor, generator: torch.Generator | None, device=None, *,
                      completion: bool) -> None:
    r"""Keep ``module.weight`` ``(m, n)`` orthonormal under any optimiser step, starting at ``initial``.

    Rows orthonormal when m <= n (:math:`W W^\dagger = I`), else columns
    (:math:`W^\dagger W = I`), by torch's ``orthogonal`` parametrisation (the
    matrix exponential of a skew-Hermitian parameter); assigning then sets the
    parametrised value to ``initial`` exactly. ``completion`` (m != n): torch
    completes the matrix with random columns, drawn reproducibly from
    ``generator`` (see :func:`drawing_from`).
    """
    with drawing_from(generator, device, needed=completion):
        orthogonal(module, "weight")
        with torch.no_grad():
            module.weight = initial


def object_inputs(system, weights: torch.Tensor | None, mask: torch.Tensor | None):
    """What a measurement module's ``forward`` does with a first-class object instead of tensors.

    ``None`` for tensors (``forward``'s own arguments); ``("dense", (rho,))`` for a :class:`DensityMatrix`
    (``forward_dense`` of its ``(..., d, d)`` matrix), ``("states", (states, weights))`` for a :class:`PureState`
    (``(..., d)``, no weights) or an :class:`Ensemble` (its ``(..., n, d)`` members, zero rows at its padding,
    and their ``(..., n)`` weights, zero there). The weights and mask come with the object: given as well, a
    ValueError.
    """
    if not isinstance(system, (PureState, Ensemble, DensityMatrix)):
        return None
    if weights is not None or mask is not None:
        raise ValueError(f"weights and mask come with the {type(system).__name__}: pass the object alone, or its "
                         f"tensors with them")
    if isinstance(system, DensityMatrix):
        return "dense", (system.data,)
    if isinstance(system, Ensemble):
        return "states", (system.states.data, system.weights)
    return "states", (system.data, None)


class ProjectiveMeasurement(PicklableParametrizations, ComplexPrecisionMixin, nn.Module):
    r"""k trainable rank-1 measurements :math:`P_k = |v_k\rangle\langle v_k|` on :math:`\mathbb{C}^d`.

    The measurement vectors are unit-norm *by construction*: either a free
    complex parameter normalised in :meth:`vectors` (default), or, with
    ``orthonormal=True``, a parameter kept unitary by
    ``torch.nn.utils.parametrizations.orthogonal`` (rows orthonormal).
    ``complete=True`` additionally requires ``num_outcomes == dim``, so the
    projectors resolve the identity and the probabilities sum to one
    (thesis eq. 3.4 and the "complete measurement" of section 3.2.4); orthonormality holds to the rounding of
    torch's matrix exponential, which grows with the parameter after very large steps (see
    :class:`~qpnlp.measurement.POVMMeasurement`).

    Parameters
    ----------
    dim : int
        Hilbert-space dimension d.
    num_outcomes : int, optional
        Number k of measurements; default ``dim``.
    complete : bool
        Orthonormal basis of measurement vectors (k = d); probabilities sum to 1.
    orthonormal : bool, optional
        Keep the k <= d vectors orthonormal (default: ``complete``).
    init : {"orthogonal", "identity", "random"}
        Haar-random orthonormal rows (random unit vectors when k > d), the
        first k canonical basis vectors, or independent random unit vectors.
    trainable : bool
        ``False`` freezes the vectors (the "fixed projectors" ablation).
    dtype : torch.dtype
        complex64 or complex128. A move reads a dtype as a precision and keeps the vectors complex:
        ``to(torch.float64)`` and ``double()`` give complex128, ``to(torch.float32)`` and ``float()`` complex64
        (``nn.Module.to(torch.float64)`` dropped the imaginary parts, ``double()`` did nothing); half precisions
        are refused (``qpnlp._module_precision``).
    device : torch.device or str, optional
        Where the vectors are made and live (default: the default device).
    generator : torch.Generator, optional
        For a reproducible initialisation: the vectors, then (orthonormal
        with k < d) one seed for the parametrisation's random completion;
        the global random state is untouched.

    Examples
    --------
    >>> m = ProjectiveMeasurement(4, complete=True)
    >>> states = torch.nn.functional.normalize(torch.randn(2, 3, 4, dtype=torch.complex64), dim=-1)
    >>> p = m(states, torch.full((2, 3), 1 / 3))        # lazy mixtures of 3 words
    >>> p.shape, torch.allclose(p.sum(-1), torch.ones(2), atol=1e-5)
    (torch.Size([2, 4]), True)
    """

    def __init__(self, dim: int, num_outcomes: int | None = None, *, complete: bool = False,
                 orthonormal: bool | None = None, init: str = "orthogonal", trainable: bool = True,
                 dtype: torch.dtype = torch.complex64, device=None, generator: torch.Generator | None = None):
        super().__init__()
        dim = V.check_dimension("dim", dim)                     # 2.5 or True refused, not truncated
        k = dim if num_outcomes is None else V.check_dimension("num_outcomes", num_outcomes)
        if dtype not in (torch.complex64, torch.complex128):
            raise TypeError(f"dtype must be complex64 or complex128; got {dtype}")
        if complete and k != dim:
            raise ValueError(f"a complete measurement needs num_outcomes == dim; got {k} != {dim}")
        orthonormal = complete if orthonormal is None else orthonormal
        if complete and not orthonormal:
            raise ValueError("complete=True implies orthonormal=True")
        if orthonormal and k > dim:
            raise ValueError(f"at most dim={dim} vectors can be orthonormal; got num_outcomes={k}")
        self.dim, self.num_outcomes = dim, k
        self.complete, self.orthonormal = complete, orthonormal
        initial = _initial_vectors(init, k, dim, dtype, device, generator)
        self.weight = nn.Parameter(initial.clone())
        if orthonormal:                                                 # k < d: random completion
            orthogonal_weight(self, initial, generator, device, completion=k != dim)
        self.requires_grad_(trainable)

    def extra_repr(self) -> str:
        return (f"dim={self.dim}, num_outcomes={self.num_outcomes}, complete={self.complete}, "
                f"orthonormal={self.orthonormal}, dtype={self.weight.dtype}")

    def _widened(self) -> None:
        """After ``double()`` (also a model's): orthonormal vectors to float64's round-off, not float32's
        (``qpnlp._module_precision.widen_orthogonal_base``; ~1e-7 before)."""
        if self.orthonormal:
            widen_orthogonal_base(self)

    def vectors(self, *, validate: V.Validate = None) -> torch.Tensor:
        """The unit measurement vectors ``(k, d)`` (differentiable); ``validate`` checks for zero rows (a Python
        branch on the values: one device sync), default the global mode."""
        return self.weight if self.orthonormal else normalize(self.weight, validate=validate)

    def freeze(self) -> "ProjectiveMeasurement":
        """Stop training the measurement vectors."""
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
            members get weight 0 (the weights of the others must already sum to one, e.g. from
            ``masked_softmax``).

        validate : bool or "strict", optional
            Override the global validation mode for the checks of
            :func:`~qpnlp.measurement.born_probabilities`.

        Returns
        -------
        torch.Tensor
            Real ``(..., k)``: :math:`p_k = \sum_i p_i |\langle v_k|w_i\rangle|^2`.
        """
        unpacked = object_inputs(states, weights, mask)
        if unpacked is not None:
            kind, tensors = unpacked
            return (self.forward_dense if kind == "dense" else self.forward)(*tensors, validate=validate)
        weights = masked_weights(weights, mask)
        vectors = self.vectors(validate=validate)  # unit by construction: only the states and weights are checked
        _checks.born_inputs(states, weights, vectors.unsqueeze(-2), validate, check_vectors=False)
        return born_probabilities(states, weights, vectors, validate=False)

    def forward_dense(self, rho: torch.Tensor, *, validate: V.Validate = None) -> torch.Tensor:
        r""":math:`\operatorname{Tr}(\rho P_k)` for dense ``(..., d, d)`` -> real ``(..., k)``."""
        vectors = self.vectors(validate=validate)
        _checks.dense_inputs(rho, vectors.unsqueeze(-2), validate, check_vectors=False)
        return born_probabilities_dense(rho, vectors, validate=False)

    def as_projectors(self) -> Projector:
        """Immutable :class:`Projector` batch (k,) of the current vectors (detached), for interpretation.

        ``as_projectors().probability(system[..., None])`` is ``self(system)``, ``(..., k)``: a projector batch
        broadcasts with the system's (:meth:`Projector.probability`).
        """
        return Projector._trusted(vectors=self.vectors().detach().unsqueeze(-2))

    @overload
    def post_measurement_state(self, system: PureState, outcome: int) -> PureState: ...
    @overload
    def post_measurement_state(self, system: Ensemble, outcome: int) -> Ensemble: ...
    @overload
    def post_measurement_state(self, system: DensityMatrix, outcome: int) -> DensityMatrix: ...

    def post_measurement_state(self, system: PureState | Ensemble | DensityMatrix,
                               outcome: int) -> PureState | Ensemble | DensityMatrix:
        """Lueders-rule state after observing ``outcome`` (see :func:`lueders_update`): the kind of ``system``.

        A :class:`~qpnlp.hilbert.PureState` stays pure, an :class:`~qpnlp.hilbert.Ensemble` lazy and a
        :class:`~qpnlp.hilbert.DensityMatrix` dense, as
        :meth:`POVMMeasurement.post_measurement_state <qpnlp.measurement.POVMMeasurement.post_measurement_state>`.
        """
        outcome = _checks.check_outcome(outcome, self.num_outcomes)      # 1.0 a TypeError, as POVM's
        return lueders_update(system, self.as_projectors()[outcome])

r"""Unitary (norm-preserving) state-transition matrices for complex RNNs.

The one unitary mechanism of the package (:class:`StateTransition`). Five ways
to hold the square complex matrix :math:`W \in \mathbb{C}^{n \times n}` of a
recurrent cell: the first four are those of the gated complex RNN (Wolter &
Yao, poster, section "The complex gated RNN"), the fifth that of the uRNN cell.

``"expm"`` (default)
    Unitary by construction through
    ``torch.nn.utils.parametrizations.orthogonal(..., orthogonal_map="matrix_exp")``,
    which in this torch version supports complex matrices: it returns
    :math:`W = W_0 \exp(A)` with the skew-Hermitian :math:`A = X - X^H`
    (:math:`X` the lower triangle of the free parameter) and a fixed unitary
    base :math:`W_0` (the initial matrix, "trivialisation"). Any optimiser
    (Adam, SGD, ...) can be used; every forward pass sees a unitary
    :math:`W` up to rounding, however large the steps. (The rounding error of
    ``matrix_exp`` grows like :math:`\|A\|_2 \varepsilon`, so absurdly large
    learning rates that blow up :math:`\|A\|` cost a few digits; the
    Cayley map does not have this growth.)
``"cayley"``
    The same parametrisation with the Cayley map
    :math:`W = W_0 (I - A/2)^{-1} (I + A/2)`.
``"cayley_step"``
    :math:`W` is a plain parameter initialised unitary and updated by
    :class:`CayleyStepSGD`, the poster's eq. (3) (Wisdom et al. 2016):
    a Riemannian gradient step on the Stiefel manifold along the Cayley curve,

    .. math::

        W_{k+1} = \left(I + \tfrac{\lambda}{2} A_k\right)^{-1}
                  \left(I - \tfrac{\lambda}{2} A_k\right) W_k,
        \qquad A_k = G_k W_k^H - W_k G_k^H,

    with :math:`G = \partial F/\partial \Re W + i\, \partial F/\partial \Im W`
    (which is exactly what torch stores in ``W.grad`` for a real loss ``F``).
    The poster prints the generator as
    :math:`A = W \nabla_{\bar W} F - \bar W \nabla_W F`, which as printed is
    not skew-Hermitian in general; we use the form of Wisdom et al. (2016,
    the poster's ref. [4]; the poster attributes eq. (3) to ref. [1]). This :math:`A_k` is
    skew-Hermitian, so the Cayley factor is unitary and :math:`W` stays on the
    unitary group up to rounding (which accumulates slowly over steps; see
    :func:`unitarity_error`). Must not also be given to a Euclidean optimiser:
    use :func:`split_cayley_step_parameters`.
``"free"``
    Unconstrained complex parameter (initialised unitary), for comparison.
``"skew_expm"``
    :math:`W = \exp(S - S^\dagger)` of a free square parameter :math:`S`
    (Arjovsky et al. 2016 style; no base matrix), registered with
    ``torch.nn.utils.parametrize``, so unitary by construction like
    ``"expm"``. :math:`S` starts with entries uniform in
    :math:`\pm 1/\sqrt n` (each part scaled by :math:`1/\sqrt 2`, the
    initialisation of :class:`~qpnlp.nn.linear.ComplexLinear`), so :math:`W`
    starts as the exponential of a random skew-Hermitian matrix of norm
    :math:`O(1)`, not Haar-random. The only mode that also takes a real
    dtype (then :math:`W` is orthogonal). Used by
    :class:`~qpnlp.nn.recurrent.URNNCell`; not one of ``TRANSITION_MODES``
    (the poster's choices, offered by the gated complex RNN).

Shapes: the matrices are ``(n, n)``; they act on states as ``h @ W.mT``
(i.e. :math:`W h` for a column vector :math:`h`).
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import Tensor, nn
from torch.nn.utils import parametrizations, parametrize

from qpnlp._checks import add_param_group_fitting, check_rate_fits
from qpnlp._module_precision import ComplexPrecisionMixin, widen_orthogonal_base
from qpnlp._parametrized import PicklableParametrizations
from qpnlp.hilbert import _validation as V
from qpnlp.hilbert import random_unitary
from qpnlp.hilbert._widen import orthonormal_columns

from ._checks import check_int, check_real
from .linear import _init_weight

__all__ = [
    "TRANSITION_MODES",
    "unitarity_error",
    "cayley_step",
    "CayleyStepSGD",
    "StateTransition",
    "split_cayley_step_parameters",
]

#: The poster's modes, offered by the gated complex RNN.
TRANSITION_MODES = ("expm", "cayley", "cayley_step", "free")
_MODES = TRANSITION_MODES + ("skew_expm",)


class _SkewHermitianExp(nn.Module):
    r"""Parametrisation :math:`S \mapsto \exp(S - S^\dagger)` (unitary; orthogonal for real :math:`S`)."""

    def forward(self, s: Tensor) -> Tensor:
        return torch.linalg.matrix_exp(s - s.mH)


def unitarity_error(w: Tensor) -> float:
    r"""Largest entry of :math:`|W^H W - I|` (an O(n^3) check; use in tests and diagnostics).

    Parameters
    ----------
    w : Tensor, shape (..., n, n)
        Square matrices (a batch of them), real or complex; the largest error over the batch is returned.

    Returns
    -------
    float
        0.0 for an empty batch or n = 0 (nothing to violate); NaN where ``w`` holds NaN.

    Raises
    ------
    TypeError
        When ``w`` is not a tensor.
    ValueError
        When ``w`` is not shaped (..., n, n) (e.g. a vector, or an (m, n) isometry: use it square).

    Examples
    --------
    >>> unitarity_error(random_unitary(4, dtype=torch.complex128)) < 1e-12
    True
    """
    V.check_tensor("w", w)
    V.check_square("w", w)
    w = w.detach()                              # a diagnostic: no graph, no warning for a parameter
    eye = torch.eye(w.shape[-1], dtype=w.dtype, device=w.device)
    err = (w.mH @ w - eye).abs()
    return float(err.max()) if err.numel() else 0.0


@torch.no_grad()
def cayley_step(w: Tensor, grad: Tensor, lr: float) -> Tensor:
    r"""One Cayley step on the unitary group (poster eq. 3), out of place.

    .. math::

        W' = (I + \tfrac{\lambda}{2} A)^{-1} (I - \tfrac{\lambda}{2} A) W,
        \quad A = G W^H - W G^H,

    both factors divided by :math:`m = \max(1, \lambda / 2)` (the same :math:`W'`): a huge step size (3e38 in
    complex64) no longer overflows :math:`\tfrac{\lambda}{2} A` to a NaN matrix; :math:`\lambda \le 2` computes
    the formula as written.

    Parameters
    ----------
    w : Tensor, complex, shape (n, n), unitary
    grad : Tensor, complex, shape (n, n)
        Euclidean gradient as stored by torch (:math:`\partial_{\Re} + i\,\partial_{\Im}`); the shape, dtype
        and device of ``w`` (else ValueError or TypeError).
    lr : float
        Step size :math:`\lambda`, a finite number (ValueError for NaN or inf, which would give a NaN matrix;
        a tensor is not checked: no device synchronisation).

    Returns
    -------
    Tensor, shape (n, n), unitary if ``w`` is.

    Examples
    --------
    >>> w = random_unitary(3, dtype=torch.complex128)
    >>> g = torch.randn(3, 3, dtype=torch.complex128)
    >>> unitarity_error(cayley_step(w, g, lr=0.5)) < 1e-12
    True
    """
    V.check_tensor("w", w)
    V.check_tensor("grad", grad)
    if w.dim() != 2 or w.shape[0] != w.shape[1] or grad.shape != w.shape:
        raise ValueError(f"w must be a square matrix (n, n) and grad of its shape; got {tuple(w.shape)} and "
                         f"{tuple(grad.shape)}")
    if grad.dtype != w.dtype:
        raise TypeError(f"grad must have the dtype of w {w.dtype}; got {grad.dtype}")
    V.check_same_device(("w", w), ("grad", grad))
    if not isinstance(lr, Tensor):
        check_real("lr", lr)
    a = grad @ w.mH - w @ grad.mH
    eye = torch.eye(w.shape[-1], dtype=w.dtype, device=w.device)
    half = 0.5 * lr
    m = half.clamp(min=1) if isinstance(half, Tensor) else max(half, 1.0)
    k = half / m                                # exactly half for lr <= 2 (m = 1), exactly 1 above
    return torch.linalg.solve(eye / m + k * a, (eye / m - k * a) @ w)


def _check_lr(lr: float) -> float:
    """A step size of :class:`CayleyStepSGD`: ``lr`` as a finite number > 0 (``check_real``), else ValueError."""
    if check_real("lr", lr, "a finite number > 0") <= 0:
        raise ValueError(f"lr must be positive; got {lr}")
    return lr


def _check_matrices(group: dict) -> None:
    """ValueError unless every parameter of ``group`` (as torch stores it) is a square complex matrix, the
    parameters of :class:`CayleyStepSGD`, whose constructor alone checked them: a real vector or a non-square
    matrix given to ``add_param_group`` was kept, and refused only at a step, by :func:`cayley_step`."""
    for p in group["params"]:
        if not p.is_complex() or p.ndim != 2 or p.shape[0] != p.shape[1]:
            raise ValueError(f"CayleyStepSGD needs square complex matrices; got {tuple(p.shape)} {p.dtype}")


class CayleyStepSGD(torch.optim.Optimizer):
    r"""Riemannian SGD on the unitary group with the Cayley retraction (poster eq. 3).

    Every parameter must be a square complex matrix that is unitary at
    construction time; it then stays unitary (up to rounding). Pair it with an
    ordinary optimiser for the other parameters, see
    :func:`split_cayley_step_parameters`.

    Parameters
    ----------
    params : iterable of complex Tensors, each (n, n)
    lr : float
        Step size :math:`\lambda` (default 1e-3).

    Examples
    --------
    >>> st = StateTransition(4, mode="cayley_step", dtype=torch.complex128)
    >>> opt = CayleyStepSGD([st.weight], lr=0.1)
    >>> loss = st().real.sum()
    >>> loss.backward()
    >>> opt.step()
    >>> unitarity_error(st()) < 1e-12
    True
    """

    def __init__(self, params: Iterable[Tensor], lr: float = 1e-3):
        super().__init__(params, dict(lr=_check_lr(lr)))

    def add_param_group(self, param_group: dict) -> None:
        """Add a group (torch's rule; the constructor's groups come here too), its ``lr`` (its own or the default) a
        finite number > 0 no larger than its matrices' dtype holds (``qpnlp._checks.add_param_group_fitting``;
        ``ValueError``): a group's own NaN, negative or 1e39 rate (complex64) passed, and the step left NaN matrices.
        Every parameter must be a square complex matrix (``_check_matrices``); a group that fails is not kept."""
        _check_lr(param_group.get("lr", self.defaults["lr"]))
        add_param_group_fitting(self, param_group, check=_check_matrices)

    @torch.no_grad()
    def step(self, closure=None):
        """One Cayley step (:func:`cayley_step`) of every matrix with a gradient.

        First every group's ``lr`` is checked again as :meth:`add_param_group` checks it, with the same
        ``ValueError`` (the rate's limit naming ``param_groups[i]``): a rate set in ``param_groups`` afterwards (a
        scheduler's, one's own) is not seen by the constructor; a negative one stepped up the loss, and a NaN in a
        later group was refused only after the earlier groups had stepped. A float comparison or two per group, no
        tensor read; nothing is stepped when a group fails.
        """
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for index, group in enumerate(self.param_groups):
            _check_lr(group["lr"])
            check_rate_fits(group, where=f"param_groups[{index}]")
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.copy_(cayley_step(p, p.grad, group["lr"]))
        return loss


class StateTransition(PicklableParametrizations, ComplexPrecisionMixin, nn.Module):
    r"""Square complex state-transition matrix, unitary by construction or free.

    ``forward()`` takes no input and returns the current matrix, so a layer
    computes it once per sequence and reuses it at every time step.

    Parameters
    ----------
    n : int
        Hidden size; the matrix is (n, n).
    mode : {"expm", "cayley", "cayley_step", "free", "skew_expm"}
        See the module docstring. Default ``"expm"``.
    dtype : torch.dtype
        Complex, default complex64 (``"skew_expm"``: float32/float64 too).
    device : torch.device, optional
    generator : torch.Generator, optional
        Source of the initial matrix (default: the global generator).

    Attributes
    ----------
    weight : Tensor, (n, n)
        The matrix (recomputed from the parametrisation on each access for
        ``"expm"``, ``"cayley"`` and ``"skew_expm"``).
    is_unitary : bool
        True for every mode except ``"free"``.

    Notes
    -----
    Unitary to rounding: :func:`unitarity_error` about :math:`n\,\epsilon` (7e-7 in complex64 at n = 64, 4e-6
    for ``"skew_expm"`` in float32), so :math:`\|W^L h\|` drifts from :math:`\|h\|` like a sum of L
    roundings: 3e-4 to 2e-3 after :math:`L = 10^4` steps in complex64 / float32, 2e-13 to 6e-12 in complex128 / float64
    (n = 64). Long recurrences that must keep the norm closer run in complex128.

    Examples
    --------
    >>> st = StateTransition(5, mode="expm", dtype=torch.complex128)
    >>> h = torch.randn(2, 5, dtype=torch.complex128)
    >>> torch.allclose((h @ st().mT).norm(dim=-1), h.norm(dim=-1))
    True
    """

    def __init__(self, n: int, mode: str = "expm", *, dtype: torch.dtype = torch.complex64, device=None,
                 generator: torch.Generator | None = None):
        super().__init__()
        if mode not in _MODES:
            raise ValueError(f"unknown transition mode {mode!r}; expected one of {_MODES}")
        if not dtype.is_complex and not (mode == "skew_expm" and dtype in (torch.float32, torch.float64)):
            raise TypeError(f"dtype must be complex (or float32/float64 for 'skew_expm'); got {dtype}")
        n = check_int("n", n)
        self.mode = mode
        self.n = n
        if mode == "skew_expm":
            s = _init_weight((n, n), n, dtype, generator)
            self.weight = nn.Parameter(s if device is None else s.to(device))
            parametrize.register_parametrization(self, "weight", _SkewHermitianExp())
            return
        self.weight = nn.Parameter(random_unitary(n, dtype=dtype, device=device, generator=generator))
        if mode in ("expm", "cayley"):
            # torch's orthogonal parametrisation handles complex unitaries for the
            # matrix_exp and cayley maps (only "householder" rejects complex).
            parametrizations.orthogonal(self, "weight", orthogonal_map="matrix_exp" if mode == "expm" else "cayley")

    @property
    def is_unitary(self) -> bool:
        return self.mode != "free"

    def forward(self) -> Tensor:
        return self.weight

    def extra_repr(self) -> str:
        return f"n={self.n}, mode={self.mode!r}"

    def _widened(self) -> None:
        r"""After ``double()`` (also a model's, e.g. a CGRNN's): ``"expm"``, ``"cayley"`` and ``"cayley_step"``
        unitary to float64's round-off, not float32's (:math:`\max|W^\dagger W - I|` 3e-7 to 6e-7 before, n = 4
        to 64; a Cayley step keeps that error: its factor is unitary). ``"skew_expm"`` computes W from its
        parameter in double precision already; ``"free"`` promises no unitarity and is kept."""
        if self.mode in ("expm", "cayley"):
            widen_orthogonal_base(self)
        elif self.mode == "cayley_step":
            # The QR of the bases above (orthonormal_columns; Householder, R's diagonal made positive), not the
            # polar factor: one call, unitary to float64's round-off, R = I to float32's round-off so W moves by
            # that much only, and a W further off (not unitary: trained by a Euclidean optimiser) is kept.
            with torch.no_grad():
                self.weight.copy_(orthonormal_columns(self.weight))


def split_cayley_step_parameters(module: nn.Module) -> tuple[list[Tensor], list[Tensor]]:
    """Split ``module.parameters()`` into (Cayley-step matrices, everything else).

    Use the first list with :class:`CayleyStepSGD` and the second with any
    Euclidean optimiser.

    Parameters
    ----------
    module : torch.nn.Module
        A model or layer; the ``weight`` of each :class:`StateTransition` in mode ``"cayley_step"`` among its
        submodules goes to the first list, once (also when several transitions share it).

    Examples
    --------
    >>> st = StateTransition(3, mode="cayley_step")
    >>> stiefel, other = split_cayley_step_parameters(st)
    >>> len(stiefel), len(other)
    (1, 0)
    """
    # by identity, in order: a matrix tied to several transitions is listed (and stepped) once
    stiefel = list({id(m.weight): m.weight for m in module.modules()
                    if isinstance(m, StateTransition) and m.mode == "cayley_step"}.values())
    ids = {id(p) for p in stiefel}
    return stiefel, [p for p in module.parameters() if id(p) not in ids]


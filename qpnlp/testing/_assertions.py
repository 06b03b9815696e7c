"""Assertion helpers for property tests of quantum-probability models.

Each raises ``AssertionError`` explicitly, never through an ``assert`` statement, so that they still check under
``python -O`` (which strips ``assert``); a comparison is written ``not (x <= atol)`` so that a NaN fails it.
"""

from __future__ import annotations

import torch

from qpnlp.hilbert import DensityMatrix, Ensemble, PureState
from qpnlp.hilbert._linalg import hermitian_part
from qpnlp.hilbert._operands import as_density_tensor

from ._tolerances import default_atol



def _detached(data):
    """``data`` without its autograd graph (``float()`` of a tensor that requires grad warns; -W error fails)."""
    return data.detach() if isinstance(data, torch.Tensor) else data


def _tensor(rho) -> torch.Tensor:
    """Dense ``(..., d, d)`` of a state object, detached; anything else unchanged (the assertions check it)."""
    return _detached(as_density_tensor(rho) if isinstance(rho, (DensityMatrix, Ensemble, PureState)) else rho)


def _square(data: torch.Tensor, what: str, batch_dims: int = 0) -> None:
    """Assert a tensor of square matrices ``(..., d, d)`` with at least ``batch_dims`` leading dims."""
    if not (data.dim() >= 2 + batch_dims and data.shape[-1] == data.shape[-2]):
        shape = "(..., k, d, d)" if batch_dims else "(..., d, d)"
        raise AssertionError(f"{what} must have shape {shape}; got {tuple(data.shape)}")


def _kind(t: torch.Tensor) -> int:
    return 2 if t.is_complex() else 1 if t.is_floating_point() else 0


def assert_allclose(actual: torch.Tensor, expected: torch.Tensor, *, atol: float | None = None,
                    rtol: float = 0.0, msg: str = "") -> None:
    """``torch.testing.assert_close`` with a dtype- and size-scaled default ``atol``.

    ``expected`` is compared in the dtype of ``actual``, promoted when ``expected`` is of a wider kind
    (complex against real, float against integer) so that no imaginary or fractional part is dropped.

    Parameters
    ----------
    actual : torch.Tensor
        The computed values, any shape.
    expected : torch.Tensor or array_like
        The reference values, broadcastable to the shape of ``actual`` (lists and numbers too).
    atol : float, optional
        Absolute tolerance; default (None) :func:`default_atol` of the dtype and the size of the last dim of ``actual``.
    rtol : float, optional
        Relative tolerance (default 0: absolute only).
    msg : str, optional
        Prefixed to the error message (default: none).

    Raises
    ------
    AssertionError
        Saying what failed, with the worst value.
    """
    dim = actual.shape[-1] if actual.dim() else 1
    atol = default_atol(actual.dtype, dim) if atol is None else atol
    expected = torch.as_tensor(expected, device=actual.device)
    try:
        shape = torch.broadcast_shapes(expected.shape, actual.shape)
    except RuntimeError:
        shape = None
    if shape != actual.shape:
        raise AssertionError(f"{msg} shapes differ: actual {tuple(actual.shape)}, expected {tuple(expected.shape)} "
                             "(which must broadcast to the actual shape)".lstrip())
    if _kind(expected) > _kind(actual):
        actual = actual.to(torch.promote_types(actual.dtype, expected.dtype))
    torch.testing.assert_close(actual, expected.to(actual.dtype).expand_as(actual), atol=atol, rtol=rtol,
                               msg=(lambda m: f"{msg} {m}".strip()) if msg else None)


# The first comparison imports modules, seconds in all: torch.distributed.tensor (torch 2.13), and with torch 2.11
# torch.fx.experimental.symbolic_shapes for an expanded operand (the expected value broadcast above). Made here,
# when a test module is collected, they do not count against the deadline of a user's first @given example.
assert_allclose(torch.zeros(2), [0.0, 0.0])


def assert_pure_state(state, *, atol: float | None = None) -> None:
    """Assert unit norm along the last dim (PureState or complex tensor ``(..., d)``).

    Parameters
    ----------
    state : PureState or torch.Tensor
        Complex ``(..., d)``.
    atol : float, optional
        Absolute tolerance; default (None) :func:`default_atol` of the dtype and d.

    Raises
    ------
    AssertionError
        Saying what failed, with the worst value.
    """
    data = state.data if isinstance(state, PureState) else state
    if not data.is_complex():
        raise AssertionError(f"expected a complex tensor; got {data.dtype}")
    if data.dim() < 1:
        raise AssertionError("a state must have shape (..., d); got a scalar")
    norms = torch.linalg.vector_norm(data, dim=-1)
    atol = default_atol(data.dtype, data.shape[-1]) if atol is None else atol     # 0.0 is a tolerance too
    assert_allclose(norms, torch.ones_like(norms), atol=atol, msg="state norms differ from 1:")


def assert_density_matrix(rho, *, atol: float | None = None) -> None:
    """Assert finite, Hermitian (conjugate transpose), PSD (eigvalsh) and unit trace.

    Parameters
    ----------
    rho : DensityMatrix, Ensemble, PureState or torch.Tensor
        A state object or a complex ``(..., d, d)`` tensor.
    atol : float, optional
        Absolute tolerance; default (None) :func:`default_atol` of the dtype and d.

    Raises
    ------
    AssertionError
        Saying what failed, with the worst value.
    """
    data = _tensor(rho)
    if not data.is_complex():
        raise AssertionError(f"expected a complex tensor; got {data.dtype}")
    _square(data, "a density matrix")
    if data.shape[:-2].numel() == 0:                        # an empty batch holds no matrix to check
        return
    if not bool(torch.isfinite(data).all()):
        raise AssertionError("the density matrix contains NaN or inf")
    d = data.shape[-1]
    atol = default_atol(data.dtype, d) if atol is None else atol
    herm = float((data - data.mH).abs().max()) if data.numel() else 0.0
    if not (herm <= atol):
        raise AssertionError(f"not Hermitian: max |rho - rho^dagger| = {herm:.3g} > {atol:.2g}")
    trace = torch.diagonal(data, dim1=-2, dim2=-1).sum(-1)
    err = float((trace - 1).abs().max())
    if not (err <= atol):
        raise AssertionError(f"trace differs from 1 by {err:.3g} > {atol:.2g}")
    smallest = float(torch.linalg.eigvalsh(hermitian_part(data))[..., 0].min())
    if not (smallest >= -atol):
        raise AssertionError(f"not positive semi-definite: eigenvalue {smallest:.3g} < -{atol:.2g}")


def assert_probabilities(p: torch.Tensor, *, complete: bool = False, atol: float | None = None) -> None:
    r"""Assert real values in [0, 1]; with ``complete=True`` also summing to one along the last dim.

    Parameters
    ----------
    p : torch.Tensor
        Real ``(..., k)``: k outcome probabilities per batch element.
    complete : bool, optional
        Also check :math:`\sum_k p_k = 1` (a complete measurement); default False.
    atol : float, optional
        Absolute tolerance; default (None) :func:`default_atol` of the dtype and k.

    Raises
    ------
    AssertionError
        Saying what failed, with the worst value.
    """
    if p.is_complex():
        raise AssertionError(f"probabilities must be real; got {p.dtype}")
    p = p.detach()
    atol = default_atol(p.dtype, p.shape[-1] if p.dim() else 1) if atol is None else atol
    if not bool(torch.isfinite(p).all()):
        raise AssertionError("probabilities contain NaN or inf")
    if p.numel():
        lo, hi = float(p.min()), float(p.max())
        if not (lo >= -atol and hi <= 1 + atol):
            raise AssertionError(f"probabilities outside [0, 1]: min {lo:.3g}, max {hi:.3g}")
    if complete and p.shape[:-1].numel():                   # no outcome at all sums to 0, not 1
        sums = p.sum(-1).flatten()
        worst = int((sums - 1).abs().argmax())
        err = float((sums[worst] - 1).abs())
        if not (err <= atol):
            raise AssertionError(f"probabilities of a complete measurement sum to {float(sums[worst]):.6g} "
                                 f"(flat batch index {worst}), off by {err:.3g} > {atol:.2g}")


def assert_unitary(u: torch.Tensor, *, atol: float | None = None) -> None:
    """Assert ``U U^dagger = I`` for ``(..., d, d)``.

    Parameters
    ----------
    u : torch.Tensor
        Square ``(..., d, d)``.
    atol : float, optional
        Absolute tolerance; default (None) :func:`default_atol` of the dtype and d.

    Raises
    ------
    AssertionError
        Saying what failed, with the worst value.
    """
    _square(u, "a unitary")
    d = u.shape[-1]
    eye = torch.eye(d, dtype=u.dtype, device=u.device)
    assert_allclose(u @ u.mH, eye.expand_as(u), atol=atol, msg="not unitary:")


def assert_povm(povm, *, atol: float | None = None) -> None:
    r"""Assert that effects ``(..., k, d, d)`` (or a :class:`~qpnlp.measurement.POVM`) are finite, Hermitian, PSD and
    sum to I.

    Parameters
    ----------
    povm : POVM or torch.Tensor
        A :class:`~qpnlp.measurement.POVM` or complex effects ``(..., k, d, d)``.
    atol : float, optional
        Absolute tolerance; default (None) :func:`default_atol` of the dtype and k d.

    Raises
    ------
    AssertionError
        Saying what failed, with the worst value.
    """
    effects = _detached(povm.effects() if hasattr(povm, "effects") else povm)
    if not effects.is_complex():
        raise AssertionError(f"expected complex effects; got {effects.dtype}")
    _square(effects, "POVM effects", batch_dims=1)
    if effects.shape[:-3].numel() == 0:                     # an empty batch holds no POVM to check
        return
    if effects.shape[-3] == 0:
        raise AssertionError("a POVM needs at least one effect (zero effects sum to 0, not I)")
    if not bool(torch.isfinite(effects).all()):
        raise AssertionError("the POVM effects contain NaN or inf")
    d = effects.shape[-1]
    atol = default_atol(effects.dtype, d * effects.shape[-3]) if atol is None else atol
    herm = float((effects - effects.mH).abs().max())
    if not (herm <= atol):
        raise AssertionError(f"effects not Hermitian: max |E - E^dagger| = {herm:.3g} > {atol:.2g}")
    smallest = float(torch.linalg.eigvalsh(hermitian_part(effects))[..., 0].min())
    if not (smallest >= -atol):
        raise AssertionError(f"effects not positive semi-definite: eigenvalue {smallest:.3g} < -{atol:.2g}")
    eye = torch.eye(d, dtype=effects.dtype, device=effects.device)
    err = float((effects.sum(-3) - eye).abs().max())
    if not (err <= atol):
        raise AssertionError(f"effects do not sum to the identity: max |sum_k E_k - I| = {err:.3g} > {atol:.2g}")

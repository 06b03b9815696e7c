r"""Checks of the arguments of the Born-rule functions, behind the one validation switch.

Every public function of ``qpnlp.measurement._born`` calls one function
here first. Static checks (types, shapes, devices) always run; the value
checks run while validation is on (:func:`qpnlp.hilbert.set_validation` or
``validate=``), each in O(size of the argument):

* states: finite, unit norm where they carry weight (zero rows are padding);
* weights: real, finite, non-negative, summing to one over the members;
* projective measurement vectors: unit rows (rank 1) or orthonormal rows (rank r);
* POVM factor vectors: :math:`\sum_{k,s} |v_{ks}\rangle\langle v_{ks}| = I`
  (O(k r d^2), still below the cost of the probabilities for the batches
  models use);
* dense states: Hermitian, trace one (positive semi-definite in strict mode).

With validation off nothing here depends on tensor values, so the Born
functions compile with ``torch.compile`` without graph breaks.
"""

from __future__ import annotations

import math

import torch

from qpnlp.hilbert import _validation as V
from qpnlp.hilbert._mixture import check_density_tensor

__all__ = ["check_states", "check_projectors", "check_completeness", "check_mask", "check_outcome", "born_inputs",
           "dense_inputs"]


def _where(flat: int, batch_shape) -> str:
    if not batch_shape:
        return ""
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), tuple(batch_shape)))
    return f" at batch index {index}"


def check_outcome(outcome: object, num_outcomes: int) -> int:
    """``outcome`` as an int in ``[0, num_outcomes)``: TypeError naming it unless an integer, ValueError outside.

    Integers as ``qpnlp.hilbert._validation.as_integer`` reads them (numpy integers and 0-dim integer tensors
    too; a bool is not one, as for every size and shape); 1.0 is refused, not truncated (it failed inside torch's
    indexing). A static check, always on.
    """
    index = V.as_integer(outcome)
    if index is None:
        raise TypeError(f"outcome must be an integer; got {type(outcome).__name__} {outcome!r}")
    if not 0 <= index < num_outcomes:
        raise ValueError(f"outcome must be in [0, {num_outcomes}); got {index}")
    return index


def check_completeness(name: str, vectors: torch.Tensor) -> None:
    r"""Raise ValueError unless :math:`\sum_{k,s} |v_{ks}\rangle\langle v_{ks}| = I` within tolerance."""
    V.check_nonempty(name, vectors, -1, "dimensions (d = 0)")      # amax below needs a d x d matrix
    vectors = vectors.detach()
    k, r, d = vectors.shape[-3:]
    flat = vectors.reshape(*vectors.shape[:-3], k * r, d)
    total = flat.mT @ flat.conj()                                           # sum_ks |v><v|
    eye = torch.eye(d, dtype=vectors.dtype, device=vectors.device)
    err = (total - eye).abs().amax((-2, -1)).reshape(-1)
    tol = V.tolerance(vectors.dtype, max(d, k * r)) * 2      # a sum of k r rank-one terms, each rounded
    if V._exceeds(err, tol):
        worst, _ = V._worst(err)
        raise ValueError(f"{name}: the effects must sum to the identity; got max |sum_k E_k - I| = "
                         f"{float(err[worst]):.3g}{_where(worst, vectors.shape[:-3])} "
                         f"(shape {tuple(vectors.shape)}, tolerance {tol:.2g})")


def check_projectors(name: str, vectors: torch.Tensor) -> None:
    """Rank-1 rows ``(k, 1, d)`` of unit norm, or orthonormal rows ``(k, r, d)`` per projector (values only).

    r = 0 is the zero projector: no rows, nothing to check.
    """
    vectors = vectors.detach()
    if vectors.shape[-2] == 1:
        V.check_unit_norm(name, vectors.squeeze(-2))
        return
    r = vectors.shape[-2]
    if r == 0:
        return
    eye = torch.eye(r, dtype=vectors.dtype, device=vectors.device)
    err = (vectors @ vectors.mH - eye).abs().amax((-2, -1)).reshape(-1)
    tol = V.tolerance(vectors.dtype, vectors.shape[-1])
    if V._exceeds(err, tol):
        worst, _ = V._worst(err)
        raise ValueError(f"{name} must have orthonormal rows per projector (rank-{r} projectors); got "
                         f"max |V V^dagger - I| = {float(err[worst]):.3g}{_where(worst, vectors.shape[:-2])} "
                         f"(shape {tuple(vectors.shape)}, tolerance {tol:.2g})")


def check_states(states: torch.Tensor, weights: torch.Tensor | None) -> None:
    """Static checks of states ``(..., n, d)`` and their weights ``(..., n)``, or of pure states ``(..., d)``
    (``weights=None``): the shape error shows the layout that was asked for."""
    V.check_tensor("states", states)
    if not (states.is_complex() or states.dtype.is_floating_point):
        raise TypeError(f"states must be a complex (or real floating) tensor; got {states.dtype}")
    if weights is None:
        V.check_min_ndim("states", states, 1, "(..., d)")
        return
    V.check_min_ndim("states", states, 2, "(..., n, d)")
    V.check_nonempty("states", states, -2, "member states (n = 0: an empty mixture)")
    V.check_tensor("weights", weights)
    if weights.is_complex() or not weights.dtype.is_floating_point:
        raise TypeError(f"weights must be a real floating tensor (probabilities); got {weights.dtype}")
    if weights.shape != states.shape[:-1]:
        raise ValueError(f"weights must have shape {tuple(states.shape[:-1])} (states without d); "
                         f"got {tuple(weights.shape)}")


def check_mask(mask: torch.Tensor, weights: torch.Tensor) -> None:
    """A bool mask of the weights' shape and device (static checks)."""
    V.check_tensor("mask", mask)
    if mask.dtype != torch.bool:
        raise TypeError(f"mask must be a bool tensor (True = member); got {mask.dtype}")
    if mask.shape != weights.shape:
        raise ValueError(f"mask must have the shape of weights {tuple(weights.shape)}; got {tuple(mask.shape)}")
    V.check_same_device(("weights", weights), ("mask", mask))


def masked_weights(weights: torch.Tensor | None, mask: torch.Tensor | None) -> torch.Tensor | None:
    """``weights`` with masked members set to 0 (mask checked); unchanged without a mask.

    A mask without weights is refused: it masks mixture members, and pure states have none (it was ignored).
    """
    if mask is None:
        return weights
    if weights is None:
        raise ValueError("a mask needs weights: it masks the members of mixtures (weights (..., n)); for pure "
                         "states pass weights=None and no mask (zero rows of states give zero probabilities)")
    check_mask(mask, weights)
    return weights.masked_fill(~mask, 0.0)


def born_inputs(states: torch.Tensor, weights: torch.Tensor | None, vectors: torch.Tensor, validate: V.Validate,
                *, vectors_name: str = "projectors", povm: bool = False, check_vectors: bool = True) -> None:
    """All checks of ``(states, weights, vectors)`` for the lazy Born functions (see the module docstring).

    ``vectors`` is already viewed as ``(..., k, r, d)``. ``check_vectors=False``
    skips the values of the vectors: the measurement modules, whose vectors
    are valid by construction (a parametrisation keeps them unit or
    isometric up to its own round-off, which grows with large steps), check
    only what they are given.
    """
    check_states(states, weights)
    V.check_dims_match("states", states.shape[-1], vectors_name, vectors.shape[-1])
    if povm:                                        # batches of POVMs broadcast with the states' batch dims
        V.check_broadcast("states", states.shape[:-1 if weights is None else -2], vectors_name, vectors.shape[:-3])
    V.check_same_device(("states", states), ("weights", weights), (vectors_name, vectors))
    if not V.enabled(validate):
        return
    if not _states_and_weights_ok(states, weights):              # the detailed checks name the problem
        if weights is None:
            V.check_unit_norm("states", states, allow_zero=True)
        else:
            V.check_probability_weights("weights", weights)
            V.check_unit_norm("states", states, where=weights.detach() != 0)
    if check_vectors:
        _check_vectors(vectors_name, vectors, povm)


def _states_and_weights_ok(states: torch.Tensor, weights: torch.Tensor | None) -> bool:
    """Every check of :func:`born_inputs` on states and weights in a few fused operations and one host sync.

    NaN or inf anywhere propagates into the sums (or the maxima) and fails the test.
    """
    states = states.detach()
    norms = V.norms_of(states)
    if not norms.numel() or not V.has_values(norms, weights):   # meta tensors: no values to check
        return True
    tol = V.tolerance(states.dtype, states.shape[-1])
    if weights is None:
        off = torch.where(norms != 0, (norms - 1).abs(), norms)
        parts = [off.amax() - tol, norms.sum()]
    else:
        w = weights.detach()
        w_tol = V.tolerance(w.dtype, w.shape[-1])
        off = torch.where(w != 0, (norms - 1).abs(), 0.0)
        parts = [off.amax() - tol, -w.amin() - w_tol, (w.sum(-1) - 1).abs().amax() - w_tol, norms.sum() + w.sum()]
    values = torch.stack([x.to(norms.dtype) for x in parts]).tolist()
    return all(v <= 0 for v in values[:-1]) and math.isfinite(values[-1])


def dense_inputs(rho: torch.Tensor, vectors: torch.Tensor, validate: V.Validate, *,
                 vectors_name: str = "projectors", povm: bool = False, check_vectors: bool = True) -> None:
    """All checks of ``(rho, vectors)`` for the dense Born functions (``check_vectors`` as in :func:`born_inputs`)."""
    V.check_tensor("rho", rho)
    V.check_square("rho", rho)
    V.check_dims_match("rho", rho.shape[-1], vectors_name, vectors.shape[-1])
    if povm:
        V.check_broadcast("rho", rho.shape[:-2], vectors_name, vectors.shape[:-3])
    check_density_tensor("rho", rho, validate)
    V.check_same_device(("rho", rho), (vectors_name, vectors))
    if check_vectors and V.enabled(validate):
        _check_vectors(vectors_name, vectors, povm)


def _check_vectors(name: str, vectors: torch.Tensor, povm: bool) -> None:
    V.check_finite(name, vectors, event_ndim=3 if povm else 2)
    if povm:
        check_completeness(name, vectors)
    else:
        check_projectors(name, vectors)

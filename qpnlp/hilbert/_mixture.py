r"""Functional core of states and mixtures: checks and the maths on plain tensors.

The first-class objects (:class:`~qpnlp.hilbert.PureState`,
:class:`~qpnlp.hilbert.DensityMatrix`, :class:`~qpnlp.hilbert.Ensemble`)
call these functions; the functions know none of them, so the modules of
the objects import this one and never each other in a circle.

A mixture is kept as member states ``(..., n, d)`` (unit rows) and weights
``(..., n)``; its density matrix and weighted Gram matrix are

.. math:: \rho = \sum_i p_i |w_i\rangle\langle w_i| = A A^\dagger, \qquad
          G = A^\dagger A, \qquad A = [\sqrt{p_1} w_1, \dots, \sqrt{p_n} w_n] \in \mathbb{C}^{d\times n},

and :math:`\rho` and :math:`G` share their non-zero eigenvalues.
"""

from __future__ import annotations

import operator

import torch

from . import _validation as V
from ._linalg import promote, safe_sqrt, squared_norms, without_autocast
from ._overlaps import scaled_overlaps
from ._widen import unit_rows, unit_sums


def check_state_tensor(name: str, data: torch.Tensor, validate: V.Validate) -> None:
    """Type and shape of complex unit vectors ``(..., d)``; finiteness and unit norm per mode."""
    V.check_tensor(name, data)
    V.check_complex(name, data)
    V.check_min_ndim(name, data, 1, "(..., d)")
    V.check_nonempty(name, data, -1, "dimensions (d = 0)")
    if V.resolve(validate):
        V.check_finite(name, data, event_ndim=1)
        V.check_unit_norm(name, data)


def check_density_tensor(name: str, data: torch.Tensor, validate: V.Validate) -> None:
    """Type, shape and (per mode) Hermitian, unit-trace and PSD checks for ``(..., d, d)``."""
    V.check_tensor(name, data)
    V.check_complex(name, data)
    V.check_square(name, data)
    V.check_nonempty(name, data, -1, "dimensions (d = 0)")
    mode = V.resolve(validate)
    if mode:
        V.check_finite(name, data, event_ndim=2)
        V.check_hermitian(name, data)
        V.check_unit_trace(name, data)
    if mode == "strict":
        V.check_psd(name, data)


def check_operator(name: str, matrices: torch.Tensor, dim: int, batch_shape=None) -> None:
    """Raise unless ``matrices`` is a tensor of shape ``(..., dim, dim)`` (an operator on the states' space).

    With ``batch_shape`` (the states'), its batch dims must broadcast with it too.
    """
    V.check_tensor(name, matrices)
    if matrices.dim() < 2 or matrices.shape[-2:] != (dim, dim):
        raise ValueError(f"{name} must have shape (..., {dim}, {dim}) to act on states of dimension {dim}; "
                         f"got shape {tuple(matrices.shape)}")
    if batch_shape is not None:
        V.check_broadcast("the state", batch_shape, name, matrices.shape[:-2])


def at_precision_of(result: torch.Tensor, *inputs: torch.Tensor) -> torch.Tensor:
    """``result`` as the check of it sees it: complex64 unless every one of ``inputs`` is float64 or complex128.

    A complex64 operand is exact only to float32's round-off; promoted to complex128 with the other, its result
    would be held to float64's tolerance, and a unitary (or a state) of complex64 refused.
    """
    if all(t.dtype in (torch.float64, torch.complex128) for t in inputs):
        return result
    return result.to(torch.complex64)


def checked_observable(observable: torch.Tensor, data: torch.Tensor,
                       batch_shape) -> tuple[torch.Tensor, torch.Tensor]:
    """``promote(data, observable)`` once ``observable`` is an operator ``(..., d, d)`` on the space of ``data``
    (states ``(..., n, d)`` or a matrix ``(..., d, d)``) whose batch broadcasts with ``batch_shape``, and, while
    validation is on, Hermitian at its own precision (a complex64 one is Hermitian to float32's round-off).
    """
    check_operator("observable", observable, data.shape[-1], batch_shape)
    data, a = promote(data, observable)
    if V.enabled():
        V.check_hermitian("observable", at_precision_of(a, observable))
    return data, a


#: Terms beyond which a sum over the members is torch's reduction, not a kernel that adds them one after the other
#: (a matrix product in :func:`weighted_sum`, torch's softmax in :func:`masked_softmax`): below it the same values.
SEQUENTIAL_MAX_TERMS = 4096


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None = None, dim: int = -1, *,
                   validate: V.Validate = None) -> torch.Tensor:
    r"""Softmax over ``dim`` restricted to ``mask`` (True = keep); masked entries get exactly 0.

    :math:`p_i = m_i e^{s_i} / \sum_j m_j e^{s_j}`. ``mask`` must be a bool
    tensor of the shape of ``scores``. While validation is on, a slice with no
    unmasked entry (an empty sentence has no mixture) and non-finite scores
    raise ValueError; with it off they give NaN (no data-dependent branch). Over more than
    ``SEQUENTIAL_MAX_TERMS`` (4096) entries the exponentials are summed by torch's reduction (``_softmax``): float32
    weights of :math:`10^6` words then sum to one within 1e-7, not 7e-5 as torch's softmax.

    Parameters
    ----------
    scores : torch.Tensor
        Real floating, any shape (the logits :math:`s`).
    mask : torch.Tensor, optional
        Bool, of the shape of ``scores``; True keeps an entry. Default (None): a plain softmax.
    dim : int, optional
        The dim normalised over (default -1, the last).
    validate : bool or "strict", optional
        Override the global validation mode for this call (None, the default: the global mode).

    Returns
    -------
    torch.Tensor
        Of the shape of ``scores``, summing to 1 along ``dim``, exactly 0 where ``mask`` is False.

    Examples
    --------
    >>> masked_softmax(torch.zeros(3), torch.tensor([True, True, False]))
    tensor([0.5000, 0.5000, 0.0000])
    """
    V.check_tensor("scores", scores)
    if not scores.dtype.is_floating_point:
        raise TypeError(f"scores must have a real floating dtype; got {scores.dtype}")
    ndim = max(scores.dim(), 1)                 # a 0-dim tensor has dim 0 (or -1), as in torch.softmax
    try:
        dim = operator.index(dim)               # numpy integers too; 1.0 or "x" refused
    except TypeError:
        raise TypeError(f"dim must be an int; got {type(dim).__name__} {dim!r}") from None
    if not -ndim <= dim < ndim:                 # was an IndexError from deep inside (mask.any(dim))
        raise ValueError(f"dim must be in [{-ndim}, {ndim - 1}] for scores of shape {tuple(scores.shape)} "
                         f"({scores.dim()}-D); got {dim}")
    if mask is None:
        if V.enabled(validate):
            V.check_finite("scores", scores, event_ndim=1)
        return _softmax(scores, dim)
    V.check_tensor("mask", mask)
    if mask.dtype != torch.bool:
        raise TypeError(f"mask must be a bool tensor; got {mask.dtype}")
    if mask.shape != scores.shape:
        raise ValueError(f"mask must have the shape of scores {tuple(scores.shape)}; got {tuple(mask.shape)}")
    V.check_same_device(("scores", scores), ("mask", mask))
    if V.enabled(validate) and V.has_values(scores, mask):
        empty = ~mask.any(dim)
        bad = ~torch.isfinite(scores) & mask
        if bool(empty.any() | bad.any()):
            if bool(empty.any()):
                where = tuple(empty.nonzero()[0].tolist())
                raise ValueError(f"mask has no unmasked entry (an empty sentence) at batch index {where} "
                                 f"(mask shape {tuple(mask.shape)})")
            V.check_finite("scores", scores.masked_fill(~mask, 0), event_ndim=1)
    return _softmax(scores.masked_fill(~mask, float("-inf")), dim)


def _softmax(scores: torch.Tensor, dim: int) -> torch.Tensor:
    r"""``torch.softmax(scores, dim)``; over more than ``SEQUENTIAL_MAX_TERMS`` (4096) entries
    :math:`e^{s_i - \max s} / \sum_j e^{s_j - \max s}` with torch's sum: torch's CPU kernel adds the exponentials
    one after the other (per SIMD lane), and float32 weights of 1e5 (1e6) entries summed to one only within 3e-6
    (7e-5); this way within 1e-7. The max is a constant of the gradient (the softmax does not depend on it)."""
    if scores.dim() == 0 or scores.shape[dim] <= SEQUENTIAL_MAX_TERMS:
        return torch.softmax(scores, dim=dim)
    e = torch.exp(scores - scores.amax(dim, keepdim=True).detach())   # -inf - -inf = NaN, as torch gives
    return e / e.sum(dim, keepdim=True)


def member_states(data: torch.Tensor, mask: torch.Tensor | None, validate: V.Validate,
                  trusted: bool = False) -> torch.Tensor:
    """Complex ``(..., n, d)`` states; masked (padded) rows become zeros and are not validated.

    ``trusted=True`` skips the norm check (the rows come from a validated
    :class:`~qpnlp.hilbert.PureState`).
    """
    V.check_tensor("states", data)
    V.check_complex("states", data)
    V.check_min_ndim("states", data, 2, "(..., n, d)")
    V.check_nonempty("states", data, -2, "member states (n = 0: an empty ensemble)")
    V.check_nonempty("states", data, -1, "dimensions (d = 0)")
    if mask is not None:
        V.check_tensor("mask", mask)
        if mask.dtype != torch.bool:
            raise TypeError(f"mask must be a bool tensor (True = real word); got {mask.dtype}")
        if mask.shape != data.shape[:-1]:
            raise ValueError(f"mask must have shape {tuple(data.shape[:-1])} (states without d); "
                             f"got {tuple(mask.shape)}")
        V.check_same_device(("states", data), ("mask", mask))
        data = data.masked_fill(~mask.unsqueeze(-1), 0)
    if V.resolve(validate) and not trusted:
        V.check_finite("states", data, event_ndim=2)
        V.check_unit_norm("states", data, where=mask)
    return data


def mixture_weights(states: torch.Tensor, weights: torch.Tensor | None, mask: torch.Tensor | None,
                    validate: V.Validate) -> torch.Tensor:
    """Real ``(..., n)`` weights: uniform over unmasked states when None, else checked (>= 0, sum one)."""
    batch_n = states.shape[:-1]
    if mask is not None and V.enabled(validate) and V.has_values(mask):
        empty = ~mask.any(-1)
        if bool(empty.any()):
            raise ValueError(f"mask leaves an empty mixture (no unmasked state) at batch index "
                             f"{tuple(empty.nonzero()[0].tolist())} (mask shape {tuple(mask.shape)})")
    real = V.real_dtype_of(states.dtype)
    if weights is None:
        ones = torch.ones(batch_n, dtype=real, device=states.device)
        ones = ones if mask is None else ones * mask
        return ones / ones.sum(-1, keepdim=True)
    V.check_tensor("weights", weights)
    V.check_real("weights", weights)
    if weights.shape != batch_n:
        raise ValueError(f"weights must have shape {tuple(batch_n)} to match states "
                         f"{tuple(states.shape)}; got {tuple(weights.shape)}")
    V.check_same_device(("states", states), ("weights", weights))
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    if V.resolve(validate):
        V.check_finite("weights", weights, event_ndim=1)
        V.check_probability_weights("weights", weights)
    return weights


def mixture(states: torch.Tensor, weights: torch.Tensor | None, mask: torch.Tensor | None,
            validate: V.Validate, trusted: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Checked ``(states (..., n, d), weights (..., n))`` of one dtype family (the states widen, never the weights;
    widened complex64 states are rescaled to unit norm in float64, and bfloat16 or float16 weights divided by their
    sum in float32, so that the mixture's trace is one to the round-off of its own dtype, as its checks want).

    ``trusted`` states (a :class:`~qpnlp.hilbert.PureState`) are checked only where they carry weight, while
    validation is on: a PureState may hold zero rows (``Ensemble.states`` at its padding), and uniform weights
    over them would give a mixture of trace below one.
    """
    data = member_states(states, mask, validate, trusted)
    w = mixture_weights(data, weights, mask, validate)
    if trusted and V.resolve(validate):
        V.check_unit_norm("states", data, where=w.detach() != 0)
    if w.dtype == torch.float64 and data.dtype == torch.complex64:
        data = unit_rows(data.to(torch.complex128))  # never downcast the weights: widen the states, unit in float64
    real = V.real_dtype_of(data.dtype)
    if torch.finfo(w.dtype).bits < torch.finfo(real).bits:        # bfloat16 / float16 weights: sum one in float32
        return data, unit_sums(w.to(real), source=w.dtype)
    return data, w.to(real)


def weighted_sum(weights: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    r""":math:`\sum_i p_i v_{i\cdot}` over the members: weights ``(..., n)``, values ``(..., n, k)`` -> ``(..., k)``.

    Batch dims broadcast (the weights are not expanded), one dtype. Up to ``SEQUENTIAL_MAX_TERMS`` (4096) members
    one matrix product (``weights.unsqueeze(-2) @ values`` where the batch dims agree, about 30 us cheaper forward
    and backward than ``einsum`` at QPDN's (32, 50) x (32, 50, 50); ``einsum``, the same values, where they
    broadcast); beyond, the products
    summed by ``torch.sum``. A matrix-vector product on the CPU adds the n terms one after the other in each SIMD
    lane, so its relative error grows as :math:`n\,\epsilon`: in float32, 7e-6 at n = 1e4, 1.2e-4 at 1e5 and
    1.7e-3 at 1e6 (against float64), where torch's sum (pairwise on the CPU, a tree on a GPU) stays within a few
    :math:`\epsilon` (2e-7 at 1e6): the Born probabilities of a mixture of a long document's words. Inside
    ``torch.autocast`` the product keeps the inputs' dtype, as the sum does (float32 values: a float32 result
    whatever n, not bfloat16 up to 4096 members).
    """
    if values.shape[-2] > SEQUENTIAL_MAX_TERMS:
        return (weights.unsqueeze(-1) * values).sum(-2)
    with without_autocast(values.device.type):      # a sum: autocast lowers the product, never torch.sum
        if weights.shape[:-1] == values.shape[:-2]:
            return (weights.unsqueeze(-2) @ values).squeeze(-2)
        return torch.einsum("...n,...nk->...k", weights, values)


def factor(states: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    r"""The factor :math:`A` ``(..., d, n)`` with :math:`\rho = A A^\dagger` (column i is :math:`\sqrt{p_i} w_i`).

    :math:`\sqrt{p_i}` has an infinite derivative at :math:`p_i = 0`, where the gradient reaching
    :math:`A` vanishes; the gradient with respect to a zero weight is taken as 0 (not 0 x inf = NaN,
    which a softmax upstream spreads to every weight).
    """
    return (states * root_weights(weights, states.dtype)).mT


def root_weights(weights: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    r""":math:`\sqrt{p_i}` ``(..., n, 1)`` in ``dtype``: the scales of the states in :func:`factor` (``safe_sqrt``)."""
    return safe_sqrt(weights).to(dtype).unsqueeze(-1)


#: The fewest members one product of :func:`dense` adds to the result: a product of K = 32 terms per entry keeps the
#: matrix product's arithmetic (8 K flops per complex entry of the result read and written) ahead of its traffic.
DENSE_MIN_CHUNK = 32
#: The largest weighted copy of the states (bytes) :func:`dense` makes whole: below it the chunks' extra operations
#: cost more than the copy (2 chunks of 25 members, 32 mixtures in C^50, complex64, forward and backward: 3.1 ms
#: against 2.4 ms for one product, one thread).
DENSE_COPY_BYTES = 2**20


def dense(states: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    r""":math:`\rho = \sum_i p_i |w_i\rangle\langle w_i|` ``(..., d, d)`` from states ``(..., n, d)`` and weights ``(..., n)``.

    :math:`\rho_{ab} = \sum_i w_{ia}\, p_i \bar w_{ib}`: the transposed states times the weighted conjugates, which
    ``bmm`` takes as they are (``weighted.mT @ states.conj()`` copied the states twice, as torch's CPU ``bmm``
    copies a conjugate view). Beyond :math:`c = \max(32, \lfloor d/4 \rfloor)` members and a weighted copy of
    ``DENSE_COPY_BYTES`` (1 MiB), the members go in :math:`\lceil n/c \rceil` chunks of at most :math:`c` (cut by
    ``split``, the last the shortest), each chunk's product added in place to the result (``baddbmm_``):

    .. math:: \rho = \sum_k S_k^{T} (p_k \odot \bar S_k), \qquad S_k \in \mathbb{C}^{c_k \times d}
              \text{ (batched: } (B, c_k, d)\text{)},

    so one chunk's weighted conjugates ``(..., c, d)`` live beside the ``(..., d, d)`` result, a quarter of it for
    :math:`d \ge 128` and :math:`32/d` of it below, where one product held a weighted copy ``(..., n, d)`` of every
    state (and, as ``states.conj() * p`` resolved the conjugate view first, a second one for a moment). Below
    either bound one product, as before; beyond, the same terms summed chunk by chunk (within 1e-15 relative in
    complex128). Peak memory added, complex128, one thread (``python benchmarks/dense_memory.py``): N = 200
    mixtures of 200 states in C^300 (states 183 MiB, result 275 MiB), 458 MiB with the copy, now 337 MiB; N = 40
    mixtures of 4000 states in C^32 (states 78 MiB, result 0.6 MiB), 159 MiB, now 1.6 MiB.

    Autograd (reverse and forward mode) and ``torch.func`` go through it: the sum starts from the first chunk's
    product, which ``baddbmm_`` may overwrite (``bmm`` saves its operands, not its result); each ``baddbmm_`` saves
    its chunk's operands, so until the backward pass the weighted conjugates of every chunk are kept, the copy of
    before. The members are cut by ``split``, whose backward writes the gradient of the states once (a slice's
    would allocate it whole per chunk). Under ``torch.func.vmap`` it is one product: ``baddbmm_`` has no batching
    rule, and torch ran it sample by sample, with a UserWarning.
    """
    n, d = states.shape[-2:]
    chunk = max(DENSE_MIN_CHUNK, d // 4)
    if (n <= chunk or states.numel() * states.element_size() <= DENSE_COPY_BYTES or V.vmapped(states)
            or V.vmapped(weights)):
        return states.mT @ _weighted_conjugates(states, weights)
    batch = torch.broadcast_shapes(states.shape[:-2], weights.shape[:-1])
    step = -(-n // -(-n // chunk))                      # ceil(n / chunk) chunks, of ceil(n / their number) members
    parts = ((s.reshape(-1, s.shape[-2], d), p.reshape(-1, p.shape[-1]))   # (B, c, d), (B, c): views if they can
             for s, p in zip(states.expand(*batch, n, d).split(step, -2), weights.expand(*batch, n).split(step, -1)))
    s, p = next(parts)
    rho = s.mT @ _weighted_conjugates(s, p)
    for s, p in parts:
        rho.baddbmm_(s.mT, _weighted_conjugates(s, p))                  # the chunk's temporary freed on return
    return rho.view(*batch, d, d)


def _weighted_conjugates(states: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    r""":math:`p_i \bar w_i` ``(..., n, d)`` as a plain tensor (no conjugate view), in one allocation: the product
    :math:`p_i w_i` with its imaginary part negated in place. ``states.conj() * p`` resolved the conjugate view into a
    copy of the states first; ``conj_physical_`` has no ``vmap`` batching rule (torch loops over the samples)."""
    weighted = states * weights.to(states.dtype).unsqueeze(-1)
    torch.view_as_real(weighted)[..., 1].neg_()
    return weighted


def gram(states: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    r"""Weighted Gram matrix :math:`G_{ij} = \sqrt{p_i p_j}\langle w_i|w_j\rangle` ``(..., n, n)``.

    :math:`A^\dagger A` of the :func:`factor` without building it: the overlaps of the states scaled by
    :math:`\sqrt{p_i}\sqrt{p_j}` (:func:`~qpnlp.hilbert._overlaps.scaled_overlaps`), so memory is the
    ``(..., n, n)`` result and a copy of one slice of the states; ``a.mH @ a`` held the factor (a copy of the states)
    and, as torch's CPU ``bmm`` copies a conjugate view, a second copy (N = 2000 mixtures of 20 states, d = 300,
    complex128, 183 MiB: ``purity`` adds 50 MiB at the peak, 381 MiB through the factor;
    ``benchmarks/metric_memory.py``).
    """
    return scaled_overlaps(states, weights, states, weights)


def trace(states: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    r""":math:`\operatorname{Tr}\rho = \sum_i p_i \langle w_i|w_i\rangle`, complex ``(...)``, in O(n d).

    Of the complex dtype of the states. The sum of the weights (one) for unit states; computed from the norms, it
    is the trace of :func:`dense` whatever the states.
    """
    norms = squared_norms(states).squeeze(-1)
    return (weights.to(norms.dtype) * norms).sum(-1).to(states.dtype)


def expectation(states: torch.Tensor, weights: torch.Tensor, observable: torch.Tensor) -> torch.Tensor:
    r""":math:`\operatorname{Tr}(\rho A) = \sum_i p_i \operatorname{Re}\langle w_i|A|w_i\rangle`, real ``(...)``.

    States ``(..., n, d)`` and the observable ``(..., d, d)`` of one complex dtype, batch dims broadcasting; the
    images :math:`A|w_i\rangle` are the rows of ``states @ A^T``: O(n d^2), never a d x d density matrix.
    """
    images = states @ observable.mT
    values = torch.linalg.vecdot(states, images).real               # <w_i|A w_i> (vecdot conjugates the first)
    return (weights.to(values.dtype) * values).sum(-1)


def evolve(states: torch.Tensor, weights: torch.Tensor, unitary: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Members :math:`U|w_i\rangle` ``(..., n, d)`` and the same weights, broadcast to the batch of states and U.

    States ``(..., n, d)`` and the unitary ``(..., d, d)`` of one complex dtype; the weights are cast to the
    real dtype of the result (complex64 states widen to complex128 with a complex128 U).
    """
    out = states @ unitary.mT                                       # row i is (U w_i)^T
    weights = weights.to(V.real_dtype_of(out.dtype))
    if weights.shape != out.shape[:-1]:                              # U's batch broadcast the states'
        weights = weights.expand(out.shape[:-1]).clone()
    return out, weights

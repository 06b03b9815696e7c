"""Functional core: batched complex linear algebra on plain tensors.

Conventions
-----------
* A batch of states is a complex tensor of shape ``(..., d)``; the last dim is
  the Hilbert-space dimension, every leading dim is a batch dim.
* A batch of operators (density matrices, projectors) has shape ``(..., d, d)``.
* ``<a|b> = sum_j conj(a_j) b_j`` (conjugate-linear in the first argument).
* ``|a><b|`` has entries ``a_i conj(b_j)``.
"""

from __future__ import annotations

import contextlib
import math

import torch

from ._validation import (check_batch_shape, check_broadcast, check_complex_width, check_dimension, check_finite,
                          check_min_ndim, check_same_device, check_tensor, complex_dtype_of, enabled, has_values,
                          real_dtype_of, tolerance)


def _check_vectors(name_a: str, a: torch.Tensor, name_b: str, b: torch.Tensor) -> None:
    """ValueError unless ``a`` and ``b`` are ``(..., d)`` vectors of one d, broadcastable batch shapes, one device;
    TypeError for a complex32 one (:func:`~qpnlp.hilbert._validation.check_complex_width`).

    Hot path: two shape comparisons, a device and two dtype comparisons; ``check_broadcast`` and
    ``check_same_device`` run only when they differ.
    """
    check_complex_width(name_a, a)
    check_complex_width(name_b, b)
    if a.dim() == 0 or b.dim() == 0:
        raise ValueError(f"{name_a} and {name_b} must be vectors (..., d) of one dimension d; got shapes "
                         f"{tuple(a.shape)} and {tuple(b.shape)}")
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(f"{name_a} and {name_b} must be vectors (..., d) of one dimension d; got {name_a} with "
                         f"d={a.shape[-1]} (shape {tuple(a.shape)}) and {name_b} with d={b.shape[-1]} "
                         f"(shape {tuple(b.shape)})")
    if a.shape[:-1] != b.shape[:-1]:
        check_broadcast(name_a, a.shape[:-1], name_b, b.shape[:-1])
    if a.device != b.device:
        check_same_device((name_a, a), (name_b, b))


def promote(*tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Cast tensors to one complex dtype without ever losing precision.

    complex128 if any input is float64 or complex128, else complex64. The
    tensors must be on one device (a clear ValueError otherwise).
    """
    check_same_device(*((f"argument {i}", t) for i, t in enumerate(tensors)))
    wide = any(t.dtype in (torch.float64, torch.complex128) for t in tensors)
    target = torch.complex128 if wide else torch.complex64
    return tuple(t.to(target) for t in tensors)


def dagger(matrices: torch.Tensor) -> torch.Tensor:
    """Conjugate transpose of the last two dims, ``(..., m, n) -> (..., n, m)``.

    Parameters
    ----------
    matrices : torch.Tensor
        Real or complex ``(..., m, n)``, at least 2-D.

    Returns
    -------
    torch.Tensor
        ``(..., n, m)``, a view (``matrices.mH``).
    """
    if matrices.dim() < 2:
        raise ValueError(f"dagger takes matrices (..., m, n); got shape {tuple(matrices.shape)}")
    return matrices.mH


def hermitian_part(matrices: torch.Tensor) -> torch.Tensor:
    r""":math:`(A + A^\dagger)/2` of square ``(..., d, d)`` matrices: exactly Hermitian (a real diagonal), whatever
    rounding made A.

    Both mirrored entries round the same two numbers, so they are conjugates bit for bit. For the products that
    are Hermitian in exact arithmetic but not after a BLAS ``gemm`` (with fused multiply-adds, Intel's MKL gave a
    Gram matrix imaginary diagonal parts of 1e-19 and mirrored entries that differed in the last bit): the change
    is round-off, one pass over the matrices.
    """
    return (matrices + dagger(matrices)) / 2


def inner(bra: torch.Tensor, ket: torch.Tensor) -> torch.Tensor:
    r"""Inner products ``<bra|ket>`` of broadcastable batches ``(..., d) -> (...)``.

    Conjugate-linear in ``bra``: :math:`\langle a|b\rangle = \sum_i \bar a_i b_i`.

    Parameters
    ----------
    bra : torch.Tensor
        ``(..., d)``; conjugated.
    ket : torch.Tensor
        ``(..., d)``, of the same d; batch dims broadcast with ``bra``'s.

    Returns
    -------
    torch.Tensor
        ``(...)``, complex for complex inputs.

    Examples
    --------
    >>> a = torch.tensor([1j, 0], dtype=torch.complex64)
    >>> inner(a, a)
    tensor(1.+0.j)
    """
    _check_vectors("bra", bra, "ket", ket)
    return (bra.conj() * ket).sum(-1)


def outer(ket: torch.Tensor, bra: torch.Tensor | None = None) -> torch.Tensor:
    r"""Outer products ``|ket><bra|``: ``(..., d), (..., d) -> (..., d, d)``.

    With ``bra=None`` this is the projector ``|ket><ket|``.

    Parameters
    ----------
    ket : torch.Tensor
        ``(..., d)``.
    bra : torch.Tensor, optional
        ``(..., d)``, of the same d, conjugated; batch dims broadcast with ``ket``'s. Default (None): ``ket``.

    Returns
    -------
    torch.Tensor
        ``(..., d, d)`` with entries :math:`k_i \bar b_j`.
    """
    bra = ket if bra is None else bra
    _check_vectors("ket", ket, "bra", bra)
    return ket.unsqueeze(-1) * bra.conj().unsqueeze(-2)


def adjoint_product(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    r""":math:`A^\dagger B` ``(..., r, m)`` of ``a`` ``(..., d, r)`` and ``b`` ``(..., d, m)``, batch dims broadcasting.

    Through ``einsum``, which contracts a broadcast batch without copying an operand: ``a.mH @ b`` (matmul)
    expands both to the broadcast batch first, so a ``(V, 1)`` batch of pure states against ``(B,)`` ensembles
    copied every ensemble's d x n factor V times (memory O(V B d n) for a result of O(V B n)).
    """
    return torch.einsum("...dr,...dm->...rm", a.conj(), b)


def without_autocast(device_type: str):
    """A region where ``torch.autocast`` is off on ``device_type`` when it is on there, else a no-op context.

    For the real matrix products that stand for a complex one or for a sum (the Born rule's
    ``squared_overlaps``, :func:`~qpnlp.hilbert._mixture.weighted_sum`): autocast lowers a float32 matrix product
    to bfloat16, never a complex one nor a sum, so they keep their inputs' precision as those would.
    """
    try:
        enabled = torch.is_autocast_enabled(device_type)
    except RuntimeError:                                     # a device autocast does not know (meta): never on
        return contextlib.nullcontext()
    return torch.autocast(device_type, enabled=False) if enabled else contextlib.nullcontext()


def squared_norms(vectors: torch.Tensor) -> torch.Tensor:
    """Squared L2 norms ``(..., 1)`` over the last dim of real or complex ``(..., d)`` vectors.

    Complex vectors are summed on their real view ``(..., d, 2)``: torch's complex ``vector_norm`` is about
    twice as slow forward+backward on the CPU (50 x 300: 0.51 -> 0.27 ms), and the squares have a finite
    gradient at zero.
    """
    parts = torch.view_as_real(vectors.resolve_conj()) if vectors.is_complex() else vectors.unsqueeze(-1)
    return parts.square().sum((-2, -1)).unsqueeze(-1)


def squared_modulus(z: torch.Tensor) -> torch.Tensor:
    r""":math:`|z|^2` element-wise, real ``(...)``, of complex ``z`` from its parts: no square root, so a finite
    gradient at 0."""
    return z.real.square() + z.imag.square()


def squared_frobenius_norm(x: torch.Tensor) -> torch.Tensor:
    r""":math:`\|X\|_F^2` ``(...)`` of complex ``(..., k, l)`` matrices (:func:`squared_modulus` summed)."""
    return squared_modulus(x).sum((-2, -1))


def unreliable_norms(norms: torch.Tensor) -> torch.Tensor:
    r"""Bool mask of the norms a sum of squares got wrong: below :math:`\sqrt{\text{tiny} / \epsilon}`, or inf.

    Squares underflow for entries below about :math:`\sqrt{\text{tiny}}` (1e-19 in float32, 1e-154 in float64)
    and overflow above :math:`\sqrt{\max}`: the norm then comes out too small, 0 or inf. NaN is not flagged.
    """
    info = torch.finfo(norms.dtype)
    return (norms < math.sqrt(info.tiny / info.eps)) | (norms == math.inf)


def rescaled_norms(vectors: torch.Tensor, norms: torch.Tensor) -> torch.Tensor:
    r"""``norms`` ``(..., 1)`` of real or complex ``(..., d)`` vectors, recomputed where :func:`unreliable_norms`.

    There they are :math:`m \|v / m\|` with :math:`m = \max_j \max(|\Re v_j|, |\Im v_j|)` (no square under- or
    overflows), so that :math:`v / \|v\|` stays a unit vector for a vector that weight decay shrank to 1e-25 (its
    squares vanish in float32) or a large step grew to 1e20; elsewhere, and for zero, NaN or infinite entries,
    ``norms`` are kept bit for bit. Differentiable (the gradient of either branch is :math:`v/\|v\|`; m is held
    constant, as :math:`m \|v / m\|` does not depend on it: through m, a subnormal vector's gradient was
    :math:`\infty - \infty`, NaN), and no host sync: on the CPU, where reading a value costs none, and outside
    torch.compile and vmap, the rescaling passes run only when some norm needs them (``normalize`` in a forward
    pass: four passes over the vectors less); elsewhere the function is branch-free. Complex vectors are rescaled on their real view (no complex
    ``abs`` or division).
    """
    unreliable = unreliable_norms(norms)
    if none_needs_the_second_pass(unreliable, vectors, norms):
        return norms
    parts = torch.view_as_real(vectors.resolve_conj()) if vectors.is_complex() else vectors.unsqueeze(-1)
    largest = parts.abs().amax((-2, -1)).unsqueeze(-1).detach()                      # (..., 1): m, a constant
    divisor = torch.where(largest > 0, largest, torch.ones_like(largest))
    rescaled = torch.linalg.vector_norm(parts / divisor.unsqueeze(-1), dim=(-2, -1)).unsqueeze(-1) * divisor
    return torch.where(unreliable & torch.isfinite(largest) & (largest > 0), rescaled, norms)


def none_needs_the_second_pass(needs: torch.Tensor, *tensors: torch.Tensor) -> bool:
    """Whether the pass for rare entries (``needs``, a bool mask) can be skipped: on the CPU, where reading a value
    costs no host sync, for ``tensors`` with values (not meta, not under vmap), outside torch.compile, and when no
    entry needs it. Elsewhere the callers (:func:`rescaled_norms`, :func:`divided_by_norms`,
    :func:`modulus_phase`, :func:`unit_phases`) run branch-free, the pass's results kept only where ``needs``."""
    return _values_readable(*tensors) and not bool(needs.any())


def none_subnormal(r: torch.Tensor, *tensors: torch.Tensor) -> bool:
    """:func:`none_needs_the_second_pass` for the mask ``r < finfo.tiny`` of real moduli ``r`` (a subnormal modulus),
    in one reduction instead of the mask and its ``any`` (on the CPU, 1.8 instead of 6.9 us for 4096 entries). A NaN
    in ``r`` makes ``amin`` NaN, which hides the others: then the pass runs (it keeps NaN where it is)."""
    if not _values_readable(r, *tensors):
        return False
    return r.numel() == 0 or float(r.detach().amin()) >= torch.finfo(r.dtype).tiny            # NaN: False


def _none_nonzero_subnormal(r: torch.Tensor, *tensors: torch.Tensor) -> bool:
    """No real modulus of ``r`` in (0, ``finfo.tiny``), where torch's complex ``sgn`` gives NaN (it gives 0 at 0),
    read from the mask (:func:`none_needs_the_second_pass`). :func:`modulus_checked` asks it only after
    :func:`none_subnormal` (one reduction, the answer where no modulus is below tiny) said False."""
    return none_needs_the_second_pass((r > 0) & (r < torch.finfo(r.dtype).tiny), r, *tensors)


def none_above(x: torch.Tensor, bound: float) -> bool:
    """Whether every entry of the real tensor ``x`` has modulus below ``bound``, where reading that is free (on the
    CPU, not meta, not under vmap, outside torch.compile; elsewhere False, and the callers run branch-free). One
    ``aminmax`` pass, nothing allocated. A NaN entry makes the extremes NaN: False."""
    if not _values_readable(x):
        return False
    if x.numel() == 0:
        return True
    low, high = torch.aminmax(x.detach())
    return -float(low) < bound and float(high) < bound


def decompose(decomposition, matrices: torch.Tensor, **kwargs):
    r"""``decomposition(matrices, **kwargs)`` (``torch.linalg.eigh``, ``eigvalsh``, ``svd`` or ``svdvals``) of
    ``(..., m, n)`` matrices, every output NaN ``(..., *)`` for a batch element with a NaN or infinite entry.

    LAPACK and cuSOLVER do not converge on such an element, and torch raises ``LinAlgError`` for the whole batch
    ("linalg.eigh: (Batch element 1): The algorithm failed to converge"); with validation off a NaN input gives NaN
    elsewhere in qpnlp, as in torch. Here those elements are decomposed as zero matrices and their outputs replaced
    by NaN: the other elements' values and gradients are the decomposition's own, bit for bit (a NaN element's
    gradient through the decomposition is 0). One pass over the matrices (``isfinite``) besides; no host sync: on
    the CPU outside torch.compile and vmap the masked pass runs only when some element needs it
    (:func:`none_needs_the_second_pass`), elsewhere branch-free. The outputs are a tensor or a tuple, as torch's.
    """
    bad = ~torch.isfinite(matrices).flatten(-2).all(-1)                              # (...)
    if none_needs_the_second_pass(bad, matrices):
        return decomposition(matrices, **kwargs)
    out = decomposition(torch.where(bad[..., None, None], torch.zeros_like(matrices), matrices), **kwargs)
    parts = (out,) if isinstance(out, torch.Tensor) else tuple(out)
    nan = [torch.where(bad.reshape(bad.shape + (1,) * (t.dim() - bad.dim())), math.nan, t) for t in parts]
    return nan[0] if isinstance(out, torch.Tensor) else tuple(nan)


def _values_readable(*tensors: torch.Tensor) -> bool:
    """On the CPU (reading a value costs no host sync), with values (not meta, not under vmap), not compiling."""
    return tensors[0].device.type == "cpu" and has_values(*tensors) and not torch.compiler.is_compiling()


def normalize(vectors: torch.Tensor, eps: float | None = None, *, validate=None) -> torch.Tensor:
    """Divide ``(..., d)`` vectors by their L2 norm (zero and non-finite vectors raise ValueError).

    Parameters
    ----------
    vectors : torch.Tensor
        Real or complex tensor of shape ``(..., d)``.
    eps : float, optional
        Norms at or below this are an error; default ``tolerance(dtype)``
        (``16 eps``, whatever d). Checked only while validation is on
        (``validate``, default the global mode of :func:`set_validation`),
        as are NaN and inf entries and norms that overflow: with it off a
        zero vector gives NaN, a NaN or an infinite entry NaN or 0, and no
        host sync waits for the values. Norms whose squares under- or
        overflow (entries of 1e-25 or 1e20 in float32) are computed
        without them (``rescaled_norms``): such a vector is normalised,
        a subnormal one too (``divided_by_norms``).
    validate : bool or "strict", optional
        Override the global validation mode for this call (None, the default: the global mode).

    Returns
    -------
    torch.Tensor
        ``(..., d)``, of unit L2 norm along the last dim.
    """
    check_tensor("vectors", vectors)
    check_complex_width("vectors", vectors)
    check_min_ndim("vectors", vectors, 1, "(..., d)")
    if not (vectors.is_complex() or vectors.is_floating_point()):     # torch's vector_norm RuntimeError
        raise TypeError(f"vectors must be a real floating or complex tensor; got {vectors.dtype}")
    norms = _complex_norms(vectors) if vectors.is_complex() else torch.linalg.vector_norm(vectors, dim=-1,
                                                                                        keepdim=True)
    # One test for both rare passes: a subnormal norm is one whose squares underflow (unreliable_norms).
    rare = not none_needs_the_second_pass(unreliable_norms(norms), vectors, norms)
    if rare:
        norms = rescaled_norms(vectors, norms)      # squares that under- or overflow: no inf or NaN state
    eps = tolerance(vectors.dtype, 1) if eps is None else eps
    if enabled(validate) and has_values(norms) and not bool(((norms > eps) & (norms < float("inf"))).all()):
        _refuse_norms(vectors, norms, eps)
    return divided_by_norms(vectors, norms) if rare else vectors / norms


def divided_by_norms(vectors: torch.Tensor, norms: torch.Tensor) -> torch.Tensor:
    r"""``vectors / norms`` for ``(..., d)`` vectors and their real ``(..., 1)`` norms; unit vectors for subnormal ones.

    A norm below ``finfo.tiny`` (1e-38 in float32, 2e-308 in float64) holds few bits (the subnormal grid), so a
    vector divided by it missed norm 1 by that rounding (:math:`10^{-45} (1, 1)` in float32: norm :math:`10^{-45}`,
    quotient (1, 1) of norm 1.41), and torch's complex division by it gives NaN or inf. Such a vector is divided by
    its largest part m first and then by the norm of the quotient, whose parts are normal numbers
    (:func:`unit_vectors_of_tiny_norm`); every other vector is divided as before, bit for bit. The gradient there,
    of size :math:`1/\|v\|`, overflows for real and complex vectors alike. As :func:`rescaled_norms`, no host sync:
    on the CPU outside torch.compile and vmap the second pass runs only when some norm needs it.
    """
    if none_subnormal(norms, vectors):
        return vectors / norms
    subnormal = norms < torch.finfo(norms.dtype).tiny     # zero too: 0 / 0, NaN, as the plain division gives
    ordinary = vectors / torch.where(subnormal, torch.ones_like(norms), norms)  # a safe divisor in either branch
    return torch.where(subnormal, unit_vectors_of_tiny_norm(vectors, subnormal), ordinary)


def unit_vectors_of_tiny_norm(vectors: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    r""":math:`u / \|u\|` with :math:`u = v / m`, :math:`m = \max_j \max(|\Re v_j|, |\Im v_j|)`, of real or complex
    ``(..., d)`` vectors where the bool mask ``rows`` ``(..., 1)`` is set (elsewhere those of ones, to be discarded).

    The unit vector :math:`v / \|v\|` of a vector too small for its norm to be held (subnormal): the parts of u lie
    in [-1, 1], the largest :math:`\pm 1`, so neither its squares nor its norm underflow, and the quotient is exact to
    rounding. m is held constant (:math:`u / \|u\|` does not depend on it). A zero vector gives NaN (0 / 0).
    Complex vectors are divided on their real view (no complex division).
    """
    safe = torch.where(rows, vectors, torch.ones_like(vectors))     # no 0 or subnormal divisor in the other rows
    parts = torch.view_as_real(safe.resolve_conj()) if safe.is_complex() else safe.unsqueeze(-1)
    scaled = parts / parts.abs().amax((-2, -1), keepdim=True).detach()
    unit = scaled / torch.linalg.vector_norm(scaled, dim=(-2, -1), keepdim=True)
    return torch.view_as_complex(unit) if safe.is_complex() else unit.squeeze(-1)


def _complex_norms(vectors: torch.Tensor) -> torch.Tensor:
    """The norms ``(..., 1)`` of complex ``(..., d)`` vectors from their squares (:func:`squared_norms`): NaN for a
    NaN entry, as ``vector_norm`` of real ones, and a gradient of 0, not NaN, where the squares sum to 0 (the
    sqrt's NaN would survive ``rescaled_norms``' ``torch.where``, whose backward multiplies it by 0)."""
    squares = squared_norms(vectors)
    return torch.where(torch.isnan(squares), squares, safe_sqrt(squares))


def _refuse_norms(vectors: torch.Tensor, norms: torch.Tensor, eps: float) -> None:
    """The ValueError of :func:`normalize` for non-finite entries, zero vectors or norms that overflow."""
    check_finite("vectors", vectors, event_ndim=1)
    if bool((norms <= eps).any()):
        raise ValueError(
            f"cannot normalise a zero vector (shape {tuple(vectors.shape)}, "
            f"{int((norms <= eps).sum())} vectors with norm <= {eps:.2g})"
        )
    raise ValueError(f"vectors must have a finite norm: {int((~torch.isfinite(norms)).sum())} norms overflow "
                     f"{vectors.dtype} (shape {tuple(vectors.shape)}); scale them down first")


def safe_sqrt(values: torch.Tensor, keep: torch.Tensor | None = None) -> torch.Tensor:
    """``sqrt`` of values clamped at zero, with gradient 0 (not NaN) where a value is dropped (``keep`` False) or
    <= 0; NaN stays NaN, dropped or not (it read as 0: a NaN state had a Hilbert-Schmidt distance of 0)."""
    dropped = values <= 0 if keep is None else (values <= 0) | ~(keep | torch.isnan(values))     # NaN: never
    return torch.where(dropped, torch.zeros_like(values), torch.where(dropped, torch.ones_like(values), values).sqrt())


class _Modulus(torch.autograd.Function):
    r""":math:`|z|` of a complex ``z``, torch's ``z.abs()``, with the gradient :math:`g\, z/|z|` finite for all z.

    torch's backward is ``grad * z.sgn()``, and ``sgn`` divides by :math:`|z|` in complex arithmetic, which gives NaN
    for a divisor below ``finfo.tiny`` (1e-38 in float32, 2e-308 in float64), although :math:`z/|z|` has modulus 1.
    Here the phase is :func:`modulus_phase`: ``z.sgn()`` for :math:`|z| \ge` tiny (so the gradient is torch's, bit
    for bit), real divisions below (0 at z = 0). The forward sets nothing on ``ctx`` (``setup_context`` does), so
    ``torch.func`` transforms and ``vmap`` run it; the backward is differentiable torch ops (second derivatives are
    torch's). No ``jvp``: dynamo refuses a Function that defines one, so torch.compile traces this class and eager
    code :class:`_ModulusWithJvp`.
    """

    generate_vmap_rule = True

    @staticmethod
    def forward(z):
        return z.abs()

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0], output)
        ctx.save_for_forward(inputs[0], output)

    @staticmethod
    def backward(ctx, grad):
        z, r = ctx.saved_tensors
        return grad * modulus_phase(z, r)


class _ModulusWithJvp(_Modulus):
    r""":class:`_Modulus` with forward-mode AD: :math:`\operatorname{Re}(\bar{\dot z}\, z/|z|)`, torch's rule."""

    @staticmethod
    def jvp(ctx, tangent):
        z, r = ctx.saved_tensors
        return (tangent.conj() * modulus_phase(z, r)).real


def modulus(z: torch.Tensor) -> torch.Tensor:
    r"""Element-wise modulus :math:`|z|` ``(...) -> (...)``, real; a finite gradient where :math:`|z|` is subnormal.

    The values are ``z.abs()``'s, bit for bit, and so are the gradients (reverse and forward mode) wherever torch's
    are finite; for a complex ``z`` whose modulus is below ``finfo.tiny`` (1e-40 (3 + 4i) in complex64) torch's
    gradient is NaN, this one :math:`z/|z|` (:class:`_Modulus`). A real ``z`` gives ``z.abs()``. Where no modulus
    is subnormal (on the CPU, outside torch.compile and vmap) the graph records torch's own ``abs``.
    """
    return modulus_checked(z)[0]


def modulus_checked(z: torch.Tensor) -> tuple[torch.Tensor, bool | None]:
    r""":func:`modulus` ``r`` of ``z`` ``(...)`` and :func:`none_subnormal` ``(r, z)`` where choosing r's graph
    answered it (complex ``z`` with gradients on), else None: a caller that needs the answer too (modReLU) reads
    it here instead of a second reduction over r; with None it runs :func:`none_subnormal` itself."""
    if not z.is_complex() or not torch.is_grad_enabled():     # no graph: torch's abs, without the Function's call
        return z.abs(), None
    if torch.compiler.is_compiling():                         # none_subnormal is False here: no values to read
        return _Modulus.apply(z), False
    r = z.abs()
    # torch's own gradient where it is finite: one reduction instead of the Function's Python forward and backward
    # (on the CPU about 50 us a call, 4% of a complex-order FastText step).
    if none_subnormal(r, z):
        return r, True
    return (r if _none_nonzero_subnormal(r, z) else _ModulusWithJvp.apply(z)), False


def modulus_phase(z: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    r"""The phase :math:`z/|z|` ``(...)`` of complex ``z`` from its modulus ``r`` = ``z.abs()``, 0 at z = 0.

    ``z.sgn()`` (the same bits) where :math:`r \ge` ``finfo.tiny``; below, where torch's complex division gives
    NaN, the real and imaginary parts are divided by r apart, and the quotient by its modulus (:func:`unit_phases`:
    r holds few bits there). No host sync: on the CPU outside torch.compile and vmap the second pass runs only when
    some modulus needs it. Each branch sees a safe input, so that neither puts a NaN into the other's gradient.
    """
    if none_subnormal(r, z):
        return z.sgn()
    small = r < torch.finfo(r.dtype).tiny
    ordinary = torch.where(small, torch.ones_like(z), z).sgn()
    divisor = torch.where(small & (r > 0), r, torch.ones_like(r))
    scaled = torch.where(r > 0, torch.complex(z.real / divisor, z.imag / divisor), torch.zeros_like(z))
    return torch.where(small, unit_phases(scaled, small & (r > 0)), ordinary)


def unit_phases(phases: torch.Tensor, rescale: torch.Tensor) -> torch.Tensor:
    r"""Complex ``phases`` ``(...)`` divided by their modulus where the bool mask ``rescale`` is set, elsewhere the
    same bits.

    For the phase :math:`z/|z|` of a z whose modulus is subnormal, divided part by part by ``z.abs()``: z's parts
    are exact, so the quotient points the right way, but the modulus, rounded to the subnormal grid, holds few bits
    (``z.abs()`` of :math:`5 \cdot 10^{-324} (1 + i)` is :math:`5 \cdot 10^{-324}`), and the quotient missed modulus
    1 by its rounding (:math:`1 + i`, 1.41). The quotient's parts are normal numbers, so its own modulus is exact to
    rounding, and so is the phase divided by it. As :func:`modulus_phase`, no host sync: on the CPU outside
    torch.compile and vmap the pass runs only when some entry needs it.
    """
    if none_needs_the_second_pass(rescale, phases):
        return phases
    safe = torch.where(rescale, phases, torch.ones_like(phases))      # no 0 or subnormal divisor in either branch
    size = safe.abs()
    return torch.where(rescale, torch.complex(safe.real / size, safe.imag / size), phases)


def trace(matrices: torch.Tensor) -> torch.Tensor:
    """Trace over the last two dims, ``(..., d, d) -> (...)``.

    Parameters
    ----------
    matrices : torch.Tensor
        Square ``(..., d, d)``.

    Returns
    -------
    torch.Tensor
        ``(...)``, the sum of the diagonal.
    """
    check_complex_width("matrices", matrices)
    if matrices.dim() < 2 or matrices.shape[-1] != matrices.shape[-2]:
        raise ValueError(f"trace takes square matrices (..., d, d); got shape {tuple(matrices.shape)}")
    return torch.diagonal(matrices, dim1=-2, dim2=-1).sum(-1)


def kron(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    r"""Batched Kronecker product of the last two dims.

    ``(..., m, n), (..., p, q) -> (..., m p, n q)`` with broadcasting over the batch:
    :math:`(A \otimes B)_{i p + k,\, j q + l} = A_{ij} B_{kl}` (the index order of :func:`tensor_product`).

    Parameters
    ----------
    a : torch.Tensor
        ``(..., m, n)``.
    b : torch.Tensor
        ``(..., p, q)``; batch dims broadcast with ``a``'s, on the device of ``a``.

    Returns
    -------
    torch.Tensor
        ``(..., m p, n q)``.
    """
    check_complex_width("a", a)
    check_complex_width("b", b)
    if a.dim() < 2 or b.dim() < 2:
        raise ValueError(f"kron takes matrices (..., m, n); got shapes {tuple(a.shape)} and {tuple(b.shape)}")
    if a.shape[:-2] != b.shape[:-2]:
        check_broadcast("a", a.shape[:-2], "b", b.shape[:-2])
    check_same_device(("a", a), ("b", b))
    m, n = a.shape[-2:]
    p, q = b.shape[-2:]
    product = a[..., :, None, :, None] * b[..., None, :, None, :]
    return product.reshape(*product.shape[:-4], m * p, n * q)


def kron_vectors(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Batched Kronecker product of vectors, ``(..., m), (..., n) -> (..., m n)``."""
    product = a[..., :, None] * b[..., None, :]
    return product.reshape(*product.shape[:-2], a.shape[-1] * b.shape[-1])


def ginibre(shape, *, dtype=torch.complex64, device=None, generator: torch.Generator | None = None) -> torch.Tensor:
    """Complex Gaussian matrices (real and imaginary parts standard normal), ``shape``, complex ``dtype``."""
    real = real_dtype_of(dtype)
    return torch.complex(torch.randn(shape, dtype=real, device=device, generator=generator),
                         torch.randn(shape, dtype=real, device=device, generator=generator))


def haar_orthonormalize(z: torch.Tensor) -> torch.Tensor:
    """Q of the reduced QR of Ginibre ``(..., m, n)``, m >= n, with R's diagonal phases moved into Q (Mezzadri 2007).

    Without the phase correction Q is not Haar-distributed; with it, Q is
    Haar on the unitaries (m = n) or on the isometries with orthonormal columns.
    """
    q, r = torch.linalg.qr(z)
    diag = torch.diagonal(r, dim1=-2, dim2=-1)
    phases = diag / diag.abs().clamp_min(torch.finfo(real_dtype_of(z.dtype)).tiny)
    return q * phases.unsqueeze(-2)


def random_unitary(dim: int, *, batch_shape=(), dtype=torch.complex64, device=None,
                   generator: torch.Generator | None = None) -> torch.Tensor:
    """Haar-random unitaries ``(*batch_shape, d, d)`` via QR of a Ginibre matrix (Mezzadri 2007).

    The phases of R's diagonal are moved into Q so the distribution is Haar. ``dtype`` complex64/complex128
    (float32/float64 map to them, as for every sampler); ``batch_shape`` a tuple of sizes or one int (4 is (4,)).

    Parameters
    ----------
    dim : int
        Dimension d of the unitaries.
    batch_shape : tuple of int, optional
        Leading batch dims of the result (default: none).
    dtype : torch.dtype, optional
        complex64 (default) or complex128.
    device : torch.device or str, optional
        Where the result lives (default: the default device).
    generator : torch.Generator, optional
        Source of randomness, for reproducible draws.
    """
    dim, batch_shape = check_dimension("dim", dim), check_batch_shape(batch_shape)
    z = ginibre((*batch_shape, dim, dim), dtype=complex_dtype_of(dtype), device=device, generator=generator)
    return haar_orthonormalize(z)

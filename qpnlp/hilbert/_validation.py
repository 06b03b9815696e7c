"""Invariant checks shared by every object and function of :mod:`qpnlp.hilbert`.

One switch, as in ``torch.distributions``: validation is on by default when
Python runs without ``-O`` (``__debug__``), can be changed globally with
:func:`set_validation`, is overridden in one thread by a :func:`validation`
block, and per call or per object with ``validate=``. The modes are

``False``
    no checks;
``True``
    cheap checks: dtype, finiteness, unit norm (O(d)), Hermitian and trace one
    (O(d^2));
``"strict"``
    the cheap checks plus positive semi-definiteness through ``eigvalsh``
    (O(d^3)); used in tests and when debugging.

Tolerances scale with the dtype and the dimension: ``c * d * eps(dtype)``.
Errors name the argument, its shape, the worst offending value and where it is.

Tensors on the meta device have shapes but no values: the value checks pass
them (:func:`has_values`), so functions compute shapes there in every mode;
the static checks (types, dtypes, shapes, devices) still run.

So do tensors batched by :func:`torch.func.vmap` (:func:`vmapped`): Python cannot
branch on their values, and every function runs under ``vmap`` (``jacfwd``,
``vmap(grad(f))``) with validation on; under ``grad``, ``vjp`` or ``jvp`` alone
the value checks run. Under torch.compile they run as in eager mode, a graph
break each; compile in a ``validation(False)`` block for one graph.
"""

from __future__ import annotations

import contextlib
import math
import operator
import threading
from typing import Iterator, Sequence, Union

import torch

Validate = Union[bool, str, None]

_MODES = (False, True, "strict")
_global_mode: Validate = True if __debug__ else False

# Safety factor in the tolerance c * d * eps; loose enough for float32 sums of
# a few hundred terms, tight enough to catch a forgotten normalisation.
TOLERANCE_FACTOR = 16.0


# The mode of the innermost `validation` block of each thread (unset outside blocks): a block in one thread neither
# switches the checks of the others nor, exiting out of order with theirs, restores a mode that is not its own.
# threading.local rather than a ContextVar: torch.compile traces (and guards on) it; ContextVar.get breaks the graph.
_thread = threading.local()
_OUTSIDE = object()                     # no validation block in this thread


def _is_mode(mode: object) -> bool:
    """Whether ``mode`` is one of :data:`_MODES` itself: ``1``, ``0`` and ``1.0`` equal True and False but are no
    mode (``mode in _MODES`` took them), nor is a tensor or an array (whose ``==`` is elementwise)."""
    return mode is False or mode is True or (type(mode) is str and mode == "strict")


def _check_mode(mode: Validate) -> None:
    if not _is_mode(mode):
        raise ValueError(f"validation mode must be one of {_MODES}; got {mode!r}")


def set_validation(mode: Validate) -> None:
    """Set the global validation mode: ``False``, ``True`` or ``"strict"`` (a :func:`validation` block overrides it
    in its thread).

    Parameters
    ----------
    mode : bool or "strict"
        ``False`` (no checks), ``True`` (the cheap checks) or ``"strict"`` (also positive
        semi-definiteness); anything else raises ValueError.
    """
    global _global_mode
    _check_mode(mode)
    _global_mode = mode


def get_validation() -> Validate:
    """The validation mode in force: that of this thread's innermost :func:`validation` block, else the global one."""
    return getattr(_thread, "mode", _global_mode)


@contextlib.contextmanager
def validation(mode: Validate) -> Iterator[None]:
    """Context manager that sets the validation mode temporarily, in the current thread only.

    Parameters
    ----------
    mode : bool or "strict"
        ``False`` (no checks), ``True`` (the cheap checks) or ``"strict"`` (also positive
        semi-definiteness); anything else raises ValueError.

    Examples
    --------
    >>> with validation(False):
    ...     get_validation()
    False
    """
    _check_mode(mode)
    outer = getattr(_thread, "mode", _OUTSIDE)
    _thread.mode = mode
    try:
        yield
    finally:
        if outer is _OUTSIDE:
            _thread.__dict__.pop("mode", None)      # a generator's block may close in another thread
        else:
            _thread.mode = outer


def enabled(validate: Validate = None) -> bool:
    """Whether checks run for this per-call ``validate`` (None: the global mode).

    Code paths that compile with ``torch.compile`` must test this before any
    data-dependent check, so that with validation off no Python branch
    depends on tensor values.
    """
    return bool(resolve(validate))


def resolve(validate: Validate) -> Validate:
    """Per-call ``validate`` if given, else the mode in force (:func:`get_validation`)."""
    if validate is None:
        return get_validation()
    if not _is_mode(validate):
        raise ValueError(f"validate must be one of {_MODES} or None; got {validate!r}")
    return validate


#: The real dtype of each complex dtype.
_REAL_DTYPES = {torch.complex32: torch.float16, torch.complex64: torch.float32, torch.complex128: torch.float64}


def real_dtype_of(dtype: torch.dtype) -> torch.dtype:
    """float32 for complex64, float64 for complex128; real dtypes unchanged.

    A dictionary lookup rather than ``dtype.to_real()``: torch.compile (dynamo, torch 2.11-2.13) cannot trace that
    method and breaks its graph there, so forward passes use this.
    """
    return _REAL_DTYPES.get(dtype, dtype)


def complex_dtype_of(dtype: torch.dtype, name: str = "dtype") -> torch.dtype:
    """complex128 for float64 and complex128, complex64 for every lower floating or complex dtype (float32,
    float16, bfloat16, complex32: the states' dtypes are complex64 and complex128); TypeError naming ``name``
    for anything else (an integer or bool dtype, a string)."""
    if dtype in (torch.float64, torch.complex128):
        return torch.complex128
    if not isinstance(dtype, torch.dtype) or not (dtype.is_floating_point or dtype.is_complex):
        raise TypeError(f"{name} must be a floating or complex torch.dtype (complex64, complex128, or float32/float64 "
                        f"for them); got {dtype!r}")
    return torch.complex64


def tolerance(dtype: torch.dtype, dim: int = 1, factor: float = TOLERANCE_FACTOR) -> float:
    """Absolute tolerance ``factor * max(dim, 1) * eps(dtype)``.

    Parameters
    ----------
    dtype : torch.dtype
        A floating or complex dtype; the machine epsilon is its real dtype's (float32 for complex64).
    dim : int, optional
        The dimension d the error grows with (default 1).
    factor : float, optional
        The constant c, default ``TOLERANCE_FACTOR`` (16).

    Returns
    -------
    float
        ``factor * max(dim, 1) * finfo(dtype).eps``.

    Examples
    --------
    >>> tolerance(torch.complex128, 10) < tolerance(torch.complex64, 10)
    True
    """
    if not isinstance(dtype, torch.dtype) or not (dtype.is_floating_point or dtype.is_complex):
        raise TypeError(f"tolerance needs a floating or complex dtype; got {dtype}")
    return factor * max(int(dim), 1) * torch.finfo(real_dtype_of(dtype)).eps


def _where(flat_index: int, batch_shape: torch.Size) -> str:
    if len(batch_shape) == 0:
        return ""
    index = []
    for size in reversed(batch_shape):
        index.append(flat_index % size)
        flat_index //= size
    return f" at batch index {tuple(reversed(index))}"


def _fail(name: str, what: str, value: str, flat_index: int, batch_shape: torch.Size,
          shape: torch.Size, tol: float | None = None) -> None:
    tol_text = f", tolerance {tol:.2g}" if tol is not None else ""
    raise ValueError(
        f"{name} {what}; got {value}{_where(flat_index, batch_shape)} "
        f"(shape {tuple(shape)}{tol_text})"
    )


def _off_one(label: str, value: str, err: float, dtype: torch.dtype, dim: int) -> str:
    """``"{label} {value}"``, plus :math:`|x - 1|` when six digits show ``value`` as one (a norm, trace or sum of
    a single-precision value cast to double is one to float32's round-off and read "got norm 1" before).
    """
    text = f"{label} {value}"
    if not err < 1e-5:                       # visible in six digits already, or NaN
        return text
    hint = ""
    if real_dtype_of(dtype) == torch.float64 and err <= tolerance(torch.float32, dim):
        hint = ("; float32 round-off: a single-precision value cast to double keeps it, so normalise after the "
                "cast")
    return f"{text} (|{label} - 1| = {err:.3g}{hint})"


def _worst(err: torch.Tensor) -> tuple[int, float]:
    """Flat index and value of the largest entry of a flat error tensor, NaN counting as the worst."""
    nan = torch.isnan(err)
    key = torch.where(nan, torch.full_like(err, float("inf")), err)
    flat = int(key.argmax())
    return flat, float(err[flat])


def _exceeds(err: torch.Tensor, tol: float) -> bool:
    """True when some error is above ``tol`` or NaN (one reduction, one host sync; never on the meta device)."""
    return has_values(err) and bool(err.numel()) and bool(((err > tol) | torch.isnan(err)).any())


def has_values(*tensors: torch.Tensor | None) -> bool:
    """False when one of ``tensors`` has no values Python can read: it is on the meta device (a shape and a dtype,
    no values), or :func:`torch.func.vmap` batches it (one value per batch entry: ``bool()`` and ``.item()``
    raise "data-dependent control flow is not supported"), see :func:`vmapped`.

    The value checks (finite, unit norm, Hermitian, trace one, PSD, weights) pass such tensors, so that every
    function computes shapes on the meta device, and runs under ``vmap``, with validation on as with it off; the
    static checks (types, dtypes, shapes, devices) still run. ``None`` entries are skipped.

    While torch.compile traces a :mod:`torch.func` transform, no tensor has values: a check's ``bool()`` breaks
    the graph there, and dynamo cannot resume inside a transform (``torch.compile(vmap(grad(f)))`` failed with
    "AssertionError: False != True" on the resumed tensors' ``is_leaf``; ``torch.compile(grad(f))`` ran eagerly,
    compiling nothing). Dynamo traces ``_are_functorch_transforms_active`` but not the unwrapping that finds a
    batch under ``grad`` (:func:`vmapped`), so such functions run unchecked, as compiled ones run.
    """
    if torch.compiler.is_compiling() and _transforms_active():
        return False
    return not any(isinstance(t, torch.Tensor) and (t.is_meta or vmapped(t)) for t in tensors)


# torch.func has no public test of a vmapped tensor; these are the bindings torch.func itself uses (a torch
# without them has no vmap to detect).
_is_wrapped = getattr(torch._C._functorch, "is_functorch_wrapped_tensor", lambda tensor: False)
_is_batched = getattr(torch._C._functorch, "is_batchedtensor", lambda tensor: False)
_unwrapped = getattr(torch._C._functorch, "get_unwrapped", None)
_transforms_active = getattr(torch._C, "_are_functorch_transforms_active", lambda: False)


def in_transform() -> bool:
    """Whether a :mod:`torch.func` transform (``grad``, ``vmap``, ``jvp``, ``jacrev``, ``functional_call`` under
    one of them) is running: the test of ``torch.autograd.Function.apply``, which there refuses a function whose
    ``forward`` takes ``ctx``. The fused functions of :mod:`qpnlp.nn` are such; under a transform their modules
    run the plain torch graph of the same maths instead. False while torch.compile traces (it does not inline
    this binding; its own paths decide there)."""
    return not torch.compiler.is_compiling() and _transforms_active()


def vmapped(tensor: torch.Tensor) -> bool:
    """Whether :func:`torch.func.vmap` batches ``tensor``, at any level of nested transforms (``vmap(grad(f))``
    wraps a batched tensor in a gradient-tracking one; ``jacfwd`` and ``hessian`` vmap too).

    Under :func:`torch.func.grad`, ``vjp`` and ``jvp`` alone a tensor has one value and Python can branch on it:
    the value checks run there. While torch.compile traces, only the outermost wrapper is asked (dynamo traces
    ``is_batchedtensor``, not the unwrapping): ``torch.compile(vmap(f))`` runs, and the checks of plain tensors stay
    (a graph break each, module docstring). About 0.5 us.
    """
    if torch.compiler.is_compiling():
        return _is_batched(tensor)
    while _is_wrapped(tensor):
        if _is_batched(tensor):
            return True
        tensor = _unwrapped(tensor)
    return False


def check_tensor(name: str, value: object) -> torch.Tensor:
    """Raise TypeError unless ``value`` is a tensor."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor; got {type(value).__name__}")
    return value


def check_complex_width(name: str, tensor: torch.Tensor) -> None:
    """Raise TypeError naming ``name`` when ``tensor`` is complex32 (``torch.chalf``); a static check, always on.

    The batched complex maths of :mod:`qpnlp.hilbert` (``inner``, ``outer``, ``normalize``, ``trace``, ``kron``,
    ``contract``, and every constructor through :func:`check_complex`) compute in complex64 and complex128 only:
    torch has few complex32 kernels (on the CPU a sum, a division or a matrix product raised ``"sum_cpu" not
    implemented for 'ComplexHalf'``), and where one runs its float16 parts keep three digits (eps 9.8e-4, against
    float32's 1.2e-7 that the checks' tolerances scale with). ``.to(torch.complex64)`` is exact: the error says
    to convert.
    """
    if getattr(tensor, "dtype", None) == torch.complex32:
        raise TypeError(f"{name} is complex32 (torch.chalf), which qpnlp.hilbert does not compute in (torch has few "
                        f"complex32 kernels, and its float16 parts keep 3 digits); convert it with "
                        f"{name}.to(torch.complex64), which is exact")


def check_complex(name: str, tensor: torch.Tensor) -> None:
    """Raise TypeError unless the tensor is complex64 or complex128 (complex32: :func:`check_complex_width`)."""
    check_complex_width(name, tensor)
    if tensor.dtype not in (torch.complex64, torch.complex128):
        raise TypeError(
            f"{name} must be complex64 or complex128; got {tensor.dtype} "
            f"(use PureState.from_real / from_polar for real data)"
        )


def check_real(name: str, tensor: torch.Tensor) -> None:
    """Raise TypeError unless the tensor has a real floating dtype."""
    if not tensor.dtype.is_floating_point:
        raise TypeError(f"{name} must have a real floating dtype; got {tensor.dtype}")


def check_min_ndim(name: str, tensor: torch.Tensor, ndim: int, layout: str) -> None:
    """Raise ValueError if the tensor has fewer than ``ndim`` dims."""
    if tensor.dim() < ndim:
        raise ValueError(f"{name} must have shape {layout}; got shape {tuple(tensor.shape)}")


def check_finite(name: str, tensor: torch.Tensor, event_ndim: int) -> None:
    """Raise ValueError naming the first batch index holding NaN or inf."""
    tensor = tensor.detach()
    bad = ~torch.isfinite(tensor)
    if has_values(tensor) and bool(bad.any()):
        batch_shape = tensor.shape[: tensor.dim() - event_ndim]
        per_item = bad.reshape(*batch_shape, -1).any(-1).reshape(-1) if event_ndim else bad.reshape(-1)
        flat = int(per_item.nonzero()[0, 0]) if per_item.dim() else 0
        value = tensor.reshape(-1)[bad.reshape(-1)][0].item()
        _fail(name, "must be finite", str(value), flat, batch_shape, tensor.shape)


def norms_of(vectors: torch.Tensor) -> torch.Tensor:
    """L2 norms ``(...)`` of real or complex vectors ``(..., d)``, through the real view for complex ones.

    ``torch.linalg.vector_norm`` of a complex tensor takes a ``hypot`` per
    entry and costs about fifty times more than the norm of its real view.
    """
    if vectors.is_complex():
        return torch.linalg.vector_norm(torch.view_as_real(vectors.resolve_conj()), dim=(-2, -1))
    return torch.linalg.vector_norm(vectors, dim=-1)


def check_unit_norm(name: str, states: torch.Tensor, where: torch.Tensor | None = None, *,
                    allow_zero: bool = False) -> None:
    """Raise ValueError unless ``||states[..., :]|| == 1`` within tolerance (only at ``where``, if given).

    ``allow_zero=True`` also accepts exact zero vectors (padded positions).
    NaN and inf entries count as the worst norm and raise everywhere,
    ``where`` or not.
    """
    states = states.detach()
    norms = norms_of(states)
    tol = tolerance(states.dtype, states.shape[-1])
    err = (norms - 1).abs()
    if allow_zero:
        err = err.masked_fill(norms == 0, 0.0)
    if where is not None:                      # NaN or inf still count where the norm is not checked
        err = err.masked_fill(~where & torch.isfinite(norms), 0.0)
    err = err.reshape(-1)
    if _exceeds(err, tol):
        flat, worst = _worst(err)
        _fail(name, "must have unit norm along the last dim" + (" (or be zero at padding)" if allow_zero else ""),
              _off_one("norm", f"{float(norms.reshape(-1)[flat]):.6g}", worst, states.dtype, states.shape[-1]),
              flat, states.shape[:-1], states.shape, tol)


def check_square(name: str, matrices: torch.Tensor) -> None:
    """Raise ValueError unless the last two dims are equal."""
    if matrices.dim() < 2 or matrices.shape[-1] != matrices.shape[-2]:
        raise ValueError(f"{name} must have shape (..., d, d); got shape {tuple(matrices.shape)}")


def check_hermitian(name: str, matrices: torch.Tensor) -> None:
    """Raise ValueError unless ``A == A^dagger`` (conjugate transpose) within tolerance."""
    matrices = matrices.detach()
    d = matrices.shape[-1]
    err = (matrices - matrices.mH).abs().amax(dim=(-2, -1)).reshape(-1)
    tol = tolerance(matrices.dtype, d)
    if _exceeds(err, tol):
        flat, _ = _worst(err)
        _fail(name, "must be Hermitian (equal to its conjugate transpose)",
              f"max |A - A^dagger| = {float(err[flat]):.3g}", flat, matrices.shape[:-2], matrices.shape, tol)


def check_unit_trace(name: str, matrices: torch.Tensor) -> None:
    """Raise ValueError unless ``Tr A == 1`` within tolerance."""
    matrices = matrices.detach()
    d = matrices.shape[-1]
    traces = torch.diagonal(matrices, dim1=-2, dim2=-1).sum(-1)
    err = (traces - 1).abs().reshape(-1)
    tol = tolerance(matrices.dtype, d)
    if _exceeds(err, tol):
        flat, worst = _worst(err)
        _fail(name, "must have trace one",
              _off_one("trace", f"{complex(traces.reshape(-1)[flat].item()):.6g}", worst, matrices.dtype, d),
              flat, matrices.shape[:-2], matrices.shape, tol)


def check_psd(name: str, matrices: torch.Tensor) -> None:
    """Raise ValueError if a Hermitian matrix has an eigenvalue below ``-tol`` (strict mode)."""
    matrices = matrices.detach()
    d = matrices.shape[-1]
    smallest = torch.linalg.eigvalsh(matrices)[..., 0].reshape(-1)
    tol = tolerance(matrices.dtype, d)
    if _exceeds(-smallest, tol):
        flat, _ = _worst(-smallest)
        _fail(name, "must be positive semi-definite", f"eigenvalue {float(smallest[flat]):.3g}",
              flat, matrices.shape[:-2], matrices.shape, tol)


def check_spectrum(name: str, eigenvalues: torch.Tensor, dim: int) -> None:
    """Raise ValueError if ascending eigenvalues ``(..., r)`` have one below ``-tol`` (PSD from a known spectrum).

    Functions that compute the spectrum anyway (entropies, fidelities of dense
    states) call this in the default mode: the check is then free.
    """
    if not eigenvalues.numel():
        return
    smallest = eigenvalues.detach()[..., 0].reshape(-1)
    tol = tolerance(eigenvalues.dtype, dim)
    if _exceeds(-smallest, tol):
        flat, _ = _worst(-smallest)
        _fail(name, "must be positive semi-definite (a density matrix)", f"eigenvalue {float(smallest[flat]):.3g}",
              flat, eigenvalues.shape[:-1], eigenvalues.shape[:-1] + (dim, dim), tol)


def check_probability_weights(name: str, weights: torch.Tensor, dim: int = 1, *, normalised: bool = True) -> None:
    """Raise ValueError unless weights are finite, >= 0 and (``normalised``) sum to one along the last dim."""
    weights = weights.detach()
    tol = tolerance(weights.dtype, max(dim, weights.shape[-1] if weights.dim() else 1))
    flat_w = weights.reshape(-1, weights.shape[-1]) if weights.dim() else weights.reshape(1, 1)
    if not flat_w.numel() or not has_values(flat_w):
        return
    bad = ~torch.isfinite(flat_w)
    most_negative = flat_w.amin(-1)
    sums = flat_w.sum(-1)
    err = (sums - 1).abs() if normalised else torch.zeros_like(sums)
    if not bool((bad.any(-1) | (most_negative < -tol) | (err > tol)).any()):
        return
    if bool(bad.any()):
        flat = int(bad.any(-1).nonzero()[0, 0])
        value = flat_w[flat][bad[flat]][0]
        _fail(name, "must be finite", f"weight {float(value)}", flat, weights.shape[:-1], weights.shape)
    if float(most_negative.min()) < -tol:
        flat = int(most_negative.argmin())
        _fail(name, "must be non-negative", f"weight {float(most_negative[flat]):.3g}",
              flat, weights.shape[:-1], weights.shape, tol)
    flat = int(err.argmax())
    _fail(name, "must sum to one along the last dim",
          _off_one("sum", f"{float(sums[flat]):.6g}", float(err[flat]), weights.dtype, weights.shape[-1]),
          flat, weights.shape[:-1], weights.shape, tol)


def check_dims_match(name_a: str, dim_a: int, name_b: str, dim_b: int) -> None:
    """Raise ValueError when two Hilbert-space dimensions differ."""
    if dim_a != dim_b:
        raise ValueError(f"dimension mismatch: {name_a} has d={dim_a} but {name_b} has d={dim_b}")


def check_same_device(*named: tuple[str, torch.Tensor]) -> None:
    """Raise ValueError unless every ``(name, tensor)`` lives on one device (a static check, always on).

    0-dim tensors are exempt, as in torch's own operators (a CPU scalar may meet CUDA tensors).
    """
    devices = {t.device for _, t in named if isinstance(t, torch.Tensor) and t.dim()}
    if len(devices) > 1:
        where = ", ".join(f"{n} on {t.device}" for n, t in named if isinstance(t, torch.Tensor))
        raise ValueError(f"arguments must be on one device; got {where} (move them with .to(device))")


def as_integer(value: object) -> int | None:
    """``value`` as an int if it is an integer, else None: the one reading of a size for every check of one.

    ``operator.index``: Python and NumPy integers and one-element integer tensors. A bool is not an integer, nor
    is a bool tensor (``operator.index(torch.tensor(True))`` is 1), a float such as 2.5 or NaN (refused, not
    truncated), or a tensor on the meta device (it has no value).
    """
    if isinstance(value, bool) or (isinstance(value, torch.Tensor) and (value.dtype == torch.bool or value.is_meta)):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def check_dimension(name: str, value: object, minimum: int = 1) -> int:
    """``value`` as an int; ValueError naming ``name`` unless it is an integer >= ``minimum``.

    Integers as :func:`as_integer` reads them (numpy and one-element integer tensors too; a bool is not one); a
    float such as 2.5 or NaN is refused, not truncated. A static check, always on.

    >>> check_dimension("dim", 2.5)
    Traceback (most recent call last):
    ...
    ValueError: dim must be an integer >= 1; got float 2.5
    """
    size = as_integer(value)
    if size is None:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {type(value).__name__} {value!r}")
    if size < minimum:
        raise ValueError(f"{name} must be >= {minimum}; got {size}")
    return size


def check_batch_shape(value: object, name: str = "batch_shape") -> tuple[int, ...]:
    """``value`` as a batch shape, a tuple of integers >= 0: an integer n is ``(n,)``, as torch reads a size.

    ``batch_shape=4`` is ``(4,)`` as ``torch.zeros(4)`` is ``torch.zeros((4,))``. The sizes are integers as
    :func:`check_dimension` reads them (ValueError naming ``name[i]`` for 2.5 or -1); anything that is neither an
    integer nor a sequence of them is a TypeError naming ``name``. A static check, always on.

    >>> check_batch_shape(4), check_batch_shape([2, 3]), check_batch_shape(())
    ((4,), (2, 3), ())
    """
    size = as_integer(value)
    if size is not None:
        return (check_dimension(name, size, 0),)
    scalar = isinstance(value, torch.Tensor) and value.dim() == 0           # a 0-dim float tensor: not iterable
    if scalar or isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise TypeError(f"{name} must be an integer or a tuple of integers; got {type(value).__name__} {value!r}")
    return tuple(check_dimension(f"{name}[{i}]", side, 0) for i, side in enumerate(value))


def check_subsystem_dims(dims: Sequence[int], total: int, *, count: int | None = None,
                         owner: str = "the state") -> tuple[int, ...]:
    """``dims`` as a tuple of ints; ValueError unless they are positive integers (``count`` of them) of product ``total``.

    Integers only (``operator.index``: numpy and 0-dim integer tensors too); a float such as 2.5 is refused, not
    truncated. A shape check, always on.
    """
    try:
        raw = tuple(dims)
        sizes = tuple(operator.index(n) for n in raw)
    except TypeError:
        raw, sizes = dims, None
    if sizes is None or (count is not None and len(sizes) != count) or any(n < 1 for n in sizes):
        what = {None: "positive integers", 2: "two positive integers (d_A, d_B)"}.get(count, f"{count} positive integers")
        raise ValueError(f"dims must be {what}, the subsystem dimensions; got {raw!r}")
    product = math.prod(sizes)
    if product != total:
        raise ValueError(f"dims {sizes} multiply to {product} but {owner} has d={total}")
    return sizes


def check_broadcast(name_a: str, shape_a, name_b: str, shape_b, *, what: str = "batch shape") -> torch.Size:
    """The broadcast of two batch shapes (``what``), or a ValueError naming both arguments and shapes."""
    try:
        return torch.broadcast_shapes(tuple(shape_a), tuple(shape_b))
    except RuntimeError:
        raise ValueError(f"{what}s do not broadcast: {name_a} has {what} {tuple(shape_a)} and "
                         f"{name_b} has {what} {tuple(shape_b)}") from None


def check_nonempty(name: str, tensor: torch.Tensor, dim: int, what: str) -> None:
    """Raise ValueError when ``tensor`` has size 0 along ``dim`` (shape check, always on)."""
    if tensor.dim() and tensor.shape[dim] == 0:
        raise ValueError(f"{name} is empty: it has no {what} (shape {tuple(tensor.shape)})")

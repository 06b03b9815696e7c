"""The one way qpnlp hands a user's tensor to numpy: :func:`host_array`.

``np.asarray(tensor)`` and ``tensor.numpy()`` refuse much of what torch users hold: a tensor that requires grad,
one on an accelerator, one with the lazy conjugate bit (``z.conj()``) or negative bit (``z.conj().imag``) set, and
the dtypes numpy lacks (bfloat16, complex32). Functions that take "an array or a tensor" and compute in numpy (the
word2vec-style vectors, the ranking metrics, the plots, the corpus times) read such arguments through
:func:`host_array`, so that every layout torch produces gives the values it holds; :func:`float64_values` reads an
iterable of real numbers (query times) that way, complex numbers refused.
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["host_array", "float64_values"]

#: The tensor dtypes numpy lacks, and the ones that hold their values exactly.
NUMPY_WIDER = {torch.bfloat16: torch.float32, torch.complex32: torch.complex64}


def host_array(x):
    """``x`` as a numpy array if it is a tensor, else ``x`` unchanged.

    The array holds the tensor's values: detached, copied to the CPU, its conjugate and negative bits applied
    (``resolve_conj``, ``resolve_neg``), bfloat16 widened to float32 and complex32 to complex64 (exactly). A plain
    CPU tensor is shared, not copied, as ``tensor.numpy()`` shares it.

    >>> z = torch.tensor([1 + 2j])
    >>> host_array(z.conj()).tolist(), host_array(z.conj().imag).tolist()
    ([(1-2j)], [-2.0])
    >>> host_array(torch.tensor([0.5], dtype=torch.bfloat16, requires_grad=True)).dtype
    dtype('float32')
    """
    if not isinstance(x, torch.Tensor):
        return x
    x = x.detach().cpu().resolve_conj().resolve_neg()
    return x.to(NUMPY_WIDER.get(x.dtype, x.dtype)).numpy()


def float64_values(values, name: str, *, not_numbers: type[Exception] = TypeError) -> np.ndarray:
    """The items of the iterable ``values`` (a list, a generator, a numpy array, a tensor of any layout) as a float64
    array, of whatever shape they make (the caller checks it). ``values`` is read once (a generator too), and each
    item through :func:`host_array`, so a list of tensors of any layout (0-d ones that require grad, say) gives their
    values.

    Raises TypeError naming ``name`` for complex numbers (numpy's cast to float64 keeps the real part with only a
    ComplexWarning), and ``not_numbers`` (the caller's TypeError or ValueError) for items that are no numbers,
    NumPy datetimes and timedeltas included (their cast gives units since 1970: ``datetime64('1950')`` as -20).

    >>> float64_values(torch.tensor([1990.0, 2000.5], requires_grad=True), "times").tolist()
    [1990.0, 2000.5]
    >>> float64_values([torch.tensor(1990.0, requires_grad=True)], "times").tolist()
    [1990.0]
    >>> float64_values([1990 + 1j], "times")
    Traceback (most recent call last):
    ...
    TypeError: times must be real numbers; got complex128 ones
    """
    try:
        raw = np.asarray([host_array(item) for item in host_array(values)])    # np.asarray(tensor) refuses grad
        if raw.dtype.kind in "mM":      # astype would give units since 1970: datetime64('1950') as -20.0
            raise TypeError(f"got {raw.dtype} values; give numbers such as years "
                            f"(dates.astype('datetime64[Y]').astype(int) + 1970)")
        array = None if raw.dtype.kind == "c" else raw.astype(np.float64)
    except (TypeError, ValueError) as err:
        raise not_numbers(f"{name} must be a sequence of numbers ({err})") from None
    if array is None:
        raise TypeError(f"{name} must be real numbers; got {raw.dtype} ones")
    return array

"""The one way qpnlp hands a user's tensor to numpy: :func:`host_array`.

``np.asarray(tensor)`` and ``tensor.numpy()`` refuse much of what torch users hold: a tensor that requires grad,
one on an accelerator, one with the lazy conjugate bit (``z.conj()``) or negative bit (``z.conj().imag``) set, and
the dtypes numpy lacks (bfloat16, complex32). Functions that take "an array or a tensor" and compute in numpy (the
word2vec-style vectors, the ranking metrics, the plots, the corpus times) read such arguments through
:func:`host_array`, so that every layout torch produces gives the values it holds.
"""

from __future__ import annotations

import torch

__all__ = ["host_array"]

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

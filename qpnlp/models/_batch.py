"""The batch contract of the classification and matching models: word ids ``(B, L)`` and an explicit bool mask.

:func:`check_batch` is re-exported by :mod:`qpnlp.models.base` (where the API reference documents it) and
:mod:`qpnlp.models`; :meth:`qpnlp.models.base.Model.check_batch` runs it against a model.
"""

from __future__ import annotations

import torch

from qpnlp.hilbert._validation import Validate
from qpnlp.nn._checks import check_token_batch

__all__ = ["check_batch"]


def check_batch(ids: torch.Tensor, mask: torch.Tensor, *, num_words: int | None = None,
                device: torch.device | None = None, names: tuple[str, str] = ("ids", "mask"),
                validate: Validate = None) -> None:
    """The batch contract: ``ids`` a ``(B, L)`` LongTensor, ``mask`` a bool tensor of the same shape.

    Always checked (static): dtypes, shapes, one device (``device``: the
    model's) and a non-empty batch. While validation is on
    (:func:`qpnlp.hilbert.set_validation`, or ``validate=``): every sentence
    has at least one unmasked word, no word sits at the padding id, and (with
    ``num_words``) every id lies in the vocabulary; one host synchronisation
    for all of them. Errors name the argument, the shape and the worst value.

    Parameters
    ----------
    ids, mask : torch.Tensor
        Long word ids ``(B, L)`` and a bool mask ``(B, L)``, True at words.
    num_words : int, optional
        The vocabulary size: ids must lie in ``[0, num_words)``. None: no upper bound.
    device : torch.device, optional
        The device the batch must be on (the model's). None: any, as long as ``ids`` and ``mask`` share it.
    names : tuple of str
        The names of ``ids`` and ``mask`` in the error messages (e.g. ``("q_ids", "q_mask")``).
    validate : bool or "strict", optional
        Run the value checks; None follows the global mode (:func:`qpnlp.hilbert.set_validation`).
    """
    check_token_batch(ids, mask, num_words if num_words is not None else _NO_LIMIT, names=names, device=device,
                      validate=validate)


_NO_LIMIT = 1 << 62

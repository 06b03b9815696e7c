"""Checks of word ids and masks, behind the one validation switch (:func:`qpnlp.hilbert.set_validation`).

Static checks (dtype, shapes, devices, empty batches) always run; the value
checks (ids inside the vocabulary, at least one word per row, no word at the
padding id) run while validation is on, with one host synchronisation for
all of them. With validation off no Python branch depends on tensor values.
"""

from __future__ import annotations

import torch

from qpnlp._checks import check_real
from qpnlp.data.vocab import PAD_ID
from qpnlp.hilbert import _validation as V

__all__ = ["check_dropout", "check_ids", "check_int", "check_mask", "check_real", "check_table_dtype",
           "check_token_batch"]


def check_int(name: str, value: object) -> int:
    """``value`` as an int (``qpnlp.hilbert._validation.as_integer``: numpy and one-element integer tensors
    too); TypeError for anything else.

    The sizes of the layers (features, channels, heads, words, ...): 4.0 or 2.5 is refused with the argument named,
    not passed on to torch (an opaque error from ``torch.rand``, or a float ``view`` size that fails only in forward);
    a bool (or a bool tensor) is refused too. A static check, always on; the caller checks the range. The integers
    of ``qpnlp.hilbert._validation.check_dimension``, which raises ValueError instead.
    """
    size = V.as_integer(value)
    if size is None:
        raise TypeError(f"{name} must be an integer; got {type(value).__name__} {value!r}")
    return size


def check_table_dtype(dtype: object) -> None:
    """TypeError unless ``dtype`` is float32 or float64, the dtypes of the real lookup tables (amplitudes, phases,
    frequencies, word weights): an integer dtype failed in torch's ``requires_grad``, a complex one later."""
    if dtype not in (torch.float32, torch.float64):
        raise TypeError(f"dtype must be float32 or float64 (the tables are real); got {dtype}")


def check_dropout(name: str, value: object) -> float:
    r"""``value`` as a float if it is a dropout probability :math:`p \in [0, 1)`, else an error naming it.

    The one check of the dropout of the layers (:func:`~qpnlp.nn.functional.complex_dropout`,
    :class:`~qpnlp.nn.ComplexDropout`, the attention's ``dropout``, ``ComplexOrderEmbedding.dropped_mean``):
    :func:`check_real` (TypeError for a string, a bool, a complex number or a tensor of more than one element;
    ValueError for NaN and infinities), then ValueError outside [0, 1) (:math:`p = 1` would divide by
    :math:`1 - p = 0`). A string such as ``"0.1"`` met Python's comparison TypeError, which named no argument.
    """
    p = check_real(name, value, "a dropout probability in [0, 1)")
    if not 0 <= p < 1:
        raise ValueError(f"{name} must be a dropout probability in [0, 1); got {value!r}")
    return p


def _index(flat: int, shape) -> tuple[int, ...]:
    return tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), tuple(shape)))


def _raise_range(name: str, ids: torch.Tensor, num_words: int, low: int, high: int) -> None:
    if high >= num_words:
        where = _index(int(ids.reshape(-1).argmax()), ids.shape)
        raise ValueError(f"{name} must be word ids in [0, {num_words}) (the vocabulary has {num_words} words); "
                         f"got max id {high} at index {where} (shape {tuple(ids.shape)})")
    where = _index(int(ids.reshape(-1).argmin()), ids.shape)
    raise ValueError(f"{name} must be word ids in [0, {num_words}); got min id {low} at index {where} "
                     f"(shape {tuple(ids.shape)})")


def check_ids(ids: torch.Tensor, num_words: int, *, name: str = "ids", validate: V.Validate = None) -> None:
    """A LongTensor of ids; while validation is on, every id in ``[0, num_words)`` (ValueError naming the max id)."""
    V.check_tensor(name, ids)
    if ids.dtype != torch.long:
        raise TypeError(f"{name} must be a LongTensor of word ids; got {ids.dtype}")
    if V.enabled(validate) and ids.numel() and V.has_values(ids):       # not meta, nor under torch.func.vmap
        low, high = (int(v) for v in torch.stack(torch.aminmax(ids)).tolist())
        if low < 0 or high >= num_words:
            _raise_range(name, ids, num_words, low, high)


def check_mask(mask: torch.Tensor, ids: torch.Tensor, *, name: str = "mask", ids_name: str = "ids") -> None:
    """A bool mask of the shape and device of ``ids`` (static checks)."""
    V.check_tensor(name, mask)
    if mask.dtype != torch.bool:
        raise TypeError(f"{name} must be a bool tensor (True at words); got {mask.dtype}")
    if mask.shape != ids.shape:
        raise ValueError(f"{name} must have the shape of {ids_name} {tuple(ids.shape)}; got {tuple(mask.shape)}")
    V.check_same_device((ids_name, ids), (name, mask))


def check_token_batch(ids: torch.Tensor, mask: torch.Tensor, num_words: int, *, names: tuple[str, str] = ("ids", "mask"),
                      device: torch.device | None = None, validate: V.Validate = None) -> None:
    """The batch contract of the models: ids ``(B, L)`` long, mask ``(B, L)`` bool, explicit.

    Always: the dtypes and shapes, one device (the model's, if ``device`` is
    given), and a non-empty batch (B >= 1, L >= 1). While validation is on:
    every id in ``[0, num_words)``, at least one word (True) per row, and no
    word at the padding id :data:`~qpnlp.data.PAD_ID` (a mask True at padding
    would let padding contribute to the result).
    """
    id_name, mask_name = names
    V.check_tensor(id_name, ids)
    if ids.dim() != 2 or ids.dtype != torch.long:
        raise ValueError(f"{id_name} must be a LongTensor of shape (B, L); got {ids.dtype} {tuple(ids.shape)}")
    V.check_tensor(mask_name, mask)
    if mask.dtype != torch.bool or mask.shape != ids.shape:   # ValueError, as the model contract always said
        raise ValueError(f"{mask_name} must be a bool tensor of shape {tuple(ids.shape)} (True at words); got "
                         f"{mask.dtype} {tuple(mask.shape)}")
    V.check_same_device((id_name, ids), (mask_name, mask))
    if device is not None and ids.device != device:
        raise ValueError(f"{id_name} is on {ids.device} but the model is on {device}; move the batch with "
                         f".to({str(device)!r})")
    if ids.shape[0] == 0 or ids.shape[1] == 0:
        raise ValueError(f"{id_name} is empty (shape {tuple(ids.shape)}): a batch needs at least one sentence "
                         f"of at least one word")
    if not V.enabled(validate):
        return
    low, high = torch.aminmax(ids)
    empty = ~mask.any(-1)
    at_padding = mask & (ids == PAD_ID)
    low, high, n_empty, n_padding = (int(v) for v in torch.stack(
        [low, high, empty.sum(), at_padding.sum()]).tolist())             # one host synchronisation
    if low < 0 or high >= num_words:
        _raise_range(id_name, ids, num_words, low, high)
    if n_empty:
        raise ValueError(f"empty sentence: {mask_name} has no word (True) at batch index "
                         f"{int(empty.nonzero()[0, 0])} (shape {tuple(mask.shape)})")
    if n_padding:
        where = tuple(int(i) for i in at_padding.nonzero()[0])
        raise ValueError(f"{mask_name} is True at the padding id {PAD_ID} ({id_name}{list(where)} == {PAD_ID}; "
                         f"{n_padding} such positions): padding must be masked out (mask = ids != PAD_ID)")

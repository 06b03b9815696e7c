r"""Local mixtures over sliding windows (CNM, thesis section 3.3.1), functional core.

A sentence of L positions becomes, for each window size l, a sequence of
local density matrices

.. math::
    \rho^{(l)}_t = \sum_{j=0}^{l-1} p^{(l)}_{t,j} \, |w_{t+j}\rangle\langle w_{t+j}|, \qquad
    p^{(l)}_{t,j} = \frac{m_{t+j} e^{s_{t+j}}}{\sum_{j'=0}^{l-1} m_{t+j'} e^{s_{t+j'}}}

(thesis eq. 3.7: the softmax of the word weights :math:`\pi(w)` over the
window; :math:`m` is the padding mask), and each is measured by the same k
projectors :math:`|v_k\rangle\langle v_k|`. By linearity of the trace

.. math::
    \operatorname{Tr}(\rho^{(l)}_t |v_k\rangle\langle v_k|)
        = \sum_{j} p^{(l)}_{t,j} \, |\langle v_k|w_{t+j}\rangle|^2 ,

so the per-word probabilities :math:`|\langle v_k|w_i\rangle|^2` are computed
once (:func:`qpnlp.measurement.word_probabilities`, O(L d k)) and every window
size is a weighted sum of l shifted copies of them (O(L l k)); no d x d matrix
is ever built.

Window edges
------------
The thesis does not say how windows meet the sentence edges. Here the window
at position t covers positions t .. t+l-1 (it *starts* at t) and is
truncated to the real words among them: windows that would run past the end
of the sentence, or into padding, hold fewer words and their softmax is taken
over the words present. So there is one local mixture per real word, the
output has the input's length and mask, and padding never changes the result
(a padded and an unpadded copy of a sentence give the same values at the real
positions; padded positions are exactly zero). With left padding the same
holds; a mask with holes in the middle of a sentence truncates windows at the
hole (masked positions are absent, not skipped).

This convention (``padding="end"``, the default) is not symmetric: the
first word of a sentence never stands alone in a window of size l >= 2 while
the last word does, so a sentence and its reverse can give different pooled
probabilities. ``padding="both"`` is the symmetric convention of the
authors' layer, which pads the sentence with l - 1 empty positions on both
sides: there are L + l - 1 windows of size l, the window at index t covers
positions t - l + 1 .. t (truncated to the real words among them, as above),
and a window exists when it holds at least one real word. Every word then
starts and ends a window, and reversing a sentence reverses its sequence of
windows, so max and mean pooling give equal results for a sentence and its
reverse. The outputs of all window sizes share the length L + max(l) - 1
(shorter sequences end with empty windows); :func:`window_mask` says which
windows exist, for pooling.

Stability: the window softmax is ``torch.softmax`` over the l scores of the
window (it subtracts the window's maximum), so large scores neither overflow
nor make a window's denominator underflow.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from qpnlp.hilbert import _validation as V
from qpnlp.hilbert import contract

from ._checks import check_int
from .functional import masked_max, masked_mean

__all__ = [
    "DEFAULT_WINDOWS", "POOLINGS", "WINDOW_PADDINGS", "window_weights", "window_mask", "local_mixture",
    "local_mixture_density", "effective_word_weights", "pool_positions",
]

#: Window sizes of the thesis (l = 1, 2, 3, 4, concatenated).
DEFAULT_WINDOWS = (1, 2, 3, 4)
#: How the window mixtures' probabilities are pooled over positions (``pooling=``).
POOLINGS = ("max", "mean")
#: Window edge conventions (module docstring): cut at the sentence end, or padded on both sides.
WINDOW_PADDINGS = ("end", "both")


def _window_size(name: str, window: object) -> int:
    """One window size ``window`` as an int >= 1: TypeError for a float (2.5 was truncated to 2) or a bool
    (:func:`~qpnlp.nn._checks.check_int`), ValueError below 1; ``name`` names it."""
    window = check_int(name, window)
    if window < 1:
        raise ValueError(f"window sizes must be >= 1; got {window} ({name})")
    return window


def _window_sizes(windows: Sequence[int]) -> tuple[int, ...]:
    """The window sizes as a non-empty tuple of ints >= 1 (each checked by :func:`_window_size`)."""
    if isinstance(windows, (str, bytes)) or not hasattr(windows, "__iter__"):
        raise TypeError(f"windows must be a sequence of window sizes (e.g. [{windows!r}]); got "
                        f"{type(windows).__name__} {windows!r}")
    windows = tuple(_window_size(f"windows[{i}]", w) for i, w in enumerate(windows))
    if not windows:
        raise ValueError("need at least one window size")
    return windows


def _check_mask(mask: torch.Tensor, padding: str) -> None:
    if padding not in WINDOW_PADDINGS:
        raise ValueError(f"padding must be one of {WINDOW_PADDINGS}; got {padding!r}")
    if mask.dtype != torch.bool:
        raise TypeError(f"mask must be a bool tensor; got {mask.dtype}")


def _check(scores: torch.Tensor, mask: torch.Tensor, window: int, padding: str = "end") -> int:
    """The window size as an int (:func:`_window_size`), after checking the mask, the padding and the scores."""
    window = _window_size("window", window)
    _check_mask(mask, padding)
    if scores.shape != mask.shape:
        raise ValueError(f"scores and mask must have the same shape (..., L); got {tuple(scores.shape)} "
                         f"and {tuple(mask.shape)}")
    V.check_same_device(("scores", scores), ("mask", mask))
    return window


def _padded_end(x: torch.Tensor, n: int, dim: int, fill: float | bool = 0) -> torch.Tensor:
    """``x`` with ``n`` entries of ``fill`` appended along ``dim`` (negative, from the end)."""
    if n == 0:
        return x
    shape = list(x.shape)
    shape[dim] = n
    return torch.cat([x, x.new_full(shape, fill)], dim=dim)


def _padded_front(x: torch.Tensor, n: int, dim: int, fill: float | bool = 0) -> torch.Tensor:
    """``x`` with ``n`` entries of ``fill`` prepended along ``dim`` (negative, from the end)."""
    if n == 0:
        return x
    shape = list(x.shape)
    shape[dim] = n
    return torch.cat([x.new_full(shape, fill), x], dim=dim)


def _windows(x: torch.Tensor, window: int, dim: int, fill: float | bool = 0) -> list[torch.Tensor]:
    """Views ``y_j[..., t, ...] = x[..., t + j, ...]`` for j < window along ``dim``, ``fill`` past the end."""
    length = x.shape[dim]
    padded = _padded_end(x, window - 1, dim, fill)
    return [padded.narrow(dim, j, length) for j in range(window)]


def window_weights(scores: torch.Tensor, mask: torch.Tensor, window: int, padding: str = "end") -> torch.Tensor:
    r"""Mixture weights :math:`p^{(l)}_{t,j}` of the window of size ``window`` at each window index t.

    Parameters
    ----------
    scores : torch.Tensor
        Real ``(..., L)`` word-weight scores :math:`\pi(w_i)` (e.g. amplitude norms).
    mask : torch.Tensor
        Bool ``(..., L)``, True at real words.
    window : int
        l >= 1.
    padding : {"end", "both"}
        The edge convention (module docstring): windows start at each
        position (T = L) or the sentence is padded on both sides (T = L + l - 1).

    Returns
    -------
    torch.Tensor
        Real ``(..., T, l)``: weight of word t+j (``"end"``) or t-l+1+j
        (``"both"``) in window t. Each row of an existing window sums to one
        over the real words of the window; other rows and entries outside
        the sentence are exactly zero.

    Examples
    --------
    >>> w = window_weights(torch.zeros(1, 3), torch.tensor([[True, True, False]]), 2)
    >>> w[0].tolist()
    [[0.5, 0.5], [1.0, 0.0], [0.0, 0.0]]
    >>> window_weights(torch.zeros(1, 2), torch.tensor([[True, True]]), 2, padding="both")[0].tolist()
    [[0.0, 1.0], [0.5, 0.5], [1.0, 0.0]]
    """
    window = _check(scores, mask, window, padding)
    if not scores.is_floating_point():          # an integer softmax failed deep inside masked_fill
        raise TypeError(f"scores must be a real floating tensor; got {scores.dtype}")
    if padding == "both":
        scores, words = _padded_front(scores, window - 1, -1, 0.0), _padded_front(mask, window - 1, -1, False)
    else:
        words = mask
    s = torch.stack(_windows(scores, window, -1, 0.0), dim=-1)                          # (..., T, l)
    m = torch.stack(_windows(words, window, -1, False), dim=-1)
    if padding == "end":
        m = m & mask.unsqueeze(-1)                 # a window exists only at a real position
    valid = m.any(-1, keepdim=True)
    s = s.masked_fill(~m, float("-inf")).masked_fill(~valid, 0.0)   # empty rows: finite, zeroed below
    return torch.softmax(s, dim=-1) * m


def window_mask(mask: torch.Tensor, windows: Sequence[int] = DEFAULT_WINDOWS, padding: str = "end") -> torch.Tensor:
    """Which windows exist, bool ``(..., W, T)`` aligned with :func:`local_mixture` (for pooling).

    ``"end"``: the window at t exists where ``mask[t]`` (T = L); ``"both"``:
    where the window holds a real word (T = L + max(l) - 1).

    Parameters
    ----------
    mask : torch.Tensor
        Bool ``(..., L)``, True at real words.
    windows : sequence of int
        Window sizes l, at least one, each >= 1 (default 1, 2, 3, 4); W = ``len(windows)``.
    padding : {"end", "both"}
        The window edge convention (module docstring).

    Examples
    --------
    >>> window_mask(torch.tensor([[True, True, False]]), (1, 2), padding="both").int().tolist()
    [[[1, 1, 0, 0], [1, 1, 1, 0]]]
    """
    windows = _window_sizes(windows)
    _check_mask(mask, padding)
    if padding == "end":
        return mask.unsqueeze(-2).expand(*mask.shape[:-1], len(windows), mask.shape[-1])
    length = mask.shape[-1] + max(windows) - 1
    out = []
    for l in windows:
        m = torch.stack(_windows(_padded_front(mask, l - 1, -1, False), l, -1, False), dim=-1).any(-1)
        out.append(_padded_end(m, length - m.shape[-1], -1, False))
    return torch.stack(out, dim=-2)


def local_mixture(word_probs: torch.Tensor, scores: torch.Tensor, mask: torch.Tensor,
                  windows: Sequence[int] = DEFAULT_WINDOWS, padding: str = "end") -> torch.Tensor:
    r"""Measured probabilities of the local mixtures, lazily (no d x d matrices).

    .. math:: P^{(l)}_{t,k} = \sum_{j=0}^{l-1} p^{(l)}_{t,j}\, |\langle v_k|w_{t+j}\rangle|^2

    Parameters
    ----------
    word_probs : torch.Tensor
        Real ``(..., L, k)`` per-word probabilities :math:`|\langle v_k|w_i\rangle|^2`
        (from :func:`qpnlp.measurement.word_probabilities`; computed once and
        shared by all window sizes).
    scores : torch.Tensor
        Real ``(..., L)`` word-weight scores.
    mask : torch.Tensor
        Bool ``(..., L)``.
    windows : sequence of int
        Window sizes (default 1, 2, 3, 4).
    padding : {"end", "both"}
        The window edge convention (module docstring).

    Returns
    -------
    torch.Tensor
        Real ``(..., W, T, k)`` with W = ``len(windows)``, T = L (``"end"``:
        zero at padded positions) or L + max(l) - 1 (``"both"``: zero where
        no window exists, see :func:`window_mask`).

    Examples
    --------
    >>> probs = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])                 # two words, k = 2
    >>> local_mixture(probs, torch.zeros(1, 2), torch.ones(1, 2, dtype=torch.bool), (1, 2))[0].tolist()
    [[[1.0, 0.0], [0.0, 1.0]], [[0.5, 0.5], [0.0, 1.0]]]
    """
    V.check_tensor("word_probs", word_probs)
    if word_probs.shape[:-1] != scores.shape:
        raise ValueError(f"word_probs must have shape {tuple(scores.shape)} + (k,); got {tuple(word_probs.shape)}")
    V.check_real("word_probs", word_probs)     # complex ones made the real scores complex, then named scores
    V.check_same_device(("word_probs", word_probs), ("scores", scores))
    windows = _window_sizes(windows)
    _check(scores, mask, min(windows), padding)
    common = torch.promote_types(word_probs.dtype, scores.dtype)
    word_probs, scores = word_probs.to(common), scores.to(common)
    if padding == "both":
        return _local_mixture_both(word_probs, scores, mask, windows)
    shifted = _windows(word_probs, max(windows), -2, 0.0)     # shifted[j][..., t, :] = word_probs[..., t + j, :]
    out = []
    for l in windows:
        weights = window_weights(scores, mask, l)                                        # (..., L, l)
        total = weights[..., 0, None] * shifted[0]
        for j in range(1, l):
            total = total + weights[..., j, None] * shifted[j]
        out.append(total)
    return torch.stack(out, dim=-3)


def _local_mixture_both(word_probs: torch.Tensor, scores: torch.Tensor, mask: torch.Tensor,
                        windows: tuple[int, ...]) -> torch.Tensor:
    """:func:`local_mixture` with ``padding="both"``: windows over the sentence padded by l - 1 on both sides."""
    length = word_probs.shape[-2] + max(windows) - 1
    out = []
    for l in windows:
        weights = window_weights(scores, mask, l, "both")                             # (..., L + l - 1, l)
        shifted = _windows(_padded_front(word_probs, l - 1, -2, 0.0), l, -2, 0.0)
        total = weights[..., 0, None] * shifted[0]
        for j in range(1, l):
            total = total + weights[..., j, None] * shifted[j]
        out.append(_padded_end(total, length - total.shape[-2], -2, 0.0))
    return torch.stack(out, dim=-3)


def local_mixture_density(states: torch.Tensor, scores: torch.Tensor, mask: torch.Tensor,
                          windows: Sequence[int] = DEFAULT_WINDOWS, padding: str = "end") -> torch.Tensor:
    r"""The window density matrices :math:`\rho^{(l)}_t` themselves, dense ``(..., W, T, d, d)``.

    T as in :func:`local_mixture`: L (``"end"``) or L + max(l) - 1 (``"both"``).
    The reference implementation (what earlier code computed) for tests,
    benchmarks and interpretation: O(T d^2) memory per window size. Padded
    positions, and windows that do not exist (:func:`window_mask`), get the zero matrix.

    Parameters
    ----------
    states : torch.Tensor
        Complex ``(..., L, d)`` unit word states.
    scores, mask, windows, padding
        As in :func:`local_mixture`.
    """
    if states.shape[:-1] != scores.shape:
        raise ValueError(f"states must have shape {tuple(scores.shape)} + (d,); got {tuple(states.shape)}")
    V.check_same_device(("states", states), ("scores", scores))
    if not (states.is_complex() or states.is_floating_point()):    # the weights would be cast to it (0 for ints)
        raise TypeError(f"states must be a complex (or real floating) tensor; got {states.dtype}")
    windows = _window_sizes(windows)
    length = states.shape[-2] + (max(windows) - 1 if padding == "both" else 0)
    out = []
    for l in windows:
        weights = window_weights(scores, mask, l, padding).to(states.real.dtype).to(states.dtype)  # (..., T, l)
        members = states if padding == "end" else _padded_front(states, l - 1, -2, 0.0)
        members = torch.stack(_windows(members, l, -2, 0.0), dim=-2)                            # (..., T, l, d)
        rho = contract("...tj,...tjd,...tje->...tde", weights, members, members.conj())
        out.append(_padded_end(rho, length - rho.shape[-3], -3, 0.0))
    return torch.stack(out, dim=-4)


def effective_word_weights(scores: torch.Tensor, mask: torch.Tensor, window: int, padding: str = "end") -> torch.Tensor:
    r"""Weights :math:`c_i` of the position-average of the local mixtures, :math:`\bar\rho = \sum_i c_i |w_i\rangle\langle w_i|`.

    :math:`\bar\rho^{(l)} = \frac{1}{n}\sum_t \rho^{(l)}_t` (n existing windows) is a
    density matrix; :math:`c_i = \frac1n \sum_{j} p^{(l)}_{i-j,j}` (``"end"``;
    :math:`p^{(l)}_{i+l-1-j,j}` for ``"both"``). Returns real ``(..., L)``,
    summing to one over the real words (zero at padding, and in a row without a
    real word, which has no window: n = 0, as :func:`pool_positions` gives 0 there).

    Parameters
    ----------
    scores : torch.Tensor
        Real ``(..., L)`` word-weight scores (softmaxed within each window).
    mask : torch.Tensor
        Bool ``(..., L)``, True at real words.
    window : int
        The window size l (one size; call once per size).
    padding : {"end", "both"}
        The window edge convention (module docstring).
    """
    window = _window_size("window", window)
    if padding == "both":
        weights = window_weights(scores, mask, window, "both")                        # (..., L + l - 1, l)
        length = mask.shape[-1]
        # word i receives weight p_{i + l - 1 - j, j} from the window whose member j it is
        c = sum(weights[..., window - 1 - j:window - 1 - j + length, j] for j in range(window))
        existing = window_mask(mask, (window,), "both")[..., 0, :].sum(-1, keepdim=True)
        return c / existing.clamp_min(1).to(c.dtype)
    weights = window_weights(scores, mask, window)                                       # (..., L, l)
    c = weights[..., 0]
    for j in range(1, min(window, mask.shape[-1])):       # j >= L: no word has a window j positions before it
        # word i receives weight p_{i-j, j} from the window starting j positions before it
        c = c + torch.cat([weights.new_zeros(weights.shape[:-2] + (j,)), weights[..., :-j, j]], dim=-1)
    return c / mask.sum(-1, keepdim=True).clamp_min(1).to(c.dtype)


def pool_positions(features: torch.Tensor, mask: torch.Tensor, mode: str = "max") -> torch.Tensor:
    """Pool ``(..., L, k)`` over the real positions of ``mask`` ``(..., L)`` -> ``(..., k)``.

    ``"max"`` (the thesis) or ``"mean"``: :func:`~qpnlp.nn.functional.masked_max`
    or :func:`~qpnlp.nn.functional.masked_mean`. Padded positions never
    contribute; a row without a real position gives 0.

    Parameters
    ----------
    features : torch.Tensor
        Real ``(..., L, k)``, e.g. the local-mixture probabilities of one window size.
    mask : torch.Tensor
        Bool ``(..., L)``, True at the positions that count (:func:`window_mask` for ``padding="both"``).
    mode : {"max", "mean"}
        The pooling (default ``"max"``).

    Examples
    --------
    >>> x = torch.tensor([[[0.25, 0.75], [0.5, 0.125], [7.0, 7.0]]])
    >>> pool_positions(x, torch.tensor([[True, True, False]])).tolist()
    [[0.5, 0.75]]
    """
    if mode not in POOLINGS:
        raise ValueError(f"pooling must be one of {POOLINGS}; got {mode!r}")
    if features.shape[:-1] != mask.shape:
        raise ValueError(f"features must have shape {tuple(mask.shape)} + (k,); got {tuple(features.shape)}")
    return masked_max(features, mask) if mode == "max" else masked_mean(features, mask)

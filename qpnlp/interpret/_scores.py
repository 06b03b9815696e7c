r"""Scores shared by the exact search (:mod:`.nearest`) and the approximate index (:mod:`.ann`).

``"born"``: :math:`|\langle v|w\rangle|^2` of unit rows (the squared cosine
for real vectors); ``"cosine"``: the signed cosine, for complex vectors
:math:`\operatorname{Re}\langle v|w\rangle`, the cosine of their real images
``[Re, Im]``. Both modules import this one, and neither imports the other back.
Both rank with ``qpnlp._top_k.top_k``: equal scores in increasing row order.
"""

from __future__ import annotations

import torch

SCORES = ("auto", "born", "cosine")


def resolve_score(score: str, *tensors: torch.Tensor) -> str:
    """``"born"`` or ``"cosine"`` for ``score`` given the tensors it applies to."""
    if score not in SCORES:
        raise ValueError(f"score must be one of {SCORES}; got {score!r}")
    is_complex = any(t.is_complex() for t in tensors)
    if score == "auto":
        return "born" if is_complex else "cosine"
    return score


def unit_rows(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows divided by their norm (zero rows stay zero) and the bool mask of non-zero rows."""
    norms = torch.linalg.vector_norm(x, dim=-1, keepdim=True)
    nonzero = norms.squeeze(-1) > 0
    return x / norms.clamp_min(torch.finfo(norms.dtype).tiny), nonzero


def pair_scores(q: torch.Tensor, s: torch.Tensor, score: str) -> torch.Tensor:
    """``(..., m, V)`` scores of unit rows ``q`` ``(..., m, d)`` against ``s`` ``(..., V, d)``."""
    if q.is_complex():
        amplitude = q.conj() @ s.mT                                     # <v|w> = sum_j conj(v_j) w_j
        if score == "cosine":                                           # Re<v|w>: the real images' cosine
            return amplitude.real
        return amplitude.real.square() + amplitude.imag.square()
    cosine = q @ s.mT
    return cosine.square() if score == "born" else cosine

r"""Word weights of a sentence mixture: :math:`\rho = \sum_i p_i |w_i\rangle\langle w_i|`."""

from __future__ import annotations

import torch
from torch import nn

from qpnlp.hilbert import masked_softmax

WEIGHTINGS = ("amplitude_norm", "trainable", "idf", "uniform")


class WordWeighting(nn.Module):
    r"""Mixture weights :math:`p_i` over the words of each sentence (padding excluded).

    Schemes
    -------
    ``"amplitude_norm"`` (the papers' public code, default)
        :math:`p_i = \operatorname{softmax}_i \|r_{w_i}\|` over the sentence,
        with the raw amplitude norm from :class:`ComplexWordEmbedding`.
    ``"trainable"``
        :math:`p_i = \operatorname{softmax}_i \pi(w_i)` with a trainable
        lookup table :math:`\Pi` (thesis eq. 5.1), initialised to zero
        (uniform weights at the start).
    ``"idf"``
        :math:`p_i = \mathrm{idf}(w_i) / \sum_j \mathrm{idf}(w_j)`, fixed IDF
        from the training data (ablation of thesis Table 5.3).
    ``"uniform"``
        :math:`p_i = 1/m` (thesis eq. 3.3; "fixed mean weights").

    Masking happens before the softmax: padded positions get weight exactly 0.
    """

    def __init__(self, num_words: int, scheme: str = "amplitude_norm", *, idf: torch.Tensor | None = None,
                 sparse: bool = True, dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        if scheme not in WEIGHTINGS:
            raise ValueError(f"weighting must be one of {WEIGHTINGS}; got {scheme!r}")
        self.scheme = scheme
        if scheme == "trainable":
            self.table = nn.Embedding(num_words, 1, padding_idx=0, sparse=sparse,
                                      _weight=torch.zeros(num_words, 1, dtype=dtype))
        if scheme == "idf":
            if idf is None or idf.shape != (num_words,):
                raise ValueError(f"weighting='idf' needs idf of shape ({num_words},); "
                                 f"got {None if idf is None else tuple(idf.shape)}")
            if bool((idf <= 0).any()):
                raise ValueError("idf values must be positive")
            self.register_buffer("idf", idf.to(dtype))

    def scores(self, ids: torch.Tensor, norms: torch.Tensor) -> torch.Tensor:
        """Per-word scores ``(B, L)`` whose masked softmax (or normalisation, for IDF) gives the weights."""
        if self.scheme == "amplitude_norm":
            return norms
        if self.scheme == "trainable":
            return self.table(ids).squeeze(-1)
        if self.scheme == "idf":
            return self.idf[ids]
        return torch.zeros_like(norms)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor, norms: torch.Tensor) -> torch.Tensor:
        """Weights ``(B, L)``, non-negative, summing to one over unmasked positions.

        Parameters
        ----------
        ids : LongTensor ``(B, L)``; mask : BoolTensor ``(B, L)``; norms : ``(B, L)`` amplitude norms.
        """
        s = self.scores(ids, norms)
        if self.scheme == "idf":
            s = s.masked_fill(~mask, 0.0)
            return s / s.sum(-1, keepdim=True)
        return masked_softmax(s, mask)

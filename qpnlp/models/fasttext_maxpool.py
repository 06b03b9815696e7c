r"""FastText-MaxPool: the word-vector ablation of CNM (thesis Table 5.9).

"FastText-MaxPool adopt[s] max pooling over word-embedding, just like
FastText" (thesis 5.1.3, ablation test): no density matrix and no
measurement, only the word vectors, max-pooled coordinate by coordinate over
the words of a sentence, and question and answer matched by the cosine as in
CNM,

.. math::
    x_d = \max_{i:\, m_i} w_{i,d}, \qquad \operatorname{score}(q, a) = \cos(x_q, x_a),

with real vectors of 2d coordinates (the thesis gives its real ablations twice
the width): the pretrained vectors in the first d, N(0, 1/d) in the others, as
:class:`~qpnlp.models.CNMReal`. It trains as CNM does (the same triplet loss,
defaults and search), so the two differ only in what the ablation removes.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from qpnlp.nn import masked_max
from qpnlp.nn.embedding import _real_word_table
from qpnlp.nn._checks import check_dropout

from .base import Model, ModelConfig, register_model
from .cnm import CNM

__all__ = ["FastTextMaxPoolConfig", "FastTextMaxPool"]


@dataclass
class FastTextMaxPoolConfig(ModelConfig):
    """Hyper-parameters of :class:`FastTextMaxPool`.

    Attributes
    ----------
    num_words : int
        Vocabulary size (padding 0 and unknown 1 included).
    dim : int
        d: the vectors have 2d real coordinates (the real count of CNM's d-dimensional complex states).
    dropout : float
        Dropout on the pooled sentence vector.
    precision : str
        ``single`` (float32) | ``double`` (float64).
    """

    num_words: int
    dim: int = 50
    dropout: float = 0.0
    precision: str = "single"

    def __post_init__(self) -> None:
        check_dropout("dropout", self.dropout)
        self._require([
            (self.num_words >= 2, f"num_words must be >= 2; got {self.num_words}"),
            (self.dim >= 1, f"dim must be >= 1; got {self.dim}"),
            (self.precision in ("single", "double"),
             f"precision must be 'single' (float32) or 'double' (float64); got {self.precision!r}"),
        ])


@register_model("fasttext_maxpool")
class FastTextMaxPool(Model):
    """Max-pooled real word vectors of size 2d matched by the cosine (ablation "FastText-MaxPool").

    Parameters
    ----------
    config : FastTextMaxPoolConfig
    pretrained : torch.Tensor, optional
        Real ``(num_words, dim)`` initial values of the first d of the 2d coordinates (GloVe rows); the other d,
        and all 2d when None, are drawn from N(0, 1/d).
    generator : torch.Generator, optional
        Seeds the initial word vectors (the global random state is untouched).

    Examples
    --------
    >>> model = FastTextMaxPool(FastTextMaxPoolConfig(num_words=20, dim=4)).eval()
    >>> q, a = torch.tensor([[2, 3, 0]]), torch.tensor([[4, 5, 6]])
    >>> model.encode(q, q != 0).shape
    torch.Size([1, 8])
    >>> model(q, q != 0, a, a != 0).shape
    torch.Size([1])
    """

    config_class = FastTextMaxPoolConfig
    task = "matching"
    training_defaults = CNM.training_defaults           # the ablation trains as CNM does
    chunk_training = CNM.chunk_training

    def __init__(self, config: FastTextMaxPoolConfig, *, pretrained: torch.Tensor | None = None,
                 generator: torch.Generator | None = None) -> None:
        super().__init__(config)
        real = torch.float64 if config.precision == "double" else torch.float32
        self.embedding = _real_word_table(config.num_words, config.dim, pretrained, real, generator)
        self.dropout = nn.Dropout(config.dropout)

    def encode(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Sentence vectors ``(B, 2d)``: the coordinate-wise max of the word vectors over the words of ``mask``."""
        self.check_batch(ids, mask)
        return self._pooled(ids, mask)

    def _pooled(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.dropout(masked_max(self.embedding(ids), mask))

    def forward(self, q_ids: torch.Tensor, q_mask: torch.Tensor, a_ids: torch.Tensor,
                a_mask: torch.Tensor) -> torch.Tensor:
        """Matching scores ``(B,)``: the cosine of the pooled question and answer vectors."""
        self.check_pair(q_ids, q_mask, a_ids, a_mask)
        return torch.nn.functional.cosine_similarity(self._pooled(q_ids, q_mask), self._pooled(a_ids, a_mask),
                                                     dim=-1, eps=1e-8)

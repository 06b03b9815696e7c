"""The real-valued baseline of QPDN: a weighted bag of real word vectors of size 2d.

The "FastText with double-dimension real word vectors" row of thesis
Table 5.3: the same pipeline and word weighting as :class:`~qpnlp.models.QPDN`,
without complex states or measurements,

.. math::
    \\hat y = \\operatorname{softmax}\\Big(W \\sum_i p_i x_{w_i} + b\\Big), \\quad
    x_w \\in \\mathbb{R}^{2d},

with :math:`p_i` the word weights of :class:`~qpnlp.nn.WordWeighting` computed
from the vector norms. The first d coordinates start from the pretrained
vectors, the other d from N(0, 1/d).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from qpnlp.nn import WEIGHTINGS, WordWeighting, seeded_linear
from qpnlp.nn.embedding import _real_word_table
from qpnlp.nn._checks import check_dropout

from .base import Model, ModelConfig, register_model
from .qpdn import QPDN, _placeholder_idf, idf_of

__all__ = ["RealBagOfWordsConfig", "RealBagOfWords"]


@dataclass
class RealBagOfWordsConfig(ModelConfig):
    """Hyper-parameters of :class:`RealBagOfWords`.

    Attributes
    ----------
    num_words, num_classes : int
        Vocabulary size (padding and unknown included) and number of labels.
    dim : int
        d: the vectors have 2d real coordinates (the real count of a d-dim complex state).
    weighting : str
        ``amplitude_norm`` | ``trainable`` | ``idf`` | ``uniform``.
    dropout : float
        Dropout on the sentence vector.
    precision : str
        ``single`` (float32) | ``double`` (float64); ``model.double()`` switches and records it.
    """

    num_words: int
    num_classes: int
    dim: int = 50
    weighting: str = "amplitude_norm"
    dropout: float = 0.0
    precision: str = "single"

    def __post_init__(self) -> None:
        check_dropout("dropout", self.dropout)
        self._require([
            (self.num_words >= 2, f"num_words must be >= 2; got {self.num_words}"),
            (self.num_classes >= 2, f"num_classes must be >= 2; got {self.num_classes}"),
            (self.dim >= 1, f"dim must be >= 1; got {self.dim}"),
            (self.weighting in WEIGHTINGS, f"weighting must be one of {WEIGHTINGS}; got {self.weighting!r}"),
            (self.precision in ("single", "double"),
             f"precision must be 'single' (float32) or 'double' (float64); got {self.precision!r}"),
        ])


@register_model("real_bow")
class RealBagOfWords(Model):
    """Real-valued baseline: weighted average of real word vectors of size 2d + a linear layer.

    Parameters
    ----------
    config : RealBagOfWordsConfig
    pretrained : torch.Tensor, optional
        Real ``(num_words, dim)`` initial values of the first d of the 2d coordinates (GloVe rows); the other d,
        and all 2d when None, are drawn from N(0, 1/d).
    idf : torch.Tensor, optional
        ``(num_words,)`` positive IDF values, needed for ``weighting="idf"`` (:meth:`~qpnlp.models.Model.build`
        computes them from the training vocabulary) and ignored otherwise.
    generator : torch.Generator, optional
        Seeds every initial parameter (the global random state is untouched): the word vectors, then the
        classifier (weight, bias).

    Examples
    --------
    >>> model = RealBagOfWords(RealBagOfWordsConfig(num_words=20, num_classes=2, dim=4))
    >>> ids = torch.tensor([[2, 3, 4, 0], [5, 6, 0, 0]])
    >>> model(ids, ids != 0).shape
    torch.Size([2, 2])
    """

    config_class = RealBagOfWordsConfig
    training_defaults = QPDN.training_defaults          # the baseline gets the same search as QPDN

    @classmethod
    def build(cls, config: RealBagOfWordsConfig, *, vocabulary=None, pretrained: torch.Tensor | None = None,
              generator: torch.Generator | None = None) -> RealBagOfWords:
        return cls(config, pretrained=pretrained, idf=idf_of(config, vocabulary), generator=generator)

    @classmethod
    def empty(cls, config: RealBagOfWordsConfig) -> RealBagOfWords:
        return cls(config, idf=_placeholder_idf(config))

    def __init__(self, config: RealBagOfWordsConfig, *, pretrained: torch.Tensor | None = None,
                 idf: torch.Tensor | None = None, generator: torch.Generator | None = None) -> None:
        super().__init__(config)
        num_words, dim = config.num_words, config.dim
        real = torch.float64 if config.precision == "double" else torch.float32
        # pretrained checked as the complex models' tables are (a (dim,) row would broadcast)
        self.embedding = _real_word_table(num_words, dim, pretrained, real, generator)
        self.weighting = WordWeighting(num_words, config.weighting, idf=idf, dtype=real)
        self.dropout = nn.Dropout(config.dropout)
        self.classifier = seeded_linear(2 * dim, config.num_classes, dtype=real, generator=generator)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Class logits ``(B, C)`` for word ids ``(B, L)`` and a bool mask ``(B, L)`` (True = word)."""
        self.check_batch(ids, mask)
        vectors = self.embedding(ids)
        weights = self.weighting(ids, mask, torch.linalg.vector_norm(vectors, dim=-1))
        return self.classifier(self.dropout((weights.unsqueeze(-1) * vectors).sum(1)))

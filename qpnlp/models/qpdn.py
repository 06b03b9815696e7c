"""QPDN: the Quantum Probability-Driven Network (Semantic Hilbert Space classifier).

Thesis sections 3.2 and 5.1.1: words are complex states, a sentence is the
mixture of its word states, k trainable measurements give a probability
vector, and a dense layer maps it to class logits.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from qpnlp.hilbert import Ensemble
from qpnlp.measurement import ProjectiveMeasurement
from qpnlp.nn import PHASE_INITS, WEIGHTINGS, ComplexWordEmbedding, WordWeighting

from .base import Model, ModelConfig, check_batch, register_model

HEADS = ("measurement", "dense")


@dataclass
class QPDNConfig(ModelConfig):
    """Hyper-parameters of :class:`QPDN` (all JSON-serialisable).

    Attributes
    ----------
    num_words, num_classes : int
        Vocabulary size (with padding 0 and unknown 1) and number of labels.
    dim : int
        Hilbert-space dimension d (50 with GloVe 6B 50d).
    num_measurements : int
        k, the number of measurement states (thesis Table 5.4 explores 1..200).
    weighting : str
        ``amplitude_norm`` | ``trainable`` | ``idf`` | ``uniform`` (see :class:`WordWeighting`).
    complete : bool
        Orthonormal basis of measurements (forces k = d).
    orthonormal : bool
        Keep the k measurement vectors orthonormal.
    measurement_init : str
        ``orthogonal`` | ``identity`` | ``random``.
    train_measurements : bool
        False = fixed projectors (ablation "non-trainable orthogonal projectors").
    head : str
        ``measurement`` (QPDN) or ``dense`` (ablation: a dense layer on the
        real and imaginary parts of rho instead of projectors).
    phase_init : str
        ``uniform`` | ``zero`` | ``sign``.
    unit_amplitudes : bool
        Initial amplitude rows scaled to unit norm (see
        :class:`ComplexWordEmbedding`): amplitude-norm weights start uniform.
    freeze_amplitude : bool
        Keep the pretrained amplitudes fixed.
    dropout : float
        Dropout on the measured probabilities.
    complex128 : bool
        Use complex128 states (float64 tables).
    """

    num_words: int
    num_classes: int
    dim: int = 50
    num_measurements: int = 50
    weighting: str = "amplitude_norm"
    complete: bool = False
    orthonormal: bool = False
    measurement_init: str = "orthogonal"
    train_measurements: bool = True
    head: str = "measurement"
    phase_init: str = "uniform"
    unit_amplitudes: bool = False
    freeze_amplitude: bool = False
    dropout: float = 0.0
    complex128: bool = False

    def __post_init__(self) -> None:
        checks = [
            (self.num_words >= 2, f"num_words must be >= 2; got {self.num_words}"),
            (self.num_classes >= 2, f"num_classes must be >= 2; got {self.num_classes}"),
            (self.dim >= 1, f"dim must be >= 1; got {self.dim}"),
            (self.num_measurements >= 1, f"num_measurements must be >= 1; got {self.num_measurements}"),
            (self.weighting in WEIGHTINGS, f"weighting must be one of {WEIGHTINGS}; got {self.weighting!r}"),
            (self.head in HEADS, f"head must be one of {HEADS}; got {self.head!r}"),
            (self.phase_init in PHASE_INITS, f"phase_init must be one of {PHASE_INITS}; got {self.phase_init!r}"),
            (0.0 <= self.dropout < 1.0, f"dropout must be in [0, 1); got {self.dropout}"),
        ]
        self._require(checks)


@register_model("qpdn")
class QPDN(Model):
    r"""Quantum Probability-Driven Network.

    .. math::
        |w_i\rangle = \tfrac{r_{w_i}}{\|r_{w_i}\|} e^{i\phi_{w_i}}, \quad
        \rho = \sum_i p_i |w_i\rangle\langle w_i|, \quad
        q_k = \operatorname{Tr}(\rho |v_k\rangle\langle v_k|), \quad
        \hat y = \operatorname{softmax}(W q + b).

    The mixture is never built as a d x d matrix (``head="measurement"``):
    :math:`q_k = \sum_i p_i |\langle v_k|w_i\rangle|^2`.

    Parameters
    ----------
    config : QPDNConfig
    pretrained : torch.Tensor, optional
        Real ``(num_words, dim)`` initial amplitudes.
    idf : torch.Tensor, optional
        ``(num_words,)`` IDF values, needed for ``weighting="idf"``.
    generator : torch.Generator, optional
        For a reproducible initialisation.

    Examples
    --------
    >>> model = QPDN(QPDNConfig(num_words=20, num_classes=2, dim=8, num_measurements=4))
    >>> ids = torch.tensor([[2, 3, 4, 0], [5, 6, 0, 0]])
    >>> model(ids, ids != 0).shape
    torch.Size([2, 2])
    """

    config_class = QPDNConfig

    @classmethod
    def build(cls, config: QPDNConfig, *, vocabulary=None, pretrained: torch.Tensor | None = None,
              generator: torch.Generator | None = None) -> QPDN:
        """A fresh model for training; ``weighting="idf"`` takes its IDF values from ``vocabulary``."""
        return cls(config, pretrained=pretrained, idf=idf_of(config, vocabulary), generator=generator)

    @classmethod
    def empty(cls, config: QPDNConfig) -> QPDN:
        """A model to load saved parameters into (IDF values come from the state dict)."""
        return cls(config, idf=_placeholder_idf(config))

    def __init__(self, config: QPDNConfig, *, pretrained: torch.Tensor | None = None,
                 idf: torch.Tensor | None = None, generator: torch.Generator | None = None) -> None:
        super().__init__(config)
        if config.weighting == "idf" and idf is None:
            raise ValueError("weighting='idf' needs the idf values (QPDN.build takes them from the vocabulary)")
        real = torch.float64 if config.complex128 else torch.float32
        cplx = torch.complex128 if config.complex128 else torch.complex64
        self.embedding = ComplexWordEmbedding(
            config.num_words, config.dim, pretrained=pretrained, phase_init=config.phase_init,
            unit_amplitudes=config.unit_amplitudes,
            freeze_amplitude=config.freeze_amplitude, dtype=real, generator=generator)
        self.weighting = WordWeighting(config.num_words, config.weighting, idf=idf, dtype=real)
        if config.head == "measurement":
            self.measurement = ProjectiveMeasurement(
                config.dim, config.dim if config.complete else config.num_measurements, complete=config.complete,
                orthonormal=config.orthonormal or config.complete or None, init=config.measurement_init,
                trainable=config.train_measurements, dtype=cplx, generator=generator)
            features = self.measurement.num_outcomes
        else:
            features = 2 * config.dim * config.dim
        self.dropout = nn.Dropout(config.dropout)
        self.classifier = nn.Linear(features, config.num_classes, dtype=real)

    def mixture(self, ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Word states ``(B, L, d)`` and mixture weights ``(B, L)`` of each sentence."""
        check_batch(ids, mask)
        states, norms = self.embedding(ids)
        return states, self.weighting(ids, mask, norms)

    def features(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Measured probabilities ``(B, k)`` (or flattened rho for ``head="dense"``)."""
        states, weights = self.mixture(ids, mask)
        if self.config.head == "measurement":
            return self.measurement(states, weights)
        rho = Ensemble(states, weights, validate=False).dense().data
        return torch.view_as_real(rho).flatten(1)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Class logits ``(B, C)`` for word ids ``(B, L)`` and a bool mask ``(B, L)`` (True = word)."""
        return self.classifier(self.dropout(self.features(ids, mask)))

    def ensemble(self, ids: torch.Tensor, mask: torch.Tensor) -> Ensemble:
        """The sentences as validated lazy mixtures (for interpretation)."""
        states, weights = self.mixture(ids, mask)
        return Ensemble(states.detach(), weights.detach(), mask)


def idf_of(config, vocabulary) -> torch.Tensor | None:
    """IDF values ``(V,)`` of ``vocabulary`` when ``config.weighting == "idf"`` (else None)."""
    if config.weighting != "idf":
        return None
    if vocabulary is None:
        raise ValueError("weighting='idf' needs the training vocabulary")
    return vocabulary.idf().clamp_min(1e-6)


def _placeholder_idf(config) -> torch.Tensor | None:
    return torch.ones(config.num_words) if config.weighting == "idf" else None

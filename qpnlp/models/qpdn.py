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
from qpnlp.hilbert import _validation as V
from qpnlp.hilbert._mixture import weighted_sum
from qpnlp.nn import PHASE_INITS, WEIGHTINGS, ComplexWordEmbedding, WordWeighting, seeded_linear
from qpnlp.nn._checks import check_dropout

from ._heads import MEASUREMENT_INITS, make_measurement, measurement_checks
from .base import Model, ModelConfig, register_model

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
        ``sign`` (phases 0 or pi from the signs of the pretrained vectors, so the state keeps them; selected
        on dev, benchmarks/results/qpdn/SELECTION.md) | ``uniform`` | ``zero``.
    unit_amplitudes : bool
        Initial amplitude rows scaled to unit norm (see
        :class:`ComplexWordEmbedding`): amplitude-norm weights start uniform.
    freeze_amplitude : bool
        Keep the pretrained amplitudes fixed.
    dropout : float
        Dropout on the classifier's input: the measured probabilities (on
        the flattened density matrix with ``head="dense"``).
    complex128 : bool
        Use complex128 states (float64 tables).
    measurement : str
        ``projective`` (the papers) | ``povm``: a general measurement with
        ``num_measurements`` outcomes that always sum to one (k may exceed
        dim; ``complete`` and ``orthonormal`` do not apply; the
        initialisations ``orthogonal`` and ``random`` give a Haar-random
        isometry).
    povm_rank : int
        Rank r of each POVM effect; 0 = the smallest r with k r >= dim.
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
    phase_init: str = "sign"
    unit_amplitudes: bool = False
    freeze_amplitude: bool = False
    dropout: float = 0.0
    complex128: bool = False
    measurement: str = "projective"
    povm_rank: int = 0

    def __post_init__(self) -> None:
        checks = [
            (self.num_words >= 2, f"num_words must be >= 2; got {self.num_words}"),
            (self.num_classes >= 2, f"num_classes must be >= 2; got {self.num_classes}"),
            (self.dim >= 1, f"dim must be >= 1; got {self.dim}"),
            (self.num_measurements >= 1, f"num_measurements must be >= 1; got {self.num_measurements}"),
            (self.weighting in WEIGHTINGS, f"weighting must be one of {WEIGHTINGS}; got {self.weighting!r}"),
            (self.head in HEADS, f"head must be one of {HEADS}; got {self.head!r}"),
            (self.phase_init in PHASE_INITS, f"phase_init must be one of {PHASE_INITS}; got {self.phase_init!r}"),
            (self.measurement_init in MEASUREMENT_INITS,
             f"measurement_init must be one of {MEASUREMENT_INITS}; got {self.measurement_init!r}"),
            *measurement_checks(self, self.dim, self.num_measurements),
            (self.measurement != "povm" or not (self.complete or self.orthonormal),
             "complete and orthonormal apply to measurement='projective' (a POVM always sums to the identity)"),
            # accepted here, these failed only when the model was built (a config.json that loaded no model)
            (self.measurement == "povm" or self.complete or self.head != "measurement" or not self.orthonormal
             or self.num_measurements <= self.dim,
             f"orthonormal=True needs num_measurements <= dim; got {self.num_measurements} > {self.dim}"),
            (self.measurement == "povm" or self.complete or self.head != "measurement"
             or self.measurement_init != "identity" or self.num_measurements <= self.dim,
             f"measurement_init='identity' needs num_measurements <= dim; got {self.num_measurements} > "
             f"{self.dim} (use measurement_init='orthogonal')"),
        ]
        check_dropout("dropout", self.dropout)
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
    :math:`q_k = \sum_i p_i |\langle v_k|w_i\rangle|^2`. The output layer has a bias :math:`b` (C numbers),
    which the thesis' Algorithm 1 (:math:`\hat y = \operatorname{softmax}(q W)`) does not.

    Parameters
    ----------
    config : QPDNConfig
    pretrained : torch.Tensor, optional
        Real ``(num_words, dim)`` initial amplitudes.
    idf : torch.Tensor, optional
        ``(num_words,)`` IDF values, needed for ``weighting="idf"``.
    generator : torch.Generator, optional
        Seeds every initial parameter (the global random state is
        untouched), drawn in this order: the amplitude table (unless
        ``pretrained``), the phases (``phase_init="uniform"``), the
        measurement (vectors; one seed for the orthonormal parametrisation
        when k < d, or for a POVM with k r > d), the classifier (weight, then
        bias). Without a generator the global RNG is used, as ``nn.Linear`` does.

    Examples
    --------
    >>> model = QPDN(QPDNConfig(num_words=20, num_classes=2, dim=8, num_measurements=4))
    >>> ids = torch.tensor([[2, 3, 4, 0], [5, 6, 0, 0]])
    >>> model(ids, ids != 0).shape
    torch.Size([2, 2])
    """

    config_class = QPDNConfig
    # The papers' parameter search, done on dev inside every split (benchmarks/results/qpdn/SUMMARY.md).
    training_defaults = dict(epochs=30, patience=4, lr=1e-2, embedding_lr=1e-3, batch_size=32,
                             select=["dropout=0,0.3", "weighting=amplitude_norm,trainable"])

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
            self.measurement = make_measurement(
                config, config.dim, config.dim if config.complete else config.num_measurements, complete=config.complete,
                orthonormal=config.orthonormal or config.complete or None, init=config.measurement_init,
                trainable=config.train_measurements, dtype=cplx, generator=generator)
            features = self.measurement.num_outcomes
        else:
            features = 2 * config.dim * config.dim
        self.dropout = nn.Dropout(config.dropout)
        self.classifier = seeded_linear(features, config.num_classes, dtype=real, generator=generator)

    def mixture(self, ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        r"""Word states ``(B, L, d)`` and mixture weights ``(B, L)`` of each sentence.

        While validation is on, the batch is checked once here
        (:meth:`~qpnlp.models.Model.check_batch`) and so are the words' states:
        a word whose amplitude row is zero (or not finite) has no state
        :math:`r/\|r\|` and raises ValueError naming its id. The layers
        below then skip their own checks: unit states and softmax weights are
        valid by construction.
        """
        self.check_batch(ids, mask)
        states, norms = self.embedding(ids, validate=False)
        if V.enabled(self.validate):
            _check_word_norms(ids, mask, norms)
        return states, self.weighting(ids, mask, norms, validate=False)

    def features(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        r"""Measured probabilities ``(B, k)`` (or flattened rho for ``head="dense"``).

        The measurement head computes :math:`p_k = \sum_i p_i |\langle v_k|w_i\rangle|^2` on the U distinct
        words of the batch, ``(U, k)``, and mixes the gathered rows with the weights ``(B, L)``: the same
        value as :func:`~qpnlp.measurement.born_probabilities` on the ``(B, L, d)`` states of
        :meth:`mixture`, but repeated words and padding cost no state, no product and no gradient row.
        Under ``torch.compile`` it measures the ``(B, L, d)`` states instead: the distinct ids have a
        data-dependent count, which would break the graph.
        """
        if self.config.head == "measurement" and not torch.compiler.is_compiling():
            per_word, index, weights = self._distinct_probabilities(ids, mask)
            per_position = per_word.index_select(0, index.reshape(-1)).view(*ids.shape, -1)   # (B, L, k)
            return weighted_sum(weights, per_position)
        states, weights = self.mixture(ids, mask)
        if self.config.head == "measurement":
            return self.measurement(states, weights, validate=False)
        rho = Ensemble(states, weights, validate=False).dense().data
        return torch.view_as_real(rho).flatten(1)

    def _distinct_probabilities(self, ids, mask):
        """Per-word probabilities ``(U, k)`` of the distinct ids, each position's row ``(B, L)``, and the
        mixture weights ``(B, L)``; with :meth:`mixture`'s checks."""
        self.check_batch(ids, mask)
        states, norms, index = self.embedding.distinct_states(ids, validate=False)
        norms = norms.index_select(0, index.reshape(-1)).view(ids.shape)
        if V.enabled(self.validate):
            _check_word_norms(ids, mask, norms)
        return self.measurement(states, validate=False), index, self.weighting(ids, mask, norms, validate=False)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Class logits ``(B, C)`` for word ids ``(B, L)`` and a bool mask ``(B, L)`` (True = word)."""
        return self.classifier(self.dropout(self.features(ids, mask)))

    def ensemble(self, ids: torch.Tensor, mask: torch.Tensor) -> Ensemble:
        """The sentences as validated lazy mixtures (for interpretation)."""
        states, weights = self.mixture(ids, mask)
        return Ensemble(states.detach(), weights.detach(), mask)


def _check_word_norms(ids: torch.Tensor, mask: torch.Tensor, norms: torch.Tensor) -> None:
    """Every real word has a finite, non-zero amplitude row (its state is defined), one host sync."""
    norms = norms.detach()
    bad = mask & ~(norms > 0) | ~torch.isfinite(norms)
    if bool(bad.any()):
        where = tuple(int(i) for i in bad.nonzero()[0])
        raise ValueError(f"word id {int(ids[where])} (at ids{list(where)}) has a zero or non-finite amplitude row "
                         f"(norm {float(norms[where]):.3g}): its state r/||r|| is undefined; give the word a "
                         f"non-zero vector (e.g. unk_init='uniform') or mask it (shape {tuple(ids.shape)})")


def idf_of(config, vocabulary) -> torch.Tensor | None:
    """IDF values ``(V,)`` of ``vocabulary`` when ``config.weighting == "idf"`` (else None)."""
    if config.weighting != "idf":
        return None
    if vocabulary is None:
        raise ValueError("weighting='idf' needs the training vocabulary")
    return vocabulary.idf().clamp_min(1e-6)


def _placeholder_idf(config) -> torch.Tensor | None:
    return torch.ones(config.num_words) if config.weighting == "idf" else None

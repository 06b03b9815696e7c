r"""CNM: the Complex-valued Network for Matching (thesis sections 3.3 and 5.1.3).

Each sentence is a sequence of local density matrices over sliding windows
(:mod:`qpnlp.nn.mixture`), measured by k shared trainable
measurements; the measured probabilities are max-pooled over positions,
concatenated over the window sizes l = 1..4, and question and answer are
matched by the cosine similarity of those vectors.

Ablations of thesis Table 5.9 (switches of :class:`CNMConfig`):

* CNM-Real is its own model, :class:`~qpnlp.models.CNMReal` (``cnm_real``):
  real word vectors and real measurement vectors of dimension 2d;
* ``mixture="global"`` (CNM-Global-Mixture): one mixture per sentence with
  the softmax of the word weights over the whole sentence (one "window"
  covering it, no pooling);
* ``head="trace"`` (CNM-trace-inner-product, as NNQLM-I): no measurements;
  the score is :math:`\operatorname{Tr}(\bar\rho_q \bar\rho_a)`, averaged over
  window sizes, where :math:`\bar\rho` is the position-average of the local
  mixtures (the one pooling that keeps a density matrix; for the global
  mixture it is the sentence mixture itself). Computed lazily as
  :math:`\sum_{ij} c_i c'_j |\langle q_i|a_j\rangle|^2`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from qpnlp.hilbert import masked_softmax
from qpnlp.measurement import ProjectiveMeasurement, word_probabilities
from qpnlp.nn import (DEFAULT_WINDOWS, PHASE_INITS, POOLINGS, ComplexWordEmbedding, WordWeighting,
                      effective_word_weights, local_mixture, pool_positions)

from .base import Model, ModelConfig, check_batch, register_model

MIXTURES = ("local", "global")
CNM_HEADS = ("measurement", "trace")
CNM_WEIGHTINGS = ("amplitude_norm", "trainable", "uniform")   # softmax schemes (IDF is not a softmax)
CNM_INITS = ("identity", "orthogonal", "random")


@dataclass
class CNMConfig(ModelConfig):
    """Hyper-parameters of :class:`CNM` (all JSON-serialisable).

    Defaults follow thesis 5.1.3 where it states them: 50-dim complex
    embeddings (GloVe amplitudes, random phases), measurements initialised as
    orthogonal real one-hot vectors (``measurement_init="identity"``), windows
    l = 1, 2, 3, 4, max pooling, cosine similarity, word weights from the
    amplitude L2 norm (thesis 3.3.1). k = 50 is the smallest value of the
    thesis grid {50, 100, 300, 500}. The thesis' "dropout rate of 0.9" over the
    embedding and the measured probabilities is read as a *keep* probability
    (the TensorFlow ``keep_prob`` convention of the original code), so
    ``dropout=0.1`` is the probability of dropping.

    Attributes
    ----------
    num_words : int
        Vocabulary size (padding 0 and unknown 1 included).
    dim : int
        Hilbert-space dimension d (complex); CNM-Real uses 2d real dimensions.
    num_measurements : int
        k.
    windows : list of int
        Window sizes l.
    pooling : str
        ``max`` | ``mean`` over positions.
    weighting : str
        ``amplitude_norm`` | ``trainable`` | ``uniform``.
    mixture : str
        ``local`` | ``global`` (ablation).
    head : str
        ``measurement`` | ``trace`` (ablation).
    measurement_init : str
        ``identity`` | ``orthogonal`` | ``random``.
    phase_init : str
        See :class:`ComplexWordEmbedding`.
    dropout : float
        Dropout probability on word-vector coordinates (the state is
        renormalised) and on the pooled probabilities.
    complex128 : bool
        complex128 states (float64 tables).
    """

    num_words: int
    dim: int = 50
    num_measurements: int = 50
    windows: list[int] = field(default_factory=lambda: list(DEFAULT_WINDOWS))
    pooling: str = "max"
    weighting: str = "amplitude_norm"
    mixture: str = "local"
    head: str = "measurement"
    measurement_init: str = "identity"
    phase_init: str = "uniform"
    dropout: float = 0.1
    complex128: bool = False

    # Real coordinates per complex dimension of the measured vectors (CNM: d complex; CNM-Real: 2d real).
    width_factor = 1

    def __post_init__(self) -> None:
        self.windows = [int(w) for w in self.windows]
        width = self.width_factor * self.dim
        checks = [
            (self.num_words >= 2, f"num_words must be >= 2; got {self.num_words}"),
            (self.dim >= 1, f"dim must be >= 1; got {self.dim}"),
            (self.num_measurements >= 1, f"num_measurements must be >= 1; got {self.num_measurements}"),
            (len(self.windows) >= 1 and min(self.windows) >= 1 and len(set(self.windows)) == len(self.windows),
             f"windows must be distinct sizes >= 1; got {self.windows}"),
            (self.pooling in POOLINGS, f"pooling must be one of {POOLINGS}; got {self.pooling!r}"),
            (self.weighting in CNM_WEIGHTINGS, f"weighting must be one of {CNM_WEIGHTINGS}; got {self.weighting!r}"),
            (self.mixture in MIXTURES, f"mixture must be one of {MIXTURES}; got {self.mixture!r}"),
            (self.head in CNM_HEADS, f"head must be one of {CNM_HEADS}; got {self.head!r}"),
            (self.measurement_init in CNM_INITS,
             f"measurement_init must be one of {CNM_INITS}; got {self.measurement_init!r}"),
            (self.measurement_init != "identity" or self.num_measurements <= width,
             f"measurement_init='identity' needs num_measurements <= {width}; got {self.num_measurements} "
             f"(use measurement_init='random')"),
            (self.phase_init in PHASE_INITS, f"phase_init must be one of {PHASE_INITS}; got {self.phase_init!r}"),
            (0.0 <= self.dropout < 1.0, f"dropout must be in [0, 1); got {self.dropout}"),
        ]
        self._require(checks)


@register_model("cnm")
class CNM(Model):
    r"""Complex-valued Network for Matching.

    .. math::
        P^{(l)}_{t,k} = \operatorname{Tr}(\rho^{(l)}_t |v_k\rangle\langle v_k|), \quad
        x = \big[\max_t P^{(l)}_{t,\cdot}\big]_{l = 1..4}, \quad
        \operatorname{score}(q, a) = \cos(x_q, x_a).

    Parameters
    ----------
    config : CNMConfig
    pretrained : torch.Tensor, optional
        Real ``(num_words, dim)`` initial amplitudes (GloVe rows).
    generator : torch.Generator, optional
        For a reproducible initialisation.

    Examples
    --------
    >>> model = CNM(CNMConfig(num_words=20, dim=8, num_measurements=4)).eval()
    >>> q, a = torch.tensor([[2, 3, 4, 0]]), torch.tensor([[5, 6, 7, 8]])
    >>> model.encode(q, q != 0).shape                           # 4 windows x 4 measurements
    torch.Size([1, 16])
    >>> model(q, q != 0, a, a != 0).shape
    torch.Size([1])
    """

    config_class = CNMConfig
    task = "matching"

    def __init__(self, config: CNMConfig, *, pretrained: torch.Tensor | None = None,
                 generator: torch.Generator | None = None) -> None:
        super().__init__(config)
        real = torch.float64 if config.complex128 else torch.float32
        self._build_words(pretrained, real, generator)
        self.weighting = WordWeighting(config.num_words, config.weighting, dtype=real)
        if config.head == "measurement":
            self._build_measurement(real, generator)
        self.dropout = nn.Dropout(config.dropout)

    def _build_words(self, pretrained: torch.Tensor | None, real: torch.dtype, generator) -> None:
        self.embedding = ComplexWordEmbedding(self.config.num_words, self.config.dim, pretrained=pretrained,
                                              phase_init=self.config.phase_init, dtype=real, generator=generator)

    def _build_measurement(self, real: torch.dtype, generator) -> None:
        cplx = torch.complex128 if real == torch.float64 else torch.complex64
        self.measurement = ProjectiveMeasurement(self.config.dim, self.config.num_measurements,
                                                 init=self.config.measurement_init, dtype=cplx, generator=generator)

    # ------------------------------------------------------------------ pieces
    def states(self, ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Unit word states ``(B, L, d)`` (complex; real ``(B, L, 2d)`` for CNM-Real) and weight scores ``(B, L)``.

        In training mode, dropout zeroes state coordinates and the state is
        renormalised (it stays a unit vector).
        """
        check_batch(ids, mask)
        states, norms = self.word_states(ids)
        if self.training and self.config.dropout > 0:
            keep = self.dropout(torch.ones(states.shape, dtype=norms.dtype, device=states.device))
            states = torch.nn.functional.normalize(states * keep, dim=-1)     # padding stays zero
        return states, self.weighting.scores(ids, norms)

    def word_states(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Unit word states ``(B, L, d)`` and the norms ``(B, L)`` of their amplitude rows."""
        return self.embedding(ids)

    def word_probabilities(self, states: torch.Tensor) -> torch.Tensor:
        r"""Per-word :math:`|\langle v_k|w_i\rangle|^2`, real ``(B, L, k)``."""
        return word_probabilities(states, self.measurement.vectors())

    def probabilities(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Measured probabilities of the local mixtures, ``(B, W, L, k)`` (zero at padding).

        For ``mixture="global"``: ``(B, 1, 1, k)``, the sentence mixture.
        """
        if self.config.head != "measurement":
            raise ValueError("probabilities() needs head='measurement'")
        states, scores = self.states(ids, mask)
        probs = self.word_probabilities(states)
        if self.config.mixture == "global":
            weights = masked_softmax(scores, mask)
            return (weights.unsqueeze(-2) @ probs.to(weights.dtype)).unsqueeze(1)
        return local_mixture(probs, scores, mask, self.config.windows)

    def encode(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Sentence representation ``(B, W k)``: pooled probabilities, concatenated over window sizes."""
        probs = self.probabilities(ids, mask)
        if self.config.mixture == "global":
            pooled = probs[:, 0, 0]
        else:
            pooled = pool_positions(probs, mask.unsqueeze(1).expand(probs.shape[:-1]), self.config.pooling)
        return self.dropout(pooled.flatten(1))

    @staticmethod
    def overlaps(q_states: torch.Tensor, a_states: torch.Tensor) -> torch.Tensor:
        r"""Squared overlaps :math:`|\langle q_i|a_j\rangle|^2` of two batches of states, ``(B, Lq, La)``."""
        inner = q_states.conj() @ a_states.mT
        return inner.real.square() + inner.imag.square()

    def trace_scores(self, q_ids, q_mask, a_ids, a_mask) -> torch.Tensor:
        r""":math:`\operatorname{Tr}(\bar\rho_q\bar\rho_a)` averaged over window sizes, ``(B,)`` (``head="trace"``)."""
        q_states, q_scores = self.states(q_ids, q_mask)
        a_states, a_scores = self.states(a_ids, a_mask)
        overlap = self.overlaps(q_states, a_states)
        if self.config.mixture == "global":
            pairs = [(masked_softmax(q_scores, q_mask), masked_softmax(a_scores, a_mask))]
        else:
            pairs = [(effective_word_weights(q_scores, q_mask, l), effective_word_weights(a_scores, a_mask, l))
                     for l in self.config.windows]
        total = sum(((cq.unsqueeze(-2) @ overlap.to(cq.dtype)) @ ca.unsqueeze(-1)).squeeze(-1).squeeze(-1)
                    for cq, ca in pairs)
        return total / len(pairs)

    def forward(self, q_ids: torch.Tensor, q_mask: torch.Tensor, a_ids: torch.Tensor,
                a_mask: torch.Tensor) -> torch.Tensor:
        """Matching scores ``(B,)`` of question / answer batches (ids ``(B, Lq)``, ``(B, La)`` and bool masks)."""
        if self.config.head == "trace":
            return self.trace_scores(q_ids, q_mask, a_ids, a_mask)
        xq, xa = self.encode(q_ids, q_mask), self.encode(a_ids, a_mask)
        return torch.nn.functional.cosine_similarity(xq, xa, dim=-1, eps=1e-8)

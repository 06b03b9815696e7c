r"""CNM: the Complex-valued Network for Matching (thesis sections 3.3 and 5.1.3).

Each sentence is a sequence of local density matrices over sliding windows
(:mod:`qpnlp.nn.mixture`), measured by k shared trainable
measurements; the measured probabilities are max-pooled over positions,
concatenated over the window sizes l = 1..4, and question and answer are
matched by the cosine similarity of those vectors.

Ablations of thesis Table 5.9 (switches of :class:`CNMConfig`):

* CNM-Real is its own model, :class:`~qpnlp.models.CNMReal` (``cnm_real``):
  real word vectors and real measurement vectors of dimension 2d;
* so is FastText-MaxPool, :class:`~qpnlp.models.FastTextMaxPool`
  (``fasttext_maxpool``): real word vectors of dimension 2d max-pooled over
  the sentence, no mixture and no measurement;
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
from qpnlp.hilbert._mixture import weighted_sum
from qpnlp.measurement import word_probabilities
from qpnlp.nn import (DEFAULT_WINDOWS, PHASE_INITS, POOLINGS, WINDOW_PADDINGS, ComplexWordEmbedding, WordWeighting,
                      effective_word_weights, local_mixture, pool_positions, unit_rows, window_mask)
from qpnlp.nn._checks import check_dropout

from ._heads import make_measurement, measurement_checks
from .base import Model, ModelConfig, register_model

MIXTURES = ("local", "global")
CNM_HEADS = ("measurement", "trace")
CNM_WEIGHTINGS = ("amplitude_norm", "trainable", "uniform")   # softmax schemes (IDF is not a softmax)
CNM_INITS = ("identity", "orthogonal", "random")


@dataclass
class CNMConfig(ModelConfig):
    """Hyper-parameters of :class:`CNM` (all JSON-serialisable).

    Defaults are the reproduction's settings, selected on WikiQA dev over
    five seeds (benchmarks/results/cnm/SUMMARY.md): k = 300 (from the thesis
    grid {50, 100, 300, 500}), random initial measurements, sign phases (the
    state keeps the signs of the GloVe coordinates), no dropout; windows
    l = 1, 2, 3, 4, max pooling, cosine similarity and word weights from the
    amplitude L2 norm follow thesis 5.1.3 and 3.3.1. The thesis' own
    settings are ``num_measurements=50, measurement_init="identity",
    phase_init="uniform", dropout=0.1`` (its "dropout rate of 0.9" read as the
    TensorFlow keep probability).

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
    window_padding : str
        ``end`` (default: each window starts at a word and is cut at the
        sentence end, so a sentence and its reverse differ) | ``both`` (the
        authors' layer: the sentence is padded by l - 1 on both sides, every
        word starts and ends a window; symmetric under reversal). See
        :mod:`qpnlp.nn.mixture`.
    measurement : str
        ``projective`` (the papers) | ``povm``: a general measurement with
        ``num_measurements`` outcomes summing to one (``identity`` init: the
        first dim columns of the identity; ``orthogonal``/``random``: a
        Haar-random isometry).
    povm_rank : int
        Rank r of each POVM effect; 0 = the smallest r with k r >= dim.
    """

    num_words: int
    dim: int = 50
    num_measurements: int = 300
    windows: list[int] = field(default_factory=lambda: list(DEFAULT_WINDOWS))
    pooling: str = "max"
    weighting: str = "amplitude_norm"
    mixture: str = "local"
    head: str = "measurement"
    measurement_init: str = "random"
    phase_init: str = "sign"
    dropout: float = 0.0
    complex128: bool = False
    window_padding: str = "end"
    measurement: str = "projective"
    povm_rank: int = 0

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
            (self.measurement_init != "identity" or self.measurement == "povm" or self.num_measurements <= width,
             f"measurement_init='identity' needs num_measurements <= {width}; got {self.num_measurements} "
             f"(use measurement_init='random')"),
            (self.phase_init in PHASE_INITS, f"phase_init must be one of {PHASE_INITS}; got {self.phase_init!r}"),
            (self.window_padding in WINDOW_PADDINGS,
             f"window_padding must be one of {WINDOW_PADDINGS}; got {self.window_padding!r}"),
            *measurement_checks(self, self.dim, self.num_measurements),
            (self.width_factor == 1 or self.measurement == "projective",
             f"{type(self).__name__} has real measurement vectors: measurement must be 'projective'; "
             f"got {self.measurement!r}"),
        ]
        check_dropout("dropout", self.dropout)
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
        Seeds every initial parameter (the global random state is
        untouched), in this order: the amplitude table (unless
        ``pretrained``), the phases, the measurement (CNM-Real: the real
        word vectors, then the measurement vectors).

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
    # The reproduction's training settings (benchmarks/results/cnm/SUMMARY.md, trainall/README.md): selected on
    # WikiQA dev, with TREC-QA's learning rate selected on TREC-QA dev (TRAIN-ALL).
    # With the 300-d spaCy vectors, lr 1e-3 and scale 1/32 were best on the dev sets of both data sets
    # (benchmarks/results/cnm/session3/README.md). The triplet margin (thesis: 0.1) had the best mean dev MAP over
    # seeds 0-4 at 0.02 on WikiQA (of 0, 0.01, 0.02, 0.05, 0.1, 0.2) and at 0.05 on TREC-QA (of 0.02, 0.05, 0.1)
    # (benchmarks/results/cnm/margin/README.md).
    training_defaults = dict(epochs=6, patience=3, lr=1e-2, batch_size=32, negatives=1,
                             per_dataset={"trecqa": dict(lr=3e-3, margin=0.05), "wikiqa": dict(margin=0.02)},
                             per_vectors={"spacy-md-300d": dict(lr=1e-3, vectors_scale=1 / 32)})
    task = "matching"
    # One long candidate pads a whole batch (TREC-QA TRAIN-ALL: 29 tokens on average, 93 per batch): a training
    # step on length-sorted chunks is 1.7x faster (benchmarks/length_chunks.py).
    chunk_training = True

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
        self.measurement = make_measurement(self.config, self.config.dim, self.config.num_measurements,
                                            init=self.config.measurement_init, dtype=cplx, generator=generator)

    # ------------------------------------------------------------------ pieces
    def states(self, ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Unit word states ``(B, L, d)`` (complex; real ``(B, L, 2d)`` for CNM-Real) and weight scores ``(B, L)``.

        In training mode, dropout zeroes state coordinates and the state is
        renormalised (it stays a unit vector).
        """
        self.check_batch(ids, mask)
        return self._states(ids, mask)

    def _states(self, ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        states, norms = self.word_states(ids, validate=False)               # the batch is checked
        if self.training and self.config.dropout > 0:
            keep = self.dropout(torch.ones(states.shape, dtype=norms.dtype, device=states.device))
            states = unit_rows(states * keep)                                  # padding stays zero
        return states, self.weighting.scores(ids, norms)

    def word_states(self, ids: torch.Tensor, *, validate=None) -> tuple[torch.Tensor, torch.Tensor]:
        """Unit word states ``(B, L, d)`` and the norms ``(B, L)`` of their amplitude rows."""
        return self.embedding(ids, validate=validate)

    def word_probabilities(self, states: torch.Tensor, *, validate=None) -> torch.Tensor:
        r"""Per-word :math:`|\langle v_k|w_i\rangle|^2` (POVM: :math:`\langle w_i|E_k|w_i\rangle`), real ``(B, L, k)``.

        The states must be unit vectors, or zero at padding (checked while
        validation is on, or per ``validate``).
        """
        if self.config.measurement == "povm":
            return self.measurement(states, validate=validate)     # pure states, zero rows at padding
        return word_probabilities(states, self.measurement.vectors(validate=validate), validate=validate)

    def probabilities(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Measured probabilities of the local mixtures, ``(B, W, T, k)`` (zero where no window exists).

        T = L for ``window_padding="end"``, L + max(windows) - 1 for ``"both"``
        (:func:`~qpnlp.nn.window_mask` says which windows exist). For
        ``mixture="global"``: ``(B, 1, 1, k)``, the sentence mixture.
        """
        self._check_measurement_head("probabilities")
        self.check_batch(ids, mask)
        return self._probabilities(ids, mask)

    def _check_measurement_head(self, method: str) -> None:
        """ValueError naming ``method`` unless the model measures (``head="measurement"``)."""
        if self.config.head != "measurement":
            raise ValueError(f"{method}() needs head='measurement'; this CNM has head={self.config.head!r}, which "
                             f"scores a pair by Tr(rho_q rho_a) without measurements (use forward(q_ids, q_mask, "
                             f"a_ids, a_mask) for the scores)")

    def _probabilities(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        self._check_measurement_head("probabilities")
        states, scores = self._states(ids, mask)
        probs = self.word_probabilities(states, validate=False)       # unit (or zero) by construction
        if self.config.mixture == "global":
            weights = masked_softmax(scores, mask)
            return weighted_sum(weights, probs.to(weights.dtype))[:, None, None]     # (B, 1, 1, k)
        return local_mixture(probs, scores, mask, self.config.windows, self.config.window_padding)

    def encode(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Sentence representation ``(B, W k)``: pooled probabilities, concatenated over window sizes (``(B, k)`` for
        ``mixture="global"``); ``head="measurement"`` only (ValueError naming ``encode`` otherwise)."""
        self._check_measurement_head("encode")
        self.check_batch(ids, mask)
        return self._encode(ids, mask)

    def _encode(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        probs = self._probabilities(ids, mask)
        if self.config.mixture == "global":
            pooled = probs[:, 0, 0]
        else:
            windows = window_mask(mask, self.config.windows, self.config.window_padding)
            pooled = pool_positions(probs, windows, self.config.pooling)
        return self.dropout(pooled.flatten(1))

    @staticmethod
    def overlaps(q_states: torch.Tensor, a_states: torch.Tensor) -> torch.Tensor:
        r"""Squared overlaps :math:`|\langle q_i|a_j\rangle|^2` of two batches of states, ``(B, Lq, La)``."""
        inner = q_states.conj() @ a_states.mT
        return inner.real.square() + inner.imag.square()

    def trace_scores(self, q_ids, q_mask, a_ids, a_mask) -> torch.Tensor:
        r""":math:`\operatorname{Tr}(\bar\rho_q\bar\rho_a)` averaged over window sizes, ``(B,)`` (``head="trace"``)."""
        self.check_pair(q_ids, q_mask, a_ids, a_mask)
        q_states, q_scores = self._states(q_ids, q_mask)
        a_states, a_scores = self._states(a_ids, a_mask)
        overlap = self.overlaps(q_states, a_states)
        if self.config.mixture == "global":
            pairs = [(masked_softmax(q_scores, q_mask), masked_softmax(a_scores, a_mask))]
        else:
            padding = self.config.window_padding
            pairs = [(effective_word_weights(q_scores, q_mask, l, padding),
                      effective_word_weights(a_scores, a_mask, l, padding)) for l in self.config.windows]
        total = sum(((cq.unsqueeze(-2) @ overlap.to(cq.dtype)) @ ca.unsqueeze(-1)).squeeze(-1).squeeze(-1)
                    for cq, ca in pairs)
        return total / len(pairs)

    def forward(self, q_ids: torch.Tensor, q_mask: torch.Tensor, a_ids: torch.Tensor,
                a_mask: torch.Tensor) -> torch.Tensor:
        """Matching scores ``(B,)`` of question / answer batches (ids ``(B, Lq)``, ``(B, La)`` and bool masks)."""
        if self.config.head == "trace":
            return self.trace_scores(q_ids, q_mask, a_ids, a_mask)
        self.check_pair(q_ids, q_mask, a_ids, a_mask)
        xq, xa = self._encode(q_ids, q_mask), self._encode(a_ids, a_mask)
        return torch.nn.functional.cosine_similarity(xq, xa, dim=-1, eps=1e-8)

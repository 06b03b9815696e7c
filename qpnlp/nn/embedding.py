r"""Complex word embeddings and the word weights of a sentence mixture.

A word is the pure state :math:`|w\rangle = \frac{r}{\|r\|} e^{i\phi}`
(:class:`ComplexWordEmbedding`, thesis eq. 3.2); a sentence is the mixture
:math:`\rho = \sum_i p_i |w_i\rangle\langle w_i|` with the weights
:math:`p_i` of :class:`WordWeighting`.

Padding: id :data:`qpnlp.data.PAD_ID` has a zero row that is never trained;
padded positions must be masked explicitly by the caller.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from qpnlp.data.vocab import PAD_ID
from qpnlp.hilbert import masked_softmax

__all__ = ["PHASE_INITS", "WEIGHTINGS", "ComplexWordEmbedding", "WordWeighting"]

PHASE_INITS = ("uniform", "zero", "sign")
WEIGHTINGS = ("amplitude_norm", "trainable", "idf", "uniform")
#: Id of the padding token in every embedding table of :mod:`qpnlp.nn`.


def _initial_amplitude(num_words: int, dim: int, pretrained: torch.Tensor | None, dtype: torch.dtype,
                      generator: torch.Generator | None = None) -> torch.Tensor:
    """A fresh real ``(V, d)`` table: a copy of ``pretrained`` (checked), else N(0, 1/d) entries (norms about 1)."""
    if pretrained is None:
        return torch.randn(num_words, dim, dtype=dtype, generator=generator) / math.sqrt(dim)
    if tuple(pretrained.shape) != (num_words, dim):
        raise ValueError(f"pretrained must have shape ({num_words}, {dim}); got {tuple(pretrained.shape)}")
    if not torch.isfinite(pretrained).all():
        raise ValueError("pretrained vectors contain NaN or inf")
    return pretrained.detach().to(dtype).clone()


class ComplexWordEmbedding(nn.Module):
    r"""Word states :math:`|w\rangle = \sum_j \frac{r_j}{\|r\|} e^{i\phi_j}|e_j\rangle` (thesis eq. 3.2).

    Two real lookup tables of shape ``(V, d)``: amplitudes ``R`` and phases
    ``Phi``. The state is unit-norm by construction (normalised in forward).
    The raw amplitude norm :math:`\|r\|` is returned as well: the papers' public
    code uses it as the (softmaxed) word weight. A negative amplitude is the same
    as a phase shifted by :math:`\pi`, so amplitudes are left signed.

    Parameters
    ----------
    num_words : int
        Vocabulary size V, including padding (id 0) and unknown (id 1).
    dim : int
        Hilbert-space dimension d.
    pretrained : torch.Tensor, optional
        Real ``(V, d)`` initial amplitudes (e.g. GloVe rows aligned with the
        vocabulary); otherwise N(0, 1/d) so that norms are about 1.
    phase_init : {"uniform", "zero", "sign"}
        Phases uniform in :math:`[-\pi, \pi)` (the papers), all zero, or
        :math:`\pi` where the pretrained value is negative with amplitude
        :math:`|x|` (the state then equals the real vector ``x / ||x||``).
    unit_amplitudes : bool
        Scale every initial amplitude row to unit norm (one reading of the
        thesis' "amplitudes initialized by L2-norm"). The states are
        unchanged (they are normalised anyway); what changes is the raw norm
        :math:`\|r\|`, so amplitude-norm word weights start uniform
        instead of following the pretrained norms. Zero rows stay zero.
    sparse : bool
        Sparse gradients: a training step touches only the rows in the batch.
    freeze_amplitude, freeze_phase : bool
        Keep a table fixed (ablations).
    dtype : torch.dtype
        float32 (states complex64) or float64 (states complex128).
    padding_idx : int
        Row kept at zero amplitude and never trained; padded positions must be
        masked by the caller (they produce the zero vector, not a state).

    Examples
    --------
    >>> emb = ComplexWordEmbedding(10, 4, generator=torch.Generator().manual_seed(0))
    >>> states, norms = emb(torch.tensor([[2, 3, 0]]))
    >>> states.shape, states.dtype
    (torch.Size([1, 3, 4]), torch.complex64)
    >>> torch.linalg.vector_norm(states, dim=-1)
    tensor([[1., 1., 0.]], grad_fn=<LinalgVectorNormBackward0>)
    """

    def __init__(self, num_words: int, dim: int, *, pretrained: torch.Tensor | None = None,
                 phase_init: str = "uniform", unit_amplitudes: bool = False, sparse: bool = True,
                 freeze_amplitude: bool = False,
                 freeze_phase: bool = False, dtype: torch.dtype = torch.float32, padding_idx: int = PAD_ID,
                 generator: torch.Generator | None = None) -> None:
        super().__init__()
        if num_words < 2 or dim < 1:
            raise ValueError(f"need num_words >= 2 (padding and unknown) and dim >= 1; got {num_words}, {dim}")
        if phase_init not in PHASE_INITS:
            raise ValueError(f"phase_init must be one of {PHASE_INITS}; got {phase_init!r}")
        if dtype not in (torch.float32, torch.float64):
            raise TypeError(f"dtype must be float32 or float64 (the tables are real); got {dtype}")
        amplitude = _initial_amplitude(num_words, dim, pretrained, dtype, generator)
        if unit_amplitudes:  # a zero row divided by the clamped norm stays zero
            amplitude = amplitude / torch.linalg.vector_norm(amplitude, dim=-1, keepdim=True).clamp_min(
                torch.finfo(dtype).tiny)
        phase = self._initial_phase(phase_init, amplitude, dtype, generator)
        if phase_init == "sign":
            amplitude = amplitude.abs()
        amplitude[padding_idx] = 0
        phase[padding_idx] = 0
        self.padding_idx = padding_idx
        self.amplitude = nn.Embedding(num_words, dim, padding_idx=padding_idx, sparse=sparse, _weight=amplitude,
                                      _freeze=freeze_amplitude)
        self.phase = nn.Embedding(num_words, dim, padding_idx=padding_idx, sparse=sparse, _weight=phase,
                                  _freeze=freeze_phase)

    @staticmethod
    def _initial_phase(phase_init, amplitude, dtype, generator) -> torch.Tensor:
        if phase_init == "uniform":
            return (torch.rand(amplitude.shape, dtype=dtype, generator=generator) * 2 - 1) * math.pi
        if phase_init == "zero":
            return torch.zeros_like(amplitude)
        return (amplitude < 0).to(dtype) * math.pi  # built in dtype: no float32 round trip of pi

    @property
    def num_words(self) -> int:
        return self.amplitude.num_embeddings

    @property
    def dim(self) -> int:
        return self.amplitude.embedding_dim

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Word states and raw amplitude norms.

        Parameters
        ----------
        ids : torch.LongTensor
            ``(...,)`` word ids.

        Returns
        -------
        states : torch.Tensor
            Complex ``(..., d)``, unit norm (zero vectors at padding).
        norms : torch.Tensor
            Real ``(...,)`` amplitude norms :math:`\\|r\\|` (0 at padding).
        """
        r = self.amplitude(ids)
        norms = torch.linalg.vector_norm(r, dim=-1)
        unit = r / norms.clamp_min(torch.finfo(r.dtype).tiny).unsqueeze(-1)
        return torch.polar(unit, self.phase(ids)), norms

    def all_states(self) -> torch.Tensor:
        """States of the whole vocabulary, complex ``(V, d)`` (row 0, padding, is zero)."""
        return self(torch.arange(self.num_words, device=self.amplitude.weight.device))[0]


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

    Shapes: ``ids (B, L), mask (B, L), norms (B, L) -> weights (B, L)``.

    Examples
    --------
    >>> weighting = WordWeighting(10, "uniform")
    >>> ids = torch.tensor([[2, 3, 0]])
    >>> weighting(ids, ids != 0, torch.ones(1, 3))
    tensor([[0.5000, 0.5000, 0.0000]])
    """

    def __init__(self, num_words: int, scheme: str = "amplitude_norm", *, idf: torch.Tensor | None = None,
                 sparse: bool = True, dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        if scheme not in WEIGHTINGS:
            raise ValueError(f"weighting must be one of {WEIGHTINGS}; got {scheme!r}")
        self.scheme = scheme
        if scheme == "trainable":
            self.table = nn.Embedding(num_words, 1, padding_idx=PAD_ID, sparse=sparse,
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

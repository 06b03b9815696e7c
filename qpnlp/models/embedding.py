"""Complex word embeddings: a word is the pure state r/||r|| * e^{i phi}."""

from __future__ import annotations

import math

import torch
from torch import nn

PHASE_INITS = ("uniform", "zero", "sign")
PAD_ID = 0


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
        amplitude = self._initial_amplitude(num_words, dim, pretrained, dtype, generator)
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
    def _initial_amplitude(num_words, dim, pretrained, dtype, generator) -> torch.Tensor:
        if pretrained is None:
            return torch.randn(num_words, dim, dtype=dtype, generator=generator) / math.sqrt(dim)
        if pretrained.shape != (num_words, dim):
            raise ValueError(f"pretrained must have shape ({num_words}, {dim}); got {tuple(pretrained.shape)}")
        if not torch.isfinite(pretrained).all():
            raise ValueError("pretrained vectors contain NaN or inf")
        return pretrained.detach().to(dtype).clone()

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

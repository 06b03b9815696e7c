r"""CNM-Real: the real-valued ablation of CNM (thesis Table 5.9).

Real word vectors and real measurement vectors of dimension 2d (the real
count of a d-dimensional complex state): GloVe in the first d coordinates,
N(0, 1/d) in the others. Everything else is CNM's: local mixtures over
windows, max pooling, cosine matching. The probabilities are those of the
unit vectors,

.. math::
    P_{t,k} = \sum_i c_{t,i}\, (\hat v_k \cdot \hat w_i)^2 .
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from qpnlp.nn._checks import check_ids
from qpnlp.nn.embedding import _real_word_table

from .base import register_model
from .cnm import CNM, CNMConfig

__all__ = ["CNMRealConfig", "CNMReal"]


@dataclass
class CNMRealConfig(CNMConfig):
    """Hyper-parameters of :class:`CNMReal`: those of :class:`~qpnlp.models.CNMConfig` (``phase_init`` unused).

    ``dim`` is d: the word and measurement vectors are real, of 2d coordinates; ``measurement`` must be
    ``"projective"``.
    """

    width_factor = 2


@register_model("cnm_real")
class CNMReal(CNM):
    """CNM with real vectors of size 2d (ablation "CNM-Real").

    Parameters
    ----------
    config : CNMRealConfig
    pretrained : torch.Tensor, optional
        Real ``(num_words, dim)`` initial values of the first d of the 2d coordinates (GloVe rows); the other d,
        and all 2d when None, are drawn from N(0, 1/d).
    generator : torch.Generator, optional
        Seeds every initial parameter (the global random state is untouched): the real word vectors, then the
        measurement vectors (``head="measurement"``).

    Examples
    --------
    >>> model = CNMReal(CNMRealConfig(num_words=20, dim=4, num_measurements=3)).eval()
    >>> q, a = torch.tensor([[2, 3, 0]]), torch.tensor([[4, 5, 6]])
    >>> model(q, q != 0, a, a != 0).shape
    torch.Size([1])
    """

    config_class = CNMRealConfig

    def _build_words(self, pretrained: torch.Tensor | None, real: torch.dtype, generator) -> None:
        self.real_embedding = _real_word_table(self.config.num_words, self.config.dim, pretrained, real, generator)

    def _build_measurement(self, real: torch.dtype, generator) -> None:
        c = self.config
        init = (torch.eye(2 * c.dim, dtype=real)[:c.num_measurements] if c.measurement_init == "identity"
                else torch.randn(c.num_measurements, 2 * c.dim, dtype=real, generator=generator))
        if c.measurement_init == "orthogonal" and c.num_measurements <= 2 * c.dim:
            # Haar-random orthonormal rows, as CNM's complex "orthogonal" (more rows than 2d cannot be orthogonal:
            # random unit vectors then, as there)
            q, r = torch.linalg.qr(init.T)
            init = (q * torch.sign(torch.diagonal(r)).unsqueeze(0)).T
        self.real_measurement = nn.Parameter(init.clone())

    def word_states(self, ids: torch.Tensor, *, validate=None) -> tuple[torch.Tensor, torch.Tensor]:
        """Unit real vectors ``(B, L, 2d)`` and the norms ``(B, L)`` of the rows."""
        check_ids(ids, self.config.num_words, validate=validate)
        vectors = self.real_embedding(ids)
        norms = torch.linalg.vector_norm(vectors, dim=-1)
        return vectors / norms.clamp_min(torch.finfo(vectors.dtype).tiny).unsqueeze(-1), norms

    def word_probabilities(self, states: torch.Tensor, *, validate=None) -> torch.Tensor:
        r"""Per-word :math:`(\hat v_k \cdot w_i)^2`, ``(B, L, k)`` (real unit states; ``validate`` unused)."""
        v = torch.nn.functional.normalize(self.real_measurement, dim=-1)
        return (states @ v.T).square()

    @staticmethod
    def overlaps(q_states: torch.Tensor, a_states: torch.Tensor) -> torch.Tensor:
        """Squared dot products of the unit vectors, ``(B, Lq, La)``."""
        return (q_states @ a_states.mT).square()

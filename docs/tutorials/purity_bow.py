"""A small quantum-inspired sentence classifier, registered as ``purity_bow`` (the "Add your own model" tutorial).

A sentence is the uniform mixture of its word states,
rho = (1/n) sum_i |w_i><w_i|; its features are the Born probabilities
Tr(rho P_k) of k trainable projectors and its purity Tr(rho^2), which says how
much the words agree. Neither is ever computed from a d x d matrix.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from qpnlp.measurement import ProjectiveMeasurement
from qpnlp.models import Model, ModelConfig, register_model
from qpnlp.nn import ComplexWordEmbedding


@dataclass
class PurityBowConfig(ModelConfig):
    """Attributes
    ----------
    num_words, num_classes, dim : int
        Filled in by the trainer (vocabulary, labels, width of the vectors).
    num_measurements : int
        k, the number of trainable projectors.
    """

    num_words: int
    num_classes: int
    dim: int = 50
    num_measurements: int = 20


@register_model("purity_bow")
class PurityBow(Model):
    config_class = PurityBowConfig

    def __init__(self, config, *, pretrained=None, generator=None):
        super().__init__(config)
        self.embedding = ComplexWordEmbedding(config.num_words, config.dim, pretrained=pretrained,
                                              generator=generator)
        self.measurement = ProjectiveMeasurement(config.dim, config.num_measurements, generator=generator)
        self.classifier = nn.Linear(config.num_measurements + 1, config.num_classes)

    def forward(self, ids, mask):
        states, _ = self.embedding(ids)                                  # (B, L, d) unit states
        weights = mask / mask.sum(-1, keepdim=True)                      # (B, L) uniform mixture
        probabilities = self.measurement(states, weights)                # (B, k) = Tr(rho P_k)
        overlaps = (states.conj() @ states.mT).abs().square()            # (B, L, L) |<w_i|w_j>|^2
        purity = torch.einsum("bi,bij,bj->b", weights, overlaps, weights)  # Tr(rho^2)
        return self.classifier(torch.cat([probabilities, purity.unsqueeze(-1)], -1))

"""Models: complex word embeddings, QPDN and its baselines, the gated complex RNN."""

from .cgrnn import CGRNN, CGRNNCell
from .complex_activations import Hirose, ModReLU, hirose, modrelu
from .embedding import ComplexWordEmbedding
from .qpdn import QPDN, QPDNConfig, RealBagOfWords
from .unitary import StateTransition
from .weighting import WordWeighting

__all__ = ["ComplexWordEmbedding", "WordWeighting", "QPDN", "QPDNConfig", "RealBagOfWords",
           "CGRNN", "CGRNNCell", "StateTransition", "Hirose", "ModReLU", "hirose", "modrelu"]

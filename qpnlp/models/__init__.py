"""Models: complex word embeddings, QPDN and its baselines (more models live in their own modules)."""

from .embedding import ComplexWordEmbedding
from .qpdn import QPDN, QPDNConfig, RealBagOfWords
from .weighting import WordWeighting

__all__ = ["ComplexWordEmbedding", "WordWeighting", "QPDN", "QPDNConfig", "RealBagOfWords"]

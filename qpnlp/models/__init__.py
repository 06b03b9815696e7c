"""Models: complex word embeddings, QPDN and its baselines, CNM, the gated complex RNN (Word2Fun lives in qpnlp.models.word2fun)."""

from .cgrnn import CGRNN, CGRNNCell
from .cnm import CNM, CNMConfig
from .complex_activations import Hirose, ModReLU, hirose, modrelu
from .embedding import ComplexWordEmbedding
from .qpdn import QPDN, QPDNConfig, RealBagOfWords
from .unitary import StateTransition
from .weighting import WordWeighting

__all__ = ["ComplexWordEmbedding", "WordWeighting", "QPDN", "QPDNConfig", "RealBagOfWords",
           "CNM", "CNMConfig", "CGRNN", "CGRNNCell", "StateTransition", "Hirose", "ModReLU", "hirose", "modrelu"]

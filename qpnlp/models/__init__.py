"""Models: complex word embeddings, QPDN and its baselines, CNM, the gated complex RNN (Word2Fun lives in qpnlp.models.word2fun)."""

from .cgrnn import CGRNN, CGRNNCell
from .cnm import CNM, CNMConfig
from .complex_order import ComplexOrderEmbedding, RealPositionalEmbedding, make_embedding
from .complex_activations import Hirose, ModReLU, hirose, modrelu
from .embedding import ComplexWordEmbedding
from .order_classifiers import OrderClassifier, OrderClassifierConfig
from .qpdn import QPDN, QPDNConfig, RealBagOfWords
from .unitary import StateTransition
from .weighting import WordWeighting

__all__ = ["ComplexWordEmbedding", "WordWeighting", "QPDN", "QPDNConfig", "RealBagOfWords",
           "CNM", "CNMConfig", "ComplexOrderEmbedding", "RealPositionalEmbedding", "make_embedding",
           "OrderClassifier", "OrderClassifierConfig", "CGRNN", "CGRNNCell", "StateTransition", "Hirose", "ModReLU", "hirose", "modrelu"]

"""Paper models behind one contract (:mod:`qpnlp.models.base`), one file each, found by name in a registry.

Registered models (name: class, task, source):

* ``qpdn``: :class:`QPDN`, classification, thesis 5.1.2 (Table 5.2)
* ``real_bow``: :class:`RealBagOfWords`, classification, thesis Table 5.3 (real baseline)
* ``order_classifier``: :class:`OrderClassifier`, classification, complex-order paper (Table 2)
* ``cgrnn_classifier``: :class:`CGRNNClassifier`, classification, gated complex RNN poster
* ``cnm``: :class:`CNM`, matching, thesis 3.3 / 5.1.3 (Table 5.8)
* ``cnm_real``: :class:`CNMReal`, matching, thesis Table 5.9 (CNM-Real)
* ``fasttext_maxpool``: :class:`FastTextMaxPool`, matching, thesis Table 5.9 (FastText-MaxPool)
* ``word2fun``: :class:`qpnlp.word2fun.Word2Fun`, temporal, thesis ch. 4 (registered by its own package)

Building blocks (complex layers, embeddings, activations) live in :mod:`qpnlp.nn`.
"""

from .base import (Model, ModelConfig, check_batch, get_model_class, read_model_header, register_model,
                   registered_models,
                   unregister_model)
from .cgrnn_classifier import CGRNNClassifier, CGRNNClassifierConfig
from .cnm import CNM, CNMConfig
from .cnm_real import CNMReal, CNMRealConfig
from .fasttext_maxpool import FastTextMaxPool, FastTextMaxPoolConfig
from .order_classifier import OrderClassifier, OrderClassifierConfig
from .qpdn import QPDN, QPDNConfig
from .real_bow import RealBagOfWords, RealBagOfWordsConfig

__all__ = ["Model", "ModelConfig", "check_batch", "register_model", "unregister_model", "get_model_class",
           "registered_models", "read_model_header", "QPDN", "QPDNConfig", "RealBagOfWords", "RealBagOfWordsConfig",
           "CNM", "CNMConfig", "CNMReal", "CNMRealConfig", "FastTextMaxPool", "FastTextMaxPoolConfig",
           "OrderClassifier", "OrderClassifierConfig", "CGRNNClassifier", "CGRNNClassifierConfig"]

#: Building blocks that qpnlp 0.1 exported from :mod:`qpnlp.models` and that now live in :mod:`qpnlp.nn`; still
#: importable from here, with a DeprecationWarning naming the new place (to be removed in 0.3).
_MOVED_TO_NN = ("CGRNN", "CGRNNCell", "ComplexOrderEmbedding", "ComplexWordEmbedding", "Hirose", "ModReLU",
               "RealPositionalEmbedding", "StateTransition", "WordWeighting", "hirose", "make_embedding", "modrelu")


def __getattr__(name: str):
    if name in _MOVED_TO_NN:
        import warnings

        from qpnlp import nn

        warnings.warn(f"qpnlp.models.{name} moved to qpnlp.nn.{name} in qpnlp 0.2; import it from qpnlp.nn "
                      f"(the old name goes in 0.3)", DeprecationWarning, stacklevel=2)
        return getattr(nn, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

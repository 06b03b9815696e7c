"""Word2Fun: words as functions of time (thesis Sec. 4.2, Table 4.1), split the way gensim splits Word2Vec.

Each word ``u`` has a time-dependent context vector :math:`f(u, t) \\in
\\mathbb{R}^D`; each word ``v`` has a static target ("compass") vector
:math:`h(v)`.  Skip-gram with negative sampling is trained with the loss of
thesis Sec. 4.2.2 (positive term plus the *mean* over the negatives):

.. math::
    L = -\\sum_{(u, v, \\hat V, t)} \\Bigl( \\log\\sigma(f(u,t)\\, h(v)^T)
        + \\frac{1}{|\\hat V|} \\sum_{\\hat v \\in \\hat V} \\log\\sigma(-f(u,t)\\, h(\\hat v)^T) \\Bigr)

Modules, one job each:

* :mod:`~qpnlp.word2fun.functions` -- the time scale, the frequency ladders
  and the function families (a functional core on plain tensors);
* :mod:`~qpnlp.word2fun.model` -- the :class:`Word2Fun` module and its
  :class:`Word2FunConfig` (a registered model: ``save_pretrained`` /
  ``from_pretrained`` as every qpnlp model);
* :mod:`~qpnlp.word2fun.sgd` -- the hand-written sparse SGD step and the
  roughness penalty;
* :mod:`~qpnlp.word2fun.config` -- :class:`~qpnlp.word2fun.config.TrainConfig`, the training settings, their
  defaults and the per-word weights they give;
* :mod:`~qpnlp.word2fun.sources` -- the token sources (in memory, or streamed
  from disk in chunks);
* :mod:`~qpnlp.word2fun.loop` -- the SGD loop and its :class:`~qpnlp.word2fun.loop.TrainStats`;
* :mod:`~qpnlp.word2fun.train` -- :func:`fit`, the one entry point (corpus
  in, vectors out; checkpoints and resuming);
* :mod:`~qpnlp.word2fun.distributed` -- several processes (``torchrun``):
  shards, one vocabulary, merged updates, one checkpoint;
* :mod:`~qpnlp.word2fun.keyed_vectors` -- :class:`KeyedVectors`, the query
  object (gensim's ``most_similar``, ``similarity``, ``at(year)``, plus
  trajectories over time);
* :mod:`~qpnlp.word2fun.static_vectors` -- :class:`StaticKeyedVectors`, every
  word's vector at one time (``vectors.at(year)``) with gensim's queries;
* :mod:`~qpnlp.word2fun.convert` -- converting directories saved by qpnlp 0.1.

Importing this package registers the model as ``"word2fun"``.

Example
-------
>>> from qpnlp.data import TimestampedCorpus
>>> docs = [(1900 + i % 10, ["war", "peace", "treaty", "army"][i % 3:] + ["trade"]) for i in range(200)]
>>> vectors = fit(TimestampedCorpus.from_pairs(docs), TrainConfig(epochs=1), dim=4, min_count=1).vectors
>>> "war" in vectors, len(vectors.most_similar("war", topn=3, year=1905))
(True, 3)
"""

from qpnlp.word2fun.convert import convert_legacy_word2fun, is_legacy_word2fun
from qpnlp.word2fun.functions import (
    FAMILIES,
    SINUSOIDAL_FAMILIES,
    TimeScale,
    fixed_frequencies,
    harmonic_frequencies,
    linear_function,
    sinusoidal_function,
    time2fun_function,
    word2fun_loss,
)
from qpnlp.word2fun.keyed_vectors import KeyedVectors
from qpnlp.word2fun.model import Word2Fun, Word2FunConfig
from qpnlp.word2fun.sgd import centre_sgd_step, roughness, sgd_step
from qpnlp.word2fun.static_vectors import StaticKeyedVectors
from qpnlp._errors import TrainingDiverged
from qpnlp.word2fun.config import TrainConfig
from qpnlp.word2fun.loop import TrainStats
from qpnlp.word2fun.train import FitResult, fit, train_word2fun

__all__ = [
    "FAMILIES",
    "SINUSOIDAL_FAMILIES",
    "FitResult",
    "KeyedVectors",
    "StaticKeyedVectors",
    "TimeScale",
    "TrainConfig",
    "TrainStats",
    "TrainingDiverged",
    "Word2Fun",
    "Word2FunConfig",
    "centre_sgd_step",
    "convert_legacy_word2fun",
    "fit",
    "fixed_frequencies",
    "harmonic_frequencies",
    "is_legacy_word2fun",
    "linear_function",
    "roughness",
    "sgd_step",
    "sinusoidal_function",
    "time2fun_function",
    "train_word2fun",
    "word2fun_loss",
]

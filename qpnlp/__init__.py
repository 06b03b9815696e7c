"""qpnlp: quantum-probability NLP in PyTorch.

Subpackages
-----------
hilbert      sememe bases, pure states, density matrices and the batched complex maths.
measurement  projectors, trainable projective measurements and POVMs, Born-rule probabilities.
nn           complex building blocks: layers, recurrent cells, attention, word and position embeddings.
models       the paper models behind one contract: QPDN and its real baseline, CNM and its ablations
             (CNM-Real, FastText-MaxPool), complex-order classifiers, gated complex RNN classifier.
word2fun     Word2Fun: words as functions of time (fit, KeyedVectors), split like gensim.
training     the trainer, protocols, selection on dev, checkpoints and resumable training state.
evaluation   ranking metrics (MAP, MRR, P@1), BM25, drift metrics.
interpret    nearest words, word weights, matching patterns, plots.
data         dataset readers, the vocabulary, the tokenizer, pretrained vectors, skip-gram pairs.
testing      hypothesis strategies and assertion helpers for users' own property tests
             (``pip install 'qpnlp[testing]'``).

``pip install qpnlp`` is the library alone; the extras add the built-in data (``data``: GloVe 6B 50d,
the State of the Union addresses), ``testing``, ``vectors``, ``ann``, ``qutip``, ``tensorboard``,
``fast`` (numba: compiled loops, same results as the torch ops they replace; TBB on Linux x86-64, so that
Word2Fun's step runs in threads that survive ``fork``), ``bench``, ``docs`` and ``test`` (everything the test suite
needs).
"""

__version__ = "0.2.0.dev0"

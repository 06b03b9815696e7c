"""qpnlp: quantum-probability NLP in PyTorch.

Subpackages
-----------
hilbert      sememe bases, pure states, density matrices and the batched complex maths.
measurement  projectors, trainable projective measurements, Born-rule probabilities.
models       QPDN, CNM, complex-order embeddings and layers, Word2Fun, gated complex RNN.
interpret    nearest words, word weights, matching patterns, plots.
data         dataset readers, vocabularies, pretrained vectors.
testing      hypothesis strategies and assertion helpers for users' own property tests.
"""

__version__ = "0.1.0"

"""Complex building blocks, laid out like ``torch.nn``; no paper logic.

Every layer works on native complex tensors (complex64/complex128) and, where
it makes sense, in a real dtype as the ordinary real layer (for the real
baselines). ``qpnlp.nn`` builds on :mod:`qpnlp.hilbert` and
:mod:`qpnlp.measurement` only;    the paper models in :mod:`qpnlp.models` are
built from it.

======================================  ===================================================================
module                                  what it holds
======================================  ===================================================================
:mod:`~qpnlp.nn.functional`             functions on tensors: split activations, per-part product, dropout,
                                        readouts, masked pooling, unit rows, Hermitian attention scores, input rule
:mod:`~qpnlp.nn.linear`                 :class:`ComplexLinear`, :class:`ComplexConv1d`,
                                        :class:`ComplexFeedForward`
:mod:`~qpnlp.nn.activation`             modReLU, Hirose, the sum and product gates (cgRNN poster)
:mod:`~qpnlp.nn.pointwise`              :class:`ComplexDropout`, :class:`Readout`
:mod:`~qpnlp.nn.normalization`          :class:`PartLayerNorm`
:mod:`~qpnlp.nn.attention`              :class:`ComplexMultiheadSelfAttention` (complex-order paper eq. 14)
:mod:`~qpnlp.nn.unitary`                :class:`StateTransition` (the one unitary mechanism), Cayley step
:mod:`~qpnlp.nn.recurrent`              :func:`masked_scan` (the one masked recurrence), complex LSTM,
                                        uRNN and cgRNN cells and the layers that run them
:mod:`~qpnlp.nn.embedding`              :class:`ComplexWordEmbedding`, :class:`WordWeighting`
:mod:`~qpnlp.nn.position`               complex-order and real positional embeddings
:mod:`~qpnlp.nn.position_functional`    functions on tensors of the position encodings: complex-order, TPE
:mod:`~qpnlp.nn.mixture`                lazy local mixtures over sliding windows (CNM)
:mod:`~qpnlp.nn.utils`                  :func:`real_parameter_count`
======================================  ===================================================================
"""

from .activation import (COMPLEX_ACTIVATIONS, GATES, Hirose, ModReLU, ProdGate, SumGate, gate_prod, gate_sum,
                         hirose, make_activation, make_gate, modrelu)
from .attention import ComplexMultiheadSelfAttention
from .embedding import PHASE_INITS, WEIGHTINGS, ComplexWordEmbedding, WordWeighting
from .functional import (READOUTS, SPLIT_ACTIVATIONS, as_complex_input, complex_dropout, hermitian_attention_scores,
                         masked_max, masked_mean, part_mul, readout, readout_dim, split_activation,
                         unit_rows)
from .linear import LAYER_DTYPES, ComplexConv1d, ComplexFeedForward, ComplexLinear
from .mixture import (DEFAULT_WINDOWS, POOLINGS, WINDOW_PADDINGS, effective_word_weights, local_mixture,
                      local_mixture_density, pool_positions, window_mask, window_weights)
from .normalization import PartLayerNorm
from .pointwise import ComplexDropout, Readout
from .position import (EMBEDDING_KINDS, FREQUENCY_INITS, SHARING_SCHEMES, ComplexOrderEmbedding,
                       RealPositionalEmbedding, complex_order_embedding, default_positions, make_embedding,
                       sinusoidal_frequencies, sinusoidal_position_encoding)
from .recurrent import CGRNN, CGRNNCell, ComplexLSTMCell, ComplexRNN, URNNCell, cgrnn_step, masked_scan
from .unitary import (TRANSITION_MODES, CayleyStepSGD, StateTransition, cayley_step, split_cayley_step_parameters,
                      unitarity_error)
from .utils import real_parameter_count, seeded_linear

__all__ = [
    # functional
    "READOUTS", "SPLIT_ACTIVATIONS", "as_complex_input", "split_activation", "part_mul", "complex_dropout",
    "readout", "readout_dim", "masked_mean", "masked_max", "unit_rows", "hermitian_attention_scores",
    # layers
    "LAYER_DTYPES", "ComplexLinear", "ComplexConv1d", "ComplexFeedForward", "ComplexDropout", "Readout",
    "PartLayerNorm", "ComplexMultiheadSelfAttention",
    # activations and gates
    "COMPLEX_ACTIVATIONS", "GATES", "hirose", "modrelu", "gate_sum", "gate_prod", "Hirose", "ModReLU", "SumGate",
    "ProdGate", "make_activation", "make_gate",
    # unitary
    "TRANSITION_MODES", "StateTransition", "CayleyStepSGD", "cayley_step", "unitarity_error",
    "split_cayley_step_parameters",
    # recurrent
    "masked_scan", "ComplexLSTMCell", "URNNCell", "ComplexRNN", "cgrnn_step", "CGRNNCell", "CGRNN",
    # embeddings
    "PHASE_INITS", "WEIGHTINGS", "ComplexWordEmbedding", "WordWeighting",
    "EMBEDDING_KINDS", "SHARING_SCHEMES", "FREQUENCY_INITS", "complex_order_embedding", "sinusoidal_frequencies",
    "sinusoidal_position_encoding", "default_positions", "ComplexOrderEmbedding", "RealPositionalEmbedding",
    "make_embedding",
    # mixtures
    "DEFAULT_WINDOWS", "POOLINGS", "WINDOW_PADDINGS", "window_weights", "window_mask", "local_mixture",
    "local_mixture_density", "effective_word_weights", "pool_positions",
    # utilities
    "real_parameter_count", "seeded_linear",
]

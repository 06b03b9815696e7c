r"""Sentence classifiers of the complex-order paper (Table 2): FastText, CNN, RNN and a one-layer Transformer.

Each network takes any of the five embedding variants of
:mod:`qpnlp.nn.position` through one switch, ``embedding``:
``"none"``, ``"pe"``, ``"tpe"`` give real embeddings and the network is built
from the layers of :mod:`qpnlp.nn` in a real dtype (the
ordinary real network); ``"complex_vanilla"`` and ``"complex_order"`` give
complex embeddings and the same network is built in a complex dtype (the
paper's complex network, appendix B). The complex features are turned real by
a readout (``"modulus"`` by default: the paper takes the norm in the last
layer) followed by a real linear layer giving the logits.

Architectures (``x`` the (B, L, D) embeddings, padded entries exactly zero):

``"fasttext"``
    masked mean over words, complex dense (``hidden``), readout, linear.
``"cnn"``
    the real words of each text are first moved to the front, in order
    (so left padding, right padding and holes in the mask give the same
    windows); then for each kernel size :math:`k` a narrow complex
    convolution with ``filters`` kernels, per-part ReLU, per-part
    max-pooling over the windows that lie inside the text (Kim, 2014),
    concatenated, dropout, readout, linear.
``"rnn"``
    ``rnn_cell="lstm"`` (complex LSTM), ``"urnn"`` (unitary RNN) or
    ``"cgrnn"`` (:class:`qpnlp.nn.recurrent.CGRNN`; real embeddings are
    promoted to complex with zero imaginary part since that layer is complex
    only); last state, dropout, readout, linear.
``"transformer"``
    one encoder layer: :math:`x \leftarrow \mathrm{LN}(x + \mathrm{Drop}(\mathrm{MHA}(x)))`,
    :math:`x \leftarrow \mathrm{LN}(x + \mathrm{Drop}(\mathrm{FFN}(x)))` with
    the eq. 14 attention and per-part layer norm; masked mean, readout, linear.

Against the paper's appendix B (the same networks in the real and complex
variants, so the comparison of Table 2 is like for like):

- FastText: the paper applies its dense layer (eq. 10, with a real
  activation :math:`\sigma` on each part) to the *sum* of the word vectors;
  here it is the masked *mean* (the sum would grow with the length of the
  text) and the dense layer has no activation, since the readout and the
  real linear layer follow.
- CNN: the paper stacks complex convolutions, a complex dense layer and the
  norm; here it is one layer of convolutions with per-part ReLU and
  max-pooling over time (Kim, 2014), then the readout and a real linear layer.
- RNN: ``rnn_cell="cgrnn"`` uses the unitary transition of
  :class:`qpnlp.nn.recurrent.CGRNN`, whose default (``"expm"``) is not the
  poster's Cayley step (``"cayley_step"``, eq. 3); see :mod:`qpnlp.nn.unitary`.

``forward(ids (B, L) long, mask (B, L) bool) -> logits (B, C)``, as
:func:`qpnlp.training.fit` expects. Padding never changes the logits (tested).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import torch
from torch import Tensor, nn

from qpnlp.nn import (CGRNN, EMBEDDING_KINDS, READOUTS, ComplexConv1d, ComplexDropout, ComplexFeedForward,
                      ComplexLinear, ComplexMultiheadSelfAttention, ComplexOrderEmbedding, ComplexRNN, PartLayerNorm,
                      make_embedding, masked_max, masked_mean, readout, readout_dim, seeded_linear, split_activation)
from qpnlp.nn._checks import check_dropout
from qpnlp.nn._embedding_options import check_embedding_options

from .base import Model, ModelConfig, register_model

__all__ = ["NETWORKS", "RNN_CELLS", "OrderClassifierConfig", "OrderClassifier"]

#: The networks of :class:`OrderClassifier` (``network=``).
NETWORKS = ("fasttext", "cnn", "rnn", "transformer")
#: The recurrent cells of the ``rnn`` network (``rnn_cell=``).
RNN_CELLS = ("lstm", "urnn", "cgrnn")
PRECISIONS = ("single", "double")


@dataclass
class OrderClassifierConfig(ModelConfig):
    """Hyper-parameters of :class:`OrderClassifier`.

    Parameters
    ----------
    num_words, num_classes : int
    network : {"fasttext", "cnn", "rnn", "transformer"}
    embedding : {"none", "pe", "tpe", "complex_vanilla", "complex_order"}
        The one switch between the paper's five variants.
    dim : int
        Embedding width D (real D for real variants, complex D for complex ones).
    hidden : int
        FastText dense width, RNN state size.
    filters, kernel_sizes : int, tuple of int
        CNN kernels per size and the sizes.
    rnn_cell : {"lstm", "urnn", "cgrnn"}
    heads, ffn_hidden : int
        Transformer heads (``dim % heads == 0``) and feed-forward width.
    dropout : float
    readout : {"modulus", "re_im", "squared_modulus"}
        Complex-to-real map before the output layer (ignored by real variants).
    share_parts : bool
        :math:`\\Re W = \\Im W` in the complex layers (paper Table 4); complex variants, not the cgRNN cell.
    max_len : int
        Rows of the trainable ``"pe"`` table.
    precision : {"single", "double"}
        float32/complex64 or float64/complex128.
    embedding_options : dict
        Passed to :func:`~qpnlp.nn.position.make_embedding` (``"complex_order"``: sharing
        schemes, initial phases, frequency initialisation; every kind: ``sparse``), checked when the
        config is made: names the embedding takes, bools for ``initial_phase`` and ``sparse``, a finite
        ``frequency_scale`` > 0 (errors name ``embedding_options[...]``).
    """

    num_words: int
    num_classes: int
    network: str = "fasttext"
    embedding: str = "complex_order"
    dim: int = 50
    hidden: int = 128
    filters: int = 64
    kernel_sizes: tuple = (3, 4, 5)
    rnn_cell: str = "lstm"
    heads: int = 5
    ffn_hidden: int = 128
    dropout: float = 0.1
    readout: str = "modulus"
    share_parts: bool = False
    max_len: int = 512
    precision: str = "single"
    embedding_options: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        # 2.7 or True: not a size; "a", None or NaN raised int()'s own error, which named no field
        if not all(type(k) is int or isinstance(k, float) and k.is_integer() for k in self.kernel_sizes):
            raise ValueError(f"kernel_sizes must be integers; got {list(self.kernel_sizes)}")
        self.kernel_sizes = tuple(int(k) for k in self.kernel_sizes)
        checks = [("network", NETWORKS), ("embedding", EMBEDDING_KINDS), ("rnn_cell", RNN_CELLS),
                  ("readout", READOUTS), ("precision", PRECISIONS)]
        for name, allowed in checks:
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}; got {getattr(self, name)!r}")
        if self.num_words < 2 or self.num_classes < 2:
            raise ValueError(f"need num_words >= 2 and num_classes >= 2; got {self.num_words}, {self.num_classes}")
        if min(self.dim, self.hidden, self.filters, self.heads, self.ffn_hidden, self.max_len) < 1 \
                or not self.kernel_sizes or min(self.kernel_sizes) < 1:
            raise ValueError("dim, hidden, filters, heads, ffn_hidden, max_len and kernel sizes must be >= 1")
        if self.network == "transformer" and self.dim % self.heads:
            raise ValueError(f"dim ({self.dim}) must be divisible by heads ({self.heads})")
        check_dropout("dropout", self.dropout)
        if self.share_parts and self.embedding not in ("complex_vanilla", "complex_order"):
            raise ValueError("share_parts applies to complex embeddings only")
        if self.share_parts and self.network == "rnn" and self.rnn_cell == "cgrnn":
            raise ValueError("share_parts is not available for rnn_cell='cgrnn' (its layer has no shared-parts "
                             "option); use rnn_cell='lstm' or 'urnn'")
        check_embedding_options(self.embedding, self.embedding_options, prefix="embedding_options")

    @property
    def is_complex(self) -> bool:
        return self.embedding in ("complex_vanilla", "complex_order") or \
            (self.network == "rnn" and self.rnn_cell == "cgrnn")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["kernel_sizes"] = list(self.kernel_sizes)
        return d


def _compact(x: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
    """Move the real positions of each row to the front, keeping their order: ``(B, L, D), (B, L)``.

    A stable sort of ``~mask``; right-padded rows are left unchanged (the
    identity permutation), so their results are bit-identical.
    """
    order = torch.sort((~mask).to(torch.uint8), dim=1, stable=True).indices
    return x.gather(1, order.unsqueeze(-1).expand_as(x)), mask.gather(1, order)


@register_model("order_classifier")
class OrderClassifier(Model):
    r"""FastText / CNN / RNN / Transformer over any of the five embedding variants.

    Parameters
    ----------
    config : OrderClassifierConfig
    pretrained : Tensor, optional
        Real (V, D) vectors: word embedding (real variants) or amplitudes (complex).
    generator : torch.Generator, optional
        Seeds every initial parameter (the global random state is untouched),
        drawn in the order the layers are built: the embedding, then the
        network (dense layer; convolutions by kernel size; RNN cell;
        attention then feed-forward), then the output layer.

    Examples
    --------
    >>> cfg = OrderClassifierConfig(num_words=20, num_classes=3, network="cnn", embedding="complex_order", dim=4,
    ...                             filters=2, kernel_sizes=(2,))
    >>> model = OrderClassifier(cfg).eval()
    >>> ids = torch.tensor([[2, 3, 4, 0], [5, 6, 0, 0]])
    >>> model(ids, ids != 0).shape
    torch.Size([2, 3])
    """

    config_class = OrderClassifierConfig
    # The protocol of the complex-order reproduction (benchmarks/reproduce_complex_order.py, issue #20): Adam 1e-3 on
    # the dense parameters, SparseAdam 1e-3 on the tables, the dense lr chosen on dev from 1e-3 and 1e-4 (the paper
    # searched its pool), <= 30 epochs with patience 5.
    training_defaults = dict(epochs=30, patience=5, lr=1e-3, embedding_lr=1e-3, batch_size=32,
                             select=["lr=1e-3,1e-4"])

    @property
    def chunk_training(self) -> bool:
        """Cut training batches into length-sorted chunks (:mod:`qpnlp.training.length_chunks`) for the CNN, RNN
        and Transformer: SST-2's phrases fill 29% of their padded batches, and a Transformer step at D=300 on
        chunks is 1.6-1.7x faster (``benchmarks/length_chunks.py --cases order-transformer-pe-300 ...``);
        FastText's calls cost more than its padding."""
        return self.config.network != "fasttext"

    def __init__(self, config: OrderClassifierConfig, *, pretrained: Tensor | None = None,
                 generator: torch.Generator | None = None) -> None:
        super().__init__(config)
        c = config
        real = torch.float64 if c.precision == "double" else torch.float32
        self.embedding = make_embedding(c.embedding, c.num_words, c.dim, pretrained=pretrained, max_len=c.max_len,
                                        dtype=real, generator=generator, **dict(c.embedding_options))
        complex_dtype = torch.complex128 if real == torch.float64 else torch.complex64
        self.dtype = dtype = complex_dtype if c.is_complex else real
        kw = dict(dtype=dtype, generator=generator)
        if c.share_parts:
            kw["share_parts"] = True
        self.drop = ComplexDropout(c.dropout)
        if c.network == "fasttext":
            self.dense = ComplexLinear(c.dim, c.hidden, **kw)
            width = c.hidden
        elif c.network == "cnn":
            self.convs = nn.ModuleList(ComplexConv1d(c.dim, c.filters, k, **kw) for k in c.kernel_sizes)
            width = c.filters * len(c.kernel_sizes)
        elif c.network == "rnn":
            if c.rnn_cell == "cgrnn":
                self.rnn = CGRNN(c.dim, c.hidden, dtype=dtype, generator=generator)
            else:
                self.rnn = ComplexRNN(c.dim, c.hidden, cell=c.rnn_cell, **kw)
            width = c.hidden
        else:
            self.attention = ComplexMultiheadSelfAttention(c.dim, c.heads, dropout=c.dropout, **kw)
            self.ffn = ComplexFeedForward(c.dim, c.ffn_hidden, dropout=c.dropout, **kw)
            self.norm1 = PartLayerNorm(c.dim, dtype=dtype)
            self.norm2 = PartLayerNorm(c.dim, dtype=dtype)
            width = c.dim
        self.output = seeded_linear(readout_dim(c.readout, width, dtype.is_complex), c.num_classes, dtype=real,
                                    generator=generator)

    def features(self, ids: Tensor, mask: Tensor, positions: Tensor | None = None) -> Tensor:
        """Sentence features before the readout, (B, width), complex for complex variants."""
        c = self.config
        if c.network == "fasttext" and isinstance(self.embedding, ComplexOrderEmbedding) \
                and self.embedding.fuses_mean():
            # embedding, dropout and masked mean in one step (ComplexOrderEmbedding.dropped_mean; the same values);
            # under torch.compile the three steps below, whose graph breaks only at the lookups
            dropout = self.drop.p if self.drop.training else 0.0
            return self.dense(self.embedding.dropped_mean(ids, mask, positions, dropout=dropout))
        x = self.embedding(ids, mask, positions)
        if x.dtype != self.dtype:
            x = x.to(self.dtype)  # cgrnn over a real embedding: zero imaginary part
        x = self.drop(x)
        if c.network == "fasttext":
            return self.dense(masked_mean(x, mask))
        if c.network == "cnn":
            x, mask = _compact(x, mask)  # the words of each text first, in order: padding anywhere is absent
            k_max = max(c.kernel_sizes)
            if x.shape[1] < k_max:  # texts shorter than a kernel: pad with zero vectors
                x = torch.cat([x, x.new_zeros(x.shape[0], k_max - x.shape[1], x.shape[2])], 1)
            lengths = mask.sum(-1, keepdim=True)
            pooled = []
            for conv in self.convs:
                y = split_activation(conv(x), "relu")  # (B, T, filters)
                t = torch.arange(y.shape[1], device=y.device)
                valid = t <= (lengths - conv.kernel_size).clamp_min(0)  # windows inside the text (>= 1 window)
                pooled.append(masked_max(y, valid))
            return self.drop(torch.cat(pooled, -1))
        if c.network == "rnn":
            _, h = self.rnn(x, mask)
            return self.drop(h)
        x = self.norm1(x + self.drop(self.attention(x, mask)))
        x = self.norm2(x + self.drop(self.ffn(x)))
        return masked_mean(x, mask)

    def forward(self, ids: Tensor, mask: Tensor, positions: Tensor | None = None) -> Tensor:
        r"""Logits.

        Parameters
        ----------
        ids : LongTensor, shape (B, L)
        mask : BoolTensor, shape (B, L)
            True at real tokens (explicit, as for every model).
        positions : Tensor, shape (L,) or (B, L), optional
            Explicit (possibly non-integer) positions for the embedding.

        Returns
        -------
        Tensor, real, shape (B, C)
        """
        self.check_batch(ids, mask)
        return self.output(readout(self.features(ids, mask, positions), self.config.readout))

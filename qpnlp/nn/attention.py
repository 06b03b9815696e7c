r"""Complex multi-head self-attention (Wang et al., ICLR 2020, eq. 13-14).

.. math::

    e_{ij} = \frac{|q_i k_j^\dagger|}{\sqrt{n}}, \quad
    a_{ij} = \operatorname{softmax}_j(e_{ij}), \quad
    \mathrm{out}_i = \sum_j a_{ij}\, v_j

per head (:math:`q = x W^Q`, :math:`k = x W^K`, :math:`v = x W^V` complex,
:math:`n` the head dimension), heads concatenated and mixed by a complex
:math:`W^O`. The scores come from :func:`~qpnlp.nn.functional.hermitian_attention_scores`.

The paper writes :math:`a_{ij} = \mathrm{softmax}\, e_{ij} / \sum_i e_{ij}`;
we read it as the usual softmax of :math:`e_{ij}` over the keys :math:`j`
(an extra division by a sum of moduli would only rescale the logits per key
and is not a normalisation over :math:`j`). The scores are real and
non-negative, and invariant under a global phase of the input when the
query/key biases vanish (tested).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from qpnlp._module_precision import ComplexPrecisionMixin
from qpnlp.hilbert import _validation as V

from ._checks import check_dropout, check_int, check_mask
from .functional import _from_parts, _parts, hermitian_attention_scores
from .linear import ComplexLinear, _check_dtype

__all__ = ["ComplexMultiheadSelfAttention"]


class ComplexMultiheadSelfAttention(ComplexPrecisionMixin, nn.Module):
    r"""Multi-head self-attention with the paper's eq. 13-14 (see the module docstring).

    Padded keys get zero weight. For a real dtype, the standard scaled
    dot-product attention.

    Parameters
    ----------
    dim, heads : int
        ``dim`` divisible by ``heads``.
    share_parts : bool
        :math:`\Re W^{Q/K/V} = \Im W^{Q/K/V}` (paper Table 4).
    dropout : float
        On the attention weights.
    dtype : torch.dtype
    generator : torch.Generator, optional

    Shapes: ``x (B, L, dim), mask (B, L) -> (B, L, dim)``.

    Examples
    --------
    >>> att = ComplexMultiheadSelfAttention(4, 2)
    >>> att(torch.randn(1, 3, 4, dtype=torch.complex64)).shape
    torch.Size([1, 3, 4])
    """

    def __init__(self, dim: int, heads: int, *, share_parts: bool = False, dropout: float = 0.0,
                 dtype: torch.dtype = torch.complex64, generator: torch.Generator | None = None) -> None:
        super().__init__()
        dim, heads = check_int("dim", dim), check_int("heads", heads)
        if heads < 1 or dim % heads:
            raise ValueError(f"dim ({dim}) must be divisible by heads ({heads})")
        self.dropout = check_dropout("dropout", dropout)
        self.dim, self.heads, self.dtype = dim, heads, _check_dtype(dtype)
        make = lambda: ComplexLinear(dim, dim, dtype=dtype, share_parts=share_parts, generator=generator)  # noqa
        self.q, self.k, self.v, self.out = make(), make(), make(), make()

    def extra_repr(self) -> str:
        return f"{self.dim}, heads={self.heads}, dropout={self.dropout}, dtype={self.dtype}"

    def attention_weights(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """Attention weights (B, heads, L, L), rows summing to one over the unmasked keys."""
        return self._attend(self._masked_input(x, mask), mask)

    def _masked_input(self, x: Tensor, mask: Tensor | None) -> Tensor:
        """``x`` (B, L, dim) checked, with zeros at padding: a padded position may hold anything (NaN, inf), and
        0 * NaN would reach the outputs and gradients (and NaN queries would give NaN rows of weights)."""
        V.check_tensor("x", x)
        if x.ndim != 3:
            raise ValueError(f"x must have shape (B, L, {self.dim}); got {tuple(x.shape)}")
        if mask is None:
            return x
        check_mask(mask, x[..., 0], ids_name="x without its last dim")
        return x.masked_fill(~mask.unsqueeze(-1), 0)

    def _split(self, t: Tensor) -> Tensor:
        b, l, _ = t.shape
        return t.view(b, l, self.heads, self.dim // self.heads).transpose(1, 2)

    def _attend(self, x: Tensor, mask: Tensor | None) -> Tensor:
        q, k = (self._split(lin(x)) for lin in (self.q, self.k))
        scores = hermitian_attention_scores(q, k)  # (B, H, L, L), real
        if mask is None:
            return torch.softmax(scores, dim=-1)
        keys = mask[:, None, None, :]
        scores = scores.masked_fill(~keys, torch.finfo(scores.dtype).min)
        # exactly 0 at padded keys, also in a row without a real key (softmax alone would spread it over padding)
        return torch.softmax(scores, dim=-1).masked_fill(~keys, 0)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        x = self._masked_input(x, mask)
        v = self._split(self.v(x))
        a = self._attend(x, mask)
        a = F.dropout(a, self.dropout, self.training)
        if v.is_complex():  # real weights times complex values: one real product on the [Re, Im] pairs
            n = v.shape[-1]
            out = _from_parts((a @ _parts(v).flatten(-2)).unflatten(-1, (n, 2)))  # (B, H, L, n)
        else:
            out = a @ v
        b, _, l, _ = out.shape
        return self.out(out.transpose(1, 2).reshape(b, l, self.dim))

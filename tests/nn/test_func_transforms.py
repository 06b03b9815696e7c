"""qpnlp.nn modules under torch.func (``functional_call`` with ``grad`` and ``vmap``).

The fused lookups of the word embeddings and the polar map of the order embeddings are autograd functions with a
``ctx`` forward, which torch.func refuses ("it must override the setup_context staticmethod"), and the id check
called ``.tolist()`` on a vmapped tensor. Under a transform the modules now run the plain torch graph of the same
maths, and the id check passes vmapped ids.
"""

from __future__ import annotations

import torch
from torch.func import functional_call, grad, vmap

from qpnlp.nn import ComplexOrderEmbedding, ComplexWordEmbedding
from qpnlp.nn.functional import masked_max
from qpnlp.nn.position_functional import complex_order_embedding

B, L, D, V = 3, 5, 4, 20
IDS = torch.randint(1, V, (B, L), generator=torch.Generator().manual_seed(0))
MASK = torch.ones(B, L, dtype=torch.bool)


def _params(module):
    return {name: p.detach() for name, p in module.named_parameters()}


def test_word_embedding_gradients_under_grad_equal_autograd():
    module = ComplexWordEmbedding(V, D)
    params = _params(module)

    def loss(p):
        states, norms = functional_call(module, p, (IDS,))
        return states.real.sum() + norms.sum()

    expected = torch.autograd.grad(loss(dict(module.named_parameters())), list(module.parameters()))
    got = grad(loss)(params)
    for (name, _), want in zip(module.named_parameters(), expected):
        torch.testing.assert_close(got[name].to_dense(), want.to_dense())     # sparse tables: sparse gradients


def test_word_embedding_under_vmap_equals_the_loop():
    module = ComplexWordEmbedding(V, D)
    mapped = vmap(lambda ids: module(ids)[0])(IDS)
    torch.testing.assert_close(mapped, torch.stack([module(IDS[i])[0] for i in range(B)]))


def test_order_embedding_under_vmap_equals_the_loop():
    module = ComplexOrderEmbedding(V, D)
    mapped = vmap(lambda ids, mask: module(ids[None], mask[None])[0])(IDS, MASK)
    torch.testing.assert_close(mapped, module(IDS, MASK))
    assert module.fuses_mean()                  # the fused mean in eager mode, its three steps under vmap
    pooled = vmap(lambda ids, mask: module.dropped_mean(ids[None], mask[None])[0])(IDS, MASK)
    torch.testing.assert_close(pooled, module.dropped_mean(IDS, MASK))
    amplitude = torch.rand(B, L, D, generator=torch.Generator().manual_seed(1))
    positions = torch.arange(L, dtype=torch.float32)
    torch.testing.assert_close(vmap(lambda a: complex_order_embedding(a, torch.ones(D), positions))(amplitude),
                               complex_order_embedding(amplitude, torch.ones(D), positions))


def test_masked_max_gradient_under_grad_equals_autograd():
    x = torch.randn(B, L, D, dtype=torch.complex64, generator=torch.Generator().manual_seed(2))   # no ties
    valid = torch.tensor([[True, True, False, True, False]] * B)
    leaf = x.clone().requires_grad_()
    (want,) = torch.autograd.grad(masked_max(leaf, valid).abs().sum(), leaf)
    torch.testing.assert_close(grad(lambda z: masked_max(z, valid).abs().sum())(x), want)
    torch.testing.assert_close(vmap(masked_max)(x, valid), masked_max(x, valid))

"""qpnlp.nn modules under torch.func (``functional_call`` with ``grad`` and ``vmap``).

The fused lookups of the word embeddings and the polar map of the order embeddings are autograd functions with a
``ctx`` forward, which torch.func refuses ("it must override the setup_context staticmethod"), and the id check
called ``.tolist()`` on a vmapped tensor. Under a transform the modules now run the plain torch graph of the same
maths, and the id check passes vmapped ids.
"""

from __future__ import annotations

import pytest
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


def _plain_polar(r, angle):
    return torch.complex(r * torch.cos(angle), r * torch.sin(angle))


def test_order_embedding_second_derivatives_equal_the_plain_graph():
    """``_Polar``'s backward was ``once_differentiable``, whose error torch.autograd.grad(outputs, inputs) prunes:
    the gradient of a create_graph=True gradient was None and torch.autograd.functional.hessian wrong (the
    fused polar map's part missing). Its backward is now differentiated."""
    from torch.autograd import gradgradcheck

    positions = torch.arange(L, dtype=torch.float64)
    r, omega = torch.randn(2, L, D, dtype=torch.float64, generator=torch.Generator().manual_seed(3))

    def loss(embed):
        return lambda r, w: (embed(r, w * positions.unsqueeze(-1)) ** 2).real.sum()

    fused = loss(lambda r, a: complex_order_embedding(r, None, None, phase=a))
    want = torch.autograd.functional.hessian(loss(_plain_polar), (r, omega))
    got = torch.autograd.functional.hessian(fused, (r, omega))
    for got_row, want_row in zip(got, want):
        for g, w in zip(got_row, want_row):
            torch.testing.assert_close(g, w)
    assert gradgradcheck(lambda r, a: complex_order_embedding(r, None, None, phase=a),
                         (r[:2, :2].requires_grad_(), omega[:2, :2].requires_grad_()))


def test_row_lookup_second_derivatives_equal_nn_embedding():
    """``_RowLookup`` (the fused lookup of a plain table) is linear; once_differentiable made its second
    derivatives None."""
    from qpnlp.nn.embedding import _lookup

    table = torch.nn.Embedding(V, D, padding_idx=0, dtype=torch.float64)

    def hvp(lookup):
        weight = table.weight
        (g,) = torch.autograd.grad(lookup(IDS).pow(3).sum(), weight, create_graph=True)
        return torch.autograd.grad(g.square().sum(), weight)[0]

    torch.testing.assert_close(hvp(lambda ids: _lookup(table, ids)), hvp(table))


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")  # jacfwd
def test_fused_lookups_refuse_eager_second_derivatives_and_torch_func_gives_them():
    """The fused word lookup and complex-order mean hold their cos, sin and norms as constants: a gradient of a
    create_graph=True gradient was None. It raises, naming the torch.func route, which gives the Hessian."""
    word, order = ComplexWordEmbedding(V, D).double(), ComplexOrderEmbedding(V, D).double()
    for table in (word.amplitude, word.phase):
        table.sparse = False                                            # torch.func: dense tables
    fused = {word: lambda: word(IDS[:1])[0].real.pow(3).sum(),
             order: lambda: order.dropped_mean(IDS[:1], MASK[:1]).real.pow(3).sum()}
    for module in (word, order):
        weight = module.amplitude.weight
        (g,) = torch.autograd.grad(fused[module](), weight, create_graph=True)
        with pytest.raises(NotImplementedError, match="second derivatives.*torch.func.hessian"):
            torch.autograd.grad(g.to_dense().square().sum(), weight)
    params = _params(word)

    def loss(amplitude):
        return functional_call(word, {**params, "amplitude.weight": amplitude}, (IDS[:1],))[0].real.pow(3).sum()

    h = torch.func.hessian(loss)(params["amplitude.weight"])
    assert h.shape == (V, D, V, D) and h.abs().sum() > 0


def test_masked_max_second_derivatives_equal_amax():
    from torch.autograd import gradgradcheck

    x = torch.randn(2, L, D, dtype=torch.float64, generator=torch.Generator().manual_seed(4), requires_grad=True)
    valid = torch.tensor([[True, False, True, True, False]] * 2)
    assert gradgradcheck(lambda z: masked_max(z, valid).sin(), (x,))

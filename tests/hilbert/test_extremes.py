"""Numerical extremes of the maths: subnormal, tiny and huge amplitudes, in float32 and float64."""

from __future__ import annotations

import pytest
import torch

import qpnlp.nn.embedding as embedding_module
from qpnlp.hilbert._linalg import rescaled_norms
from qpnlp.nn import ComplexWordEmbedding
from qpnlp.testing import assert_allclose

#: Per dtype: a scale whose squares underflow (a normal number) and one below ``finfo.tiny`` (subnormal).
SCALES = [(torch.float32, 1e-30), (torch.float32, 1e-39), (torch.float32, 1e-43),
          (torch.float64, 1e-200), (torch.float64, 1e-310)]


@pytest.mark.parametrize("dtype, scale", SCALES)
def test_the_gradient_of_rescaled_norms_is_the_unit_vector_down_to_subnormal_vectors(dtype, scale):
    r"""``rescaled_norms`` recomputes a norm whose squares underflow as :math:`m \|v / m\|` with m the largest entry.
    Differentiated through m, a subnormal vector (1e-39 in float32, 1e-310 in float64) got :math:`1/m = \infty`
    terms that cancel to NaN; m is a constant of the function (it does not depend on it), and the gradient
    :math:`v / \|v\|` is finite, to the few bits a subnormal vector holds."""
    v = (torch.tensor([3.0, -4.0, 0.0], dtype=dtype) * scale).requires_grad_(True)
    norm = rescaled_norms(v, torch.linalg.vector_norm(v, dim=-1, keepdim=True))
    norm.sum().backward()
    assert torch.isfinite(v.grad).all()
    assert_allclose(v.grad, torch.tensor([0.6, -0.8, 0.0], dtype=dtype), atol=0.05, rtol=0)


@pytest.mark.parametrize("dtype, scale", SCALES)
def test_rescaled_norms_of_complex_vectors_have_finite_gradients(dtype, scale):
    z = (torch.tensor([3.0 + 0j, -4.0j], dtype=dtype.to_complex()) * scale).requires_grad_(True)
    norm = rescaled_norms(z, torch.linalg.vector_norm(z, dim=-1, keepdim=True))
    norm.sum().backward()
    assert torch.isfinite(torch.view_as_real(z.grad)).all()
    assert_allclose(z.grad, torch.tensor([0.6 + 0j, -0.8j], dtype=dtype.to_complex()), atol=0.05, rtol=0)


@pytest.mark.parametrize("fused, compiled", [(True, "1"), (True, "0"), (False, "0")])
@pytest.mark.parametrize("dtype, scale", [(torch.float32, 1e-40), (torch.float64, 1e-310)])
def test_an_embedding_row_below_tiny_has_finite_gradients_on_every_path(fused, compiled, dtype, scale, monkeypatch):
    r"""A word row that weight decay shrank below ``finfo.tiny``: the plain graph that torch.compile and torch.func
    trace (``_fused`` False) gave NaN gradients to the whole row (``rescaled_norms``), the fused lookup (its
    compiled loops and its torch ops) an infinite norm gradient (:math:`r \cdot (g / \|r\|)`, whose quotient
    overflows); all are finite now (the state's norm is clamped at ``tiny``, as documented)."""
    if compiled == "1":
        pytest.importorskip("numba", reason="the compiled lookup needs numba (the extra 'fast', in 'test')")
    monkeypatch.setenv("QPNLP_LOOKUP_COMPILED", compiled)
    monkeypatch.setattr(embedding_module, "_fused", lambda *tables: fused)
    emb = ComplexWordEmbedding(4, 3, dtype=dtype, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        emb.amplitude.weight[2] = torch.tensor([3.0, -4.0, 0.0], dtype=dtype) * scale
    states, norms = emb(torch.tensor([[2, 3]]))
    (states.real.sum() + states.imag.sum() + norms.sum()).backward()
    grads = [p.grad.to_dense() for p in (emb.amplitude.weight, emb.phase.weight)]
    assert all(torch.isfinite(g).all() for g in grads)
    assert_allclose(norms[0, 0] / scale, torch.tensor(5.0, dtype=dtype), rtol=0.05, atol=0)


@pytest.mark.parametrize("dtype, scale", SCALES)
def test_normalize_without_validation_gives_the_unit_vector_of_a_tiny_complex_vector(dtype, scale):
    """A complex vector of subnormal norm normalised (validation off, which documents such vectors as normalised):
    torch's complex division by the subnormal norm gave inf and NaN entries. Ordinary rows beside it: bit for bit
    what they give alone (without a subnormal norm the division is the one it always was)."""
    from qpnlp.hilbert import normalize

    complex_dtype = dtype.to_complex()
    tiny = torch.tensor([3.0 + 0j, -4.0j], dtype=complex_dtype) * scale
    ordinary = torch.randn(4, 2, dtype=complex_dtype, generator=torch.Generator().manual_seed(0))
    out = normalize(torch.cat([tiny[None], ordinary]), validate=False)
    assert_allclose(out[0], torch.tensor([0.6 + 0j, -0.8j], dtype=complex_dtype), atol=0.05, rtol=0)
    assert torch.equal(out[1:], normalize(ordinary, validate=False))

"""The compiled loops of the pairs (numba), positive and negative, against the torch ops they replace."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from qpnlp import _numba
from qpnlp.word2fun import pair_loop, sgd

pytest.importorskip("numba", reason="the compiled pair loop needs numba (the extra 'fast', in 'test')")


def _pairs(N=5, V=9, B=23, D=7, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    f = torch.randn(N, D, generator=g, dtype=dtype)
    H = torch.randn(V, D, generator=g, dtype=dtype) * 3  # large |p|: both branches of the stable sigmoid
    pc = torch.randint(0, N, (B,), generator=g)
    ctx = torch.randint(0, V, (B,), generator=g)  # rows repeat: the updates must accumulate
    return f, H, pc, ctx


def _torch_ops(monkeypatch):
    monkeypatch.setenv("QPNLP_WORD2FUN_COMPILED", "0")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_positive_term_equals_the_torch_ops(dtype, monkeypatch):
    f, H, pc, ctx = _pairs(dtype=dtype)
    assert pair_loop.accepts(f, H)
    g_f, gp, loss = pair_loop.logistic_pairs(f, H, pc, ctx)
    _torch_ops(monkeypatch)
    assert not pair_loop.accepts(f, H)
    g_f0, gp0, loss0 = sgd._positive_term(f, H, pc, ctx, 4)
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    assert torch.allclose(g_f, g_f0, atol=tol) and torch.allclose(gp, gp0, atol=tol)
    assert float(loss) == pytest.approx(float(loss0), rel=tol)
    assert g_f.dtype == gp.dtype == dtype and gp.shape == (ctx.shape[0], 1)


def test_negative_pairs_accumulate_into_g_f_with_their_weight():
    f, H, pc, ctx = _pairs(dtype=torch.float64)
    start = torch.randn(f.shape, dtype=f.dtype)
    g_f, g, loss = pair_loop.logistic_pairs(f, H, pc, ctx, positive=False, weight=0.4, g_f=start.clone())
    q = (f[pc] * H[ctx]).sum(-1, keepdim=True)
    assert torch.allclose(g, 0.4 * torch.sigmoid(q))
    assert torch.allclose(g_f, start.index_add(0, pc, g * H[ctx]))
    assert float(loss) == pytest.approx(float(-0.4 * torch.nn.functional.logsigmoid(-q).sum()), rel=1e-12)


def test_the_compass_update_equals_the_torch_ops(monkeypatch):
    f, H, pc, ctx = _pairs()
    step = torch.randn(ctx.shape[0], 1)
    H1 = H.clone()
    pair_loop.add_compass_steps(H1, f, pc, ctx, step)
    expected = H.clone().index_add_(0, ctx, f[pc] * step)
    assert torch.allclose(H1, expected, atol=1e-5)


@pytest.mark.parametrize("family, per_pair", [("II", False), ("IV", False), ("IV", True)])
def test_the_compiled_step_equals_the_torch_step(family, per_pair, make, randomise, monkeypatch):
    words, times = torch.tensor([2, 7, 2, 0, 5]), torch.tensor([1910.0, 1950.0, 1990.0, 1910.0, 1975.0])
    pc = torch.tensor([0, 0, 0, 1, 2, 2, 3, 4, 4, 4, 4])
    ctx = torch.tensor([1, 4, 1, 3, 8, 0, 5, 2, 2, 6, 7])
    results = []
    for compiled in ("1", "0"):
        monkeypatch.setenv("QPNLP_WORD2FUN_COMPILED", compiled)
        m = randomise(make(9, 6, family=family, logistic=True), seed=3)
        neg = torch.tensor([3, 6, 6])
        if per_pair:  # k = 3 negatives drawn for every pair, word2vec's sum over them
            neg = (torch.arange(ctx.shape[0])[:, None] * 5 + torch.tensor([1, 2, 7])) % 9
        loss = sgd.centre_sgd_step(m, words, times, pc, ctx, neg, 0.05, 0.01, negative_weight=3.0 if per_pair else 1.0)
        results.append((loss, dict(m.named_parameters())))
    assert results[0][0] == pytest.approx(results[1][0], rel=1e-6)
    for n, p in results[0][1].items():
        assert torch.allclose(p, results[1][1][n], atol=1e-6), n


def test_the_loop_takes_only_contiguous_cpu_tables_of_one_float_dtype():
    f, H, _, _ = _pairs()
    assert pair_loop.accepts(f, H)
    assert not pair_loop.accepts(f.t(), H)
    assert not pair_loop.accepts(f.double(), H)
    assert not pair_loop.accepts(f.half(), H.half())


def test_out_of_range_ids_raise_instead_of_writing_outside_the_table():
    f, H, pc, ctx = _pairs()
    with pytest.raises(IndexError, match="context word"):
        pair_loop.logistic_pairs(f, H, pc, torch.cat([ctx, torch.tensor([H.shape[0]])]).narrow(0, 1, ctx.shape[0]))
    with pytest.raises(IndexError, match="centre token"):
        pair_loop.add_compass_steps(H, f, pc - 1, ctx, torch.ones(ctx.shape[0], 1))
    with pytest.raises(ValueError, match="alike"):
        pair_loop.logistic_pairs(f, H, pc, ctx[:-1])


def test_nan_propagates_to_the_loss():
    """``fastmath`` reassociates sums only: a NaN parameter still gives a NaN loss (the loop's divergence check)."""
    f, H, pc, ctx = _pairs()
    f[pc[0], 0] = float("nan")
    _, _, loss = pair_loop.logistic_pairs(f, H, pc, ctx)
    assert torch.isnan(loss)


def test_the_training_log_says_which_loop_runs(monkeypatch):
    assert pair_loop.describe("cpu").startswith("SGD step: compiled (numba; the whole step for families II-IV")
    assert "torch ops" in pair_loop.describe("meta")
    monkeypatch.setenv("QPNLP_WORD2FUN_COMPILED", "0")
    assert pair_loop.describe("cpu") == "SGD step: torch ops (QPNLP_WORD2FUN_COMPILED=0)"
    monkeypatch.setattr(_numba, "HAVE_NUMBA", False)
    assert "qpnlp[fast]" in pair_loop.describe("cpu")


def _agree_to_the_sums_rounding(g_f, g, H, pair_centre, context):
    """``g_f`` (N, D) against :math:`\\sum_b g_b h_{c(b)}` over each centre's pairs, the products and their sums in
    float64 (exact products of float32 values), element by element within :math:`\\epsilon\\, m \\sum_b |g_b
    h_{c(b)}|`, m the centre's pair count: a recursive sum of m rounded products is at most
    :math:`\\gamma_m \\sum |t| \\approx m u \\sum |t|` off (u = eps / 2; Higham, *Accuracy and Stability of
    Numerical Algorithms*, 2002, eq. 4.4), and a float64 reference of float64 terms as much again. A product that
    underflows rounds to the subnormals' spacing, ``tiny * eps``, instead: at most half of it each."""
    terms = g.double() * H[context].double()
    exact = torch.zeros(g_f.shape, dtype=torch.float64).index_add(0, pair_centre, terms)
    size = torch.zeros(g_f.shape, dtype=torch.float64).index_add(0, pair_centre, terms.abs())
    pairs = torch.zeros(g_f.shape[0], 1, dtype=torch.float64).index_add(0, pair_centre, torch.ones_like(g.double()))
    info = torch.finfo(g_f.dtype)
    assert ((g_f.double() - exact).abs() <= info.eps * pairs * size + pairs * info.tiny * info.eps).all()


def _check_the_loop(dtype, N, V, D, B, seed, scale, positive):
    """The loop's g and loss against the logistic formulas of float64 logits (exact products of float32 values),
    its g_f against the sums of its g_b h_c(b) (:func:`_agree_to_the_sums_rounding`).

    The loop's logit, a dot product of D terms, is :math:`\\gamma_D \\sum_j |f_j h_j| \\approx D u \\sum_j |f_j h_j|`
    off (u = eps / 2; a float64 reference's as much again: ``dp``), which a cancelling sum makes large beside the
    logit (1e3 times the table: p = 30.45 of terms summing to 1.6e4 in size, 4.8e-4 off in float32 torch ops).
    sigma moves by at most a quarter of that, softplus by at most as much; their own rounding is a few ulps, and
    the loss' sum of B positive terms, in float64 on both sides, rounds by B float64 ulps of it.
    """
    f, H, pc, ctx = _pairs(N=N, V=V, B=B, D=D, dtype=dtype, seed=seed)
    f = f * scale
    weight = 1.0 if positive else 0.4
    g_f, g, loss = pair_loop.logistic_pairs(f, H, pc, ctx, positive=positive, weight=weight)
    products = f[pc].double() * H[ctx].double()
    p = products.sum(-1, keepdim=True)
    eps = torch.finfo(dtype).eps
    dp = eps * D * products.abs().sum(-1, keepdim=True)
    want = weight * (-torch.sigmoid(-p) if positive else torch.sigmoid(p))
    assert ((g.double() - want).abs() <= weight * dp / 4 + 4 * eps * want.abs()).all()
    _agree_to_the_sums_rounding(g_f, g, H, pc, ctx)
    want_loss = float(-weight * torch.nn.functional.logsigmoid(p if positive else -p).sum())
    sums = B * torch.finfo(torch.float64).eps                        # the B positive terms, both summed in float64
    assert abs(float(loss) - want_loss) <= weight * float(dp.sum()) + (sums + 4 * eps) * want_loss


@settings(max_examples=30)
@given(data=st.data())
def test_fuzzed_pairs_give_the_logistic_loss_and_gradients(data):
    """Random small tables, no pair or pair counts across sgd.PAIR_CHUNK, one row, zero and large logits, positive
    and negative pairs: the loop's g, g_f and loss against the plain formulas."""
    draw = data.draw
    dtype = draw(st.sampled_from([torch.float32, torch.float64]))
    N, V, D = draw(st.integers(1, 5)), draw(st.integers(1, 5)), draw(st.integers(1, 9))
    B = draw(st.integers(0, 9) | st.sampled_from([sgd.PAIR_CHUNK - 1, sgd.PAIR_CHUNK + 1]))
    _check_the_loop(dtype, N, V, D, B, seed=draw(st.integers(0, 99)), scale=draw(st.sampled_from([0.0, 1.0, 1e3])),
                    positive=draw(st.booleans()))


def test_a_thousand_pairs_of_one_centre_agree_to_the_sums_rounding():
    """1023 pairs of one centre token and one context word (HYPOTHESIS_PROFILE=explore found it): g_f sums 1023
    equal terms, whose float32 rounding grows with the count; the bound ``atol=1e-4, rtol=1e-5`` did not, and the
    reference's terms carried the cancellation of sigmoid(p) - 1 (p = 6.3: 1.6e-5 of each). 1.7e-4 apart."""
    _check_the_loop(torch.float32, N=1, V=1, D=6, B=sgd.PAIR_CHUNK - 1, seed=0, scale=1.0, positive=True)


def test_a_cancelling_logit_agrees_to_the_dot_products_rounding():
    """A negative pair of 1e3 times the table: p = 30.45 of terms summing to 1.6e4 in size; torch's float32 logit is
    4.8e-4 off, the loop's loss 1.5e-4 from the float32 reference's where ``rel=1e-5, abs=1e-5`` allowed 1.2e-4
    (HYPOTHESIS_PROFILE=explore found it); both within 0.4 D eps 1.6e4 = 5.3e-3 of the float64 loss."""
    _check_the_loop(torch.float32, N=3, V=1, D=7, B=1, seed=2, scale=1e3, positive=False)

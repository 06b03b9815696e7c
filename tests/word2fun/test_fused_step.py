"""The whole SGD step compiled (numba) against the torch ops it replaces: same parameters and loss."""

import platform
import sys

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qpnlp.data import TimestampedCorpus
from qpnlp.word2fun import TrainConfig, fit, fused_step, loop, step_sizes
from qpnlp.word2fun.sgd import centre_sgd_step_tensor

pytest.importorskip("numba", reason="the compiled step needs numba (the extra 'fast', in 'test')")

TOL = {torch.float64: 1e-12, torch.float32: 1e-5}


@pytest.fixture(autouse=True)
def compiled(monkeypatch):
    """The compiled loops on (whatever the environment says), the fused step allowed."""
    monkeypatch.setenv("QPNLP_WORD2FUN_COMPILED", "1")
    monkeypatch.setenv("QPNLP_COMPILED", "1")
    monkeypatch.setattr(fused_step, "ENABLED", True)


def _model(make, family="IV", dtype=torch.float64, logistic=True, frozen=False, V=11, D=8, seed=3):
    m = make(V, D, family=family, logistic=logistic, freeze_compass=frozen, frequency_init="harmonic",
             precision="double" if dtype == torch.float64 else "single")
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in m.named_parameters():
            p.copy_(0.3 * torch.randn(p.shape, generator=g, dtype=torch.float64))
            if name.startswith("omega"):
                p.add_(0.1)
            if name == "step_centre.weight":
                p.copy_(torch.rand(p.shape, generator=g, dtype=torch.float64))
            if name == "step_rate.weight":
                p.copy_(2.4 + 2.8 * torch.rand(p.shape, generator=g, dtype=torch.float64))
    return m


def _batches(V=11, N=7, B=23, k=5, steps=3, rough=0.01, row_lr=True, seed=1):
    """``steps`` batches: words repeated within each (N > distinct words drawn), pairs in random order."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(steps):
        words = torch.randint(0, V // 2, (N,), generator=g)  # few distinct words: rows repeat
        times = 1900.0 + 100.0 * torch.rand(N, generator=g, dtype=torch.float64)
        pc, ctx = torch.randint(0, N, (B,), generator=g), torch.randint(0, V, (B,), generator=g)
        neg = torch.randint(0, V, (k,), generator=g)
        lam = 0.02 * torch.rand(N, generator=g) if rough == "tensor" else rough
        rl = 1.0 + torch.rand(N, generator=g) if row_lr else None
        out.append((words, times, pc, ctx, neg, lam, rl))
    return out


def _train(model, batches, fused, negative_weight=1.5, lr=0.05):
    """The batches' losses and the parameters after them, with the compiled step or the torch ops."""
    fused_step.ENABLED = fused
    try:
        losses = []
        for words, times, pc, ctx, neg, lam, rl in batches:
            if fused:
                assert fused_step.accepts(model, neg, words, times, pc, ctx, lam, rl)
            losses.append(centre_sgd_step_tensor(model, words, times, pc, ctx, neg, lr, lam, rl, negative_weight,
                                                 0.05))
    finally:
        fused_step.ENABLED = True
    return losses, {n: p.detach().clone() for n, p in model.named_parameters()}


def _assert_same(make, monkeypatch, kw, batch_kw, negative_weight=1.5):
    dtype = kw.get("dtype", torch.float64)
    batches = _batches(**batch_kw)
    got = _train(_model(make, **kw), batches, True, negative_weight)
    monkeypatch.setenv("QPNLP_WORD2FUN_COMPILED", "0")  # the reference: torch ops throughout
    want = _train(_model(make, **kw), batches, False, negative_weight)
    tol = TOL[dtype]
    for a, b in zip(got[0], want[0]):
        assert a.dtype == dtype and a.shape == ()
        assert float(a) == pytest.approx(float(b), rel=tol)
    _assert_parameters_agree(got[1], want[1], _model(make, **kw), tol)


def _assert_parameters_agree(got: dict, want: dict, start, tol: float) -> None:
    """Each parameter of the two runs within ``10 tol`` of the largest magnitude its steps compute with: the
    parameter before them plus its change. The steps round in proportion to their own size, which can exceed the
    parameter's after them (theta2 0.121 -> 0.00087 on one step of -0.120, the runs 9.3e-8 apart: 9e-4 of the
    parameter after, 8e-7 of the step; HYPOTHESIS_PROFILE=explore found it)."""
    for name, before in start.named_parameters():
        p = want[name]
        scale = float(before.detach().abs().max()) + float((p - before.detach()).abs().max()) or 1.0
        assert float((got[name] - p).abs().max()) <= 10 * tol * scale, name



def test_a_step_that_cancels_a_parameter_agrees_to_the_steps_rounding(make, monkeypatch):
    """Family IV in float32, one word, 256 pairs of 7 tokens: theta2 goes from -0.121 to -5.9e-5, and the compiled
    step and the torch ops agree to 7.3e-8, 6e-7 of the step but 1.2e-3 of the parameter after it, the old bound's
    scale (1e-4 allowed; HYPOTHESIS_PROFILE=explore found such batches)."""
    times = torch.tensor([1941.5188435519347, 1900.0, 2000.0, 2000.0, 1900.0, 1917.140444699468, 1900.0],
                         dtype=torch.float64)
    tokens = torch.randint(0, 7, (256,), generator=torch.Generator().manual_seed(118))
    batch = (torch.zeros(7, dtype=torch.long), times, tokens, torch.zeros(256, dtype=torch.long),
             torch.zeros(6, dtype=torch.long), 0.0, None)
    kw = dict(family="IV", dtype=torch.float32, logistic=False, V=1, D=2, seed=0)
    got = _train(_model(make, **kw), [batch], True, 0.0)
    monkeypatch.setenv("QPNLP_WORD2FUN_COMPILED", "0")
    want = _train(_model(make, **kw), [batch], False, 0.0)
    start = _model(make, **kw)
    assert float(want[1]["theta2.weight"].abs().max()) < 1e-3 * float(start.theta2.weight.detach().abs().max())
    _assert_parameters_agree(got[1], want[1], start, TOL[torch.float32])

@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("family", ["III", "IV", "II"])
@pytest.mark.parametrize("logistic", [True, False])
def test_the_fused_step_equals_the_torch_step(family, dtype, logistic, make, monkeypatch):
    _assert_same(make, monkeypatch, dict(family=family, dtype=dtype, logistic=logistic), dict())


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("case", [
    dict(frozen=True),
    dict(rough="tensor"),
    dict(rough="tensor", row_lr=False),
    dict(row_lr=False),
    dict(rough=0.0, row_lr=False),
    dict(rough=0.0),
])
def test_every_option_of_the_step_is_compiled_alike(case, dtype, make, monkeypatch):
    kw = {"dtype": dtype, **({"frozen": True} if case.pop("frozen", False) else {})}
    _assert_same(make, monkeypatch, kw, case, negative_weight=0.7)


def test_the_projection_keeps_the_step_in_its_ranges(make, monkeypatch):
    """Large steps: rows go past the bounds and are projected back onto them, as in torch ops."""
    batches = _batches(steps=2, rough="tensor")
    results = []
    for fused in (True, False):
        m = _model(make)
        with torch.no_grad():
            m.step_rate.weight.fill_(5.29)  # near log 200
            m.step_centre.weight.fill_(0.999)
        results.append(_train(m, batches, fused, lr=5.0)[1])
        lo, hi = step_sizes.step_bounds(m)["step_rate.weight"]
        rate, centre = m.step_rate.weight.detach(), m.step_centre.weight.detach()
        assert float(rate.min()) == lo and float(rate.max()) <= hi
        assert 0.0 <= float(centre.min()) and float(centre.max()) <= 1.0
    for name in ("step_rate.weight", "step_centre.weight"):
        assert torch.allclose(results[0][name], results[1][name], rtol=1e-12, atol=1e-12), name


def test_other_configurations_take_the_torch_ops(make):
    m = _model(make)
    words, times, pc, ctx, neg, lam, rl = _batches(steps=1)[0]
    assert fused_step.accepts(m, neg, words, times, pc, ctx, lam, rl)
    assert not fused_step.accepts(m, neg.repeat(pc.shape[0], 1), words, times, pc, ctx)  # negatives per pair
    assert not fused_step.accepts(m, neg[:0], words, times, pc, ctx)
    assert not fused_step.accepts(make(11, 8, family="linear"), neg, words, times, pc, ctx)
    assert not fused_step.accepts(m, neg, words, times, pc, ctx, torch.ones(7, device="meta"))
    with torch.no_grad():
        m.base.weight.data = m.base.weight.data.t().contiguous().t()  # not contiguous
    assert not fused_step.accepts(m, neg, words, times, pc, ctx)


def test_unsupported_configurations_step_in_torch_ops(make, monkeypatch):
    """Per-pair negatives and family 'linear' never reach the compiled step (and still train)."""
    calls = []
    monkeypatch.setattr(fused_step, "fused_sgd_step", lambda *a, **k: calls.append(1))
    words, times, pc, ctx, neg, _, _ = _batches(steps=1)[0]
    for m, negatives in ((_model(make), (torch.arange(pc.shape[0])[:, None] + torch.arange(3)) % 11),
                         (make(11, 8, family="linear"), neg)):
        before = m.compass.weight.detach().clone()
        loss = centre_sgd_step_tensor(m, words, times, pc, ctx, negatives, 0.05)
        assert torch.isfinite(loss) and not torch.equal(before, m.compass.weight)
    assert not calls


def test_out_of_range_ids_raise_before_anything_is_written(make):
    m = _model(make)
    words, times, pc, ctx, neg, lam, rl = _batches(steps=1)[0]
    state = {n: p.detach().clone() for n, p in m.named_parameters()}
    bad = [(words.clone().index_fill_(0, torch.tensor([2]), 11), pc, ctx, neg, "word"),
           (words, pc.clone().index_fill_(0, torch.tensor([0]), 7), ctx, neg, "centre token"),
           (words, pc, ctx.clone().index_fill_(0, torch.tensor([4]), -1), neg, "context word"),
           (words, pc, ctx, neg + 11, "negative")]
    for w, p, c, n, what in bad:
        with pytest.raises(IndexError, match=what):
            centre_sgd_step_tensor(m, w, times, p, c, n, 0.05, lam, rl)
    with pytest.raises(ValueError, match="row_lr"):
        centre_sgd_step_tensor(m, words, times, pc, ctx, neg, 0.05, lam, rl[:-1])
    with pytest.raises(ValueError, match="must match"):
        centre_sgd_step_tensor(m, words, times[:-1], pc, ctx, neg, 0.05, lam, rl)
    for n, p in m.named_parameters():
        assert torch.equal(p, state[n]), n


@pytest.mark.parametrize("table", ["base", "compass", "step_rate"])
def test_nan_in_a_table_propagates_as_in_torch_ops(table, make, monkeypatch):
    batches = _batches(steps=1)
    results = []
    for fused in (True, False):
        m = _model(make, dtype=torch.float32)
        with torch.no_grad():
            getattr(m, table).weight[batches[0][0][0] if table != "compass" else batches[0][3][0]] = float("nan")
        results.append(_train(m, batches, fused))
    (loss, got), (loss0, want) = results
    assert torch.isnan(loss[0]) and torch.isnan(loss0[0])
    for name, p in want.items():
        assert torch.equal(torch.isnan(got[name]), torch.isnan(p)), name


def test_large_angles_take_the_exact_sines(make, monkeypatch):
    """Float32 angles beyond the polynomial's range (|a| > 8192) use libm's sine and cosine."""
    kw = dict(dtype=torch.float32, family="IV")
    batches = _batches(steps=1)
    results = []
    for fused in (True, False):
        m = _model(make, **kw)
        with torch.no_grad():
            m.theta1.weight.add_(1e4)
        results.append(_train(m, batches, fused))
    assert float(results[0][0][0]) == pytest.approx(float(results[1][0][0]), rel=1e-5)


def test_fit_trains_with_the_fused_step_as_with_torch_ops(monkeypatch):
    """fit()'s defaults (family IV, logistic step, shared negatives) take the fused step, and train alike."""
    rng = np.random.default_rng(0)
    words = ["war", "peace", "trade", "army", "navy", "tax", "bank", "union"]
    corpus = TimestampedCorpus.from_pairs((1900 + i % 20, list(rng.choice(words, 8))) for i in range(200))
    calls = []
    real, real_compile = loop.run_steps, fused_step.FusedStep.compile
    monkeypatch.setattr(loop, "run_steps", lambda *a, **k: calls.append("steps") or real(*a, **k))
    monkeypatch.setattr(fused_step.FusedStep, "compile", lambda self: calls.append("compile") or real_compile(self))
    cfg = TrainConfig(epochs=1, seed=0, batch_size=256)
    result = fit(corpus, cfg, dim=8, min_count=1)
    fused = result.vectors.model
    assert calls[0] == "compile" and "steps" in calls          # compiled before the epochs' clock starts
    assert result.stats.compile_seconds > 0
    monkeypatch.setattr(fused_step, "ENABLED", False)
    plain = fit(corpus, cfg, dim=8, min_count=1).vectors.model
    for (name, p), q in zip(fused.named_parameters(), plain.parameters()):
        assert torch.allclose(p, q, rtol=1e-4, atol=1e-6), name


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_extreme_logits_give_the_losses_and_gradients_of_torch_ops(dtype, make, monkeypatch):
    """Logits of hundreds and beyond 708 (where exp underflows): the stable logistic agrees with torch's."""
    scales = []
    for fused in (True, False):
        m = _model(make, dtype=dtype)
        with torch.no_grad():
            m.compass.weight.mul_(400.0)
            m.base.weight.mul_(10.0)
        scales.append(_train(m, _batches(steps=1), fused, lr=1e-4))
    (loss, got), (loss0, want) = scales
    assert float(loss[0]) > 1e3 and float(loss[0]) == pytest.approx(float(loss0[0]), rel=TOL[dtype])
    for name, p in want.items():
        assert torch.allclose(got[name], p, rtol=TOL[dtype], atol=TOL[dtype] * float(p.abs().max())), name


def test_a_prepared_step_equals_the_step_prepared_at_every_call(make):
    """FusedStep, built once and called per batch (what the training loop does), gives the losses and
    parameters of centre_sgd_step_tensor called per batch, bit for bit."""
    batches = _batches(steps=4, rough="tensor")
    models = [_model(make, dtype=torch.float32) for _ in range(2)]
    prepared = fused_step.FusedStep(models[0], negative_weight=1.5, centre_lr=0.05)
    for words, times, pc, ctx, neg, lam, rl in batches:
        a = prepared(words, times, pc, ctx, neg, 0.05, lam, rl)
        b = centre_sgd_step_tensor(models[1], words, times, pc, ctx, neg, 0.05, lam, rl, 1.5, 0.05)
        assert a.dtype == torch.float32 and torch.equal(a, b)
    for (name, p), q in zip(models[0].named_parameters(), models[1].parameters()):
        assert torch.equal(p, q), name


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("family", ["II", "IV"])
def test_compile_prepares_the_kernel_for_every_call_of_the_step(make, family, dtype):
    """FusedStep.compile() (what the training loop calls before it starts its clock) compiles the signature that
    the calls then use: per-token or scalar roughness, with or without row step sizes, other id dtypes."""
    prepared = fused_step.FusedStep(_model(make, family=family, dtype=dtype), negative_weight=1.5)
    prepared.compile()
    compiled = set(prepared.kernel.signatures)
    assert compiled
    for rough, row_lr in (("tensor", True), (0.01, False), (0.0, True)):
        for words, times, pc, ctx, neg, lam, rl in _batches(steps=1, rough=rough, row_lr=row_lr):
            prepared(words.to(torch.int32), times, pc, ctx, neg, 0.05, lam, rl)
    assert set(prepared.kernel.signatures) == compiled



def test_compile_is_a_no_op_where_numba_does_not_compile(make):
    """Under ``NUMBA_DISABLE_JIT=1`` (numba's debugging switch) ``numba.njit`` returns the Python function: compile()
    raised AttributeError ('function' object has no attribute 'compile'), and with it ``fit`` and ``qpnlp train
    word2fun``; the step itself runs (slowly) as before."""
    models = [_model(make), _model(make)]
    plain, compiled = (fused_step.FusedStep(m, negative_weight=1.5) for m in models)
    plain.kernel = plain.kernel.py_func                                  # what NUMBA_DISABLE_JIT=1 gives
    plain.compile()
    for words, times, pc, ctx, neg, lam, rl in _batches(steps=1):
        assert torch.allclose(plain(words, times, pc, ctx, neg, 0.05, lam, rl),
                              compiled(words, times, pc, ctx, neg, 0.05, lam, rl), rtol=0, atol=TOL[torch.float64])
    for p, q in zip(*(m.parameters() for m in models)):
        assert torch.allclose(p, q, rtol=0, atol=TOL[torch.float64])

def test_batch_step_prepares_the_fused_step_only_where_it_takes_every_batch(make, monkeypatch):
    from qpnlp.word2fun.sgd import batch_step

    assert isinstance(batch_step(_model(make), shared_negatives=True), fused_step.FusedStep)
    for model, shared in ((_model(make), False), (make(11, 8, family="linear"), True)):
        step = batch_step(model, shared_negatives=shared)
        assert not isinstance(step, fused_step.FusedStep)
        words, times, pc, ctx, neg, lam, rl = _batches(steps=1)[0]
        negatives = neg if shared else neg.repeat(pc.shape[0], 1)
        before = model.compass.weight.detach().clone()
        assert torch.isfinite(step(words, times, pc, ctx, negatives, 0.05)) and not torch.equal(
            before, model.compass.weight)
    monkeypatch.setattr(fused_step, "ENABLED", False)
    assert not isinstance(batch_step(_model(make), shared_negatives=True), fused_step.FusedStep)
    with pytest.raises(ValueError, match="takes_model"):
        fused_step.FusedStep(_model(make))


def _ids(draw, bound, size):
    return torch.tensor(draw(st.lists(st.integers(0, bound - 1), min_size=size, max_size=size)), dtype=torch.long)


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])   # the switches: reset below
@given(data=st.data())
def test_fuzzed_batches_step_as_in_torch_ops(make, data):
    """Random small batches: one word or one token, ids at the last row, repeated ids, pair counts across the
    kernel's chunk of 256 and token and negative counts across its blocks of four, times at the span's ends."""
    draw = data.draw
    family, dtype = draw(st.sampled_from(["II", "III", "IV"])), draw(st.sampled_from([torch.float32, torch.float64]))
    V, D, N, k = draw(st.integers(1, 9)), 2 * draw(st.integers(1, 4)), draw(st.integers(1, 9)), draw(st.integers(1, 9))
    B = draw(st.integers(1, 12) | st.sampled_from([255, 256, 257]))
    times = torch.tensor(draw(st.lists(st.sampled_from([1900.0, 2000.0]) | st.floats(1900, 2000), min_size=N,
                                       max_size=N)), dtype=torch.float64)
    rough = draw(st.sampled_from([0.0, 0.01, "tensor"]))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**32 - 1)))
    batch = (_ids(draw, V, N), times, _ids(draw, N, B), _ids(draw, V, B), _ids(draw, V, k),
             0.02 * torch.rand(N, generator=gen) if rough == "tensor" else rough,
             1.0 + torch.rand(N, generator=gen) if draw(st.booleans()) else None)
    kw = dict(family=family, dtype=dtype, logistic=draw(st.booleans()), frozen=draw(st.booleans()), V=V, D=D,
              seed=draw(st.integers(0, 99)))
    weight = draw(st.sampled_from([0.0, 1.5]))
    with pytest.MonkeyPatch.context() as patch:                    # hypothesis runs the body once per example
        got = _train(_model(make, **kw), [batch], True, weight)
        patch.setenv("QPNLP_WORD2FUN_COMPILED", "0")
        want = _train(_model(make, **kw), [batch], False, weight)
    tol = TOL[dtype]
    assert float(got[0][0]) == pytest.approx(float(want[0][0]), rel=10 * tol, abs=tol)
    _assert_parameters_agree(got[1], want[1], _model(make, **kw), tol)


def test_the_step_in_threads_makes_the_same_updates_bit_for_bit(make, own_process):
    """The step's stages cut into 2, 3 or 7 parts (threads) compute each number as in one: the same losses and
    parameters, bit for bit, for families IV (trained and frozen compass), II and III. Batches of more pairs than one
    chunk of the positives' logistic, negatives not a multiple of the parts, tokens not a multiple of 4, and a batch
    of fewer tokens than parts. In float32, fit's dtype, only: each dtype compiles the threaded kernel again (about a
    minute of CPU on a clean clone); in a process of its own (``own_process``)."""
    if not own_process:
        return
    dtype = torch.float32
    batches = _batches(V=40, N=37, B=600, k=9, steps=3, rough="tensor") + _batches(V=40, N=3, B=5, k=2, steps=1)
    for family, frozen in (("IV", False), ("IV", True), ("II", False), ("III", False)):
        runs = []
        for threads in (1, 2, 3, 7):
            model = _model(make, family=family, dtype=dtype, frozen=frozen, V=40, D=10)
            step = fused_step.FusedStep(model, 1.5, 0.05, threads=threads)
            assert step.threads == min(threads, _numba_threads())
            step.choice = None if threads == 1 else _always_threads()
            losses = [float(step(w, t, pc, ctx, neg, 0.05, lam, rl)) for w, t, pc, ctx, neg, lam, rl in batches]
            runs.append((losses, [p.detach().clone() for p in model.parameters()]))
        for losses, params in runs[1:]:
            assert losses == runs[0][0], family
            assert all(torch.equal(p, q) for p, q in zip(params, runs[0][1])), family
        start = _model(make, family=family, dtype=dtype, V=40, D=10).parameters()
        assert any(not torch.equal(p, q.detach()) for p, q in zip(runs[0][1], start))


def _always_threads():
    """A kernel choice that always runs the threaded kernel (the step's own would try one thread now and then)."""
    from qpnlp.word2fun._kernel_choice import KernelChoice

    choice = KernelChoice()
    choice.pick = lambda: (1, False)
    choice.record = lambda *a: None
    choice.best = 1
    return choice


def _numba_threads() -> int:
    import numba

    return numba.config.NUMBA_NUM_THREADS


def test_fit_gives_its_one_worker_the_threads_torch_has(own_process, monkeypatch):
    """step_threads 0 (the default): torch's thread count when training starts for one worker where numba's threads
    survive fork (its TBB layer, which the extra ``fast`` installs on Linux x86-64), one for each of several, and one
    where the compiled step is off. In a process of its own: it starts numba's threads."""
    from qpnlp import _numba
    from qpnlp.word2fun.config import step_threads

    if not own_process:
        return
    fork_safe = _numba.threads_fork_safe()
    if sys.platform == "linux" and platform.machine() == "x86_64":
        assert fork_safe, "numba's threading layer is not TBB: is the tbb package installed (extra 'fast')?"
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        assert step_threads(TrainConfig()) == (2 if fork_safe else 1)         # the default: 0
        assert step_threads(TrainConfig(workers=2)) == 1
        assert step_threads(TrainConfig(workers=2, step_threads=3)) == 3
        monkeypatch.setenv("QPNLP_WORD2FUN_COMPILED", "0")
        assert step_threads(TrainConfig()) == 1
        torch.set_num_threads(1)
        monkeypatch.delenv("QPNLP_WORD2FUN_COMPILED")
        assert step_threads(TrainConfig()) == 1
    finally:
        torch.set_num_threads(before)
    for bad in (-1, 1.5, "2", True):
        with pytest.raises(ValueError, match="step_threads"):
            TrainConfig(step_threads=bad)

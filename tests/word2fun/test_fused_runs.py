"""A run of batches in one compiled call against the same batches stepped one by one: equal bit for bit."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qpnlp.data.skipgram import CentreRun, NegativeSampler, iter_centre_batches, iter_centre_runs
from qpnlp.word2fun import fused_runs, fused_step
from qpnlp.word2fun._segments import Segments
from qpnlp.word2fun.step_sizes import row_step_scales

pytest.importorskip("numba", reason="the compiled step needs numba (the extra 'fast', in 'test')")

V, K = 40, 6


@pytest.fixture(autouse=True)
def compiled(monkeypatch):
    monkeypatch.setenv("QPNLP_WORD2FUN_COMPILED", "1")
    monkeypatch.setenv("QPNLP_COMPILED", "1")
    monkeypatch.setattr(fused_step, "ENABLED", True)


def _corpus(seed=0, docs=60):
    rng = np.random.default_rng(seed)
    lens = rng.integers(1, 12, size=docs)
    doc_ids = np.repeat(np.arange(docs), lens)
    tokens = rng.integers(0, V, size=doc_ids.size)
    return tokens, doc_ids, 1900.0 + rng.uniform(0, 100, size=docs)


def _runs(batch_size=9, batches_per_run=16, seed=0, chunk_tokens=10_000):
    tokens, doc_ids, times = _corpus(seed)
    return list(iter_centre_runs(tokens, doc_ids, times, keep_prob=np.ones(V), window=3, batch_size=batch_size,
                                 rng=np.random.default_rng(seed), chunk_tokens=chunk_tokens,
                                 batches_per_run=batches_per_run))


def _model(make, family, dtype, seed=3):
    return make(V, 8, family=family, logistic=family == "IV", frequency_init="harmonic", seed=seed,
                precision="double" if dtype == torch.float64 else "single")


def _weights(case):
    g = torch.Generator().manual_seed(7)
    penalty = 0.02 * torch.rand(V, generator=g) if case["penalty"] == "per word" else None
    row_lr = 1.0 + 3.0 * torch.rand(V, generator=g) if case["row_lr"] else None
    return penalty, row_lr, case["penalty"] if isinstance(case["penalty"], float) else 0.0


def _one_by_one(step, run, sampler, gen, lrs, weights, total):
    """The reference: the run's batches through ``FusedStep.__call__``, as the loop stepped before runs."""
    word_penalty, word_lr, penalty = weights
    total = torch.tensor(total, dtype=torch.float64)
    for b, lr in zip(run.batches(), lrs):
        neg = sampler.sample((K,), generator=gen)
        lam = penalty if word_penalty is None else word_penalty[b.words]
        rl = None if word_lr is None else word_lr[b.words]
        total += step(b.words, b.time, b.pair_centre, b.context, neg, lr, lam, rl)
    return float(total)


CASES = [dict(penalty=0.01, row_lr=True), dict(penalty="per word", row_lr=True), dict(penalty="per word", row_lr=False),
         dict(penalty=0.01, row_lr=False), dict(penalty=0.0, row_lr=True), dict(penalty=0.0, row_lr=False)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("family", ["II", "III", "IV"])
@pytest.mark.parametrize("case", CASES)
def test_a_run_in_one_call_equals_its_batches_one_by_one(family, dtype, case, make):
    runs = _runs()
    assert len(runs) > 2 and max(len(r) for r in runs) > 3
    sampler = NegativeSampler(np.arange(1, V + 1))
    weights = _weights(case)
    totals, models = [], []
    for train in (fused_runs.run_steps, None):
        m = _model(make, family, dtype)
        step, gen, total, done = fused_step.FusedStep(m, 1.5), torch.Generator().manual_seed(5), 0.0, 0.0
        for e in range(2):
            for run in runs:
                lrs = fused_runs.learning_rates(0.05, 2, e, done, run.progress)
                if train is None:
                    total = _one_by_one(step, run, sampler, gen, lrs, weights, total)
                else:
                    total = train(step, run, sampler, gen, K, lrs, weights, total)
                done = float(run.progress[-1])
        totals.append(total)
        models.append(m)
    assert np.isfinite(totals[0]) and totals[0] == totals[1]
    for (name, p), q in zip(models[0].named_parameters(), models[1].parameters()):
        assert torch.equal(p, q), name
    assert not torch.equal(models[0].base.weight, _model(make, family, dtype).base.weight)  # it trained


@pytest.mark.slow
def test_a_run_equals_its_batches_whatever_the_process_loaded_before(tmp_path):
    """numba links a copy of each helper of the compiled step into every loop that calls it, optimised again there
    (under ``reassoc`` it may sum in another order), and a process binds each call to the copy it loaded first. The
    step for one batch and the run of batches were two compiled loops: in a process that had loaded the run, then the
    step's helpers (from numba's cache, as an earlier test leaves them), then the step, the two ran other copies of
    ``_negatives`` and differed (loss sums 178686161059.13104 and 178686161059.2171, the parameters too; the full
    suite failed so, two workers sharing fresh caches). A batch is now a run of one batch: one compiled loop.

    ``fused_load_order.py`` compiles into a fresh cache in one process, then loads in that order in another."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba"), "QPNLP_WORD2FUN_COMPILED": "1",
           "QPNLP_COMPILED": "1", "OMP_NUM_THREADS": "1"}
    worker, signatures = Path(__file__).with_name("fused_load_order.py"), tmp_path / "signatures.pkl"
    for stage in ("compile", "compare"):
        out = subprocess.run([sys.executable, str(worker), stage, str(signatures)], env=env, capture_output=True,
                             text=True, timeout=600)
        assert out.returncode == 0, out.stderr
    fused, one_by_one, same, helpers_from_cache = out.stdout.split()
    assert int(helpers_from_cache) > 0                              # the order that made the two differ
    assert fused == one_by_one and same == "True"


@pytest.mark.slow
def test_a_process_that_compiles_the_step_and_one_that_loads_it_train_alike(tmp_path):
    """Same seed, same result, whatever the cache held: a process that compiles the step into an empty numba cache
    and one that loads it from there train the same runs (families II-IV, float32 and float64) to the same loss sums
    and parameters, bit for bit. The helpers were compiled apart and linked into the step, where LLVM optimised
    them again under ``reassoc`` and ``contract``; a process that compiled bound calls to the helpers' own copies,
    one that loaded to the copies inside the step, and the two differed in the last bits (loss sums
    178686161059.2171 and 178686161059.13104). The helpers are now inlined into the step (one copy)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba"), "QPNLP_WORD2FUN_COMPILED": "1",
           "QPNLP_COMPILED": "1", "OMP_NUM_THREADS": "1"}
    worker = Path(__file__).with_name("fused_load_order.py")
    outs = []
    for _ in range(2):
        out = subprocess.run([sys.executable, str(worker), "train"], env=env, capture_output=True, text=True,
                             timeout=600)
        assert out.returncode == 0, out.stderr
        outs.append(out.stdout.split())
    (*compiled, hit_first), (*loaded, hit_second) = outs
    assert hit_first == "False" and hit_second == "True"            # compiled, then loaded
    assert compiled == loaded


def _train(runs, make, family, dtype, weights, fused: bool):
    """A model trained on ``runs`` for one epoch, by :func:`fused_runs.run_steps` or batch by batch, and its loss sum."""
    m = _model(make, family, dtype)
    step, gen, total, done = fused_step.FusedStep(m, 1.5), torch.Generator().manual_seed(5), 0.0, 0.0
    sampler = NegativeSampler(np.arange(1, V + 1))
    for run in runs:
        lrs = fused_runs.learning_rates(0.05, 1, 0, done, run.progress)
        total = (fused_runs.run_steps(step, run, sampler, gen, K, lrs, weights, total) if fused
                 else _one_by_one(step, run, sampler, gen, lrs, weights, total))
        done = float(run.progress[-1])
    return m, total


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(per_run=st.integers(1, 17), batch_size=st.sampled_from([1, 5, 6, 7, 13, 64]),
       chunk_tokens=st.sampled_from([1, 7, 16, 17, 10_000]), family=st.sampled_from(["II", "III", "IV"]),
       dtype=st.sampled_from([torch.float32, torch.float64]), case=st.sampled_from(CASES), seed=st.integers(0, 5))
def test_runs_of_any_length_equal_their_batches_one_by_one(make, per_run, batch_size, chunk_tokens, family, dtype,
                                                          case, seed):
    """Runs of 1..17 batches (around the loop's 16), batches of 1 pair to several centres, chunks cut anywhere."""
    tokens, doc_ids, times = _corpus(seed, docs=25)
    runs = list(iter_centre_runs(tokens, doc_ids, times, keep_prob=np.ones(V), window=3, batch_size=batch_size,
                                 rng=np.random.default_rng(seed), chunk_tokens=chunk_tokens, batches_per_run=per_run))
    assert all(1 <= len(r) <= per_run for r in runs)
    weights = _weights(case)
    (fused, total), (reference, want) = (_train(runs, make, family, dtype, weights, f) for f in (True, False))
    assert np.isfinite(total) and total == want
    for (name, p), q in zip(fused.named_parameters(), reference.parameters()):
        assert torch.equal(p, q), name


def test_learning_rates_decay_from_the_progress_before_each_batch():
    lrs = fused_runs.learning_rates(0.1, 4, 1, 0.5, np.array([0.6, 0.8, 1.0]))
    assert lrs == [0.1 * (1 - 1.5 / 4), 0.1 * (1 - 1.6 / 4), 0.1 * (1 - 1.8 / 4)]
    assert fused_runs.learning_rates(0.1, 1, 0, 1.0, np.array([1.0])) == [0.1 * 1e-4]


@pytest.mark.parametrize("penalty", [0.0, 0.3, "tensor"])
@pytest.mark.parametrize("with_row_lr", [True, False])
def test_row_step_scales_with_a_learning_rate_per_token_round_as_with_floats(penalty, with_row_lr):
    g = torch.Generator().manual_seed(0)
    lrs = [0.0123456789, 0.987654321, 3.3e-5]
    row_lr = 1.0 + torch.rand(3, generator=g) if with_row_lr else None
    lam = 0.07 * torch.rand(3, generator=g) if penalty == "tensor" else penalty
    row, rough = row_step_scales(lam, row_lr, torch.tensor(lrs, dtype=torch.float64), torch.float32)
    for i, lr in enumerate(lrs):
        r, s = row_step_scales(lam[i:i + 1] if penalty == "tensor" else lam,
                               None if row_lr is None else row_lr[i:i + 1], lr, torch.float32)
        assert torch.as_tensor(r, dtype=torch.float32).reshape(-1).equal(row[i:i + 1].to(torch.float32))
        if s is None:
            assert rough is None
        else:
            assert torch.as_tensor(s, dtype=torch.float32).reshape(-1).equal(rough[i:i + 1].to(torch.float32))


def test_runs_hold_the_batches_of_iter_centre_batches():
    tokens, doc_ids, times = _corpus(2)
    kw = dict(keep_prob=np.ones(V), window=3, batch_size=5, chunk_tokens=80)
    want = list(iter_centre_batches(tokens, doc_ids, times, rng=np.random.default_rng(1), **kw))
    for per_run in (1, 4, 16):
        runs = list(iter_centre_runs(tokens, doc_ids, times, rng=np.random.default_rng(1), batches_per_run=per_run,
                                     **kw))
        assert all(1 <= len(r) <= per_run for r in runs)
        got = [b for r in runs for b in r.batches()]
        assert len(got) == len(want)
        for a, b in zip(got, want):
            assert a.words.equal(b.words) and a.pair_centre.equal(b.pair_centre) and a.context.equal(b.context)
            assert a.time.equal(b.time) and a.progress == b.progress
    with pytest.raises(ValueError, match="batches_per_run"):
        next(iter_centre_runs(tokens, doc_ids, times, rng=np.random.default_rng(1), batches_per_run=0, **kw))


def test_segments_cut_runs_at_every_sync():
    runs = _runs(batch_size=4, batches_per_run=5)
    want = [b.context.tolist() for r in runs for b in r.batches()]
    seg = Segments(iter(runs), 7)
    got, sizes = [], []
    while True:
        part, n = seg.next_segment()
        if not part:
            break
        assert n == sum(len(r) for r in part)
        sizes.append(n)
        got += [b.context.tolist() for r in part for b in r.batches()]
    assert got == want
    assert all(n == 7 for n in sizes[:-1]) and 1 <= sizes[-1] <= 7


def test_a_run_refuses_ranges_outside_its_arrays():
    run = _runs()[0]
    with pytest.raises(ValueError, match="pairs lo < hi"):
        CentreRun(run.words, run.time, run.pair_row, run.context, run.rows, run.pairs + run.context.shape[0],
                  run.progress)
    with pytest.raises(ValueError, match="rows lo < hi"):
        CentreRun(run.words, run.time, run.pair_row, run.context, run.rows[:, ::-1], run.pairs, run.progress)
    with pytest.raises(ValueError, match=r"n_b >= 1"):
        CentreRun(run.words, run.time, run.pair_row, run.context, run.rows, run.pairs, run.progress[:-1])
    with pytest.raises(ValueError, match="time must be"):
        CentreRun(run.words, run.time[:-1], run.pair_row, run.context, run.rows, run.pairs, run.progress)
    with pytest.raises(ValueError, match="splits after"):
        run.split(len(run))
    first, rest = run.split(1)
    assert len(first) == 1 and len(rest) == len(run) - 1 and rest.batch(0).context.equal(run.batch(1).context)


def test_bad_ids_stop_the_run_at_their_batch_with_the_batches_before_trained(make):
    run = _runs()[0]
    context = run.context.clone()
    context[run.pairs[1, 0]] = V  # the second batch's first pair: a word outside the vocabulary
    bad = CentreRun(run.words, run.time, run.pair_row, context, run.rows, run.pairs, run.progress)
    sampler, weights = NegativeSampler(np.ones(V)), (None, None, 0.01)
    m, ref = _model(make, "IV", torch.float32), _model(make, "IV", torch.float32)
    with pytest.raises(IndexError, match=r"context word ids must lie in \[0, 40\)"):
        fused_runs.run_steps(fused_step.FusedStep(m), bad, sampler, torch.Generator().manual_seed(1), K,
                             [0.1] * len(run), weights, 0.0)
    _one_by_one(fused_step.FusedStep(ref), run.split(1)[0], sampler, torch.Generator().manual_seed(1), [0.1],
                weights, 0.0)
    for (name, p), q in zip(m.named_parameters(), ref.parameters()):
        assert torch.equal(p, q), name


def test_run_steps_refuses_learning_rates_that_do_not_match_the_batches(make):
    run, step = _runs()[0], fused_step.FusedStep(_model(make, "IV", torch.float32))
    sampler, gen = NegativeSampler(np.ones(V)), torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="one learning rate per batch"):
        fused_runs.run_steps(step, run, sampler, gen, K, [0.1] * (len(run) - 1), (None, None, 0.0), 0.0)
    with pytest.raises(ValueError, match="negatives >= 1"):
        fused_runs.run_steps(step, run, sampler, gen, 0, [0.1] * len(run), (None, None, 0.0), 0.0)


def test_runs_in_threads_equal_one_thread_whichever_kernel_runs_each_batch(make, monkeypatch, own_process):
    """A step of two threads runs each run on the kernel its KernelChoice picks (a trial too: a whole run): the same
    losses and parameters, bit for bit, as one thread, for always the threads, trials of one thread, and trials of
    the threads (float32, fit's dtype: each dtype compiles the threaded kernel again; in a process of its own,
    ``own_process``)."""
    if not own_process:
        return
    from qpnlp.word2fun import _kernel_choice

    dtype, runs, weights = torch.float32, _runs(batch_size=40), _weights(CASES[1])
    real = fused_step.FusedStep.__init__
    wanted = {family: _train(runs, make, family, dtype, weights, True) for family in ("IV", "II")}  # one thread
    monkeypatch.setattr(fused_step.FusedStep, "__init__", lambda self, m, w=1.0: real(self, m, w, threads=2))
    for family, (want_model, want) in wanted.items():
        for picks in ([(1, False)], [(0, True), (1, False)], [(1, True), (0, False), (0, True)]):
            cycle = iter(picks * 4 * len(runs))
            monkeypatch.setattr(_kernel_choice.KernelChoice, "pick", lambda self: next(cycle))
            got_model, got = _train(runs, make, family, dtype, weights, True)
            assert got == want, (family, picks)
            for (name, p), q in zip(got_model.named_parameters(), want_model.parameters()):
                assert torch.equal(p, q), (family, picks, name)


def test_a_trial_of_the_other_kernel_is_timed_on_the_whole_run(make, monkeypatch):
    """The choice compares seconds per pair of whole runs: a trial runs and is timed on all the run's batches, as
    the chosen kernel's calls (a trial of one batch paid a call's fixed cost over 16 times fewer pairs)."""
    from qpnlp.word2fun import _kernel_choice

    recorded = []
    monkeypatch.setattr(_kernel_choice.KernelChoice, "pick", lambda self: (0, True))
    monkeypatch.setattr(_kernel_choice.KernelChoice, "record", lambda self, *call: recorded.append(call))
    run = _runs()[0]
    assert len(run) > 1
    fused_runs.run_steps(fused_step.FusedStep(_model(make, "IV", torch.float32), threads=2), run,
                         NegativeSampler(np.ones(V)), torch.Generator().manual_seed(1), K, [0.1] * len(run),
                         (None, None, 0.01), 0.0)
    assert [(kernel, pairs, trial) for kernel, _, pairs, trial in recorded] == [
        (0, int(run.pairs[-1, 1] - run.pairs[0, 0]), True)]


def test_bad_ids_stop_a_trial_at_their_batch(make, monkeypatch):
    """A trial (a whole run) stops at the batch with bad ids, as any run: they are named, the batches before them
    trained, nothing after."""
    from qpnlp.word2fun import _kernel_choice

    monkeypatch.setattr(_kernel_choice.KernelChoice, "pick", lambda self: (0, True))
    run = _runs()[0]
    context = run.context.clone()
    context[run.pairs[1, 0]] = V
    bad = CentreRun(run.words, run.time, run.pair_row, context, run.rows, run.pairs, run.progress)
    sampler, weights = NegativeSampler(np.ones(V)), (None, None, 0.01)
    m, ref = _model(make, "IV", torch.float32), _model(make, "IV", torch.float32)
    with pytest.raises(IndexError, match=r"context word ids must lie in \[0, 40\)"):
        fused_runs.run_steps(fused_step.FusedStep(m, threads=2), bad, sampler, torch.Generator().manual_seed(1), K,
                             [0.1] * len(run), weights, 0.0)
    _one_by_one(fused_step.FusedStep(ref), run.split(1)[0], sampler, torch.Generator().manual_seed(1), [0.1],
                weights, 0.0)
    for (name, p), q in zip(m.named_parameters(), ref.parameters()):
        assert torch.equal(p, q), name

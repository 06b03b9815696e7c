"""Several workers as replicas (``TrainConfig(workers=W, parallel="replicas")``): each thread trains its own copy on
its part of every segment of batches and their updates are merged row by row (``qpnlp.word2fun._merge``), so the
run is the same bit for bit every time.

Before ``parallel`` existed, ``workers`` > 1 always meant hogwild threads sharing one model: a run was not
repeatable (updates raced), and the first tests failed (no such setting).
"""

from __future__ import annotations

import json
import threading
from dataclasses import replace

import numpy as np
import pytest
import torch

from qpnlp.word2fun import KeyedVectors, TrainConfig, loop
from qpnlp.word2fun._replicas import Replicas
from qpnlp.word2fun._segments import split_runs

CFG = TrainConfig(epochs=2, batch_size=64, chunk_tokens=4000, seed=3, workers=2, parallel="replicas",
                  replica_sync_every=4)


def _train(make, random_source, config=CFG):
    source, counts = random_source()
    model = make(50, 8, family="IV", logistic=True)
    stats = loop.train_source(model, source, counts, config, rng=np.random.default_rng(11))
    return [p.detach().clone() for p in model.parameters()], stats


@pytest.mark.parametrize("shared_negatives", [True, False])      # the compiled step, and the torch ops
def test_replicas_train_the_same_model_in_every_run(make, random_source, shared_negatives):
    cfg = replace(CFG, shared_negatives=shared_negatives, negatives=5)
    first, stats = _train(make, random_source, cfg)
    second, _ = _train(make, random_source, cfg)
    assert all(torch.equal(a, b) for a, b in zip(first, second))
    one, one_stats = _train(make, random_source, replace(cfg, workers=1))
    assert not all(torch.equal(a, b) for a, b in zip(first, one))       # the threads trained, merged
    assert stats.pairs == one_stats.pairs and stats.tokens == one_stats.tokens   # every batch, once
    assert np.allclose(stats.epoch_loss, one_stats.epoch_loss, rtol=0.05)


def test_every_worker_trains_its_own_part_of_each_segment(make, random_source, monkeypatch):
    seen = []
    real = loop._train_batches

    def noting(model, runs, *args, **kwargs):
        runs = list(runs)
        seen.append((threading.current_thread().name, id(model), sum(len(r) for r in runs)))
        return real(model, iter(runs), *args, **kwargs)

    monkeypatch.setattr(loop, "_train_batches", noting)
    _train(make, random_source, replace(CFG, epochs=1))
    assert len({name for name, _, _ in seen}) > 2               # threads started per segment
    assert len({model for _, model, _ in seen}) == 2            # two replicas, the same in every segment
    assert max(n for _, _, n in seen) == CFG.replica_sync_every  # each part's batches (the last: fewer)


def test_split_runs_keeps_every_batch_in_order(random_source):
    source, counts = random_source()
    runs = list(loop._epoch_runs(source, replace(CFG, batch_size=32), np.random.default_rng(0),
                                 np.ones(50), torch.device("cpu")))
    parts = split_runs(runs, 3)
    sizes = [sum(len(r) for r in part) for part in parts]
    total = sum(len(r) for r in runs)
    assert sum(sizes) == total and max(sizes) - min(sizes) <= 2
    joined = np.concatenate([r.progress for part in parts for r in part])
    assert np.array_equal(joined, np.concatenate([r.progress for r in runs]))
    assert [sum(len(r) for r in p) for p in split_runs(runs[:1], 4)][-1] <= len(runs[0])


def _toy():
    model = torch.nn.Linear(3, 2)
    torch.nn.init.zeros_(model.weight)
    torch.nn.init.zeros_(model.bias)
    return model


def test_a_row_takes_the_summed_updates_of_two_replicas_and_two_thirds_of_three():
    model = _toy()
    replicas = Replicas(model, 3, {"bias": (-1.0, 2.5)})
    steps = {0: [1.0, 0.0], 1: [2.0, 4.0], 2: [6.0, 3.0]}               # row 0: all three; row 1: two of them

    def task(replica, part, w):
        with torch.no_grad():
            replica.weight.add_(torch.tensor(steps[w])[:, None] * part)
            replica.bias.add_(torch.tensor(steps[w]) * part)
        return w

    assert replicas.train([1.0, 1.0, 1.0], task) == [0, 1, 2]
    assert torch.equal(model.weight, torch.tensor([[6.0] * 3, [7.0] * 3]))  # (1 + 2 + 6) * 2 / 3; 4 + 3
    assert torch.equal(model.bias, torch.tensor([2.5, 2.5]))                # clipped
    replicas.train([0.5, 0.0, 0.0], task)                                   # every replica starts from the merge
    assert torch.equal(model.weight, torch.tensor([[6.5] * 3, [7.0] * 3]))  # one replica changed row 0 alone


def test_the_compiled_merge_equals_the_torch_ops(monkeypatch):
    from qpnlp.word2fun import _merge, pair_loop
    if not pair_loop.available():
        pytest.skip("needs numba (the extra 'fast') for the compiled merge")
    gen = torch.Generator().manual_seed(0)
    start = torch.randn(40, 7, generator=gen)
    tables = [start + torch.randn(40, 7, generator=gen) * (torch.rand(40, 1, generator=gen) < 0.6) for _ in range(4)]
    tables[1][3, 2] = float("nan")
    results = []
    for compiled in (True, False):
        monkeypatch.setattr(pair_loop, "accepts", lambda *t, compiled=compiled: compiled)
        copies, s = [t.clone() for t in tables], start.clone()
        _merge.merge_replicas(copies[0], copies[1:], s, (-1.5, 2.0))
        assert all(torch.equal(c.nan_to_num(), s.nan_to_num()) for c in copies)    # every copy holds the merge
        results.append(s)
    assert torch.equal(results[0].nan_to_num(), results[1].nan_to_num())          # bit for bit
    assert results[0][3, 2].isnan() and results[0].isnan().sum() == 1            # NaN stays where it was
    changed = torch.stack([(t != start).any(dim=1) for t in tables]).sum(dim=0)
    assert set(changed.tolist()) >= {0, 1, 2, 3}
    summed = sum(t - start for t in tables)
    expected = (start + summed / (changed[:, None] / 2).clamp(min=1)).clamp(-1.5, 2.0)
    assert torch.allclose(results[0], expected, equal_nan=True)


def test_three_replicas_train_where_summed_updates_diverge(make, random_source, monkeypatch):
    """Summed, the updates of three replicas overshoot the rows all of them changed (each update computed from the
    same parameters) and training diverges; merged, they train like one worker."""
    from qpnlp._errors import TrainingDiverged
    from qpnlp.word2fun import _merge
    cfg = replace(CFG, workers=3, lr=0.1, replica_sync_every=16, epochs=3)
    _, merged = _train(make, random_source, cfg)
    _, one = _train(make, random_source, replace(cfg, workers=1))
    assert merged.epoch_loss[-1] < 1.02 * one.epoch_loss[-1]
    monkeypatch.setattr(_merge, "divisor", torch.ones_like)                                      # the sum
    with pytest.raises(TrainingDiverged):
        _train(make, random_source, cfg)


def test_a_model_changed_between_runs_is_reloaded_into_every_replica(make, random_source, monkeypatch):
    """The replicas keep the merge and copy nothing between segments; a change made to the model in between (a
    distributed process's sync) reaches them through ``reload``, which the loop calls before every run."""
    model = _toy()
    replicas = Replicas(model, 3)

    def task(replica, part, w):
        with torch.no_grad():
            replica.weight.add_(w + 1.0)

    replicas.train([None] * 3, task)
    assert torch.equal(model.weight, torch.full((2, 3), 4.0))      # (1 + 2 + 3) * 2 / 3
    with torch.no_grad():
        model.weight.fill_(10.0)                                    # e.g. the processes' merge
    replicas.reload()
    replicas.train([None] * 3, task)
    assert torch.equal(model.weight, torch.full((2, 3), 14.0))     # without reload: 4 + (7 + 2 + 3) * 2 / 3 = 12

    calls, real_reload = [], Replicas.reload
    monkeypatch.setattr(Replicas, "reload", lambda self: calls.append(1) or real_reload(self))
    _train(make, random_source, replace(CFG, epochs=2))
    assert len(calls) == 2                                          # one run per epoch in a single process


def test_a_failing_worker_keeps_nothing_of_the_segment():
    model = _toy()
    replicas = Replicas(model, 2)

    def task(replica, part, w):
        with torch.no_grad():
            replica.weight.add_(1.0)
        if w == 1:
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        replicas.train([None, None], task)
    assert torch.equal(model.weight, torch.zeros(2, 3))


def test_parallel_is_checked():
    with pytest.raises(ValueError, match="parallel must be one of"):
        TrainConfig(parallel="threads")



def test_the_command_line_trains_replicas_the_same_twice(tmp_path):
    from qpnlp.cli import main
    from qpnlp.data import TimestampedCorpus, write_tsv

    rng = np.random.default_rng(0)
    corpus = tmp_path / "c.tsv"
    write_tsv(TimestampedCorpus.from_pairs([(1900 + i % 20, list(rng.choice(["war", "peace", "tax", "bank"], 8)))
                                            for i in range(200)]), corpus)
    runs = []
    for name in ("a", "b"):
        report = tmp_path / f"{name}.json"
        assert main(["train", "word2fun", "--corpus", str(corpus), "--dim", "4", "--epochs", "2", "--min-count", "1",
                     "--sample", "0", "--batch-size", "64", "--no-progress", "--workers", "2", "--parallel",
                     "replicas", "--replica-sync-every", "2", "--out", str(tmp_path / name),
                     "--report", str(report)]) == 0
        data = json.loads(report.read_text())
        assert data["config"]["train"]["parallel"] == "replicas"
        assert data["config"]["train"]["replica_sync_every"] == 2
        runs.append([epoch["train_loss"] for epoch in data["history"]])
    assert runs[0] == runs[1]
    assert all(torch.equal(a, b) for a, b in zip(*(KeyedVectors.from_pretrained(tmp_path / name).grid(
        ["war", "tax"], [1900.0, 1910.0]) for name in ("a", "b"))))

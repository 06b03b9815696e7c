"""Training: the SGD loop, fit() (vocabulary, frozen compass, checkpoints) and the `qpnlp train word2fun` command."""

import argparse
import json

import numpy as np
import pytest
import torch

from qpnlp.data import TimestampedCorpus, Vocabulary, write_tsv
from qpnlp.evaluation.drift import DriftGrid, evaluate_grid
from qpnlp.models.base import read_model_header
from qpnlp.word2fun import KeyedVectors, TimeScale, TrainConfig, Word2FunConfig, fit, roughness, train_word2fun


def encoded(corpus, min_count=3):
    vocab = Vocabulary.build(corpus.docs, min_freq=min_count, specials=False)
    return vocab, corpus.encode(vocab)


def test_hogwild_workers_train(tiny_drift, make):
    corpus, truth = tiny_drift
    vocab, enc = encoded(corpus)
    m = make(len(vocab), 12, family="IV", time_scale=TimeScale(*corpus.span), frequency_init="harmonic", max_periods=2)
    before = torch.get_num_threads()
    st = train_word2fun(m, enc.tokens, enc.doc_ids, enc.times, vocab.counts,
                        TrainConfig(epochs=2, negatives=16, shared_negatives=True, batch_size=1024, workers=2))
    assert torch.get_num_threads() == before
    assert st.epoch_loss[-1] < st.epoch_loss[0] and st.pairs > 0 and np.isfinite(st.epoch_loss).all()
    assert Word2FunConfig.from_dict(m.config.to_dict()).max_periods == 2.0


def test_train_word2fun_reads_integer_ids_of_any_width_and_names_other_dtypes(make):
    """int32 tokens failed in numba's compiler (a TypingError pages long), uint16 and float ones in indexing, and
    tensors or lists in ``.shape`` / ``from_numpy``, none naming the array; the arrays are never written to."""
    corpus = small_corpus(60)
    vocab, enc = encoded(corpus, min_count=1)
    config = TrainConfig(epochs=1, negatives=2, batch_size=64, sample=0)
    runs = []
    for tokens, doc_ids in [(enc.tokens, enc.doc_ids), (enc.tokens.astype(np.int32), enc.doc_ids.astype(np.uint16)),
                            (torch.from_numpy(enc.tokens), enc.doc_ids.tolist())]:
        saved = np.asarray(tokens).copy()
        m = make(len(vocab), 4, family="linear", time_scale=TimeScale(*corpus.span))
        runs.append((train_word2fun(m, tokens, doc_ids, enc.times, vocab.counts, config).epoch_loss,
                     m.state_dict()))
        np.testing.assert_array_equal(np.asarray(tokens), saved)
    for loss, state in runs[1:]:
        assert loss == runs[0][0]
        assert all(torch.equal(state[k], runs[0][1][k]) for k in state)
    with pytest.raises(TypeError, match="tokens must be integer ids; got an array of float64"):
        train_word2fun(make(len(vocab), 4), enc.tokens.astype(float), enc.doc_ids, enc.times, vocab.counts, config)


def test_a_failing_hogwild_worker_stops_the_others(make, monkeypatch):
    """When one worker fails, the others stop too and the error is raised (before, a surviving worker drained
    the prefetch queue and then waited for a batch that the stopped producer never sent: the run hung)."""
    import threading

    from qpnlp.word2fun import loop
    from qpnlp.word2fun.sources import ArraySource

    real, calls, lock = loop.batch_step, [0], threading.Lock()

    def failing_steps(*args, **kwargs):
        step = real(*args, **kwargs)

        def failing(*a, **k):
            with lock:
                calls[0] += 1
                if calls[0] == 3:
                    raise RuntimeError("boom")
            return step(*a, **k)

        return failing

    monkeypatch.setattr(loop, "batch_step", failing_steps)
    rs = np.random.default_rng(0)
    tokens, doc_ids = rs.integers(0, 50, 20_000), np.repeat(np.arange(200), 100)
    source = ArraySource(tokens, doc_ids, 1900.0 + np.arange(200) % 100)
    out = []

    def run():
        try:
            loop.train_source(make(50, 8, family="IV"), source, np.bincount(tokens, minlength=50),
                              TrainConfig(epochs=1, batch_size=64, workers=2))
        except RuntimeError as e:
            out.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout=60)
    assert not t.is_alive(), "the hogwild run hung after a worker failed"
    assert len(out) == 1 and "boom" in str(out[0])


def test_end_to_end_drift_recovery_tiny(tiny_drift, device):
    corpus, truth = tiny_drift
    result = fit(corpus, TrainConfig(epochs=3, negatives=32, shared_negatives=True, batch_size=2048,
                                     device=str(device)),
                 family="IV", dim=20, time_scale=TimeScale(*corpus.span), frequency_init="harmonic", min_count=3)
    st, emb = result.stats, result.vectors
    assert all(p.device.type == device.type for p in emb.model.parameters())
    assert st.epoch_loss[-1] < st.epoch_loss[0] and st.tokens_per_s > 0
    words = list(truth.words) + [w for tw in truth.topic_words for w in tw]
    r = evaluate_grid(DriftGrid(emb.grid(words, truth.years), words, truth.years), truth)
    assert r["auc"] >= 0.8  # drift words change more than stable and trap words
    assert r["acc_before"] >= 0.8 and r["acc_after"] >= 0.6
    assert r["change_year_mae"] < 8


def test_roughness_penalty_smooths_the_trained_functions(tiny_drift, make):
    corpus, _ = tiny_drift
    vocab, enc = encoded(corpus)
    ts = TimeScale(*corpus.span, 30.0)
    rho = []
    for lam in (0.0, 5e-3):
        m = make(len(vocab), 12, family="IV", time_scale=ts, frequency_init="harmonic", max_periods=3, seed=1)
        train_word2fun(m, enc.tokens, enc.doc_ids, enc.times, vocab.counts,
                       TrainConfig(epochs=2, negatives=16, shared_negatives=True, batch_size=2048, seed=1,
                                   lr=0.025, negative_weight=1.5, roughness_penalty=lam))   # the test's own steps
        ids = torch.arange(len(vocab))
        rho.append(roughness(m, {k: w[i] for k, (w, i) in m.tables(ids, torch.zeros(len(vocab))).items()}).mean().item())
    assert 0 < rho[1] < 0.5 * rho[0]
    with pytest.raises(ValueError, match="sinusoidal"):
        train_word2fun(make(len(vocab), 4, family="linear", time_scale=ts), enc.tokens, enc.doc_ids, enc.times,
                       vocab.counts, TrainConfig(epochs=1, roughness_penalty=1e-3))


@pytest.mark.parametrize("bad", [dict(lr=0.0), dict(epochs=0), dict(negatives=0), dict(workers=0),
                                 dict(sample=-1e-3), dict(roughness_penalty=-1.0),
                                 # NaN passed the old `x < 0` checks; powers and seeds were not checked at all
                                 dict(sample=float("nan")), dict(roughness_penalty=float("inf")),
                                 dict(rare_lr_max=float("nan")), dict(roughness_power=float("nan")),
                                 dict(rare_lr_power=float("inf")), dict(seed=-1), dict(seed=1.5),
                                 # infinite rates and weights, NaN weights and fractional counts passed too
                                 dict(lr=float("inf")), dict(negative_weight=float("nan")),
                                 dict(negative_weight=float("inf")), dict(step_centre_lr=float("inf")),
                                 dict(frequency_reference=float("inf")), dict(epochs=2.5), dict(batch_size=512.5),
                                 dict(sync_every=1.5), dict(workers=True)])
def test_bad_train_config_is_rejected(bad):
    with pytest.raises(ValueError, match="must be"):
        TrainConfig(**bad)


@pytest.mark.parametrize("seed", [2 ** 32, 2 ** 64])
def test_seeds_are_those_of_every_qpnlp_trainer(seed):
    # any seed >= 0 passed; 2**64 and more then failed in torch.Generator.manual_seed once the corpus had been read
    from qpnlp.training import TrainConfig as ClassificationConfig

    for config in (TrainConfig, ClassificationConfig):
        with pytest.raises(ValueError, match=r"seed must be an integer in \[0, 2\*\*32 - 1\]; got"):
            config(seed=seed)
    assert TrainConfig(seed=np.uint32(2 ** 32 - 1)).seed == 2 ** 32 - 1


# ------------------------------------------------------------------ fit()
def small_corpus(n=400):
    rng = np.random.default_rng(0)
    words = ["war", "peace", "trade", "army", "navy", "tax", "bank", "union"]
    return TimestampedCorpus.from_pairs((1900 + i % 20, list(rng.choice(words, 8))) for i in range(n))


def test_fit_builds_the_vocabulary_and_the_model():
    corpus = small_corpus()
    result = fit(corpus, TrainConfig(epochs=2, seed=3), family="III", dim=6, time_scale=30.0, min_count=1)
    vectors = result.vectors
    assert isinstance(vectors, KeyedVectors) and result.compass_stats is None
    assert vectors.index_to_key == tuple(Vocabulary.build(corpus.docs, specials=False).words)
    assert vectors.time_span == (1900.0, 1919.0) and vectors.time_scale.scale == 30.0
    assert vectors.model.family == "III" and vectors.model.vocab_size == len(vectors) == 8
    assert not vectors.model.freeze_compass and len(result.stats.epoch_loss) == 2
    again = fit(corpus, TrainConfig(epochs=2, seed=3), family="III", dim=6, time_scale=30.0, min_count=1)
    assert torch.equal(again.vectors.grid(["war"], [1905.0]), vectors.grid(["war"], [1905.0]))  # seeded


def test_fit_with_the_frozen_compass_pretrains_a_static_model(make):
    corpus = small_corpus()
    cfg = TrainConfig(epochs=2, seed=4, roughness_penalty=1e-3)
    result = fit(corpus, cfg, family="IV", dim=6, min_count=1, compass="frozen", compass_epochs=1)
    model = result.vectors.model
    assert model.freeze_compass and not model.compass.weight.requires_grad
    assert result.compass_stats is not None and len(result.compass_stats.epoch_loss) == 1
    # the compass is the static model's, trained alone for compass_epochs (without the roughness penalty)
    vocab, enc = encoded(corpus, min_count=1)
    static = make(len(vocab), 6, family="static", time_scale=model.time_scale, seed=4)
    train_word2fun(static, enc.tokens, enc.doc_ids, enc.times, vocab.counts,
                   TrainConfig(epochs=1, seed=4, roughness_penalty=0.0))
    assert torch.equal(model.compass.weight, static.compass.weight)
    assert not torch.equal(model.base.weight, static.base.weight)  # the static part starts there, then trains
    with pytest.raises(ValueError, match="compass must be one of"):
        fit(corpus, cfg, compass="thawed")


def test_fit_saves_a_checkpoint_after_every_epoch(tmp_path):
    seen = []

    def on_epoch(epoch, stats):
        seen.append((epoch, read_model_header(tmp_path / "ck")["metadata"]["epochs_done"], len(stats.epoch_loss)))

    result = fit(small_corpus(), TrainConfig(epochs=2), dim=4, min_count=1, checkpoint=tmp_path / "ck",
                 metadata={"corpus_name": "small"}, on_epoch=on_epoch)
    assert seen == [(0, 1, 1), (1, 2, 2)]
    back = KeyedVectors.from_pretrained(tmp_path / "ck")
    assert torch.equal(back.grid(["war", "tax"], [1900, 1919]), result.vectors.grid(["war", "tax"], [1900, 1919]))
    meta = read_model_header(tmp_path / "ck")["metadata"]
    assert meta["corpus_name"] == "small" and meta["training"]["epochs"] == 2 and meta["compass"] == "trainable"


def test_fit_refuses_what_it_cannot_train():
    with pytest.raises(ValueError, match="empty"):
        fit(TimestampedCorpus.from_pairs([]))
    with pytest.raises(ValueError, match="single time"):
        fit(TimestampedCorpus.from_pairs([(1900, ["a", "b"])] * 3), min_count=1)
    with pytest.raises(ValueError, match="at least two"):
        fit(small_corpus(), min_count=10_000)
    with pytest.raises(ValueError, match="without special tokens"):
        fit(small_corpus(), vocabulary=Vocabulary.build(small_corpus().docs))


# ------------------------------------------------------------------ the command
def test_cli_writes_report_checkpoint_and_npz(tmp_path, tiny_drift):
    from qpnlp.commands.word2fun import register

    corpus, truth = tiny_drift
    write_tsv(corpus, tmp_path / "c.tsv")
    parser = argparse.ArgumentParser()
    root = parser.add_subparsers(dest="verb")
    train = root.add_parser("train").add_subparsers(dest="model")
    register({"root": root, "train": train})
    args = parser.parse_args(["train", "word2fun", "--corpus", str(tmp_path / "c.tsv"), "--dim", "8", "--epochs", "1",
                              "--words", "drift00,stable00", "--eras", "3", "--out", str(tmp_path / "ck"),
                              "--report", str(tmp_path / "r.json"), "--export-npz", str(tmp_path / "g.npz"),
                              "--npz-words", "10", "--no-progress", "--compass", "frozen", "--compass-epochs", "1",
                              "--roughness-penalty", "1e-4"])
    assert args.func(args) == 0
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["schema"] == "qpnlp-report/1" and rep["status"] == "completed" and len(rep["history"]) == 1
    assert len(rep["details"]["nearest"]["drift00"]) == 3
    assert len(rep["details"]["nearest"]["drift00"][0]["nearest"]) == 8
    assert rep["metrics"]["tokens_per_s"] > 0 and rep["config"]["model"]["freeze_compass"] is True
    z = np.load(tmp_path / "g.npz")
    assert z["E"].shape == (30, 12, 8) and "drift00" in z["words"].tolist()
    back = KeyedVectors.from_pretrained(tmp_path / "ck")
    assert back.model.family == "IV"


def test_a_diverging_run_raises_with_the_epoch_and_keeps_the_last_finite_checkpoint(tiny_drift, tmp_path):
    """Too large a step (here lr 50) turns the loss to NaN: fit says so instead of returning NaN vectors."""
    from qpnlp.training import TrainingDiverged          # one class for every trainer (the CLI reports it)

    corpus, _ = tiny_drift
    reason = "diverged in epoch 1 of 2.*negative_weight 5.0; lower lr or batch_size"
    with pytest.raises(TrainingDiverged, match=reason) as raised:
        fit(corpus, TrainConfig(epochs=2, lr=50.0, batch_size=4096), dim=8, min_count=3, checkpoint=tmp_path / "ck")
    assert raised.value.epoch == 1 and not np.isfinite(raised.value.loss) and raised.value.batch is None
    assert not (tmp_path / "ck").exists()            # no epoch finished: nothing was written


class _HostReads(torch.Tensor):
    """A step's loss that counts how often the host reads it (or a sum it went into)."""

    reads = 0

    def _read(self, method):
        _HostReads.reads += 1
        return getattr(self.as_subclass(torch.Tensor), method)()

    def __float__(self):
        return self._read("__float__")

    def __bool__(self):
        return self._read("__bool__")

    def item(self):
        return self._read("item")

    def tolist(self):
        return self._read("tolist")


@pytest.mark.parametrize("workers", [1, 2])
def test_the_loop_reads_the_loss_on_the_host_once_per_epoch(make, monkeypatch, workers):
    """The batches' losses are added up on the model's device and read once per epoch (for the mean loss and
    the divergence check): on an accelerator a read per batch would wait for every step."""
    from qpnlp.word2fun import loop
    from qpnlp.word2fun.sources import ArraySource

    real, losses = loop.batch_step, []

    def steps(model, *args, **kwargs):
        real_step = real(model, *args, **kwargs)

        def step(*a, **k):
            loss = real_step(*a, **k)
            assert isinstance(loss, torch.Tensor) and loss.shape == () and loss.device == model.compass.weight.device
            losses.append(loss.clone())
            return loss.as_subclass(_HostReads)

        return step

    monkeypatch.setattr(loop, "batch_step", steps)
    monkeypatch.setattr(_HostReads, "reads", 0)
    rs = np.random.default_rng(0)
    tokens, doc_ids = rs.integers(0, 50, 5_000), np.repeat(np.arange(50), 100)
    source = ArraySource(tokens, doc_ids, 1900.0 + np.arange(50) % 100)
    ends = []                    # (steps, pairs) at the end of each epoch

    def on_epoch(epoch, stats):
        ends.append((len(losses), stats.pairs))

    st = loop.train_source(make(50, 8, family="IV"), source, np.bincount(tokens, minlength=50),
                           TrainConfig(epochs=2, batch_size=64, workers=workers), on_epoch=on_epoch)
    assert len(losses) > 20 and _HostReads.reads == 2
    if workers == 1:             # added in order: the mean of the losses summed as Python floats, bit for bit
        (s0, p0), (s1, p1) = ends
        for steps, pairs, mean in ((losses[:s0], p0, st.epoch_loss[0]), (losses[s0:s1], p1 - p0, st.epoch_loss[1])):
            total = 0.0
            for loss in steps:
                total += float(loss)
            assert mean == total / pairs

"""Times in float64, invalid times, the gensim bridge and the command's input checks (issues 17 and 18)."""

import argparse
import math

import numpy as np
import pytest
import torch

from qpnlp.data import TimestampedCorpus, write_tsv
from qpnlp.word2fun import KeyedVectors, TimeScale, TrainConfig, fit
from qpnlp.word2fun.functions import MAX_ABS_TIME


def test_a_float64_model_resolves_times_that_float32_rounds_together(make, randomise):
    m = randomise(make(5, 6, family="IV")).double()
    words = torch.tensor([1, 1])
    times = torch.tensor([1950.0, 1950.00003], dtype=torch.float64)
    f = m.vectors(words, times)
    assert f.dtype == torch.float64
    assert not torch.equal(f[0], f[1])  # float32 rounds both times to 1950.0
    m32 = randomise(make(5, 6, family="IV"))
    f32 = m32.vectors(words, times)
    assert f32.dtype == torch.float32 and torch.equal(f32[0], f32[1])
    grid = m.grid(torch.tensor([1, 2]), times)
    assert grid.dtype == torch.float64 and not torch.equal(grid[0], grid[1])


def test_the_float64_sgd_step_keeps_float64_times(make):
    from qpnlp.word2fun import centre_sgd_step

    grads = []
    for t in (1950.0, 1950.00003):
        m = make(4, 6, family="IV", frequency_init="harmonic", seed=1).double()
        with torch.no_grad():
            m.amplitude.weight.fill_(0.5)
            m.compass.weight.normal_(generator=torch.Generator().manual_seed(0))
        centre_sgd_step(m, torch.tensor([1]), torch.tensor([t], dtype=torch.float64), torch.tensor([0]),
                        torch.tensor([2]), torch.tensor([3]), lr=0.1)
        grads.append(m.amplitude.weight[1].clone())
    assert not torch.equal(grads[0], grads[1])


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_query_times_are_errors(make, bad):
    m = make(4, 4)
    with pytest.raises(ValueError, match="times must be finite"):
        m.vectors(torch.tensor([0]), torch.tensor([bad]))


@pytest.mark.parametrize("span, match", [((0.0, 1e300), "must lie within"), ((0.0, math.inf), "finite"),
                                         ((1.7e9, 1.7e9 + 600.0), "subtract an origin")])
def test_time_spans_the_model_cannot_represent_are_errors(span, match):
    with pytest.raises(ValueError, match=match):  # from the corpus (NaN, inf) or from fit
        corpus = TimestampedCorpus.from_pairs([(span[0], ["a", "b", "a"]), (span[1], ["b", "a", "b"])] * 3)
        fit(corpus, TrainConfig(epochs=1), dim=4, min_count=1)


def test_unix_second_timestamps_train_and_query_in_bounded_memory():
    day = 86400.0
    t0 = 1.6e9
    pairs = [(t0 + (i % 40) * 30 * day, ["war", "peace", "army", "trade"][i % 3:] + ["tax"]) for i in range(240)]
    vectors = fit(TimestampedCorpus.from_pairs(pairs), TrainConfig(epochs=1), dim=4, min_count=1).vectors
    start, end = vectors.time_span
    assert vectors.default_step() == pytest.approx((end - start) / 1000)
    assert np.isfinite(vectors.change_degree("war", (start, start + 0.2 * (end - start)), (end - 0.2 * (end - start), end),
                                             step=vectors.default_step()))
    with pytest.raises(ValueError, match="pass a larger step"):
        vectors.change_degree("war", (start, end), (start, end), step=1.0)
    assert MAX_ABS_TIME >= 1e10 and TimeScale(t0, t0 + 1e8).check_resolution() is None


@pytest.mark.parametrize("points", [0, -5, 2.5, True])
def test_default_step_refuses_points_that_are_not_a_positive_count(make, points):
    vectors = KeyedVectors(make(2, 2), _two_words())
    with pytest.raises(ValueError, match=rf"points must be an integer >= 1; got {points!r}"):   # 0: ZeroDivisionError
        vectors.default_step(points)


def _two_words():
    from qpnlp.data import Vocabulary
    return Vocabulary.build([["a", "b"]], specials=False)


def test_the_view_at_a_year_is_a_gensim_keyed_vectors(make, randomise):
    pytest.importorskip("gensim")
    from qpnlp.data import Vocabulary

    vocab = Vocabulary.build([["war", "peace", "war", "trade", "army", "army", "army"]], specials=False)
    vectors = KeyedVectors(randomise(make(len(vocab), 6, family="IV")), vocab)
    static = vectors.at(1950.0)
    kv = static.to_gensim()
    assert list(kv.index_to_key) == list(static.index_to_key)
    np.testing.assert_allclose(kv["war"], static["war"], rtol=0, atol=0)
    assert [w for w, _ in kv.most_similar("war", topn=3)] == [w for w, _ in static.most_similar("war", topn=3)]
    assert kv.get_vecattr("army", "count") == 3


def _parser():
    from qpnlp.commands.word2fun import register

    parser = argparse.ArgumentParser()
    root = parser.add_subparsers(dest="verb")
    train = root.add_parser("train").add_subparsers(dest="model")
    register({"root": root, "train": train})
    return parser


def test_the_command_takes_its_defaults_from_the_library():
    import dataclasses
    import inspect

    args = _parser().parse_args(["train", "word2fun", "--corpus", "x.tsv"])
    cfg = {f.name: f.default for f in dataclasses.fields(TrainConfig)}
    fk = {k: p.default for k, p in inspect.signature(fit).parameters.items()}
    for name in ("epochs", "batch_size", "lr", "negatives", "shared_negatives", "window", "sample", "workers",
                 "roughness_penalty", "roughness_power", "rare_lr_power", "rare_lr_max", "frequency_reference",
                 "chunk_tokens", "sync_every", "seed", "device", "negative_weight", "step_threads"):
        assert getattr(args, name) == cfg[name], name
    for name in ("family", "dim", "time_scale", "frequency_init", "min_count", "compass", "compass_epochs"):
        assert getattr(args, name) == fk[name], name
    assert args.max_periods == fk["max_periods"] and args.slices == fk["n_slices"]


def test_the_help_shows_defaults_and_names_only_existing_flags(capsys, monkeypatch):
    import re

    monkeypatch.setenv("COLUMNS", "1000")  # no line breaks inside flag names
    parser = _parser()
    with pytest.raises(SystemExit):
        parser.parse_args(["train", "word2fun", "--help"])
    text = capsys.readouterr().out
    assert "pairs per SGD step (default 2048)" in text and "(default IV)" in text
    flags = set(re.findall(r"(--[a-z][a-z0-9-]+)", text))
    known = {o for a in parser._subparsers._group_actions[0].choices["train"]._subparsers._group_actions[0]
             .choices["word2fun"]._actions for o in a.option_strings}
    assert flags <= known | {"--help"}, flags - known


@pytest.mark.parametrize("argv, match", [(["--eras", "0"], "must be >= 1"), (["--epochs", "0"], "must be >= 1"),
                                         (["--negative-weight", "0"], "> 0"), (["--negative-weight", "nan"], "> 0")])
def test_the_command_rejects_bad_numbers_before_training(argv, match, capsys):
    with pytest.raises(SystemExit):
        _parser().parse_args(["train", "word2fun", "--corpus", "x.tsv", *argv])
    assert match in capsys.readouterr().err


def test_the_command_names_a_directory_given_as_corpus(tmp_path):
    args = _parser().parse_args(["train", "word2fun", "--corpus", str(tmp_path), "--no-progress"])
    with pytest.raises(ValueError, match="is a directory"):
        args.func(args)


def test_the_command_names_the_files_of_a_corpus_without_tokens(tmp_path):
    (tmp_path / "a.tsv").write_text("\n  \n")
    (tmp_path / "b.tsv").write_text("1902\t\n")            # a time without text
    args = _parser().parse_args(["train", "word2fun", "--corpus", f"{tmp_path}/a.tsv,{tmp_path}/b.tsv",
                                 "--no-progress"])
    with pytest.raises(ValueError, match=r"no token in .*a.tsv, .*b.tsv"):
        args.func(args)


def test_the_command_trains_on_gzip_shards_by_glob(tmp_path, tiny_drift):
    import gzip

    corpus, _ = tiny_drift
    half = len(corpus) // 2
    for i, (a, b) in enumerate([(0, half), (half, len(corpus))]):
        part = TimestampedCorpus(corpus.times[a:b], corpus.docs[a:b])
        write_tsv(part, tmp_path / f"part{i}.tsv")
        with open(tmp_path / f"part{i}.tsv", "rb") as src, gzip.open(tmp_path / f"part{i}.tsv.gz", "wb") as dst:
            dst.write(src.read())
        (tmp_path / f"part{i}.tsv").unlink()
    args = _parser().parse_args(["train", "word2fun", "--corpus", str(tmp_path / "part*.tsv.gz"), "--stream",
                                 "--dim", "8", "--epochs", "1", "--no-progress", "--out", str(tmp_path / "ck")])
    assert args.func(args) == 0
    back = KeyedVectors.from_pretrained(tmp_path / "ck")
    assert back.time_span == corpus.span and "drift00" in back


def test_a_float64_model_saves_and_loads_in_float64(tmp_path, make, randomise):
    m = randomise(make(5, 6, family="IV")).double()
    assert m.config.precision == "double" and m.base.weight.dtype == torch.float64
    m.save_pretrained(tmp_path / "m")
    from qpnlp.word2fun import Word2Fun

    back = Word2Fun.from_pretrained(tmp_path / "m")
    t = torch.tensor([1950.0, 1950.00003], dtype=torch.float64)
    assert torch.equal(back.vectors(torch.tensor([2, 2]), t), m.vectors(torch.tensor([2, 2]), t))

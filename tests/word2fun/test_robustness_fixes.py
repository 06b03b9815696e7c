"""Word2Fun runs that ended "successfully" with nothing learnt, or with the grid written elsewhere.

* an epoch that drew no skip-gram pair (subsampling of a tiny corpus) printed "loss 0.0000" and exited 0 with the
  untrained vectors;
* an ``lr`` that overflows float32, or an epoch whose last update made a parameter NaN, gave a NaN model and no
  divergence error (the loss of a batch is computed before its update); a NaN, infinite, negative or overflowing
  ``lr`` given to a single step (``sgd_step``, ``centre_sgd_step(_tensor)``, ``fused_sgd_step``) wrote NaN or inf
  into the tables with no error;
* ``--export-npz DIR/g.npz`` failed after training when DIR did not exist, and ``--export-npz g.txt`` wrote
  ``g.txt.npz``.
"""

import json

import numpy as np
import pytest
import torch

from qpnlp._errors import TrainingDiverged
from qpnlp.cli import main
from qpnlp.data import TimestampedCorpus, Vocabulary, write_tsv
from qpnlp.word2fun import KeyedVectors, TrainConfig, centre_sgd_step, distributed, fit, fused_step, sgd_step
from qpnlp.word2fun.sgd import centre_sgd_step_tensor
from qpnlp.word2fun.loop import TrainStats, _record_epoch

PROG = "qpnlp train word2fun"
#: The auditor's corpus: 10 documents of the same six words, one per decade.
SIX = [(1900 + 10 * i, "the film a plot is was".split()) for i in range(10)]
DOCS = [(1900 + i % 10, ["war", "peace", "treaty", "army", "trade"]) for i in range(20)]


def _fit(docs, config, **kw):
    return fit(TimestampedCorpus.from_pairs(docs), config, dim=4, min_count=1, **kw)


def _argv(corpus, *extra):
    return ["train", "word2fun", "--corpus", str(corpus), "--dim", "4", "--min-count", "1", "--epochs", "1",
            "--no-progress", *extra]


@pytest.fixture
def six_tsv(tmp_path):
    path = tmp_path / "six.tsv"
    write_tsv(TimestampedCorpus.from_pairs(SIX), path)
    return path


# ------------------------------------------------------------------ 1. no pairs
def test_an_epoch_without_any_pair_is_an_error_that_names_subsampling():
    with pytest.raises(ValueError, match=r"no skip-gram pairs in epoch 1 of 1 from 60 tokens.*subsampling "
                                         r"\(sample 0.001\).*sample=0, --sample 0"):
        _fit(SIX, TrainConfig(epochs=1))
    result = _fit(SIX, TrainConfig(epochs=1, sample=0))          # the advice works
    assert result.stats.pairs > 0 and result.stats.epoch_loss[0] > 0


def test_documents_of_one_token_give_no_pair_whatever_the_sampling():
    docs = [(1900 + i, [w]) for i, w in enumerate(["war", "peace", "trade"] * 4)]
    with pytest.raises(ValueError, match="no skip-gram pairs .*at most one token of the vocabulary each") as err:
        _fit(docs, TrainConfig(epochs=1, sample=0))
    assert "sample=0" not in str(err.value)                     # not the advice of subsampling


def test_the_command_fails_with_one_line_instead_of_a_zero_loss(six_tsv, tmp_path, capsys):
    report = tmp_path / "r.json"
    code = main(_argv(six_tsv, "--report", str(report)))
    stdout, stderr = capsys.readouterr()
    assert code == 1, stderr                                    # was 0, with "loss 0.0000"
    line = stderr.splitlines()[-1]
    assert line.startswith(f"{PROG}: error: Word2Fun drew no skip-gram pairs") and "--sample 0" in line, stderr
    assert "loss 0.0000" not in stdout + stderr
    data = json.loads(report.read_text())
    assert data["status"] == "failed" and "no skip-gram pairs" in data["error"]
    assert main(_argv(six_tsv, "--sample", "0")) == 0


class _OtherProcess:
    """A stand-in for ``all_sum`` over two processes: adds the other process's tokens, pairs, loss (and flag)."""

    def __init__(self, *theirs):
        self.theirs = theirs

    def __call__(self, values):
        return [a + b for a, b in zip(values, self.theirs)]


@pytest.mark.parametrize("their_pairs, raises", [(0, True), (40, False)])
def test_no_pairs_is_judged_over_all_processes(monkeypatch, their_pairs, raises):
    """A process whose shard drew no pair trains on: the others did (and every process decides alike)."""
    monkeypatch.setattr(distributed, "all_sum", _OtherProcess(30, their_pairs, 4.0 * their_pairs, 0))
    stats, loss = TrainStats(), torch.zeros((), dtype=torch.float64)
    if raises:
        with pytest.raises(ValueError, match="no skip-gram pairs in epoch 1 of 7 from 60 tokens"):
            _record_epoch(stats, 30, 0, loss, 0.1, object(), 0, TrainConfig())
    else:
        _record_epoch(stats, 30, 0, loss, 0.1, object(), 0, TrainConfig())
        assert stats.pairs == 40 and stats.epoch_loss == [4.0]


# ------------------------------------------------------------------ 2. lr and non-finite parameters
@pytest.mark.parametrize("lr", [1e39, 1e300])
def test_an_lr_beyond_float32_is_refused_by_the_config(lr):
    with pytest.raises(ValueError, match=r"lr must be at most 3.403e\+38, the largest float32.*got lr 1e\+"):
        TrainConfig(lr=lr)
    TrainConfig(lr=float(np.finfo(np.float32).max))          # the largest float32 itself is representable


def test_the_command_refuses_such_an_lr_before_training(six_tsv, capsys):
    code = main(_argv(six_tsv, "--lr", "1e300", "--sample", "0"))
    stdout, stderr = capsys.readouterr()
    assert code == 2 and "lr must be at most" in stderr.splitlines()[-1], stderr     # was 0 with a NaN model
    assert "epoch 1:" not in stdout + stderr


def _single_steps():
    """The public single steps, each ``step(model, words, times, pair_centre, context, negatives, lr)``."""
    steps = {"sgd_step": lambda m, w, t, pc, ctx, neg, lr: sgd_step(m, w, ctx, neg, t, lr),
             "centre_sgd_step": centre_sgd_step, "centre_sgd_step_tensor": centre_sgd_step_tensor}
    if fused_step.ENABLED:
        steps["fused_sgd_step"] = lambda *a: fused_step.fused_sgd_step(*a, 0.0, None, 1.0, 0.03)
    return steps


@pytest.mark.parametrize("name", ["sgd_step", "centre_sgd_step", "centre_sgd_step_tensor", "fused_sgd_step"])
@pytest.mark.parametrize("lr", [float("nan"), float("inf"), -0.1, 0.0, 1e39, torch.tensor(float("nan"))])
def test_a_single_step_refuses_a_bad_lr_before_writing_anything(make, name, lr):
    steps = _single_steps()
    if name not in steps:
        pytest.skip("the compiled step needs numba")
    model = make(9, 6, family="IV")              # negatives shared by the batch: the compiled step where it can
    before = {k: v.clone() for k, v in model.state_dict().items()}
    words, times = torch.tensor([0, 1, 4, 8]), torch.tensor([1900.0, 1950.0, 1999.0, 1930.0], dtype=torch.float64)
    with pytest.raises(ValueError, match=r"^lr must be positive and finite, at most 3.403e\+38, the largest float32; "
                                         r"got (nan|inf|-0.1|0|1e\+39)$"):       # was NaN or inf in every table
        steps[name](model, words, times, torch.tensor([0, 1, 2, 3]), torch.tensor([2, 3, 1, 0]),
                    torch.tensor([5, 7]), lr)
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k]), k
    steps[name](model, words, times, torch.tensor([0, 1, 2, 3]), torch.tensor([2, 3, 1, 0]), torch.tensor([5, 7]),
                float(np.finfo(np.float32).tiny))       # the smallest positive rates are taken


def test_the_compiled_single_step_reads_a_0d_tensor_lr_as_its_number(make):
    if "fused_sgd_step" not in _single_steps():
        pytest.skip("the compiled step needs numba")
    models = [make(9, 6, family="IV"), make(9, 6, family="IV")]
    batch = (torch.tensor([0, 1, 4]), torch.tensor([1900.0, 1950.0, 1999.0], dtype=torch.float64),
             torch.tensor([0, 1, 2]), torch.tensor([2, 3, 1]), torch.tensor([5, 7]))
    for model, lr in zip(models, (0.05, torch.tensor(0.05, dtype=torch.float64))):   # was a numba typing error
        _single_steps()["fused_sgd_step"](model, *batch, lr)
    for (name, p), q in zip(models[0].named_parameters(), models[1].parameters()):
        assert torch.equal(p, q), name


def test_a_parameter_made_non_finite_by_the_last_update_is_divergence():
    """At lr 3e38 (a float32) the first update overflows; the epoch's mean loss, computed before it, is finite."""
    seen = []
    with pytest.raises(TrainingDiverged, match=r"epoch 1 of 2 \(a parameter became NaN or infinite.*lr 3e\+38"
                       ) as err:
        _fit(DOCS, TrainConfig(epochs=2, lr=3e38, sample=0), on_epoch=lambda e, s: seen.append(e))
    assert err.value.epoch == 1 and np.isfinite(err.value.loss)
    assert seen == []                    # raised before on_epoch: a checkpoint keeps the last finite parameters


def test_parameters_run_past_the_overflow_limit_are_divergence_too():
    """At lr 1e6 the parameters grew past 1e30 while finite (the loss 1e23): the run ended without an error and
    its model's queries overflowed. The classifiers' run-away limit (1.8e16 in float32) now stops it."""
    seen = []
    with pytest.raises(TrainingDiverged, match=r"a product of two nears overflow \(above 1.8e\+16 in float32\)"
                       ) as err:
        _fit(DOCS, TrainConfig(epochs=4, lr=1e6, sample=0), on_epoch=lambda e, s: seen.append(e))
    assert np.isfinite(err.value.loss) and seen == list(range(err.value.epoch - 1))
    _fit(DOCS, TrainConfig(epochs=4, sample=0))           # the default lr trains as before


def test_divergence_in_the_compass_pretraining_says_so():
    """With compass="frozen" a divergence of the static pre-training read "Word2Fun training diverged in epoch 1 of
    2", as if the main training (of 5 epochs) had diverged."""
    with pytest.raises(TrainingDiverged, match=r"^Word2Fun compass pretraining diverged in epoch 1 of 2 \(") as err:
        _fit(DOCS, TrainConfig(epochs=5, lr=3e38, sample=0), compass="frozen", compass_epochs=2)
    assert err.value.epoch == 1
    with pytest.raises(TrainingDiverged, match=r"^Word2Fun training diverged in epoch 1 of 5 \("):
        _fit(DOCS, TrainConfig(epochs=5, lr=3e38, sample=0))


@pytest.mark.parametrize("theirs, raises", [(1, True), (0, False)])
def test_a_non_finite_parameter_in_any_process_makes_every_process_raise(monkeypatch, theirs, raises):
    monkeypatch.setattr(distributed, "all_sum", _OtherProcess(30, 40, 160.0, theirs))
    stats, loss = TrainStats(), torch.tensor(160.0, dtype=torch.float64)
    if raises:                           # this process's parameters are finite, the other's are not
        with pytest.raises(TrainingDiverged, match="a parameter became NaN or infinite"):
            _record_epoch(stats, 30, 40, loss, 0.1, object(), 0, TrainConfig(), True)
    else:
        _record_epoch(stats, 30, 40, loss, 0.1, object(), 0, TrainConfig(), True)
        assert stats.epoch_loss == [4.0]


# ------------------------------------------------------------------ 3. --export-npz
@pytest.fixture
def vectors(make, randomise):
    vocab = Vocabulary.build([["war", "peace", "trade"]], specials=False)
    return KeyedVectors(randomise(make(len(vocab), 4, family="IV"), seed=1), vocab)


def test_export_npz_writes_the_path_given_in_new_directories_atomically(vectors, tmp_path):
    path = tmp_path / "new" / "dir" / "grid.txt"
    assert vectors.export_npz(path, ["war"], [1950, 1960]) == path
    assert not path.with_name("grid.txt.npz").exists()        # numpy appended .npz
    z = np.load(path)
    assert z["words"].tolist() == ["war"] and z["E"].shape == (2, 1, 4)
    assert sorted(p.name for p in path.parent.iterdir()) == ["grid.txt"]        # no temporary file left
    vectors.export_npz(path, ["war", "peace"], [1950])                         # replaced
    assert np.load(path)["E"].shape == (1, 2, 4)


def test_the_command_writes_the_grid_where_it_was_asked_and_says_so(six_tsv, tmp_path, capsys):
    grid, report = tmp_path / "out" / "nodir" / "grid.txt", tmp_path / "r.json"
    code = main(_argv(six_tsv, "--sample", "0", "--export-npz", str(grid), "--report", str(report)))
    stdout, stderr = capsys.readouterr()
    assert code == 0, stderr                                    # was "No such file or directory" after training
    assert grid.is_file() and not grid.with_name("grid.txt.npz").exists()
    assert f"grid of 6 words written to {grid}" in stderr and "written" not in stdout        # a status line
    assert np.load(grid)["E"].shape == (91, 6, 4)               # 1900-1990, six words
    assert json.loads(report.read_text())["details"]["npz"] == str(grid)


def test_an_export_path_under_a_file_is_refused_before_training(six_tsv, tmp_path, capsys):
    (tmp_path / "afile").write_text("x\n")
    code = main(_argv(six_tsv, "--sample", "0", "--export-npz", str(tmp_path / "afile" / "g.npz")))
    stdout, stderr = capsys.readouterr()
    assert code == 2 and "--export-npz" in stderr and "is a file, not a directory" in stderr, stderr
    assert "epoch 1:" not in stdout + stderr

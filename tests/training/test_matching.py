"""Matching losses, negative sampling, training loop and the `qpnlp train cnm` / `evaluate` commands."""

import json
import re
import warnings

import numpy as np
import pytest
import torch

from qpnlp.cli import main
from qpnlp.models.cnm import CNM, CNMConfig
from qpnlp.training import ConfigError
from qpnlp.training.matching import (EncodedQA, MatchingConfig, _count_triplets, default_train_split, evaluate_ranking,
                                     fit_matching, pointwise_loss, sample_triplets, score_pairs, triplet_loss)
from qpnlp.training.matching_results import MatchingFitResult, MatchingRun


def test_triplet_loss_on_hand_made_scores():
    pos = torch.tensor([0.9, 0.5, 0.3, 0.2])
    neg = torch.tensor([0.2, 0.45, 0.3, 0.6])
    # hinge max(0, 0.1 - s+ + s-): 0, 0.05, 0.1, 0.5
    assert float(triplet_loss(pos, neg, margin=0.1)) == pytest.approx((0 + 0.05 + 0.1 + 0.5) / 4)
    assert float(triplet_loss(pos, neg, margin=0.0)) == pytest.approx(0.4 / 4)
    assert float(triplet_loss(torch.ones(3), torch.zeros(3))) == 0.0


def test_pointwise_loss_on_hand_made_scores():
    loss = pointwise_loss(torch.tensor([0.0, 0.5]), torch.tensor([1, 0]), scale=2.0)
    expected = (np.log(2.0) + np.log1p(np.exp(1.0))) / 2
    assert float(loss) == pytest.approx(expected, rel=1e-6)


def _toy():
    # q0: rows 0-3 (1 correct), q1: rows 4-5 (2 correct, 0 wrong -> no triplet), q2: rows 6-8 (2 correct)
    labels = np.array([0, 1, 0, 0, 1, 1, 1, 0, 1])
    qidx = np.array([0, 0, 0, 0, 1, 1, 2, 2, 2])
    groups = (np.arange(0, 4), np.arange(4, 6), np.arange(6, 9))
    questions = [[2, 3], [4, 5], [6, 7, 8]]
    cands = [[9, 10], [2, 3, 11], [12], [13, 14], [4], [5], [6, 7], [15, 16], [8, 6]]
    return EncodedQA(questions, cands, qidx, labels, groups)


def test_negative_sampling_draws_wrong_candidates_of_the_same_question():
    data = _toy()
    triplets = sample_triplets(data, np.random.default_rng(0), negatives=2)
    assert len(triplets) == 2 * (1 + 2)                       # q1 has no wrong candidate
    for q, p, n in triplets:
        assert data.labels[p] == 1 and data.labels[n] == 0
        assert data.question_index[p] == q and data.question_index[n] == q
    assert set(triplets[triplets[:, 0] == 2, 2]) == {7}
    other = sample_triplets(data, np.random.default_rng(1), negatives=2)
    assert {tuple(t) for t in triplets[:2]} <= {(0, 1, n) for n in (0, 2, 3)}
    assert len(other) == len(triplets)
    with pytest.raises(ValueError, match="negatives"):
        sample_triplets(data, np.random.default_rng(0), negatives=0)


def test_scores_follow_row_order_and_training_learns_the_toy_task():
    torch.manual_seed(0)
    data = _toy()
    dev = EncodedQA(data.questions, data.candidates, data.question_index, data.labels,
                    (data.groups[0], data.groups[2]))
    model = CNM(CNMConfig(num_words=20, dim=8, num_measurements=8, dropout=0.0),
                generator=torch.Generator().manual_seed(0))
    scores = score_pairs(model, data, batch_size=4)
    assert scores.shape == (9,)
    q = torch.tensor([[2, 3]])
    a = torch.tensor([[2, 3, 11]])
    with torch.no_grad():
        assert scores[1] == pytest.approx(float(model(q, q != 0, a, a != 0)), abs=1e-6)
    config = MatchingConfig(epochs=12, batch_size=4, lr=0.05, patience=12, progress=False, margin=0.5)
    result = fit_matching(model, data, dev, config)
    assert result.best_dev["map"] == 1.0 and result.best_dev["questions"] == 2
    assert len(result.history) == 12
    assert evaluate_ranking(model, dev).map == 1.0
    losses = [h["train_loss"] for h in result.history]
    assert losses[-1] < losses[0]
    assert isinstance(result, MatchingFitResult) and 1 <= result.best_epoch <= 12


def test_the_result_records_are_still_importable_from_matching():
    """They moved to :mod:`qpnlp.training.matching_results`; the old import path gives the same classes."""
    from qpnlp.training import matching

    assert (matching.MatchingFitResult, matching.MatchingRun) == (MatchingFitResult, MatchingRun)


def test_pointwise_training_runs():
    data = _toy()
    dev = EncodedQA(data.questions, data.candidates, data.question_index, data.labels, (data.groups[0],))
    model = CNM(CNMConfig(num_words=20, dim=8, num_measurements=8), generator=torch.Generator().manual_seed(0))
    result = fit_matching(model, data, dev, MatchingConfig(epochs=2, batch_size=4, loss="pointwise", progress=False))
    assert np.isfinite(result.history[-1]["train_loss"])


def test_bad_matching_config_is_rejected():
    with pytest.raises(ValueError, match="loss"):
        MatchingConfig(loss="listwise")


def test_cli_train_save_and_evaluate(data_root, tmp_path, capsys):
    ckpt, report, eval_report = tmp_path / "cnm.pt", tmp_path / "train.json", tmp_path / "eval.json"
    assert main(["train", "cnm", "--dataset", "wikiqa", "--max-questions", "15", "--epochs", "1", "--no-pretrained",
                 "--dim", "8", "--num-measurements", "8", "--no-progress", "--save", str(ckpt),
                 "--report", str(report)]) == 0
    train = json.loads(report.read_text())
    assert train["model"] == "cnm" and set(train["metrics"]) == {"dev", "test"}
    assert train["metrics"]["test"]["questions"] <= 15
    assert main(["evaluate", str(ckpt), "--dataset", "wikiqa", "--split", "dev", "--report", str(eval_report)]) == 0
    result = json.loads(eval_report.read_text())
    assert result["model"] == "cnm" and result["split"] == "dev" and 0.0 <= result["metrics"]["map"] <= 1.0
    assert result["metrics"]["questions"] > 15                # the whole filtered split
    out = capsys.readouterr().out
    assert "wikiqa dev: MAP" in out
    assert main(["evaluate", str(ckpt), "--dataset", "wikiqa", "--split", "nosuch"]) == 1
    assert "present splits" in capsys.readouterr().err


def test_cli_extra_training_data_and_pretrained_fallback(data_root, tmp_path):
    report = tmp_path / "train.json"
    assert main(["train", "cnm", "--dataset", "trecqa", "--extra-train", "wikiqa", "--max-questions", "10",
                 "--epochs", "1", "--num-measurements", "8", "--pretrained-fallback", "1000", "--no-progress",
                 "--report", str(report)]) == 0
    train = json.loads(report.read_text())
    details = train["details"]
    assert train["dataset"] == "trecqa" and details["train_questions"] == 20   # 10 of each training file
    assert details["train_split"] == "train-all" and details["vocabulary_size"] >= 1000


def test_observed_splits_join_the_history_without_changing_selection_or_results(data_root):
    """``observe_splits`` scores test after every epoch; dev, selection and the final test score are unchanged."""
    from qpnlp.training.matching import run_matching

    def run(observe):
        config = MatchingConfig(epochs=3, patience=3, batch_size=8, progress=False, seed=1)
        return run_matching("wikiqa", dict(dim=8, num_measurements=8), config, pretrained=None, root=data_root,
                            max_questions=12, observe_splits=observe)

    plain, observed = run(()), run(("test",))
    assert observed.dev == plain.dev and observed.best_epoch == plain.best_epoch
    assert observed.evaluation == plain.evaluation
    assert all("test" not in h for h in plain.history)
    curve = [h["test"] for h in observed.history]
    assert len(curve) == len(observed.history) and all(0.0 <= m["map"] <= 1.0 for m in curve)
    assert curve[observed.best_epoch - 1] == observed.evaluation["test"]


def test_vectors_that_cover_almost_no_training_word_are_warned_about():
    """Vectors of another language or letter case left every word random, and nothing said so."""
    from qpnlp.data import QADataset, from_matrix
    from qpnlp.training.matching import prepare_qa

    qa = QADataset("toy", "train", ["what is good ?"], ["good thing .", "bad answer ."], np.array([1, 0]),
                   np.array([0, 0]), (np.arange(2),), 1, 0, 0, True)
    words = ["what", "is", "good", "?", "thing", ".", "bad", "answer"]
    with pytest.warns(UserWarning, match=r"pretrained vectors cover 0/8 training words \(0.0%"):
        prepare_qa(qa, {}, from_matrix([w.upper() for w in words if w.isalpha()], np.ones((6, 3))))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        prepare_qa(qa, {}, from_matrix(words[:1], np.ones((1, 3))))     # 1/8 = 12.5%: no warning


def test_default_train_split_finds_train_all_as_load_qa_does(tmp_path):
    import gzip

    folder = tmp_path / "qa" / "trecqa"
    folder.mkdir(parents=True)
    (folder / "train.tsv").write_text("q ?\ta .\t1\nq ?\tb .\t0\n")
    assert default_train_split("trecqa", tmp_path) == "train"
    # a compressed TRAIN-ALL is read by load_qa, so it is the default training file too
    (folder / "train-all.tsv.gz").write_bytes(gzip.compress(b"q ?\ta .\t1\nq ?\tb .\t0\n"))
    assert default_train_split("trecqa", tmp_path) == "train-all"
    # the names load_qa accepts (case, aliases) name the same folder
    assert default_train_split("TREC-QA", tmp_path) == default_train_split("trec_qa", tmp_path) == "train-all"


@pytest.mark.parametrize("field, value, shown", [("margin", 1e39, "1e+39"), ("pointwise_scale", 1e300, "1e+300"),
                                                 ("margin", 10 ** 400, "1000000000000000000000000000000000000..."),
                                                 ("lr", 10 ** 400, "1000000000000000000000000000000000000...")])
def test_matching_config_refuses_settings_that_overflow_float32(field, value, shown):
    # margin 1e39 was accepted and met the float32 scores as inf (an infinite loss from the first step); 10**400 was
    # an OverflowError from math.isfinite or from the message's :g
    limit = "3.403e+37" if field == "lr" else "3.403e+38"
    where = "the optimiser step" if field == "lr" else "the loss"
    with pytest.raises(ConfigError, match=rf"^{field} must be at most {re.escape(limit)}, else {where} overflows "
                                          rf"float32; got {re.escape(shown)}$"):
        MatchingConfig(**{field: value})
    assert float(triplet_loss(torch.tensor([0.0]), torch.tensor([0.0]), margin=3.4e38)) < float("inf")
    assert MatchingConfig(margin=3.4e38, pointwise_scale=3.4e38).margin == 3.4e38     # the largest float32s stay


def test_repr_counts_the_questions_and_pairs_without_printing_the_id_lists():
    assert repr(_toy()) == "EncodedQA(questions=3, pairs=9, correct=5)"


def test_scoring_puts_back_the_train_eval_mode_of_every_submodule_and_training_still_observes_in_eval_mode():
    """``score_pairs`` (and so ``evaluate_ranking``) left the model in eval mode, for good: a caller's own training
    steps after it ran without dropout. fit_matching's observer still sees the model in eval mode, as it ends."""
    model = CNM(CNMConfig(num_words=20, dim=8, num_measurements=8, dropout=0.5),
                generator=torch.Generator().manual_seed(0)).train()
    model.dropout.eval()
    before = {name: m.training for name, m in model.named_modules()}
    seen = []
    hook = model.register_forward_pre_hook(lambda m, args: seen.append(m.training))
    assert score_pairs(model, _toy()).shape == (9,)
    assert 0.0 <= evaluate_ranking(model, _toy()).map <= 1.0
    assert seen and not any(seen) and {name: m.training for name, m in model.named_modules()} == before
    hook.remove()
    config = MatchingConfig(epochs=2, batch_size=4, progress=False)
    result = fit_matching(model.train(), _toy(), _toy(), config, on_epoch=lambda m: dict(training=m.training))
    assert [h["training"] for h in result.history] == [False, False] and not model.training


def _qa_root(tmp_path, train_labels):
    """A WikiQA folder whose training question i has the 0/1 labels ``train_labels[i]``; dev and test rankable."""
    folder = tmp_path / "qa" / "wikiqa"
    folder.mkdir(parents=True)
    rows = [f"question {i} about film ?\tanswer {j} plot\t{y}" for i, ys in enumerate(train_labels)
            for j, y in enumerate(ys)]
    (folder / "train.tsv").write_text("\n".join(rows) + "\n")
    for split in ("dev", "test"):
        (folder / f"{split}.tsv").write_text("what film ?\ta film .\t1\nwhat film ?\ta plot .\t0\n")
    return tmp_path


def test_count_triplets_is_what_sample_triplets_draws():
    data, config = _toy(), MatchingConfig(negatives=2)
    assert _count_triplets(data, config, "toy") == len(sample_triplets(data, np.random.default_rng(0), 2)) == 6


def test_pointwise_loss_trains_on_questions_with_one_kind_of_candidate_only(tmp_path):
    """Every training question all correct or all wrong: the pointwise loss has both labels to learn from, but the
    run was refused with the triplet loss's "no triplet to train on", whatever the loss."""
    from qpnlp.training.matching import run_matching

    root = _qa_root(tmp_path, [[1, 1], [0, 0], [1, 1], [0, 0]])
    config = MatchingConfig(epochs=1, batch_size=4, progress=False, loss="pointwise")
    run = run_matching("wikiqa", dict(dim=4, num_measurements=4), config, pretrained=None, root=root)
    assert run.train_questions == 4 and run.train_triplets == 0 and run.evaluation["test"]["questions"] == 1
    train_file = re.escape(str(root / "qa" / "wikiqa" / "train.tsv"))
    with pytest.raises(ValueError, match=train_file + r": none of its 4 question\(s\) has both a correct and a "
                                         r"wrong candidate \(2 without a correct, 2 without a wrong one\)"):
        run_matching("wikiqa", {}, MatchingConfig(epochs=1, progress=False), pretrained=None, root=root)


def test_training_file_without_a_correct_candidate_is_refused_naming_it(tmp_path, capsys):
    root = _qa_root(tmp_path, [[0, 0, 0], [0, 0]])
    assert main(["train", "cnm", "--dataset", "wikiqa", "--data", str(root), "--no-pretrained", "--dim", "4",
                 "--loss", "pointwise", "--epochs", "1", "--no-progress", "--no-training-state"]) == 1
    err = capsys.readouterr().err
    assert "train.tsv: all 5 candidates are wrong; the pointwise loss needs correct and wrong candidates" in err


def _scoring(output):
    class WrongScores(CNM):
        def forward(self, q_ids, q_mask, a_ids, a_mask):
            return output(super().forward(q_ids, q_mask, a_ids, a_mask))
    return WrongScores(CNMConfig(num_words=20, dim=4, num_measurements=4), generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("output, error, message", [
    (lambda s: s[:, None], ValueError, r"scores of shape \(B,\) = \(4,\), one per question / answer pair, for q_ids "
                                       r"of shape \(4, \d\) and a_ids of shape \(4, \d\); got shape \(4, 1\)"),
    (lambda s: s[:2], ValueError, r"got shape \(2,\)"),
    (lambda s: s.to(torch.complex64), TypeError, r"real floating-point scores; got torch.complex64 .*read-out"),
    (lambda s: s.long(), TypeError, r"real floating-point scores; got torch.int64"),
    (lambda s: (s, None), TypeError, r"the scores as one tensor \(B,\); got tuple"),
])
def test_wrong_scores_of_a_matching_model_are_named(output, error, message):
    """A user's matching model returning (B, 1) scores trained with the pointwise loss broadcast to (B, B); others
    failed inside the loss naming neither the model nor the shapes."""
    data = _toy()
    pattern = r"WrongScores\.forward\(q_ids, q_mask, a_ids, a_mask\) must return .*" + message
    config = MatchingConfig(epochs=1, batch_size=4, loss="pointwise", progress=False, length_chunks=None)
    with pytest.raises(error, match=pattern):
        fit_matching(_scoring(output), data, data, config)
    with pytest.raises(error, match=pattern):
        score_pairs(_scoring(output), data, batch_size=4, length_chunks=None)


def test_reports_say_how_many_questions_the_filter_removed(tmp_path, capsys):
    """The results said "on 2 questions" only; how many the papers' filter took out of the file was not told."""
    root = _qa_root(tmp_path, [[1, 0], [0, 1], [1, 0, 0]])
    good = [f"what film {i} ?\ta film .\t1\nwhat film {i} ?\ta plot .\t0\n" for i in range(3)]
    folder = root / "qa" / "wikiqa"
    (folder / "dev.tsv").write_text(good[0] + "no answer ?\ta plot .\t0\n")                    # 1 of 2 removed
    (folder / "test.tsv").write_text("".join(good[1:]) + "none ?\tx .\t0\nnone 2 ?\ty .\t0\nall ?\tz .\t1\n")
    ckpt, report, evaluated = tmp_path / "m", tmp_path / "train.json", tmp_path / "eval.json"
    assert main(["train", "cnm", "--dataset", "wikiqa", "--data", str(root), "--no-pretrained", "--dim", "4",
                 "--epochs", "1", "--no-progress", "--no-training-state", "--save", str(ckpt),
                 "--report", str(report)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"dev \(selection, epoch 1\): .* on 1 questions "
                     r"\(the 'no-correct' filter removed 1 of the file's 2\)$", out, re.M), out
    assert re.search(r"wikiqa test: .* on 3 questions \(the 'no-correct' filter removed 2 of the file's 5\)$", out,
                     re.M), out
    data = json.loads(report.read_text())
    assert data["details"]["questions_removed"] == {"dev": {"filter": "no-correct", "removed": 1, "file_questions": 2},
                                                    "test": {"filter": "no-correct", "removed": 2,
                                                             "file_questions": 5}}
    assert data["metrics"]["test"]["questions"] == 3                                 # as before
    assert main(["evaluate", str(ckpt), "--data", str(root), "--report", str(evaluated)]) == 0
    out = capsys.readouterr().out
    assert "on 3 questions (the 'no-correct' filter removed 2 of the file's 5), 5 candidate answers (cnm)" in out, out
    data = json.loads(evaluated.read_text())
    assert data["details"]["questions_removed"] == {"test": {"filter": "no-correct", "removed": 2, "file_questions": 5}}
    assert data["split_counts"] == {"test": {"questions": 3, "candidates": 5}}      # as before

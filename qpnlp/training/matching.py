"""Training and evaluation of text-matching models (CNM) for answer selection.

* :func:`prepare_qa` builds the vocabulary from the training questions and
  candidates only, encodes the splits, and aligns pretrained vectors.
* :func:`sample_triplets` draws, for every correct candidate of every training
  question, ``negatives`` wrong candidates of the same question (uniformly,
  with replacement when the question has fewer wrong candidates; a fresh
  draw every epoch). Questions without a correct or without a wrong
  candidate give no triplet.
* :func:`triplet_loss` is the thesis' hinge loss
  :math:`\\max(0, \\alpha - s(q, a^+) + s(q, a^-))` with margin
  :math:`\\alpha = 0.1`; :func:`pointwise_loss` is binary cross-entropy on
  ``scale * score`` over every (question, candidate) pair.
* :func:`fit_matching` trains with the classifier trainer's optimisers
  (SparseAdam for the sparse embedding tables, Adam for the rest), early
  stopping on dev MAP; the model ends with its best-dev parameters (test is
  scored once, afterwards, by the caller).
* :func:`score_pairs` / :func:`evaluate_ranking` give MAP / MRR / P@1 with
  :func:`qpnlp.evaluation.ranking_metrics` (pessimistic ties).

The records that :func:`fit_matching` and :func:`run_matching` return are in
:mod:`qpnlp.training.matching_results` (importable from here too).
"""

from __future__ import annotations

import dataclasses
import math

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from qpnlp._checks import checked_copy
from qpnlp._device import resolve_device
from qpnlp._errors import TrainingDiverged
from qpnlp._modes import eval_mode
from qpnlp.data import PretrainedVectors, QADataset, Vocabulary, pad_batch
from qpnlp.data.qa import default_train_split, qa_file
from qpnlp.evaluation import RankingResult, ranking_metrics

from ._qa_data import EncodedQA, encode_qa, limit_questions, prepare_qa, sample_triplets
from .compiled import compiled_steps, training_forward, training_pad_multiple
from .length_chunks import DEFAULT_OVERHEAD, chunked
from .config import MAX_RATE, ConfigError, TrainConfig, check_integers, check_reals
from .loop import TrainingInterrupted, check_loss, early_stopping, epoch_bar
from .matching_results import MatchingFitResult, MatchingRun
from .optimisers import Optimisers
from .trainer import _check_matcher, checked_scores, training_chunks

#: The training losses of answer selection (``loss=``).
LOSSES = ("triplet", "pointwise")

__all__ = ["LOSSES", "EncodedQA", "MatchingConfig", "prepare_qa", "encode_qa", "sample_triplets", "triplet_loss",
           "pointwise_loss", "score_pairs", "evaluate_ranking", "fit_matching", "limit_questions", "metrics_dict",
           "run_matching"]


def _count_triplets(train: QADataset, config: MatchingConfig, where: str) -> int:
    """The triplets of one epoch (:func:`sample_triplets`: ``config.negatives`` per correct candidate of a question
    that has a wrong one too), or ``ValueError`` naming ``where`` (the training file) when ``train`` gives
    ``config.loss`` nothing to learn: no such question (triplet), no correct or no wrong candidate (pointwise)."""
    both = [g for g in train.groups if 0 < train.labels[g].sum() < len(g)]
    n_correct, rows, n_questions = int(train.labels.sum()), len(train.labels), len(train.groups)
    if config.loss == "pointwise" and not 0 < n_correct < rows:
        raise ValueError(f"{where}: all {rows} candidates are {'correct' if n_correct else 'wrong'}; the pointwise "
                         "loss needs correct and wrong candidates to learn from")
    if config.loss == "triplet" and not both:
        no_correct = sum(1 for g in train.groups if not train.labels[g].any())
        raise ValueError(f"{where}: none of its {n_questions} question(s) has both a correct and a wrong candidate "
                         f"({no_correct} without a correct, {n_questions - no_correct} without a wrong one), so the "
                         "triplet loss has no triplet to train on; train on questions with both (another training "
                         "file, more questions) or, with correct and wrong candidates, with the pointwise loss")
    return sum(int(train.labels[g].sum()) for g in both) * config.negatives


def triplet_loss(positive: torch.Tensor, negative: torch.Tensor, margin: float = 0.1) -> torch.Tensor:
    r"""Mean triplet hinge loss :math:`\max(0, \alpha - s^+ + s^-)` over the batch.

    Parameters
    ----------
    positive, negative : torch.Tensor
        Real ``(B,)`` scores :math:`s^+` of the correct candidates and :math:`s^-` of the wrong ones.
    margin : float, default 0.1
        The margin :math:`\alpha`.

    Examples
    --------
    >>> triplet_loss(torch.tensor([0.9, 0.5]), torch.tensor([0.2, 0.45]), margin=0.1)
    tensor(0.0250)
    """
    return torch.clamp(margin - positive + negative, min=0).mean()


def pointwise_loss(scores: torch.Tensor, labels: torch.Tensor, scale: float = 10.0) -> torch.Tensor:
    """Binary cross-entropy of ``scale * scores`` (cosines in [-1, 1]) against 0/1 labels.

    Parameters
    ----------
    scores : torch.Tensor
        Real ``(B,)`` cosine scores in [-1, 1].
    labels : torch.Tensor
        ``(B,)`` 0/1 labels, any dtype (cast to the scores').
    scale : float, default 10.0
        The factor :math:`s` applied to the scores before the sigmoid.
    """
    return nn.functional.binary_cross_entropy_with_logits(scale * scores, labels.to(scores.dtype))


@dataclass
class MatchingConfig(TrainConfig):
    r""":class:`TrainConfig` plus the matching loss.

    ``lr`` 0.01 and ``batch_size`` 32 are in the thesis' grids
    ({0.01, 0.05, 0.1} and {8, 16, 32}); ``margin`` 0.1 is the thesis value.
    ``patience`` counts epochs without a better dev MAP.

    ``margin`` (:math:`\alpha \ge 0`) and ``pointwise_scale`` (:math:`s > 0`) are finite numbers of at most
    :data:`~qpnlp.training.config.MAX_RATE` (the largest float32, as ``--margin`` takes): the losses
    :math:`\max(0, \alpha - s^+ + s^-)` and :math:`\mathrm{BCE}(s \cdot \text{score})` meet float32 scores,
    where a larger one is inf, and the loss inf or NaN from the first step (a ``ConfigError`` naming it instead).

    Parameters
    ----------
    epochs, batch_size, lr, embedding_lr, phase_lr, weight_decay, patience, seed : see TrainConfig
        As in :class:`TrainConfig`, with its defaults; ``patience`` counts epochs without a better dev MAP.
    device, max_len, progress, optimizer, length_chunks, compile, pad_to_multiple_of : see TrainConfig
        As in :class:`TrainConfig`, with its defaults.
    loss : str, default "triplet"
        ``"triplet"`` (:func:`triplet_loss` on sampled triplets) or ``"pointwise"`` (:func:`pointwise_loss`).
    margin : float, default 0.1
        The triplet loss's margin :math:`\alpha \ge 0`.
    negatives : int, default 1
        Wrong candidates drawn per correct one when sampling triplets (>= 1).
    pointwise_scale : float, default 10.0
        The pointwise loss's scale :math:`s > 0` of the cosine scores.
    """

    loss: str = "triplet"
    margin: float = 0.1
    negatives: int = 1
    pointwise_scale: float = 10.0

    def __post_init__(self) -> None:
        super().__post_init__()
        check_integers(self, ("negatives",))
        check_reals(self, ("margin", "pointwise_scale"))
        if self.loss not in LOSSES:
            raise ConfigError(f"loss must be one of {LOSSES}; got {self.loss!r}")
        if not (0 <= self.margin < math.inf and self.negatives >= 1 and 0 < self.pointwise_scale < math.inf):
            raise ConfigError(f"need finite margin >= 0, negatives >= 1 and finite pointwise_scale > 0; got "
                              f"{self.margin}, {self.negatives}, {self.pointwise_scale}")
        self._check_overflow(dict(margin=MAX_RATE, pointwise_scale=MAX_RATE), "the loss")


def _check_qa(what: str, data) -> None:
    """TypeError unless ``data`` (the ``what`` set) is an :class:`EncodedQA` (:func:`encode_qa` makes one)."""
    if not isinstance(data, EncodedQA):
        raise TypeError(f"the {what} set must be an EncodedQA (encode_qa(dataset, vocab)); got {type(data).__name__}")


def _batch(texts: list[list[int]], index, device, max_len, multiple_of=None):
    ids, mask = pad_batch([texts[i] for i in index], max_len=max_len, multiple_of=multiple_of)
    return ids.to(device), mask.to(device)


@torch.no_grad()
def score_pairs(model: nn.Module, data: EncodedQA, *, batch_size: int = 256, device="cpu",
                max_len: int | None = None, length_chunks: int | None = DEFAULT_OVERHEAD) -> np.ndarray:
    """Scores ``(R,)`` of every (question, candidate) row, in row order (model in eval mode, then back in the
    modes it had; each batch in length-sorted chunks, see :class:`~qpnlp.training.TrainConfig`).

    Parameters
    ----------
    model : torch.nn.Module
        ``model(q_ids, q_mask, a_ids, a_mask) -> scores (B,)``; scored in eval mode, then back in the train/eval
        modes it had (each submodule's), also when a batch raises.
    data : EncodedQA
        The rows scored.
    batch_size : int, default 256
        Rows per forward.
    device : str or torch.device, default "cpu"
        Where the batches are put (the model must be there already).
    max_len : int or None, default None
        Truncate questions and candidates to this many tokens; None: no truncation.
    length_chunks : int or None, default DEFAULT_OVERHEAD
        The cost of one more chunk, in padded positions (:func:`~qpnlp.training.length_chunks.chunked`); None:
        each batch whole.
    """
    _check_matcher(model, "score_pairs")
    _check_qa("scored", data)
    out = []
    with eval_mode(model):
        for start in range(0, len(data), batch_size):
            rows = np.arange(start, min(start + batch_size, len(data)))
            q = _batch(data.questions, data.question_index[rows], device, max_len)
            a = _batch(data.candidates, rows, device, max_len)
            out.append(chunked(checked_scores(model), [q, a], length_chunks).double().cpu())
    return torch.cat(out).numpy()


def evaluate_ranking(model: nn.Module, data: EncodedQA, *, ties: str = "pessimistic", **kwargs) -> RankingResult:
    """MAP / MRR / P@1 of the model's ranking of each question's candidates.

    Parameters
    ----------
    model : torch.nn.Module
        ``model(q_ids, q_mask, a_ids, a_mask) -> scores (B,)``.
    data : EncodedQA
        The questions and candidates scored.
    ties : {"pessimistic", "optimistic"}, default "pessimistic"
        How equal scores are ranked (:func:`~qpnlp.evaluation.ranking.ranking_metrics`).
    **kwargs
        Passed to :func:`score_pairs`: ``batch_size``, ``device``, ``max_len``, ``length_chunks``.
    """
    return ranking_metrics(score_pairs(model, data, **kwargs), data.labels, data.groups, ties=ties)


def metrics_dict(result: RankingResult) -> dict:
    """``result`` as plain numbers for JSON and reports: ``map``, ``mrr``, ``p_at_1`` (floats), ``questions`` (int).

    Parameters
    ----------
    result : RankingResult
        What :func:`evaluate_ranking` returns.
    """
    return dict(map=float(result.map), mrr=float(result.mrr), p_at_1=float(result.p_at_1),
                questions=int(result.n_questions))


def _train_epoch(model, forward, optimisers, train: EncodedQA, config: MatchingConfig, epoch: int, device) -> float:
    """One epoch of training steps; ``forward`` calls the model (the model itself, or its compiled version:
    :func:`~qpnlp.training.compiled.training_forward`)."""
    rng = np.random.default_rng((config.seed, epoch))
    model.train()
    losses = []
    if config.loss == "triplet":
        items = sample_triplets(train, rng, config.negatives)
    else:
        items = np.arange(len(train))
    items = items[rng.permutation(len(items))]
    batches = [items[i:i + config.batch_size] for i in range(0, len(items), config.batch_size)]
    chunks = training_chunks(model, config)
    multiple = training_pad_multiple(config.pad_to_multiple_of, config.compile, device)

    def padded(texts, index):
        return _batch(texts, index, device, config.max_len, multiple)

    def scores(question, answer):
        return chunked(forward, [question, answer], chunks, multiple)

    bar = epoch_bar(batches, epoch, config.progress)
    with compiled_steps(config.compile):
        for number, batch in enumerate(bar, start=1):
            optimisers.zero_grad()
            if config.loss == "triplet":
                q = padded(train.questions, batch[:, 0])
                loss = triplet_loss(scores(q, padded(train.candidates, batch[:, 1])),
                                    scores(q, padded(train.candidates, batch[:, 2])), config.margin)
            else:
                q = padded(train.questions, train.question_index[batch])
                labels = torch.as_tensor(train.labels[batch], device=device)
                loss = pointwise_loss(scores(q, padded(train.candidates, batch)), labels, config.pointwise_scale)
            loss.backward()
            optimisers.step()
            losses.append(float(loss.detach()))
            check_loss(losses[-1], epoch, number, config)
            bar.set_postfix(loss=f"{losses[-1]:.4f}")
    bar.close()
    return float(np.mean(losses))


def fit_matching(model: nn.Module, train: EncodedQA, dev: EncodedQA, config: MatchingConfig,
                 log=None, on_epoch=None, *, checkpoint_dir=None, resume: bool = False) -> MatchingFitResult:
    """Train with early stopping on dev MAP; the model ends with its best-dev parameters.

    Parameters
    ----------
    model : torch.nn.Module
        ``model(q_ids, q_mask, a_ids, a_mask) -> scores (B,)``.
    train, dev : EncodedQA
        ``dev`` must be filtered (every question has a correct candidate).
    config : MatchingConfig
    log : callable, optional
        Called with each epoch's history dict.
    on_epoch : callable, optional
        ``on_epoch(model) -> dict``, called after each epoch's dev score (model
        in eval mode); its dict joins that epoch's history entry before
        ``log``. An observer only: selection stays on dev MAP.
    checkpoint_dir : path-like, optional
        Keep the training state of the last epoch there
        (:mod:`qpnlp.training.state`); ``resume=True`` continues from it with
        the same result as an uninterrupted run.
    resume : bool, default False
        Continue from the training state in ``checkpoint_dir`` (ValueError when it holds another run's).

    Notes
    -----
    The loop is :func:`qpnlp.training.loop.early_stopping`: a NaN or
    infinite loss raises :class:`~qpnlp.training.TrainingDiverged`,
    Ctrl-C :class:`~qpnlp.training.loop.TrainingInterrupted`, the model
    holding its best parameters so far.

    ``config.seed`` seeds each epoch's triplets and batch order; dropout draws from torch's global generator,
    which this function neither seeds nor puts back (seed it before each call to repeat a run, as
    :func:`run_matching` does; :func:`~qpnlp.training.fit` says what else a bit-for-bit repeat needs).

    TypeError for a classifier, a ``config`` not a :class:`MatchingConfig`, data not an :class:`EncodedQA`. ``config``
    is read through a checked copy; a second call continues from the parameters (as :func:`~qpnlp.training.fit`).
    """
    _check_matcher(model, "fit_matching")
    if not isinstance(config, MatchingConfig):        # a TrainConfig has no loss
        raise TypeError(f"config must be a MatchingConfig; got {type(config).__name__} (no matching loss)")
    config = checked_copy(config)                     # a field set since the config was made is checked now
    for what, part in (("training", train), ("dev", dev)):
        _check_qa(what, part)
        if part.n_questions == 0:
            raise ValueError(f"the {what} set has no question")
    device = resolve_device(config.device)
    model.to(device)
    optimisers = Optimisers(model, config)
    forward = checked_scores(training_forward(model, config.compile))

    def evaluate() -> tuple[float, dict]:
        model.eval()                                     # on_epoch sees it in eval mode, as before
        dev_metrics = metrics_dict(evaluate_ranking(model, dev, device=device, max_len=config.max_len,
                                                    length_chunks=config.length_chunks))
        return dev_metrics["map"], dict(dev=dev_metrics)

    out = early_stopping(model, config, optimisers,
                         train_epoch=lambda epoch: _train_epoch(model, forward, optimisers, train, config, epoch,
                                                                device),
                         evaluate=evaluate, on_epoch=on_epoch, log=log, checkpoint_dir=checkpoint_dir, resume=resume,
                         data=(train.questions, train.candidates, train.labels, train.groups, dev.questions,
                               dev.candidates, dev.labels, dev.groups))
    model.eval()
    return MatchingFitResult(best_epoch=out.best_epoch, best_dev=(out.best_details or {}).get("dev"),
                             seconds=out.seconds, history=out.history)


def _training_data(name: str, split: str, root, max_questions: int | None, extra: tuple[str, ...]) -> str:
    """The training data as an error names it: its file, the data sets added, the questions used."""
    first = "" if max_questions is None else f" (first {max_questions} questions of each)"
    return f"{qa_file(name, split, root)}{''.join(f' + the {other} training file' for other in extra)}{first}"


def _training_set(name: str, train_split: str, root, max_questions: int | None,
                  extra_train: tuple[str, ...]) -> QADataset:
    """``name``'s training file ``train_split``, unfiltered, followed by the training files of the ``extra_train``
    data sets (all as split ``"train"``); the first ``max_questions`` questions of each (None: all)."""
    from qpnlp.data import concat_qa, load_qa

    train = limit_questions(load_qa(name, train_split, root=root, filter_questions=False), max_questions)
    if extra_train:
        extra = [limit_questions(load_qa(other, default_train_split(other, root), root=root,
                                         filter_questions=False), max_questions) for other in extra_train]
        # training files of different names (train-all, train) are all training data
        train = concat_qa([dataclasses.replace(d, split="train") for d in (train, *extra)], name=train.name)
    return train


def _scored_sets(name: str, root, max_questions: int | None, splits: tuple[str, ...]) -> dict[str, QADataset]:
    """``name``'s dev set and those of ``splits`` whose file exists (a split without one is skipped), filtered
    (:func:`~qpnlp.data.load_qa`), the first ``max_questions`` questions of each; by split, dev first."""
    from qpnlp.data import load_qa

    others = {"dev": limit_questions(load_qa(name, "dev", root=root), max_questions)}
    for split in splits:
        if split not in others:
            try:
                others[split] = limit_questions(load_qa(name, split, root=root), max_questions)
            except FileNotFoundError:
                continue
    return others


def _build_matcher(kind: str, model_options: dict, vocab: Vocabulary, matrix: torch.Tensor | None,
                   seed: int) -> tuple:
    """A fresh matching model registered as ``kind`` for ``vocab`` (its size filled in) and the (V, d) pretrained
    ``matrix`` (its width ``d`` filled in; None: random embeddings), seeded by ``seed``, and its config; ValueError
    for a model of another task."""
    from qpnlp.models import get_model_class

    from .classification import config_from_data

    klass = get_model_class(kind)
    if klass.task != "matching":
        raise ValueError(f"{kind!r} is a {klass.task} model, not a matching model")
    filled = dict(num_words=len(vocab), **({} if matrix is None else dict(dim=matrix.shape[1])))
    config = config_from_data(klass, model_options, filled)
    model = klass.build(config, vocabulary=vocab, pretrained=matrix, generator=torch.Generator().manual_seed(seed))
    return model, config


def _score_splits(model: nn.Module, encoded: dict[str, EncodedQA], splits: tuple[str, ...],
                  config: MatchingConfig) -> dict:
    """The ranking metrics (:func:`metrics_dict`) of ``model`` on each of ``splits`` that ``encoded`` holds."""
    return {split: metrics_dict(evaluate_ranking(model, encoded[split], device=config.device, max_len=config.max_len,
                                                 length_chunks=config.length_chunks))
            for split in splits if split in encoded}


def run_matching(name: str, model_options: dict, config: MatchingConfig, *, pretrained: PretrainedVectors | None,
                 model: str = "cnm",
                 root=None, eval_splits: tuple[str, ...] = ("test",), max_questions: int | None = None,
                 pretrained_fallback: int | None = None, extra_train: tuple[str, ...] = (), log=None,
                 observe_splits: tuple[str, ...] = (), train_split: str | None = None,
                 checkpoint_dir=None, resume: bool = False) -> MatchingRun:
    """Train a matching model on ``name``'s training split, select on dev, then score each of ``eval_splits`` once.

    ``qpnlp train MODEL --dataset NAME`` passes ``default_train_config(model, dataset=NAME, vectors=...)``
    (:mod:`qpnlp.training.defaults`: the model's epochs, learning rate and margin for the data set), the vectors of
    ``default_vectors(model, vectors=..., dataset=NAME)`` (CNM: 1/32 on ``spacy-md-300d``) and
    ``--pretrained-fallback``. Dev and evaluation splits are filtered (:func:`qpnlp.data.load_qa`). A
    :class:`~qpnlp.training.loop.TrainingInterrupted` or :class:`~qpnlp.training.TrainingDiverged` leaving this
    function carries ``vocab`` and ``dataset`` in its ``context`` (to save the model).

    Parameters
    ----------
    name : str
        The answer-selection data set (``"trecqa"``, ``"wikiqa"``; as :func:`~qpnlp.data.load_qa` takes it).
    model_options : dict
        The model's config fields (``dim`` defaults to 50; ``num_words`` and the vectors' ``dim`` are filled in).
    config : MatchingConfig
        The training settings.
    pretrained : PretrainedVectors or None
        The word vectors; None: random initial embeddings.
    model : str, default "cnm"
        The registry name of a matching model (``cnm``, ``cnm_real``, ...; ValueError for another task's).
    root : path-like, optional
        The data folder; None: ``QPNLP_DATA`` (:func:`~qpnlp.data.data_root`).
    eval_splits : tuple of str, default ("test",)
        The splits scored once with the selected parameters; a split whose file is absent is skipped (TREC-QA
        here has no test file).
    max_questions : int or None, default None
        Keep the first this many questions of every split (quick runs); None: all.
    pretrained_fallback : int or None, default None
        The number of pretrained words appended to the vocabulary; None: the vectors' own
        (:class:`fallback <qpnlp.data.pretrained.PretrainedVectors>`: 400000, all of GloVe 6B, for
        ``glove-6b-50d``; 0 for ``spacy-md-300d``, files and no vectors).
    extra_train : tuple of str, default ()
        Other data sets whose training splits are added to the training data (transfer, e.g. WikiQA for the 93
        TREC-QA training questions); dev and evaluation stay ``name``'s own.
    log : callable, optional
        Called with each epoch's history entry.
    observe_splits : tuple of str, default ()
        Splits also scored after every epoch (a diagnostic), into the history as ``"<split>": metrics``; they
        never affect the selection (dev MAP) nor the reported evaluation.
    train_split : str or None, default None
        The training file, recorded in the result; None: ``train-all`` where the data set has one (TREC-QA's
        TRAIN-ALL, the training set of the published TREC-QA results), else ``train``.
    checkpoint_dir : path-like, optional
        Where :func:`fit_matching` keeps the last epoch's training state.
    resume : bool, default False
        Continue from the training state in ``checkpoint_dir`` (:func:`fit_matching`).
    """
    from .trainer import seeded

    with seeded(config.seed):     # the caller's global RNGs are put back afterwards
        train_split = train_split or default_train_split(name, root)
        train = _training_set(name, train_split, root, max_questions, extra_train)
        n_triplets = _count_triplets(train, config, _training_data(name, train_split, root, max_questions, extra_train))
        others = _scored_sets(name, root, max_questions, (*eval_splits, *observe_splits))
        vocab, encoded, matrix, oov = prepare_qa(train, others, pretrained, seed=config.seed,
                                                 pretrained_fallback=pretrained_fallback)
        model, cnm_config = _build_matcher(model, model_options, vocab, matrix, config.seed)
        observer = (lambda m: _score_splits(m, encoded, observe_splits, config)) if observe_splits else None
        try:
            fit = fit_matching(model, encoded["train"], encoded["dev"], config, log=log, on_epoch=observer,
                               checkpoint_dir=checkpoint_dir, resume=resume)
        except (TrainingInterrupted, TrainingDiverged) as err:
            err.context.update(vocab=vocab, dataset=train.name, train_split=train_split)
            raise
        evaluation = _score_splits(model, encoded, eval_splits, config)
        return MatchingRun(train.name, fit.best_dev, evaluation, fit.best_epoch, fit.seconds, fit.history, model, vocab,
                           cnm_config.to_dict(), oov, train.n_questions, n_triplets, train_split,
                           {split: d.filter_counts() for split, d in others.items() if d.filtered},
                           {split: len(rows) for split, rows in encoded.items()})

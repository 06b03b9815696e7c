"""The answer-selection data :mod:`qpnlp.training.matching` trains on: questions and candidates encoded with a
vocabulary (:class:`~qpnlp.training.matching.EncodedQA`), the first questions of a data set, the splits prepared
with the training vocabulary and pretrained vectors, and the training triplets drawn from them (all re-exported by
:mod:`qpnlp.training.matching`, where they are documented)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from qpnlp.data import PretrainedVectors, QADataset, Vocabulary, embedding_matrix_for, with_pretrained_fallback
from qpnlp.data.vocab import UNK_ID

from .classification import warn_low_coverage


@dataclass(eq=False)                     # == is identity: the generated one compared arrays and raised
class EncodedQA:
    """A :class:`QADataset` encoded with a vocabulary (rows in the data set's order).

    Parameters
    ----------
    questions, candidates : list of list of int
        The ids of each of the Q questions and of each of the R candidate rows.
    question_index, labels : numpy.ndarray of int, shape (R,)
        The question of each row, and 1 for a correct candidate, 0 for a wrong one.
    groups : tuple of numpy.ndarray
        Q arrays of row indices: the candidates of each question.
    """

    questions: list[list[int]]          # Q id lists
    candidates: list[list[int]]         # R id lists
    question_index: np.ndarray          # (R,) question of each row
    labels: np.ndarray                  # (R,) 1 = correct
    groups: tuple                       # Q arrays of row indices

    def __len__(self) -> int:
        return len(self.candidates)

    @property
    def n_questions(self) -> int:
        return len(self.questions)

    def __repr__(self) -> str:         # the dataclass's printed every id list
        return f"EncodedQA(questions={self.n_questions}, pairs={len(self)}, correct={int(self.labels.sum())})"


def _encode_text(vocab: Vocabulary, tokens: list[str]) -> list[int]:
    ids = vocab.encode(tokens)
    return ids or [UNK_ID]              # a text with no token (e.g. only punctuation) is one unknown word


def encode_qa(dataset: QADataset, vocab: Vocabulary) -> EncodedQA:
    """Encode questions and candidates of ``dataset`` (an empty text becomes ``[UNK]``).

    Parameters
    ----------
    dataset : QADataset
        The questions and candidates, as tokens.
    vocab : Vocabulary
        Encodes them (unknown words as ``<unk>``).
    """
    return EncodedQA([_encode_text(vocab, t) for t in dataset.question_tokens()],
                     [_encode_text(vocab, t) for t in dataset.candidate_tokens()],
                     dataset.question_index, dataset.labels, dataset.groups)


def limit_questions(dataset: QADataset, n: int | None) -> QADataset:
    """The first ``n`` questions of ``dataset`` with their candidates (for quick runs and tests); ``n >= 1``.

    Parameters
    ----------
    dataset : QADataset
        The data set.
    n : int or None
        The number of questions kept (an integer >= 1; ValueError otherwise); None, or ``n`` at least the data
        set's questions, returns ``dataset`` itself.
    """
    if n is not None and (isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1):
        raise ValueError(f"the number of questions must be an integer >= 1 (or None for all); got {n!r}")
    if n is None or n >= dataset.n_questions:
        return dataset
    rows = np.concatenate(dataset.groups[:n])
    groups, start = [], 0
    for g in dataset.groups[:n]:
        groups.append(np.arange(start, start + len(g), dtype=np.int64))
        start += len(g)
    return QADataset(dataset.name, dataset.split, dataset.questions[:n], [dataset.candidates[i] for i in rows],
                     dataset.labels[rows], dataset.question_index[rows], tuple(groups), dataset.n_questions_raw,
                     dataset.n_no_correct, dataset.n_no_wrong, dataset.question_filter)


def prepare_qa(train: QADataset, others: dict[str, QADataset], pretrained: PretrainedVectors | None, *,
               min_freq: int = 1, seed: int = 0, pretrained_fallback: int | None = None):
    """Vocabulary from the training questions and candidates; encoded splits; aligned pretrained matrix.

    Vectors that cover almost none of the training words are warned about
    (:func:`~qpnlp.training.classification.warn_low_coverage`).

    Returns ``(vocab, encoded: dict split -> EncodedQA, matrix or None, oov_rate or None)``.

    Parameters
    ----------
    train : QADataset
        The training split; the vocabulary is built from its questions and candidates.
    others : dict of str to QADataset
        The other splits by name, encoded with the same vocabulary.
    pretrained : PretrainedVectors or None
        The vectors of the embedding matrix; None: no matrix, no OOV rate.
    min_freq : int, default 1
        Keep training words seen at least this many times.
    seed : int, default 0
        Seeds the initial vectors of the words without a pretrained one.
    pretrained_fallback : int or None, default None
        ``n > 0`` appends the first n pretrained words (:func:`~qpnlp.data.pretrained.with_pretrained_fallback`),
        so a dev or test word unseen in training keeps its own pretrained state (and an exact question-answer word
        overlap stays visible) instead of becoming ``<unk>``; None: the vectors' own n,
        :class:`PretrainedVectors.fallback <qpnlp.data.pretrained.PretrainedVectors>` (400000 for
        ``load_vectors("glove-6b-50d")``, 0 for other vectors and without vectors), as ``qpnlp train`` does.
    """
    vocab = with_pretrained_fallback(
        Vocabulary.build(train.question_tokens() + train.candidate_tokens(), min_freq=min_freq), pretrained,
        pretrained_fallback)
    encoded = {"train": encode_qa(train, vocab), **{k: encode_qa(v, vocab) for k, v in others.items()}}
    matrix, oov = None, None
    if pretrained is not None:
        array, report = embedding_matrix_for(vocab, pretrained, seed=seed)
        warn_low_coverage(report)
        matrix, oov = torch.from_numpy(array), report.rate
    return vocab, encoded, matrix, oov


def sample_triplets(data: EncodedQA, rng: np.random.Generator, negatives: int = 1) -> np.ndarray:
    """Training triplets ``(T, 3)`` of row indices: question id, correct row, wrong row.

    One triplet per (correct candidate, drawn wrong candidate) pair; ``negatives``
    wrong candidates are drawn uniformly from the question's wrong candidates
    (without replacement when there are enough).

    Parameters
    ----------
    data : EncodedQA
        The training questions and candidates; a question without both a correct and a wrong one gives none.
    rng : numpy.random.Generator
        Draws the wrong candidates.
    negatives : int, default 1
        Wrong candidates drawn per correct one (>= 1; ValueError otherwise).
    """
    if negatives < 1:
        raise ValueError(f"negatives must be >= 1; got {negatives}")
    out = []
    for q, rows in enumerate(data.groups):
        labels = data.labels[rows]
        pos, neg = rows[labels == 1], rows[labels == 0]
        if len(pos) == 0 or len(neg) == 0:
            continue
        for p in pos:
            drawn = rng.choice(neg, size=negatives, replace=len(neg) < negatives)
            out.extend((q, p, n) for n in drawn)
    if not out:
        raise ValueError("no question has both a correct and a wrong candidate: no triplet to train on")
    return np.asarray(out, dtype=np.int64)

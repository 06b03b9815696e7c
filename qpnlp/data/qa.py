"""Readers for the answer-selection benchmarks TREC-QA and WikiQA.

Files: ``$QPNLP_DATA/qa/<name>/<split>.tsv`` with lines
``question<TAB>candidate answer<TAB>label`` (label 1 = correct answer).

Candidates are grouped by question text in order of first appearance (the
candidates of a question keep their file order). Each data set's dev and test
are filtered as its published results were (:data:`STANDARD_FILTERS`), the
training files not; the counts before and after are kept on the result:

- TREC-QA: ``"clean"``, questions without a correct or without a wrong
  candidate removed (the "clean" dev and test of 65 and 68 questions of the
  published results);
- WikiQA: ``"no-correct"``, questions without a correct candidate removed, as
  WikiQA's authors (Yang et al., 2015) and the thesis (Table 5.5: dev 126, test
  243 questions, 1,130 and 2,351 pairs) did. The questions whose candidates are
  all correct stay: each has AP = RR = 1 under any scorer. Until 0.2.0 they were
  removed too (dev 122, test 237 questions); on the same scores the MAP over the
  243 test questions is ``(237 * MAP_237 + 6) / 243``, and the MRR likewise.

A question without a correct candidate has no rank to score, so a split that
is scored is always filtered. TRAIN-ALL's 1,229 question blocks hold two
repeated question texts: grouped by text they are 1,227 questions, and the two
merged ones repeat 27 candidate rows.

Files are UTF-8, opened with :func:`~qpnlp.data.paths.read_text` (gzip, bzip2
and xz decompressed transparently, ``<split>.tsv.gz`` found where
``<split>.tsv`` is absent; binary files refused; a decoding error names the
file and line). A file without any question, or a filtered split left
without any question, is refused with the file named.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from qpnlp.data.paths import data_root, find_file, read_lines
from qpnlp.data.tokenize import tokenize

__all__ = ["QA_DATASETS", "QUESTION_FILTERS", "QADataset", "STANDARD_FILTERS", "concat_qa", "load_qa",
           "question_filter", "read_qa_tsv"]

#: Names accepted by :func:`load_qa` (folder names under ``qa/``), case-insensitive.
QA_DATASETS = ("trecqa", "wikiqa")
_ALIASES = {"trec-qa": "trecqa", "trec_qa": "trecqa", "wiki-qa": "wikiqa", "wiki_qa": "wikiqa"}
#: Training files (not filtered by default): TREC-QA's TRAIN-ALL and every data set's TRAIN.
TRAIN_SPLITS = ("train", "train-all")
#: The question filters, weakest first, ``"none"`` keeping every question, ``"no-correct"`` removing those
#: without a correct candidate and ``"clean"`` those without a correct or without a wrong candidate.
QUESTION_FILTERS = ("none", "no-correct", "clean")
#: The filter of each data set's dev and test, as in its published results (module docstring).
STANDARD_FILTERS = {"trecqa": "clean", "wikiqa": "no-correct"}


def question_filter(value: bool | str) -> str:
    """A filter of :data:`QUESTION_FILTERS` from its name or a bool (True: ``"clean"``, False: ``"none"``).

    Parameters
    ----------
    value : bool or str
        ``"none"``, ``"no-correct"`` or ``"clean"`` (ValueError for another string), or a bool.

    Examples
    --------
    >>> question_filter(True), question_filter("no-correct")
    ('clean', 'no-correct')
    """
    if isinstance(value, bool):
        return "clean" if value else "none"
    if value not in QUESTION_FILTERS:
        raise ValueError(f"the question filter must be one of {QUESTION_FILTERS} or a bool; got {value!r}")
    return value


def qa_folder_name(name: str) -> str:
    """The folder name under ``qa/`` of a data set name as :func:`load_qa` accepts it (case, aliases).

    >>> qa_folder_name("TREC-QA")
    'trecqa'
    """
    return _ALIASES.get(str(name).lower(), str(name).lower())


@dataclass(frozen=True, eq=False)
class QADataset:
    """Question / candidate pairs grouped by question.

    Rows are ordered question by question, so ``groups[q]`` is a contiguous
    run of row indices.

    Attributes
    ----------
    name, split : str
    questions : list of str
        Q distinct question texts (raw, untokenised).
    candidates : list of str
        R candidate answers (raw), one per row.
    labels : numpy.ndarray
        int64, shape (R,), 1 = correct.
    question_index : numpy.ndarray
        int64, shape (R,): the question of each row.
    groups : tuple of numpy.ndarray
        Q int64 arrays of row indices, one per question.
    n_questions_raw : int
        Questions in the file, before filtering.
    n_no_correct, n_no_wrong : int
        Questions without a correct / without a wrong candidate (counted in
        the file, whichever filter was applied; a question with no candidates
        of either kind cannot occur).
    question_filter : str
        Which of them were removed, one of :data:`QUESTION_FILTERS` (a bool
        is read by :func:`question_filter`); :attr:`filtered` says whether any.
    """

    name: str
    split: str
    questions: list[str]
    candidates: list[str]
    labels: np.ndarray
    question_index: np.ndarray
    groups: tuple[np.ndarray, ...]
    n_questions_raw: int
    n_no_correct: int
    n_no_wrong: int
    question_filter: str | bool

    def __post_init__(self) -> None:
        object.__setattr__(self, "question_filter", question_filter(self.question_filter))

    @property
    def filtered(self) -> bool:
        """Whether questions were removed (those without a correct candidate, at least)."""
        return self.question_filter != "none"

    def __len__(self) -> int:
        return len(self.candidates)

    @property
    def n_questions(self) -> int:
        return len(self.questions)

    @property
    def n_questions_removed(self) -> int:
        """Questions of the file that :attr:`question_filter` removed: those without a correct candidate
        (``"no-correct"``), and without a wrong one too (``"clean"``); 0 unfiltered. A count of the file, as
        ``n_questions_raw``: a data set cut to its first questions keeps it."""
        return (self.n_no_correct if self.filtered else 0) + (self.n_no_wrong if self.question_filter == "clean" else 0)

    def filter_counts(self) -> dict | None:
        """``{"filter": question_filter, "removed": n_questions_removed, "file_questions": n_questions_raw}`` for a
        filtered data set, else None (the reports' ``questions_removed`` of a split). Both counts are the whole
        file's, also for a data set cut to its first questions (``--max-questions``)."""
        return (dict(filter=self.question_filter, removed=self.n_questions_removed, file_questions=self.n_questions_raw)
                if self.filtered else None)

    def __repr__(self) -> str:
        return (
            f"QADataset({self.name!r}, {self.split!r}, questions={self.n_questions} "
            f"(raw {self.n_questions_raw}, no correct {self.n_no_correct}, no wrong {self.n_no_wrong}, "
            f"filter {self.question_filter!r}), pairs={len(self)}, correct={int(self.labels.sum())})"
        )

    def question_tokens(self) -> list[list[str]]:
        """Tokenised questions (Q lists)."""
        return [tokenize(q) for q in self.questions]

    def candidate_tokens(self) -> list[list[str]]:
        """Tokenised candidates (R lists)."""
        return [tokenize(c) for c in self.candidates]


def read_qa_tsv(
    path: str | os.PathLike[str], name: str = "qa", split: str = "", filter_questions: bool | str = True
) -> QADataset:
    """Read one ``question<TAB>candidate<TAB>label`` file.

    Parameters
    ----------
    path : path-like
        UTF-8 file (or gzip / bzip2 / xz of one); blank lines are skipped.
    name, split : str
        Stored on the result.
    filter_questions : bool or str, default True
        One of :data:`QUESTION_FILTERS`; True is ``"clean"`` (remove questions
        without a correct or without a wrong candidate), False ``"none"``.

    Returns
    -------
    QADataset

    Raises
    ------
    ValueError
        For a line without exactly three tab-separated fields, with a label
        other than 0/1 or with a question or candidate without any token
        (:func:`~qpnlp.data.tokenize.tokenize`), or bytes that are not UTF-8 (the message names the
        file and the 1-based line); for a file without any question, or
        without any question left after filtering; for a binary file.
    """
    how = question_filter(filter_questions)
    path = Path(path)
    by_question = _rows_by_question(path)
    n_no_correct = sum(1 for rows in by_question.values() if not any(y for _, y in rows))
    n_no_wrong = sum(1 for rows in by_question.values() if all(y for _, y in rows))
    questions, candidates, labels, qidx, groups = _kept_questions(by_question, how)
    if not questions:
        raise ValueError(f"{path}: none of its {len(by_question)} question(s) is left after the filter {how!r}, "
                         f"so nothing is left to rank ({n_no_correct} without a correct, {n_no_wrong} without a "
                         f"wrong candidate)")
    return QADataset(
        name=name,
        split=split,
        questions=questions,
        candidates=candidates,
        labels=np.array(labels, dtype=np.int64),
        question_index=np.array(qidx, dtype=np.int64),
        groups=tuple(groups),
        n_questions_raw=len(by_question),
        n_no_correct=n_no_correct,
        n_no_wrong=n_no_wrong,
        question_filter=how,
    )


def _rows_by_question(path: Path) -> dict[str, list[tuple[str, int]]]:
    """The ``(candidate, label)`` rows of each question of a ``question<TAB>candidate<TAB>label`` file, in file
    order; ValueError naming the line for a malformed one, and for a file without any question."""
    by_question: dict[str, list[tuple[str, int]]] = {}
    for lineno, line in enumerate(read_lines(path), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 3 or fields[2].strip() not in ("0", "1"):
            raise ValueError(
                f"{path}:{lineno}: expected 'question<TAB>candidate<TAB>label' with label 0/1, "
                f"got {len(fields)} field(s): {line[:80]!r}"
            )
        q, c, y = fields
        if _no_token(q) or _no_token(c):
            raise ValueError(f"{path}:{lineno}: empty question or candidate (no token in {line[:80]!r})")
        by_question.setdefault(q, []).append((c, int(y)))
    if not by_question:
        raise ValueError(f"{path}: no question in the file (empty or blank lines only)")
    return by_question


def _kept_questions(by_question: dict[str, list[tuple[str, int]]], how: str) -> tuple[list, list, list, list, list]:
    """The questions that the filter ``how`` (:data:`QUESTION_FILTERS`) keeps, flattened: the Q questions, the R
    candidates and their labels (0/1) and question index (in [0, Q)), and each question's (n_q,) int64 candidate
    rows."""
    questions, candidates, labels, qidx, groups = [], [], [], [], []
    for q, rows in by_question.items():
        n_pos = sum(y for _, y in rows)
        if (how != "none" and n_pos == 0) or (how == "clean" and n_pos == len(rows)):
            continue
        start = len(candidates)
        qid = len(questions)
        questions.append(q)
        for c, y in rows:
            candidates.append(c)
            labels.append(y)
            qidx.append(qid)
        groups.append(np.arange(start, len(candidates), dtype=np.int64))
    return questions, candidates, labels, qidx, groups


def _no_token(text: str) -> bool:
    """Whether :func:`tokenize` finds no token in ``text``: blank, or invisible characters only (a zero-width space,
    a soft hyphen), which would reach the model as an empty sentence. ASCII text is not tokenised here."""
    return not text.strip() or (not text.isascii() and not tokenize(text))


def qa_file(name: str, split: str, root=None) -> Path:
    """The file of ``split`` of QA data set ``name`` where :func:`load_qa` reads it (or ``.tsv.gz``), whether or not
    it exists; ``name`` as :func:`load_qa` takes it."""
    return find_file(data_root(root) / "qa" / qa_folder_name(name), f"{split}.tsv")


def default_train_split(name: str, root=None) -> str:
    """``train-all`` when the data set folder has ``train-all.tsv`` (TREC-QA's TRAIN-ALL; or ``.tsv.gz``, as
    :func:`load_qa` reads it), else ``train``. ``name`` as :func:`load_qa` takes it."""
    return "train-all" if qa_file(name, "train-all", root).is_file() else "train"


def load_qa(
    name: str,
    split: str,
    root: str | os.PathLike[str] | None = None,
    filter_questions: bool | str | None = None,
) -> QADataset:
    """Load a split of TREC-QA or WikiQA.

    Parameters
    ----------
    name : str
        ``"trecqa"`` or ``"wikiqa"`` (case-insensitive; ``"trec-qa"`` etc. work).
    split : str
        Any split whose file exists, e.g. ``"train"``, ``"dev"``, ``"test"``
        (TREC-QA ships without ``test.tsv`` here; one placed there is read).
        A plain file stem: a path (``"../trecqa/dev"``) is refused, so that
        a split is never read from another data set's folder.
    root : path-like, optional
        Benchmark data root (default ``$QPNLP_DATA``).
    filter_questions : bool or str, optional
        One of :data:`QUESTION_FILTERS` (True: ``"clean"``, False: ``"none"``).
        Default: the data set's :data:`STANDARD_FILTERS` for every split but
        the training files ``"train"`` and ``"train-all"``, which the papers
        do not filter.

    Returns
    -------
    QADataset

    Raises
    ------
    ValueError
        For an unknown data set name, or a split that is not a plain file
        stem (empty, ``"."``, ``".."``, or with a path separator).
    TypeError
        For a split that is not a string.
    FileNotFoundError
        For a split without a file; the message lists the splits present.
    """
    key = qa_folder_name(name)
    if key not in QA_DATASETS:
        raise ValueError(f"unknown QA data set {name!r}; valid names: {', '.join(QA_DATASETS)}")
    _check_split(split)
    folder = data_root(root) / "qa" / key
    path = find_file(folder, f"{split}.tsv")
    if not path.exists():  # a directory of that name is refused by read_qa_tsv, as such
        present = sorted({p.name.split(".tsv")[0] for p in folder.glob("*.tsv*") if p.is_file()})
        raise FileNotFoundError(
            f"{key} has no split {split!r} ({path} not found); present splits: {', '.join(present) or 'none'}"
        )
    if filter_questions is None:
        filter_questions = "none" if split in TRAIN_SPLITS else STANDARD_FILTERS[key]
    return read_qa_tsv(path, name=key, split=split, filter_questions=filter_questions)


def _check_split(split) -> None:
    """Refuse a split that is not a plain file stem (a path would read a file outside the data set's folder)."""
    if not isinstance(split, str):
        raise TypeError(f"split must be a string such as 'train', 'dev' or 'test'; got {type(split).__name__} "
                        f"{split!r}")
    separators = {"/", "\\", os.sep} | ({os.altsep} if os.altsep else set())
    if split in ("", ".") or ".." in split or any(sep in split for sep in separators) or "\0" in split:
        raise ValueError(f"split must be a plain file name stem such as 'train', 'dev' or 'test' (no path "
                         f"separator, no '..'); got {split!r}")


def concat_qa(datasets: Sequence[QADataset], name: str | None = None) -> QADataset:
    """Join QA data sets question by question (e.g. two training sets for transfer).

    Rows keep their order; question indices and groups of the later data sets
    are shifted by the number of questions before them. Counts of the filter
    are summed; the filter is the weakest of the parts' (:data:`QUESTION_FILTERS`).

    Parameters
    ----------
    datasets : sequence of QADataset
        At least one; all of the same split.
    name : str, optional
        Name of the result (default: the names joined with ``+``).

    Examples
    --------
    >>> a = QADataset("a", "train", ["q1"], ["x", "y"], np.array([1, 0]), np.array([0, 0]),
    ...               (np.array([0, 1]),), 1, 0, 0, False)
    >>> both = concat_qa([a, a])
    >>> both.name, both.n_questions, both.question_index.tolist(), both.groups[1].tolist()
    ('a+a', 2, [0, 0, 1, 1], [2, 3])
    """
    if not datasets:
        raise ValueError("concat_qa needs at least one data set")
    splits = {d.split for d in datasets}
    if len(splits) > 1:
        raise ValueError(f"cannot join different splits {sorted(splits)}")
    questions, candidates, labels, index, groups = [], [], [], [], []
    for d in datasets:
        q0, r0 = len(questions), len(candidates)
        questions += d.questions
        candidates += d.candidates
        labels.append(d.labels)
        index.append(d.question_index + q0)
        groups += [g + r0 for g in d.groups]
    return QADataset(name or "+".join(d.name for d in datasets), datasets[0].split, questions, candidates,
                     np.concatenate(labels), np.concatenate(index), tuple(groups),
                     sum(d.n_questions_raw for d in datasets), sum(d.n_no_correct for d in datasets),
                     sum(d.n_no_wrong for d in datasets),
                     min((d.question_filter for d in datasets), key=QUESTION_FILTERS.index))

"""Readers for the sentence-classification benchmarks CR, MPQA, MR, SUBJ, SST2, TREC.

File layouts are those of ``$QPNLP_DATA/classification`` (see the data
README). Every text goes through :func:`~qpnlp.data.tokenize.tokenize`.

Policies
--------
* **Encoding.** Each file is decoded as UTF-8 and, if that fails, as
  ISO-8859-1 (TREC's ``train_5500.label`` is ISO-8859-1). Files are opened
  with :func:`~qpnlp.data.paths.read_text`: gzip, bzip2 and xz files are
  decompressed transparently (``NAME.gz`` is found where ``NAME`` is absent),
  binary files and other archives are refused with the file named.
* **Refused sets.** A file without any sentence, a fixed split without any
  item, and a data set (or a fixed training split) with fewer than two
  classes present raise ``ValueError`` naming the file: a classifier cannot
  be trained or scored on them.
* **Empty lines** are skipped and counted (:class:`ClassificationDataset.n_empty <ClassificationDataset>`).
* **Duplicates.** By default (``dedupe=False``) exact duplicates are KEPT, as
  the papers used the files as distributed; :class:`ClassificationDataset.n_duplicates <ClassificationDataset>`
  counts the repeated (tokens, label) items within the same split (occurrences
  after the first). With ``dedupe=True`` those repeats are dropped (the first
  occurrence is kept, order is preserved). Identical texts with different
  labels are never dropped; they are counted in ``n_conflicting``.
* **Labels** are integers ``0 .. C-1`` indexing :class:`label_names <ClassificationDataset>`: negative
  = 0 / positive = 1 for CR, MPQA, MR and SST2; objective = 0 / subjective = 1
  for SUBJ; the six TREC coarse classes in alphabetical order.
* **SST2** train holds the phrase-level training items (67,349 lines) exactly
  as distributed; dev and test are whole sentences.

Sizes of the shared benchmark files (``dedupe=False``; duplicates in brackets):

=====  ======  ============================  =========================================
name   items   classes                       splits
=====  ======  ============================  =========================================
CR     3,771   neg 1,366 / pos 2,405 (6)     10-fold CV
MPQA   10,603  neg 7,292 / pos 3,311 (2265)  10-fold CV
MR     10,662  neg 5,331 / pos 5,331         10-fold CV
SUBJ   10,000  obj 5,000 / subj 5,000        10-fold CV
SST2   70,042  neg 31,120 / pos 38,922       train 67,349 (366) / dev 872 / test 1,821
TREC   5,952   6 coarse classes              train 5,452 (73) / test 500
=====  ======  ============================  =========================================
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from qpnlp._rows import check_row_indices
from qpnlp.data.batching import class_ids
from qpnlp.data.paths import data_root, find_file, read_lines
from qpnlp.data.tokenize import tokenize

__all__ = [
    "CV_DATASETS",
    "DATASETS",
    "ClassificationDataset",
    "load_classification",
    "read_label_files",
    "read_tsv",
    "read_trec",
]


@dataclass(frozen=True, eq=False)
class ClassificationDataset:
    """Tokenised texts with integer labels.

    Attributes
    ----------
    name : str
        Data set name (e.g. ``"MR"``).
    texts : list of list of str
        N tokenised texts (each non-empty; a string is refused, TypeError).
    labels : numpy.ndarray
        int64, shape (N,), values in ``0 .. C-1``.
    label_names : tuple of str
        C class names; ``label_names[k]`` is the name of label ``k``.
    fixed_splits : mapping str -> numpy.ndarray, optional
        For data sets with a fixed protocol (SST2: train/dev/test, TREC:
        train/test, the sotu demo: train/dev/test), int64 index arrays into
        ``texts``, pairwise disjoint; ``None`` for the cross-validation sets.
        Each is checked by ``row_indices`` (a boolean mask, a negative,
        non-integer, out-of-range or repeated index is a ``ValueError``
        naming the split), and an item in two splits is refused.
    n_duplicates : int
        Repeated (text, label) items within a split: present when loaded
        with ``dedupe=False``, dropped when loaded with ``dedupe=True``.
    n_conflicting : int
        Distinct texts that occur with more than one label within a split.
    n_empty : int
        Blank lines skipped while reading.
    """

    name: str
    texts: list[list[str]]
    labels: np.ndarray
    label_names: tuple[str, ...]
    fixed_splits: Mapping[str, np.ndarray] | None = None
    n_duplicates: int = 0
    n_conflicting: int = 0
    n_empty: int = 0
    class_counts: tuple[int, ...] = field(init=False)

    def __post_init__(self) -> None:
        labels = class_ids(self.labels, len(self.texts))
        object.__setattr__(self, "labels", labels)
        C = len(self.label_names)
        if labels.size and (labels.min() < 0 or labels.max() >= C):
            raise ValueError(f"labels must lie in 0..{C - 1}, got range {labels.min()}..{labels.max()}")
        text = next((i for i, t in enumerate(self.texts) if isinstance(t, str)), None)
        if text is not None:            # a reader of one's own that did not tokenise (else: at Vocabulary.build)
            raise TypeError(f"text {text} of {self.name} is a string; texts must be token lists "
                            f"(qpnlp.data.tokenize(text) splits one)")
        empty = next((i for i, t in enumerate(self.texts) if len(t) == 0), None)
        if empty is not None:
            raise ValueError(f"text {empty} of {self.name} is empty")
        if self.fixed_splits is not None:
            object.__setattr__(self, "fixed_splits", _fixed_splits(self.fixed_splits, len(self.texts)))
        object.__setattr__(self, "class_counts", tuple(np.bincount(labels, minlength=C).tolist()))

    def __len__(self) -> int:
        return len(self.texts)

    @property
    def n_classes(self) -> int:
        return len(self.label_names)

    def __repr__(self) -> str:
        splits = "" if self.fixed_splits is None else f", splits={ {k: len(v) for k, v in self.fixed_splits.items()} }"
        classes = dict(zip(self.label_names, self.class_counts))
        return f"ClassificationDataset({self.name!r}, n={len(self)}, classes={classes}{splits})"

    def subset(self, indices: Sequence[int] | np.ndarray, name: str | None = None) -> ClassificationDataset:
        """The items at ``indices`` as a new dataset (no fixed splits).

        ``indices`` are distinct integers in ``0 .. N-1`` (see ``row_indices``); a boolean mask, a negative,
        a non-integer, an out-of-range or a repeated index is a ``ValueError``.
        """
        idx = row_indices(indices, len(self.texts), "subset indices")
        return ClassificationDataset(
            name=name or self.name,
            texts=[self.texts[i] for i in idx],
            labels=self.labels[idx],
            label_names=self.label_names,
        )


#: The messages of ``row_indices``, one per fault of ``qpnlp._rows.FAULTS``.
_ROW_MESSAGES = {
    "mask": "{what} must hold row indices, got a boolean mask (use np.flatnonzero)",
    "shape": "{what} must be a 1-D array of row indices; got shape {shape}",
    "dtype": "{what} must hold integer row indices; got {dtype.name} values ({value!r} at position {position})",
    "range": "{what}: index {value} at position {position} is outside 0..{last} ({n} items; negative indices do "
             "not wrap around)",
    "repeat": "{what}: row index {value} appears {count} times; each item must be listed once",
}


def row_indices(indices, n: int, what: str) -> np.ndarray:
    """``indices`` as distinct int64 row indices into ``n`` items, shape (m,), or a ``ValueError`` naming ``what``.

    Refused, with the first bad index named: a boolean mask (it would be read as the indices 0 and 1; turn a mask
    into indices with ``np.flatnonzero``), values that are not integers (a cast would truncate 1.7 to 1), negative
    indices (they would wrap around to the end), indices >= ``n`` and repeated ones (an item listed twice, or in
    two splits, is trained or scored twice). The rules are those of the question groups of
    :func:`~qpnlp.evaluation.ranking_metrics` (one check, ``qpnlp._rows.check_row_indices``).

    >>> row_indices([2, 0], 3, "split 'test'").tolist()
    [2, 0]
    """
    return check_row_indices(indices, n, _ROW_MESSAGES, what=what)


def _fixed_splits(fixed: Mapping[str, Sequence[int] | np.ndarray], n: int) -> dict[str, np.ndarray]:
    """The fixed splits as int64 index arrays (``row_indices``), refusing an item shared by two splits."""
    splits = {k: row_indices(v, n, f"split {k!r}") for k, v in fixed.items()}
    owner = np.full(n, -1, dtype=np.int64)
    for j, (k, v) in enumerate(splits.items()):
        taken = v[owner[v] >= 0]
        if taken.size:
            other = list(splits)[owner[taken[0]]]
            raise ValueError(f"splits {other!r} and {k!r} share item {taken[0]}; fixed splits must be disjoint "
                             "(a shared item leaks between them)")
        owner[v] = j
    return splits


# ---------------------------------------------------------------- file level
ENCODINGS = ("utf-8", "iso-8859-1")


def read_label_files(files: Mapping[int, str | os.PathLike[str]]) -> tuple[list[list[str]], list[int], int]:
    """Read one-sentence-per-line files whose label is given by the file.

    Parameters
    ----------
    files : mapping label -> path
        e.g. ``{0: "rt-polarity.neg", 1: "rt-polarity.pos"}``, read in label order.

    Returns
    -------
    texts, labels, n_empty

    Raises
    ------
    ValueError
        For a file without any sentence (named in the message), or one that
        is not a text file (:func:`~qpnlp.data.paths.read_text`).
    """
    texts: list[list[str]] = []
    labels: list[int] = []
    n_empty = 0
    for label in sorted(files):
        before = len(texts)
        for line in read_lines(files[label], ENCODINGS):
            tokens = tokenize(line)
            if not tokens:
                n_empty += 1
                continue
            texts.append(tokens)
            labels.append(label)
        if len(texts) == before:
            raise ValueError(f"{files[label]}: no sentence in the file (empty or blank lines only); every class "
                             f"file needs at least one")
    return texts, labels, n_empty


def read_tsv(path: str | os.PathLike[str], n_classes: int = 2) -> tuple[list[list[str]], list[int], int]:
    """Read ``text<TAB>label`` lines (SST2) with integer labels ``0..n_classes-1``.

    Parameters
    ----------
    path : path-like
        An SST-style file (plain or compressed), read as UTF-8 or else ISO-8859-1; blank lines are counted, not read.
    n_classes : int, default 2
        The number of classes: labels must be the digits ``0..n_classes-1`` (5 for SST-5).

    Raises
    ------
    ValueError
        For a line without exactly one tab (a third column, such as an id, would be read as part of the text)
        or with a label outside ``0..n_classes-1`` (the message names the file and the 1-based line number), or
        a file without any item.
    """
    path = Path(path)
    texts, labels, n_empty = [], [], 0
    for lineno, line in enumerate(read_lines(path, ENCODINGS), start=1):
        if not line.strip():
            n_empty += 1
            continue
        fields = line.split("\t")      # exactly two: a third column ('id<TAB>text<TAB>label') is no part of the text
        label = fields[-1].strip()
        if len(fields) != 2 or not (label.isascii() and label.isdigit()) or int(label) >= n_classes:  # '²'.isdigit()
            raise ValueError(
                f"{path}:{lineno}: expected 'text<TAB>label' with label in 0..{n_classes - 1}, got {len(fields)} "
                f"tab-separated field(s): {line[:80]!r}"
            )
        text = fields[0]
        tokens = tokenize(text)
        if not tokens:
            raise ValueError(f"{path}:{lineno}: empty text")
        texts.append(tokens)
        labels.append(int(label))
    _require_items(path, texts)
    return texts, labels, n_empty


def _require_items(path: Path, texts: list) -> None:
    if not texts:
        raise ValueError(f"{path}: no item in the file (empty or blank lines only)")


def read_trec(path: str | os.PathLike[str]) -> tuple[list[list[str]], list[str], list[str], int]:
    """Read ``COARSE:fine question`` lines (TREC question classification); the label ends at a space or tab.

    Parameters
    ----------
    path : path-like
        A TREC file (plain or compressed), read as UTF-8 or else ISO-8859-1; blank lines are counted, not read.

    Returns
    -------
    texts, coarse, fine, n_empty
        Token lists and the coarse and fine label strings per question.

    Raises
    ------
    ValueError
        For a line that is not ``COARSE:fine question`` or whose question has no token (as :func:`read_tsv`, an
        empty text is an error, not an empty token list); the message names the file and the 1-based line.
    """
    path = Path(path)
    texts, coarse, fine, n_empty = [], [], [], 0
    for lineno, line in enumerate(read_lines(path, ENCODINGS), start=1):
        if not line.strip():
            n_empty += 1
            continue
        label, question = (line.split(None, 1) + [""])[:2]  # any whitespace: a tab must not join the first word
        c, colon, f = label.partition(":")
        if not colon or not c.isupper() or not f or not question.strip():
            raise ValueError(f"{path}:{lineno}: expected 'COARSE:fine question', got {line[:80]!r}")
        tokens = tokenize(question)
        if not tokens:                                  # invisible characters only (a zero-width space)
            raise ValueError(f"{path}:{lineno}: empty question (no token in {question[:80]!r})")
        texts.append(tokens)
        coarse.append(c)
        fine.append(f)
    _require_items(path, texts)
    return texts, coarse, fine, n_empty


# ----------------------------------------------------------- data set level
_LABEL_FILES = {
    "CR": (("neg", "custrev.neg"), ("pos", "custrev.pos")),
    "MPQA": (("neg", "mpqa.neg"), ("pos", "mpqa.pos")),
    "MR": (("neg", "rt-polarity.neg"), ("pos", "rt-polarity.pos")),
    "SUBJ": (("obj", "subj.objective"), ("subj", "subj.subjective")),
}
#: Names accepted by :func:`load_classification` (case-insensitive).
DATASETS = ("CR", "MPQA", "MR", "SUBJ", "SST2", "TREC")
#: The names of :data:`DATASETS` under the cross-validation protocol (``fixed_splits=None``: two label files); SST2
#: and TREC have fixed splits.
CV_DATASETS = tuple(_LABEL_FILES)
TREC_CLASSES = ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")


def _duplicates(texts, labels, groups, dedupe):
    """Count (and optionally drop) repeated (text, label) items within each group."""
    keep, seen, n_dup = [], set(), 0
    label_sets: dict[tuple, set] = {}
    for i, (t, y, g) in enumerate(zip(texts, labels, groups)):
        key = (g, tuple(t))
        label_sets.setdefault(key, set()).add(y)
        if (key, y) in seen:
            n_dup += 1
            if dedupe:
                continue
        seen.add((key, y))
        keep.append(i)
    n_conflicting = sum(1 for s in label_sets.values() if len(s) > 1)
    return keep, n_dup, n_conflicting


def _build(name, texts, labels, label_names, split_of, dedupe, n_empty):
    keep, n_dup, n_conf = _duplicates(texts, labels, split_of, dedupe)
    texts = [texts[i] for i in keep]
    labels = [labels[i] for i in keep]
    splits = None
    if split_of and split_of[0] is not None:
        kept_split = np.array([split_of[i] for i in keep])
        splits = {s: np.flatnonzero(kept_split == s) for s in dict.fromkeys(split_of)}
    return ClassificationDataset(name, texts, np.array(labels, dtype=np.int64), tuple(label_names), splits, n_dup,
                                 n_conf, n_empty)


def load_classification(
    name: str,
    root: str | os.PathLike[str] | None = None,
    dedupe: bool = False,
) -> ClassificationDataset:
    """Load one of the sentence-classification benchmarks.

    Parameters
    ----------
    name : str
        One of CR, MPQA, MR, SUBJ, SST2, TREC (case-insensitive).
    root : path-like, optional
        Benchmark data root (default ``$QPNLP_DATA``); files are read from
        ``root/classification/<NAME>/``.
    dedupe : bool, default False
        Drop exact (text, label) repeats within a split (see the module notes).

    Returns
    -------
    ClassificationDataset
        CR/MPQA/MR/SUBJ have ``fixed_splits=None`` (10-fold CV protocol);
        SST2 has train/dev/test and TREC train/test fixed splits.
    """
    key = str(name).upper()
    if key not in DATASETS:
        raise ValueError(f"unknown classification data set {name!r}; valid names: {', '.join(DATASETS)}")
    folder = data_root(root) / "classification" / key
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} does not exist (is the data root right?)")
    if key in _LABEL_FILES:
        names, files = zip(*_LABEL_FILES[key])
        texts, labels, n_empty = read_label_files({i: find_file(folder, f) for i, f in enumerate(files)})
        return _checked(_build(key, texts, labels, names, [None] * len(texts), dedupe, n_empty), folder)
    if key == "SST2":
        texts, labels, split_of, n_empty = [], [], [], 0
        for split in ("train", "dev", "test"):
            t, y, e = read_tsv(find_file(folder, f"{split}.tsv"))
            texts += t
            labels += y
            split_of += [split] * len(t)
            n_empty += e
        return _checked(_build(key, texts, labels, ("neg", "pos"), split_of, dedupe, n_empty), folder)
    # TREC
    texts, coarse, split_of, n_empty = [], [], [], 0
    for split, fname in (("train", "train_5500.label"), ("test", "TREC_10.label")):
        t, c, _, e = read_trec(find_file(folder, fname))
        texts += t
        coarse += c
        split_of += [split] * len(t)
        n_empty += e
    unknown = sorted(set(coarse) - set(TREC_CLASSES))
    if unknown:
        raise ValueError(f"unexpected TREC coarse classes {unknown} in {folder}; expected {TREC_CLASSES}")
    labels = [TREC_CLASSES.index(c) for c in coarse]
    return _checked(_build(key, texts, labels, TREC_CLASSES, split_of, dedupe, n_empty), folder)


def _checked(dataset: ClassificationDataset, folder: Path) -> ClassificationDataset:
    """Refuse a data set, or the training split of a fixed protocol, with fewer than two classes present."""
    parts = {"": dataset.labels}
    if dataset.fixed_splits is not None and "train" in dataset.fixed_splits:
        parts["train split of "] = dataset.labels[dataset.fixed_splits["train"]]
    for what, labels in parts.items():
        counts = np.bincount(labels, minlength=dataset.n_classes)
        if np.count_nonzero(counts) < 2:
            present = ", ".join(f"{n} {name!r}" for name, n in zip(dataset.label_names, counts) if n) or "no items"
            raise ValueError(f"the {what}{dataset.name} ({folder}) holds fewer than two classes ({present}); "
                             f"a classifier needs at least two")
    return dataset


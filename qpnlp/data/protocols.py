"""Evaluation protocols of the classification papers.

* CR, MPQA, MR, SUBJ (no fixed split): stratified k-fold cross-validation
  (k = 10), shuffled with a seed. A class of fewer than k items (a user's
  data set) is warned of, with its name and count: some test folds hold none
  of it. As for a fixed training split, only a training part of fewer than
  two classes is refused (``qpnlp.training.classification.prepare``); one
  that lacks a class is warned of there.
* SST2: the fixed train / dev / test split.
* TREC: the fixed train / test split; dev is carved from train.

The dev set used for model selection always comes from training data only:
where no dev split is given it is a stratified, seeded ``dev_fraction`` of the
training part (of each fold), and the test items are never looked at.
Model selection picks on dev; the test score of the selected model is reported
once per split (the mean over folds for CV).
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from qpnlp._checks import SEEDS, check_seed, is_integer
from qpnlp._stacklevel import outside_qpnlp
from qpnlp.data.classification import ClassificationDataset, row_indices

__all__ = ["DEFAULT_FOLDS", "Split", "carve_dev", "splits"]


@dataclass(frozen=True, eq=False)
class Split:
    """One train / dev / test partition of a dataset.

    Attributes
    ----------
    name : str
        ``"fold 1"`` .. ``"fold k"`` for cross-validation, ``"fixed"`` otherwise.
    train, dev, test : numpy.ndarray
        int64 index arrays into the dataset, pairwise disjoint, each sorted.
    """

    name: str
    train: np.ndarray
    dev: np.ndarray
    test: np.ndarray

    def subsets(
        self, dataset: ClassificationDataset
    ) -> tuple[ClassificationDataset, ClassificationDataset, ClassificationDataset]:
        """The (train, dev, test) sub-datasets of ``dataset``."""
        return tuple(  # type: ignore[return-value]
            dataset.subset(idx, name=f"{dataset.name} {self.name} {part}")
            for part, idx in (("train", self.train), ("dev", self.dev), ("test", self.test))
        )

    def __repr__(self) -> str:
        return f"Split({self.name!r}, train={len(self.train)}, dev={len(self.dev)}, test={len(self.test)})"


def carve_dev(
    train: np.ndarray, labels: np.ndarray, dev_fraction: float = 0.1, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Split training indices into (train, dev), stratified by label and seeded.

    Parameters
    ----------
    train : numpy.ndarray
        int64 indices, shape (n,): distinct integers in ``0 .. N-1`` (not a
        boolean mask; see ``qpnlp.data.classification.row_indices``).
    labels : numpy.ndarray
        Labels of the WHOLE dataset, shape (N,), indexed by ``train``.
    dev_fraction : float, default 0.1
        Fraction of ``train`` moved to dev, in [0, 1). 0 gives an empty dev.
    seed : int, default 0
        In [0, 2**32).

    Returns
    -------
    train, dev : numpy.ndarray
        Sorted int64 index arrays. The split is stratified when every class
        has at least two items and both parts can hold one item of each
        class; otherwise it is a plain seeded shuffle.

    Raises
    ------
    ValueError
        When ``train`` has fewer than two items (no dev can be carved); for
        a boolean mask, a negative, non-integer, repeated index or one
        outside ``labels`` (the message names the first); for a bad seed or
        ``dev_fraction``.

    Examples
    --------
    >>> labels = np.array([0, 1] * 10)
    >>> tr, dev = carve_dev(np.arange(20), labels, dev_fraction=0.2, seed=0)
    >>> len(tr), len(dev), np.bincount(labels[dev]).tolist()
    (16, 4, [2, 2])
    """
    labels = np.asarray(labels)
    train = row_indices(train, len(labels), "train indices")
    check_seed(seed)
    _check_dev_fraction(dev_fraction)
    if dev_fraction == 0.0:
        return np.sort(train), np.empty(0, dtype=np.int64)
    from sklearn.model_selection import train_test_split

    if len(train) < 2:
        raise ValueError(f"cannot carve a dev set from a training part of {len(train)} item(s); need at least 2")
    y = labels[train]
    counts = np.bincount(y)
    present = int(np.count_nonzero(counts))
    n_dev = int(np.ceil(dev_fraction * len(train)))
    stratify = y if counts[counts > 0].min() >= 2 and min(n_dev, len(train) - n_dev) >= present else None
    tr, dev = train_test_split(train, test_size=dev_fraction, random_state=seed, shuffle=True, stratify=stratify)
    return np.sort(tr), np.sort(dev)


def _check_dev_fraction(dev_fraction) -> None:
    """``ValueError`` unless ``dev_fraction`` is a real number in [0, 1)."""
    if isinstance(dev_fraction, bool) or not isinstance(dev_fraction, numbers.Real) or not 0.0 <= dev_fraction < 1.0:
        raise ValueError(f"dev_fraction must lie in [0, 1), got {dev_fraction!r}")


#: Cross-validation folds of the papers' protocol (CR, MPQA, MR, SUBJ), the default of :func:`splits` and
#: ``qpnlp train``.
DEFAULT_FOLDS = 10


def splits(
    dataset: ClassificationDataset,
    seed: int = 0,
    n_folds: int = DEFAULT_FOLDS,
    dev_fraction: float = 0.1,
) -> Iterator[Split]:
    """The train / dev / test splits of the paper protocol for ``dataset``.

    Parameters
    ----------
    dataset : ClassificationDataset
        With ``fixed_splits`` (must contain ``"train"`` and ``"test"``, may
        contain ``"dev"``) a single ``"fixed"`` split is yielded; without, the
        ``n_folds`` folds of :class:`sklearn.model_selection.StratifiedKFold`
        (shuffled with ``seed``).
    seed : int, default 0
        In [0, 2**32); seeds the folds and the dev carving; same seed, same splits.
    n_folds : int, default 10
        Number of cross-validation folds, an integer >= 2 (ignored for fixed splits).
    dev_fraction : float, default 0.1
        Fraction of the training part used as dev where no dev split is given.
        The dev of the k-th fold (``"fold k"``, k from 1) is carved with seed ``(seed + k - 1) mod 2**32``, so
        fold k + 1 of ``seed`` and fold k of ``seed + 1`` carve with one seed (docs/getting-started.md,
        "How each stream is derived").

    Yields
    ------
    Split

    Warns
    -----
    UserWarning
        When a class holds fewer items than ``n_folds`` (but at least one), naming the data set, the class, its
        count and the folds: some test folds then hold none of its items (sklearn's own "least populated class"
        warning, which names neither, is not repeated). Too few items for any fold is a ``ValueError``.

    Examples
    --------
    >>> ds = ClassificationDataset("toy", [["w"]] * 40, np.array([0, 1] * 20), ("a", "b"))
    >>> [repr(s) for s in splits(ds, n_folds=4)][:2]
    ["Split('fold 1', train=27, dev=3, test=10)", "Split('fold 2', train=27, dev=3, test=10)"]
    """
    check_seed(seed)
    if not isinstance(dataset, ClassificationDataset):    # e.g. a name: an AttributeError on .labels
        raise TypeError(f"dataset must be a ClassificationDataset (load_classification(name)); got "
                        f"{type(dataset).__name__} {dataset!r:.40}")
    labels = dataset.labels
    if dataset.fixed_splits is not None:
        fixed = dataset.fixed_splits
        missing = {"train", "test"} - set(fixed)
        if missing:
            raise ValueError(f"fixed splits of {dataset.name} lack {sorted(missing)}; have {sorted(fixed)}")
        if "dev" in fixed and len(fixed["dev"]):
            train, dev = np.sort(fixed["train"]), np.sort(fixed["dev"])
        else:
            train, dev = carve_dev(fixed["train"], labels, dev_fraction, seed)
        yield Split("fixed", train, dev, np.sort(fixed["test"]))
        return
    if not is_integer(n_folds) or n_folds < 2:
        raise ValueError(f"n_folds must be an integer >= 2, got {n_folds!r}")
    counts = np.bincount(labels, minlength=dataset.n_classes)
    if n_folds > len(labels) or n_folds > counts.max():
        sizes = ", ".join(f"{name!r} {n}" for name, n in zip(dataset.label_names, counts))
        raise ValueError(f"{dataset.name} is too small for {n_folds}-fold cross-validation ({len(labels)} items: "
                         f"{sizes}); use fewer folds")
    _warn_small_classes(dataset, counts, n_folds)
    folds = _stratified_folds(labels, n_folds, seed, quiet=bool(counts.min() < n_folds))
    for i, (train, test) in enumerate(folds):
        train, dev = carve_dev(train, labels, dev_fraction, (seed + i) % SEEDS)
        yield Split(f"fold {i + 1}", train, dev, np.sort(test).astype(np.int64))


def _stratified_folds(labels: np.ndarray, n_folds: int, seed: int, quiet: bool) -> list:
    """sklearn's ``StratifiedKFold`` splits of ``labels`` (n,), a list of (train, test) index arrays. ``quiet``
    (a class smaller than ``n_folds``): its "least populated class" warning is silenced, as
    :func:`_warn_small_classes` says it with the class names. Only then: ``warnings.catch_warnings`` changes the
    filters of every thread of the process while it is open."""
    from sklearn.model_selection import StratifiedKFold

    skf = StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=seed)
    if not quiet:
        return list(skf.split(np.zeros(len(labels)), labels))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The least populated class in y", category=UserWarning)
        return list(skf.split(np.zeros(len(labels)), labels))


def _warn_small_classes(dataset: ClassificationDataset, counts: np.ndarray, n_folds: int) -> None:
    """Warn of the classes of ``dataset`` that hold fewer items than ``n_folds`` (``counts``: (C,) items per class).

    Stratified folds put the c < k items of such a class into c different folds, so k - c test folds hold none of
    them; the training part of every fold still holds one unless c = 1 (the fold that tests that item then trains
    without its class: ``prepare`` warns that it caps the test accuracy, and refuses a training part of one class,
    as :func:`~qpnlp.data.classification.load_classification` refuses a fixed training split of one class).

    >>> ds = ClassificationDataset("toy", [["w"]] * 13, np.array([0] * 10 + [1] * 3), ("a", "b"))
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     folds = list(splits(ds, n_folds=5))
    >>> [str(w.message).split(";")[0] for w in seen]
    ["toy has fewer items than the 5 cross-validation folds in the class 'b' (3 items)"]
    """
    small = [(name, int(n)) for name, n in zip(dataset.label_names, counts) if 0 < n < n_folds]
    if small:
        which = ", ".join(f"{name!r} ({n} item{'s' * (n > 1)})" for name, n in small)
        warnings.warn(f"{dataset.name} has fewer items than the {n_folds} cross-validation folds in the "
                      f"class{'es' * (len(small) > 1)} {which}; each of its items is tested in a different "
                      f"fold, so some folds test none of them (fewer folds test every class in every fold)",
                      UserWarning, stacklevel=outside_qpnlp())

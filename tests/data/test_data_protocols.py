import warnings

import numpy as np
import pytest
from sklearn.model_selection import StratifiedKFold

from qpnlp.data.classification import ClassificationDataset, load_classification
from qpnlp.data.protocols import Split, carve_dev, splits


def _toy(n=103, fixed=None):
    rng = np.random.default_rng(0)
    labels = rng.choice(3, size=n, p=[0.6, 0.3, 0.1])
    return ClassificationDataset("toy", [[str(i)] for i in range(n)], labels, ("a", "b", "c"), fixed)


def _check_partition(ds, folds, n_folds):
    assert [s.name for s in folds] == [f"fold {i}" for i in range(1, n_folds + 1)]
    all_test = np.concatenate([s.test for s in folds])
    assert sorted(all_test.tolist()) == list(range(len(ds)))  # tests partition the data
    for s in folds:
        parts = [set(s.train.tolist()), set(s.dev.tolist()), set(s.test.tolist())]
        assert not (parts[0] & parts[1]) and not (parts[0] & parts[2]) and not (parts[1] & parts[2])
        assert len(s.train) + len(s.dev) + len(s.test) == len(ds)


def _check_stratified(labels, idx, tol=1):
    """Each class's count in idx is within tol of its proportional share."""
    n_cls = labels.max() + 1
    share = np.bincount(labels, minlength=n_cls) * len(idx) / len(labels)
    assert np.all(np.abs(np.bincount(labels[idx], minlength=n_cls) - share) <= tol + 1e-9)


def test_cv_folds_partition_and_stratify():
    ds = _toy()
    folds = list(splits(ds, seed=0, n_folds=10, dev_fraction=0.1))
    _check_partition(ds, folds, 10)
    for s in folds:
        _check_stratified(ds.labels, s.test)
        assert len(s.dev) == pytest.approx(0.1 * (len(s.train) + len(s.dev)), abs=1)
        _check_stratified(ds.labels, s.dev, tol=1.5)


def test_same_seed_same_folds_other_seed_other_folds():
    ds = _toy()
    a = list(splits(ds, seed=4))
    b = list(splits(ds, seed=4))
    c = list(splits(ds, seed=5))
    for x, y in zip(a, b):
        assert np.array_equal(x.train, y.train) and np.array_equal(x.dev, y.dev) and np.array_equal(x.test, y.test)
    assert any(not np.array_equal(x.test, z.test) for x, z in zip(a, c))


def test_dev_fraction_zero_and_validation():
    ds = _toy()
    s = next(splits(ds, dev_fraction=0.0))
    assert len(s.dev) == 0
    with pytest.raises(ValueError, match="dev_fraction"):
        next(splits(ds, dev_fraction=1.0))
    with pytest.raises(ValueError, match="n_folds"):
        next(splits(ds, n_folds=1))


def test_fixed_split_with_given_dev():
    fixed = {"train": np.arange(0, 60), "dev": np.arange(60, 70), "test": np.arange(70, 103)}
    (s,) = list(splits(_toy(fixed=fixed), seed=3))
    assert s.name == "fixed"
    assert s.train.tolist() == list(range(60)) and s.dev.tolist() == list(range(60, 70))
    assert s.test.tolist() == list(range(70, 103))


def test_fixed_split_dev_carved_from_train_only():
    fixed = {"train": np.arange(0, 80), "test": np.arange(80, 103)}
    ds = _toy(fixed=fixed)
    (s,) = list(splits(ds, seed=1, dev_fraction=0.25))
    assert set(s.dev.tolist()) | set(s.train.tolist()) == set(range(80))
    assert not set(s.dev.tolist()) & set(s.train.tolist())
    assert s.test.tolist() == list(range(80, 103)) and len(s.dev) == 20
    _check_stratified(ds.labels[:80], s.dev, tol=1)
    (again,) = list(splits(ds, seed=1, dev_fraction=0.25))
    assert np.array_equal(again.dev, s.dev)


def test_fixed_split_needs_train_and_test():
    with pytest.raises(ValueError, match=r"lack \['test'\]"):
        next(splits(_toy(fixed={"train": np.arange(10)})))


def test_carve_dev_with_a_singleton_class_falls_back_to_unstratified():
    labels = np.array([0] * 10 + [1])
    tr, dev = carve_dev(np.arange(11), labels, 0.2, seed=0)
    assert len(tr) + len(dev) == 11 and not set(tr) & set(dev)


def test_a_class_smaller_than_the_folds_is_named_once_by_qpnlp():
    """sklearn's "The least populated class in y has only 3 members, which is less than n_splits=10" named neither
    the data set nor the class; qpnlp's warning names both, the count and the folds, and sklearn's is not repeated.
    The folds are sklearn's, unchanged; the filter does not outlive the call."""
    ds = ClassificationDataset("mine", [[str(i)] for i in range(25)], np.array([0] * 10 + [1] * 3 + [2] * 12),
                               ("a", "b", "c"))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        folds = list(splits(ds, seed=0, n_folds=10))
    assert [str(w.message).split(";")[0] for w in seen] == [
        "mine has fewer items than the 10 cross-validation folds in the class 'b' (3 items)"]
    assert seen[0].category is UserWarning and seen[0].filename == __file__
    with pytest.warns(UserWarning, match="The least populated class in y has only 3 members"):    # sklearn's own
        expected = list(StratifiedKFold(10, shuffle=True, random_state=0).split(np.zeros(25), ds.labels))
    assert [s.test.tolist() for s in folds] == [sorted(test.tolist()) for _, test in expected]


def test_classes_as_large_as_the_folds_warn_of_nothing():
    ds = ClassificationDataset("mine", [[str(i)] for i in range(25)], np.array([0] * 15 + [1] * 10), ("a", "b"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(list(splits(ds, n_folds=10))) == 10


def test_split_subsets():
    ds = _toy(n=20)
    s = Split("x", np.array([0, 1]), np.array([2]), np.array([3, 4]))
    train, dev, test = s.subsets(ds)
    assert train.texts == [["0"], ["1"]] and dev.texts == [["2"]] and len(test) == 2
    assert "train=2" in repr(s)


@pytest.mark.data
def test_real_protocols(data_root):
    mr = load_classification("MR", root=data_root)
    folds = list(splits(mr, seed=0))
    _check_partition(mr, folds, 10)
    assert all(len(s.test) in (1066, 1067) for s in folds)
    trec = load_classification("TREC", root=data_root)
    (s,) = list(splits(trec, seed=0))
    assert len(s.test) == 500 and len(s.dev) == 546 and len(s.train) == 4906
    assert set(s.dev.tolist()) <= set(trec.fixed_splits["train"].tolist())
    sst2 = load_classification("SST2", root=data_root)
    (s,) = list(splits(sst2))
    assert (len(s.train), len(s.dev), len(s.test)) == (67349, 872, 1821)


def test_folds_of_classes_as_large_as_the_folds_leave_the_warning_filters_alone(monkeypatch):
    """``warnings.catch_warnings`` swaps the filters of every thread while it is open (a warning another thread
    says meanwhile may be lost or filtered wrongly): the folds open it only to silence sklearn's warning of a
    small class, not for every cross-validation."""
    import types

    from qpnlp.data import protocols

    opened = []
    monkeypatch.setattr(protocols, "warnings", types.SimpleNamespace(
        warn=warnings.warn, filterwarnings=warnings.filterwarnings, catch_warnings=lambda: opened.append(1)))
    ds = ClassificationDataset("mine", [[str(i)] for i in range(25)], np.array([0] * 15 + [1] * 10), ("a", "b"))
    assert len(list(splits(ds, seed=0, n_folds=10))) == 10
    assert opened == []

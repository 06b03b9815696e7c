import numpy as np
import pytest

from qpnlp.data.classification import ClassificationDataset
from qpnlp.data.sotu import split_sentences
from qpnlp.data.sotu_era import ERA_LABELS, load_sotu_era


def test_split_sentences():
    text = (
        "Fellow-Citizens of the Senate:\n\nMr. Jefferson and Gen. Knox met at St. Louis. "
        'The U.S. Navy, under H. R. Smith, grew by 5 ships! "Is it enough?" he asked. [Applause] Yes.'
    )
    assert split_sentences(text) == [
        "Fellow-Citizens of the Senate:",
        "Mr. Jefferson and Gen. Knox met at St. Louis.",
        "The U.S. Navy, under H. R. Smith, grew by 5 ships!",
        '"Is it enough?" he asked.',
        "Yes.",
    ]


@pytest.fixture(scope="module")
def small():
    return load_sotu_era(n_train=400, n_dev=50, n_test=101, seed=0)


def test_shape_of_the_task(small):
    assert isinstance(small, ClassificationDataset) and small.name == "sotu-era"
    assert small.label_names == ERA_LABELS == ("pre-1900", "post-1945")
    sizes = {k: len(v) for k, v in small.fixed_splits.items()}
    assert sizes == {"train": 400, "dev": 50, "test": 101} and len(small) == 551
    for name, idx in small.fixed_splits.items():
        counts = np.bincount(small.labels[idx], minlength=2)
        assert abs(counts[0] - counts[1]) <= 1, name  # balanced
    assert all(5 <= len(t) <= 60 for t in small.texts)


def test_no_sentence_in_two_places(small):
    keys = [tuple(t) for t in small.texts]
    assert len(set(keys)) == len(keys)
    assert not any(t in ("applause", "laughter") for text in small.texts for t in text)


def test_deterministic_and_seeded(small):
    again = load_sotu_era(n_train=400, n_dev=50, n_test=101, seed=0)
    assert again.texts == small.texts and np.array_equal(again.labels, small.labels)
    other = load_sotu_era(n_train=400, n_dev=50, n_test=101, seed=1)
    assert other.texts != small.texts


def test_default_size_and_length_filter():
    ds = load_sotu_era()
    assert {k: len(v) for k, v in ds.fixed_splits.items()} == {"train": 4000, "dev": 500, "test": 1000}
    short = load_sotu_era(n_train=10, n_dev=2, n_test=2, min_tokens=3, max_tokens=8)
    assert all(3 <= len(t) <= 8 for t in short.texts)


def test_too_many_requested():
    with pytest.raises(ValueError, match="distinct sentences"):
        load_sotu_era(n_train=10**7)
    with pytest.raises(ValueError, match="min_tokens"):
        load_sotu_era(min_tokens=10, max_tokens=5)

import functools

import numpy as np
import pytest
import torch

from qpnlp.data.batching import EncodedTexts, collate, iterate_batches, make_loader, pad_batch
from qpnlp.data.vocab import PAD_ID


def test_pad_batch_shapes_and_mask():
    ids, mask = pad_batch([[4, 5, 6], [7], (8, 9)])
    assert ids.dtype == torch.long and mask.dtype == torch.bool
    assert ids.shape == mask.shape == (3, 3)
    assert ids.tolist() == [[4, 5, 6], [7, PAD_ID, PAD_ID], [8, 9, PAD_ID]]
    assert mask.sum(1).tolist() == [3, 1, 2]
    assert torch.all(ids[~mask] == PAD_ID)


def test_pad_batch_accepts_arrays_and_tensors():
    ids, _ = pad_batch([np.array([2, 3]), torch.tensor([4])])
    assert ids.tolist() == [[2, 3], [4, 0]]


def test_truncation_keeps_the_head():
    ids, mask = pad_batch([[1, 2, 3, 4, 5], [6, 7]], max_len=3)
    assert ids.tolist() == [[1, 2, 3], [6, 7, 0]] and mask.tolist() == [[True] * 3, [True, True, False]]
    ids, _ = pad_batch([[1, 2], [3]], max_len=10)
    assert ids.shape == (2, 2)  # L is the longest row, not max_len


def test_a_multiple_rounds_the_padded_length_up_but_not_past_max_len():
    ids, mask = pad_batch([[1, 2, 3, 4, 5], [6, 7]], multiple_of=4)
    assert ids.shape == (2, 8) and mask.sum(1).tolist() == [5, 2] and torch.all(ids[~mask] == PAD_ID)
    assert pad_batch([[1, 2, 3, 4]], multiple_of=4)[0].shape == (1, 4)          # already a multiple
    assert pad_batch([[1, 2, 3, 4, 5], [6]], max_len=6, multiple_of=4)[0].shape == (2, 6)
    assert pad_batch([[1, 2, 3, 4, 5], [6]], max_len=3, multiple_of=4)[1].tolist() == [[True] * 3,
                                                                                       [True, False, False]]
    assert pad_batch([[1, 2, 3]], multiple_of=1)[0].shape == (1, 3)
    ds = EncodedTexts([[2, 3], [4], [5, 6, 7]], [0, 1, 1])
    assert [b[0].shape[1] for b in iterate_batches(ds, batch_size=2, multiple_of=8)] == [8, 8]
    assert next(iter(make_loader(ds, batch_size=3, multiple_of=5)))[0].shape == (3, 5)



def _pad_rows(sequences, max_len=None, multiple_of=None):
    """The padded batch filled row by row (the reference of pad_batch's one-tensor path)."""
    lengths = [min(len(s), max_len or len(s)) for s in sequences]
    L = max(lengths) if multiple_of is None else min(-(-max(lengths) // multiple_of) * multiple_of,
                                                     max_len or 10 ** 9)
    ids = torch.full((len(sequences), L), PAD_ID, dtype=torch.long)
    mask = torch.zeros(len(sequences), L, dtype=torch.bool)
    for row, (seq, n) in enumerate(zip(sequences, lengths)):
        ids[row, :n] = torch.tensor([int(x) for x in list(seq)[:n]], dtype=torch.long)
        mask[row, :n] = True
    return ids, mask


@pytest.mark.parametrize("seed", range(4))
def test_a_batch_of_id_lists_in_one_tensor_equals_the_rows_filled_one_by_one(seed):
    rng = np.random.default_rng(seed)
    for B in (1, 2, 17):
        lists = [rng.integers(0, 2 ** 40, size=int(n)).tolist() for n in rng.integers(1, 9, size=B)]
        mixed = [np.array(s) if i % 3 == 1 else tuple(s) if i % 3 == 2 else s for i, s in enumerate(lists)]
        for sequences in (lists, [s[:1] for s in lists], [lists[0]] * B, mixed, [*lists[:-1], [2.0] * 3]):
            for max_len, multiple_of in ((None, None), (3, None), (None, 4), (5, 4), (1, None)):
                got, expect = pad_batch(sequences, max_len, multiple_of), _pad_rows(sequences, max_len, multiple_of)
                assert torch.equal(got[0], expect[0]) and torch.equal(got[1], expect[1])
    with pytest.raises(TypeError, match="sequence 1 must hold integer ids; got torch.bool"):
        pad_batch([[2, 3], [True, False]])                  # bools are no ids, on the list path too
    with pytest.raises(ValueError, match="sequence 0 must hold integer ids; position 1 is 2.5"):
        pad_batch([[2, 2.5], [4]])

def test_pad_batch_errors():
    with pytest.raises(ValueError, match="at least one"):
        pad_batch([])
    with pytest.raises(ValueError, match="sequence 1 is empty"):
        pad_batch([[1], []])
    with pytest.raises(ValueError, match="max_len"):
        pad_batch([[1]], max_len=0)
    with pytest.raises(ValueError, match="multiple_of must be >= 1"):
        pad_batch([[1]], multiple_of=0)


def test_dataset_and_collate():
    ds = EncodedTexts([[2, 3], [4], [5, 6, 7]], [0, 1, 1])
    assert len(ds) == 3 and ds[2] == ([5, 6, 7], 1)
    assert repr(ds) == "EncodedTexts(n=3, classes=2)"     # was <... object at 0x...>
    ids, mask, labels = collate([ds[0], ds[1]])
    assert ids.tolist() == [[2, 3], [4, 0]] and labels.tolist() == [0, 1]
    with pytest.raises(ValueError, match="labels must have shape"):
        EncodedTexts([[1]], [0, 1])
    with pytest.raises(ValueError, match="text 0 is empty"):
        EncodedTexts([[]], [0])


@pytest.mark.parametrize("labels, fragment", [
    ([0, 0.5, 1.7], r"labels\[1\] is 0.5"), ([1, float("nan")], r"labels\[1\] is nan"),
    (np.array([0.0, 2.25]), r"labels\[1\] is 2.25"), (torch.tensor([0.5, 1.0]), r"labels\[0\] is 0.5"),
    (["0", "1"], "integers .* array of str")])
def test_labels_that_are_not_integers_are_refused(labels, fragment):
    """Float labels such as 0.5 and 1.7 were truncated to the classes 0 and 1 without a word."""
    with pytest.raises(ValueError, match=fragment):
        EncodedTexts([[2]] * len(labels), labels)


def test_integer_valued_float_labels_are_class_ids():
    assert EncodedTexts([[2], [3]], np.array([1.0, 0.0])).labels.tolist() == [1, 0]
    assert EncodedTexts([[2], [3]], torch.tensor([1, 0], dtype=torch.int32)).labels.dtype == torch.long
    assert len(EncodedTexts([], [])) == 0


def _orders(ds, **kw):
    return [labels.tolist() for _, _, labels in iterate_batches(ds, **kw)]


def test_iterate_batches_seeded_shuffling():
    n = 50
    ds = EncodedTexts([[i + 2] for i in range(n)], list(range(n)))
    plain = _orders(ds, batch_size=8)
    assert sum(plain, []) == list(range(n)) and len(plain) == 7
    a = _orders(ds, batch_size=8, shuffle=True, seed=1, epoch=0)
    assert a == _orders(ds, batch_size=8, shuffle=True, seed=1, epoch=0)
    assert a != _orders(ds, batch_size=8, shuffle=True, seed=1, epoch=1)
    assert a != _orders(ds, batch_size=8, shuffle=True, seed=2, epoch=0)
    assert sorted(sum(a, [])) == list(range(n))
    torch.manual_seed(123)  # global state does not matter
    assert a == _orders(ds, batch_size=8, shuffle=True, seed=1, epoch=0)
    dropped = _orders(ds, batch_size=8, drop_last=True)
    assert len(dropped) == 6 and all(len(b) == 8 for b in dropped)


def test_make_loader_replays_with_same_seed():
    ds = EncodedTexts([[i + 2] * (1 + i % 3) for i in range(20)], [i % 2 for i in range(20)])
    first = [b[0][:, 0].tolist() for b in make_loader(ds, 4, shuffle=True, seed=7, max_len=2)]
    second = [b[0][:, 0].tolist() for b in make_loader(ds, 4, shuffle=True, seed=7, max_len=2)]
    assert first == second
    ids, mask, labels = next(iter(make_loader(ds, 4, max_len=2)))
    assert ids.shape[1] <= 2 and mask.dtype == torch.bool and labels.shape == (4,)
    loader = torch.utils.data.DataLoader(ds, batch_size=5, collate_fn=functools.partial(collate, max_len=1))
    assert next(iter(loader))[0].shape == (5, 1)

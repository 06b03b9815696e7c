"""Training states store large tensors as the rows that differ from a base (qpnlp.training._row_delta).

The codec is exact (bit patterns, not values), falls back to whole tensors
when it would not save, and refuses pieces that do not fit; a run whose
embedding tables are mostly untrained (a pretrained fallback vocabulary)
keeps a small state and still resumes bit for bit.
"""

import json

import numpy as np
import pytest
import torch

from qpnlp.data import EncodedTexts
from qpnlp.models import QPDN, QPDNConfig
from qpnlp.training import TrainConfig, fit
from qpnlp.training._row_delta import MIN_ELEMENTS, decode_rows, encode_rows, fingerprint
from qpnlp.training.state import JSON_FILE, TENSORS_FILE

ROWS, WIDTH = 4096, 32                       # 131k elements: above MIN_ELEMENTS


def _bitwise_equal(a, b):
    if a.is_complex():
        a, b = torch.view_as_real(a), torch.view_as_real(b)
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(a.view(torch.int32 if a.element_size() == 4
                                                                              else torch.int64),
                                                                       b.view(torch.int32 if b.element_size() == 4
                                                                              else torch.int64))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64])
@pytest.mark.parametrize("against", ["zeros", "base"])
def test_rows_round_trip_bit_for_bit(dtype, against):
    generator = torch.Generator().manual_seed(0)
    base = torch.randn(ROWS, WIDTH, generator=generator, dtype=dtype)
    tensor = base.clone() if against == "base" else torch.zeros(ROWS, WIDTH, dtype=dtype)
    changed = torch.tensor([0, 7, 100, ROWS - 1])
    tensor[changed] = torch.randn(len(changed), WIDTH, generator=generator, dtype=dtype)
    tensor[7, 3] = float("nan")
    tensor[100, 0] = -0.0                    # equal to 0.0 as a value, not as bits
    if against == "zeros":
        tensor[5, 1] = -0.0
    encoded = encode_rows(tensor, base if against == "base" else None)
    assert encoded is not None
    rows, values = encoded
    expected = changed if against == "base" else torch.tensor([0, 5, 7, 100, ROWS - 1])
    assert torch.equal(rows, expected) and values.shape == (len(expected), WIDTH)
    rebuilt = decode_rows(rows, values, base if against == "base" else None, (ROWS, WIDTH))
    assert _bitwise_equal(rebuilt, tensor)


def test_a_tensor_is_kept_whole_when_rows_would_not_save():
    base = torch.zeros(ROWS, WIDTH)
    assert encode_rows(torch.randn(ROWS, WIDTH), base) is None                  # every row differs
    assert encode_rows(torch.zeros(10, 10), None) is None                       # small
    assert encode_rows(torch.zeros(MIN_ELEMENTS), None) is None                 # one dimension
    assert encode_rows(torch.zeros(ROWS, WIDTH), torch.zeros(ROWS, WIDTH, dtype=torch.float64)) is None
    half = torch.zeros(ROWS, WIDTH)
    half[: ROWS // 2] = 1
    assert len(encode_rows(half, None)[0]) == ROWS // 2                         # exactly half: rows
    half[ROWS // 2] = 1
    assert encode_rows(half, None) is None                                      # more than half: whole


def test_decoding_refuses_pieces_that_do_not_fit():
    values = torch.ones(2, WIDTH)
    with pytest.raises(ValueError, match="do not index"):
        decode_rows(torch.tensor([0, ROWS]), values, None, (ROWS, WIDTH))
    with pytest.raises(ValueError, match="do not index"):
        decode_rows(torch.tensor([0, 1, 2]), values, None, (ROWS, WIDTH))
    with pytest.raises(ValueError, match="do not fit"):
        decode_rows(torch.tensor([0, 1]), values, torch.zeros(ROWS, WIDTH + 1), (ROWS, WIDTH + 1))
    with pytest.raises(ValueError, match="do not fit"):
        decode_rows(torch.tensor([0, 1]), values, torch.zeros(ROWS, WIDTH), (ROWS + 1, WIDTH))


def test_the_fingerprint_sees_bits_names_and_shapes():
    state = {"a": torch.zeros(3, 2), "b": torch.arange(4)}
    assert fingerprint(state) == fingerprint({"b": torch.arange(4), "a": torch.zeros(3, 2)})
    assert fingerprint(state) != fingerprint({**state, "a": -torch.zeros(3, 2)})         # -0.0
    assert fingerprint(state) != fingerprint({**state, "a": torch.zeros(2, 3)})
    assert fingerprint(state) != fingerprint({"c": state["a"], "b": state["b"]})


# --------------------------------------------------------------------------- in a training state
def _texts(n=120, seed=0):
    """Texts of 16 of the vocabulary's ROWS words: the rest of the table is never trained (a fallback vocabulary)."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    return EncodedTexts([list(rng.integers(2 + 8 * y, 10 + 8 * y, rng.integers(2, 7))) for y in labels], labels)


def _qpdn(seed):
    return QPDN(QPDNConfig(num_words=ROWS, num_classes=2, dim=WIDTH, num_measurements=4, dropout=0.3,
                           weighting="trainable"), generator=torch.Generator().manual_seed(seed))


CONFIG = dict(patience=5, batch_size=8, lr=0.05, embedding_lr=0.05, seed=3, progress=False)


def test_a_mostly_untrained_table_keeps_a_small_state_and_resumes_bit_for_bit(tmp_path):
    torch.manual_seed(0)
    reference = _qpdn(5)
    expected = fit(reference, _texts(), _texts(seed=1), TrainConfig(epochs=4, **CONFIG))

    torch.manual_seed(0)
    fit(_qpdn(5), _texts(), _texts(seed=1), TrainConfig(epochs=2, **CONFIG), checkpoint_dir=tmp_path)
    header = json.loads((tmp_path / JSON_FILE).read_text())
    stored_as_rows = set(header["row_deltas"])
    assert {"model.embedding.amplitude.weight", "model.embedding.phase.weight"} <= stored_as_rows, stored_as_rows
    assert any(key.startswith("optimiser.") for key in stored_as_rows)
    table_bytes = ROWS * WIDTH * 4
    assert (tmp_path / TENSORS_FILE).stat().st_size < table_bytes / 2     # whole: 2 tables + 4 moment tables

    torch.manual_seed(12345)
    resumed_model = _qpdn(5)
    resumed = fit(resumed_model, _texts(), _texts(seed=1), TrainConfig(epochs=4, **CONFIG), checkpoint_dir=tmp_path,
                  resume=True)
    assert all(torch.equal(a, b) for a, b in zip(resumed_model.state_dict().values(),
                                                 reference.state_dict().values()))
    assert [h["dev_accuracy"] for h in resumed.history] == [h["dev_accuracy"] for h in expected.history]
    assert resumed.best_epoch == expected.best_epoch


def test_a_state_of_rows_refuses_a_model_that_starts_elsewhere(tmp_path):
    fit(_qpdn(5), _texts(), _texts(seed=1), TrainConfig(epochs=1, **CONFIG), checkpoint_dir=tmp_path)
    with pytest.raises(ValueError, match="starts from other parameters"):
        fit(_qpdn(6), _texts(), _texts(seed=1), TrainConfig(epochs=2, **CONFIG), checkpoint_dir=tmp_path,
            resume=True)


def test_a_state_of_the_first_format_still_resumes(tmp_path, monkeypatch):
    """States written before rows existed (every tensor whole, format /1) load as they did."""
    import qpnlp.training._row_delta as row_delta

    torch.manual_seed(0)
    reference = _qpdn(5)
    fit(reference, _texts(), _texts(seed=1), TrainConfig(epochs=3, **CONFIG))
    torch.manual_seed(0)
    with monkeypatch.context() as patched:
        patched.setattr(row_delta, "MIN_ELEMENTS", 1 << 40)
        fit(_qpdn(5), _texts(), _texts(seed=1), TrainConfig(epochs=2, **CONFIG), checkpoint_dir=tmp_path)
    header = json.loads((tmp_path / JSON_FILE).read_text())
    assert header["row_deltas"] == {}
    del header["row_deltas"], header["initial_fingerprint"]
    (tmp_path / JSON_FILE).write_text(json.dumps({**header, "format": "qpnlp-training-state/1"}))
    resumed_model = _qpdn(6)                       # another initialisation: a whole state restores it all
    fit(resumed_model, _texts(), _texts(seed=1), TrainConfig(epochs=3, **CONFIG), checkpoint_dir=tmp_path,
        resume=True)
    assert all(torch.equal(a, b) for a, b in zip(resumed_model.state_dict().values(),
                                                 reference.state_dict().values()))


def test_a_damaged_row_entry_is_named(tmp_path):
    fit(_qpdn(5), _texts(), _texts(seed=1), TrainConfig(epochs=1, **CONFIG), checkpoint_dir=tmp_path)
    header = json.loads((tmp_path / JSON_FILE).read_text())
    key = next(iter(header["row_deltas"]))
    header["row_deltas"][key]["base"] = "elsewhere"
    (tmp_path / JSON_FILE).write_text(json.dumps(header))
    with pytest.raises(ValueError, match=f"damaged training state \\({key}"):
        fit(_qpdn(5), _texts(), _texts(seed=1), TrainConfig(epochs=2, **CONFIG), checkpoint_dir=tmp_path,
            resume=True)


def test_a_stored_shape_is_checked_before_its_zeros_are_allocated(tmp_path):
    """A training state's JSON names the shape of each tensor stored as rows; one inflated past every tensor of the
    model (128 TB of zeros here) is refused before torch.zeros allocates it, as a damaged state."""
    fit(_qpdn(5), _texts(), _texts(seed=1), TrainConfig(epochs=1, **CONFIG), checkpoint_dir=tmp_path)
    header = json.loads((tmp_path / JSON_FILE).read_text())
    key = next(k for k, entry in header["row_deltas"].items() if entry["base"] == "zeros")
    for shape, message in (([10 ** 12, WIDTH], "more than any tensor of the model"),
                           ([-1, WIDTH], "not a list of integers >= 0")):
        header["row_deltas"][key]["shape"] = shape
        (tmp_path / JSON_FILE).write_text(json.dumps(header))
        with pytest.raises(ValueError, match=f"damaged training state \\({key}: stored shape .*{message}"):
            fit(_qpdn(5), _texts(), _texts(seed=1), TrainConfig(epochs=2, **CONFIG), checkpoint_dir=tmp_path,
                resume=True)

"""Identical saves give byte-identical safetensors files (``qpnlp._safetensors``)."""

from __future__ import annotations

import hashlib
import json

import torch
from safetensors import safe_open
from safetensors.torch import load_file

from qpnlp._safetensors import save_tensors
from qpnlp.models import QPDN, QPDNConfig
from qpnlp.models.base import WEIGHTS_FILE

METADATA = {key: f"value {key}" for key in "qwertyuiopasdfgh"}     # 16 keys: a random order is never sorted by luck


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _metadata_keys(path) -> list[str]:
    length = int.from_bytes(path.read_bytes()[:8], "little")
    return list(json.loads(path.read_bytes()[8:8 + length])["__metadata__"])


def test_the_metadata_keys_are_sorted_and_the_file_reads_as_saved(tmp_path):
    tensors = {"b": torch.arange(6.0).reshape(2, 3), "a": torch.tensor([1, 2], dtype=torch.int64)}
    save_tensors(tensors, tmp_path / "t.safetensors", METADATA)
    assert _metadata_keys(tmp_path / "t.safetensors") == sorted(METADATA)
    loaded = load_file(tmp_path / "t.safetensors")
    assert loaded.keys() == tensors.keys() and all(torch.equal(loaded[k], tensors[k]) for k in tensors)
    with safe_open(tmp_path / "t.safetensors", "pt") as file:
        assert file.metadata() == METADATA


def test_saving_the_same_tensors_twice_writes_the_same_bytes(tmp_path):
    tensors = {"w": torch.randn(4, 5, generator=torch.Generator().manual_seed(0))}
    for name in "xyz":
        save_tensors(tensors, tmp_path / name, METADATA)
    assert len({_digest(tmp_path / name) for name in "xyz"}) == 1


def test_saving_the_same_model_twice_writes_the_same_files(tmp_path):
    torch.manual_seed(0)
    model = QPDN(QPDNConfig(num_words=12, dim=4, num_measurements=3, num_classes=2))
    for name in ("first", "second", "third"):
        model.save_pretrained(tmp_path / name)
    for file in (WEIGHTS_FILE, "config.json"):
        assert len({_digest(tmp_path / name / file) for name in ("first", "second", "third")}) == 1

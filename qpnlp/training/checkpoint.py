"""Checkpoints: a trained model with its vocabulary and what it was trained on, in the one save format.

A checkpoint is a model directory written by
:meth:`qpnlp.models.Model.save_pretrained` (``config.json`` +
``model.safetensors`` + ``vocabulary.json``); the training metadata (data
set, split, seed, label names, training settings) lives in ``config.json``.
:func:`convert_legacy_checkpoint` turns a single-file checkpoint written by
qpnlp 0.1 (``torch.save`` of tensors and plain types, format
``qpnlp-checkpoint-1``) into a directory; it is read with
``torch.load(weights_only=True)``, so converting never runs code either.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import torch

from qpnlp.data import Vocabulary
from qpnlp.models import Model, get_model_class
from qpnlp.models.base import CONFIG_FILE, VOCABULARY_FILE, read_model_header

__all__ = ["Checkpoint", "save_checkpoint", "load_checkpoint", "convert_legacy_checkpoint", "LEGACY_FORMAT"]

LEGACY_FORMAT = "qpnlp-checkpoint-1"


@dataclass
class Checkpoint:
    """A loaded checkpoint: the model (eval mode), its vocabulary and the training metadata."""

    model: Model
    vocabulary: Vocabulary | None
    metadata: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        """Registry name of the model."""
        return self.model.name


def save_checkpoint(directory: str | os.PathLike, model: Model, *, vocabulary: Vocabulary | None,
                    metadata: dict | None = None) -> Path:
    """Save ``model`` with its vocabulary and ``metadata`` (atomically) to ``directory``."""
    return model.save_pretrained(directory, vocabulary=vocabulary, metadata=metadata)


def load_checkpoint(directory: str | os.PathLike, *, device: str | torch.device = "cpu") -> Checkpoint:
    """Rebuild the model, vocabulary and metadata saved in ``directory`` (``FileNotFoundError`` when it is missing)."""
    if not Path(directory).exists():
        raise FileNotFoundError(f"checkpoint {directory} does not exist")
    header = read_model_header(directory)
    model = Model.from_pretrained(directory, device=device)
    path = Path(directory) / VOCABULARY_FILE
    vocabulary = None
    if path.is_file():
        try:
            vocabulary = Vocabulary.from_dict(json.loads(path.read_text(encoding="utf-8")))
        except (ValueError, KeyError, TypeError) as err:
            raise ValueError(f"{path}: not a qpnlp vocabulary ({err})") from None
        rows = getattr(model.config, "num_words", None)
        if isinstance(rows, int) and len(vocabulary) != rows:     # fewer words: ids past the end have no word
            raise ValueError(f"{path}: {len(vocabulary)} words but the model's embedding tables have {rows} rows "
                             f"(num_words in {Path(directory) / CONFIG_FILE}); the vocabulary does not belong to "
                             f"this model")
    return Checkpoint(model, vocabulary, header["metadata"])


def convert_legacy_checkpoint(path: str | os.PathLike, directory: str | os.PathLike) -> Path:
    """Convert a qpnlp 0.1 single-file checkpoint (``qpnlp train ... --save FILE``) into a model directory.

    The parameters are copied unchanged; CNM checkpoints with ``real=True``
    become ``cnm_real`` models. The result loads with :func:`load_checkpoint`
    and gives the same outputs as the old model.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint {path} does not exist")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 - torch raises many types for a bad file; all mean "not a checkpoint"
        raise ValueError(f"{path} is not a readable qpnlp 0.1 checkpoint ({type(err).__name__})") from None
    if not isinstance(payload, dict) or payload.get("format") != LEGACY_FORMAT:
        raise ValueError(f"{path} is not a qpnlp 0.1 checkpoint (expected format {LEGACY_FORMAT!r})")
    kind, config = payload["kind"], dict(payload["config"])
    if kind == "cnm" and config.pop("real", False):
        kind = "cnm_real"
    klass = get_model_class(kind)
    model = klass.empty(klass.config_class.from_dict(config))
    model.load_state_dict(payload["state_dict"])
    metadata = {**payload.get("meta", {}), "label_names": list(payload.get("label_names", [])),
                "converted_from": str(path)}
    return save_checkpoint(directory, model, vocabulary=Vocabulary.from_dict(payload["vocab"]), metadata=metadata)

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

from qpnlp._repr import record_repr
from qpnlp.data import Vocabulary
from qpnlp.models import Model, get_model_class
from qpnlp.models._state_checks import _check_vocabulary_size
from qpnlp.models.base import CONFIG_FILE, VOCABULARY_FILE, _model_from_state, read_model_header

__all__ = ["Checkpoint", "save_checkpoint", "load_checkpoint", "convert_legacy_checkpoint", "LEGACY_FORMAT"]

#: The format of the one-file checkpoints that :func:`convert_legacy_checkpoint` reads.
LEGACY_FORMAT = "qpnlp-checkpoint-1"


@dataclass
class Checkpoint:
    """A loaded checkpoint: the model (eval mode), its vocabulary and the training metadata.

    Parameters
    ----------
    model : Model
        The rebuilt model, in eval mode.
    vocabulary : Vocabulary or None
        The vocabulary saved with it (``vocabulary.json``); None when none was saved.
    metadata : dict, default {}
        The training metadata saved with it (JSON: data set, split, label names, training settings, ...).
    """

    model: Model
    vocabulary: Vocabulary | None
    metadata: dict = field(default_factory=dict)

    __repr__ = record_repr        # one line: tensors as their shapes, long lists (histories) cut

    @property
    def name(self) -> str:
        """Registry name of the model."""
        return self.model.name


def save_checkpoint(directory: str | os.PathLike, model: Model, *, vocabulary: Vocabulary | None,
                    metadata: dict | None = None) -> Path:
    """Save ``model`` with its vocabulary and ``metadata`` (atomically) to ``directory``.

    Parameters
    ----------
    directory : path-like
        The checkpoint directory, written atomically (replaced if it exists).
    model : Model
        A registered model.
    vocabulary : Vocabulary or None
        Saved as ``vocabulary.json``; its size must be the config's ``num_words``. None saves none.
    metadata : dict, optional
        JSON-serialisable training metadata (data set, split, label names, settings); None saves an empty one.
    """
    return model.save_pretrained(directory, vocabulary=vocabulary, metadata=metadata)


def load_checkpoint(directory: str | os.PathLike, *, device: str | torch.device = "cpu") -> Checkpoint:
    """Rebuild the model, vocabulary and metadata saved in ``directory`` (``FileNotFoundError`` when it is missing).

    Parameters
    ----------
    directory : path-like
        A directory written by :func:`save_checkpoint` (or ``qpnlp train ... --save``).
    device : str or torch.device, default "cpu"
        Where the model's parameters are put.
    """
    if not Path(directory).exists():
        raise FileNotFoundError(f"checkpoint {directory} does not exist")
    header = read_model_header(directory)
    model = Model.from_pretrained(directory, device=device)
    path = Path(directory) / VOCABULARY_FILE
    vocabulary = None
    if path.exists():                                  # a directory of that name is an error, not "no vocabulary"
        if not (path.is_file() or path.is_dir()):      # a link to /dev/zero or a FIFO: read_text never ended
            raise ValueError(f"{path}: not a qpnlp vocabulary (not a regular file)")
        try:
            vocabulary = Vocabulary.from_dict(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise ValueError(f"{path}: not a qpnlp vocabulary ({err})") from None
        _check_vocabulary_size(str(path), vocabulary, model.config,
                               rows_from=f"num_words in {Path(directory) / CONFIG_FILE}")
    return Checkpoint(model, vocabulary, header["metadata"])


def convert_legacy_checkpoint(path: str | os.PathLike, directory: str | os.PathLike) -> Path:
    """Convert a qpnlp 0.1 single-file checkpoint (``qpnlp train ... --save FILE``) into a model directory.

    The parameters are copied unchanged; CNM checkpoints with ``real=True``
    become ``cnm_real`` models. The result loads with :func:`load_checkpoint`
    and gives the same outputs as the old model. The file's structure, its
    config, its vocabulary (one word per embedding row) and the tensors'
    names, shapes and dtypes are checked as :meth:`Model.from_pretrained`
    checks them, before the model is allocated; errors (ValueError) name the
    file and the key at fault.

    Parameters
    ----------
    path : path-like
        The qpnlp 0.1 checkpoint file (FileNotFoundError when it is missing).
    directory : path-like
        The model directory written (as :meth:`Model.save_pretrained <qpnlp.models.base.Model.save_pretrained>`
        writes it), replaced atomically if it exists.
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
    _check_legacy_structure(path, payload)
    kind, config = payload["kind"], dict(payload["config"])
    if kind == "cnm" and config.pop("real", False):
        kind = "cnm_real"
    try:
        klass = get_model_class(kind)
    except ValueError as err:
        raise ValueError(f"{path}: 'kind': {err}") from None
    try:
        config = klass.config_class.from_dict(config)
    except (ValueError, TypeError) as err:            # TypeError: a required field is missing
        raise ValueError(f"{path}: 'config' is not a valid {kind!r} config ({err})") from None
    try:
        vocabulary = Vocabulary.from_dict(payload["vocab"])
    except (ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{path}: 'vocab' is not a qpnlp vocabulary ({err})") from None
    _check_vocabulary_size(f"{path}: 'vocab'", vocabulary, config, rows_from="num_words in its 'config'")
    metadata = {**payload.get("meta", {}), "label_names": list(payload.get("label_names", [])),
                "converted_from": str(path)}
    try:
        json.dumps(metadata, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{path}: 'meta' or 'label_names' holds values JSON cannot store ({err})") from None
    model = _model_from_state(klass, config, payload["state_dict"], weights=f"{path}: 'state_dict'",
                              config_path=f"{path}: 'config'", name=kind)
    return save_checkpoint(directory, model, vocabulary=vocabulary, metadata=metadata)


# The keys of a qpnlp 0.1 checkpoint besides "format": (required, types).
_LEGACY_KEYS = {"kind": (True, str), "config": (True, dict), "vocab": (True, dict), "state_dict": (True, dict),
                "meta": (False, dict), "label_names": (False, (list, tuple))}


def _check_legacy_structure(path: Path, payload: dict) -> None:
    """The keys and types of a qpnlp 0.1 checkpoint, and a state dict of named tensors (ValueError naming the key)."""
    for key, (required, types) in _LEGACY_KEYS.items():
        if key not in payload:
            if required:
                raise ValueError(f"{path}: a qpnlp 0.1 checkpoint needs {key!r}, which this file lacks "
                                 f"(it has {sorted(map(str, payload))})")
            continue
        if not isinstance(payload[key], types):
            wanted = " or ".join(t.__name__ for t in (types if isinstance(types, tuple) else (types,)))
            raise ValueError(f"{path}: {key!r} must be a {wanted}; got {type(payload[key]).__name__}")
    for name, value in payload["state_dict"].items():
        if not isinstance(name, str) or not isinstance(value, torch.Tensor):
            raise ValueError(f"{path}: 'state_dict' must map tensor names to tensors; got {name!r}: "
                             f"{type(value).__name__}")

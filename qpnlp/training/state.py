"""The per-epoch training state behind ``--resume``: parameters, optimiser state, RNG state and progress.

A training-state directory holds two files, written together atomically
(:func:`qpnlp._atomic.atomic_directory`) at the end of every epoch:

* ``state.safetensors``: the model's current parameters (``model.*``), the
  best-so-far parameters (``best.*``, omitted when the current epoch is the
  best), every tensor of every optimiser's state (``optimiser.<i>.<param
  index>.<key>``, dense and sparse optimisers alike: SparseAdam, Adam,
  SparseRMSprop, RMSprop) and the torch RNG states (``rng.torch``,
  ``rng.cuda.<i>``, ``rng.numpy``); complex128 tensors are stored as their
  float64 real views, as in ``model.safetensors``;
* ``state.json``: everything else (epoch, best epoch and score, epochs
  without improvement, history, elapsed time, the optimisers' non-tensor
  state such as SparseAdam's integer step, Python's and NumPy's RNG
  counters) and the run's identity: model name and config, the names of
  its trainable parameters, training settings and a fingerprint of the
  training and dev data.

No pickle: loading never runs code. Resuming checks the identity first, so a
state is never continued with other data, another model (or other
parameters frozen) or other training settings (``epochs``, ``patience``,
``device``, ``progress``, ``compile`` and ``pad_to_multiple_of`` may change;
``epochs`` not below the epochs already trained).

A run that stopped early (``patience`` epochs without a better dev score)
cannot continue with the same settings, so its state is then reduced to a
*final* one: the best parameters and the progress only (a third of the
size), enough to give its result again on resume.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from qpnlp._atomic import atomic_directory
from qpnlp.models.base import _restored, _storable

from .sparse_rmsprop import check_state_shapes

__all__ = ["STATE_FORMAT", "has_training_state", "save_training_state", "load_training_state", "data_fingerprint",
           "run_identity", "RESUMABLE_CHANGES"]

STATE_FORMAT = "qpnlp-training-state/1"
TENSORS_FILE = "state.safetensors"
JSON_FILE = "state.json"
#: Training settings that may differ between a run and its resumption.
RESUMABLE_CHANGES = frozenset({"epochs", "patience", "progress", "device", "compile", "pad_to_multiple_of"})


def has_training_state(directory: str | os.PathLike | None) -> bool:
    """Whether ``directory`` holds a training state written by :func:`save_training_state`."""
    return directory is not None and (Path(directory) / JSON_FILE).is_file()


def data_fingerprint(*parts) -> str:
    """SHA-256 of nested sequences of ints (encoded texts, labels, groups): equal data, equal fingerprint.

    >>> data_fingerprint([[2, 3], [4]], [0, 1]) == data_fingerprint([[2, 3], [4]], [0, 1])
    True
    >>> data_fingerprint([[2, 3], [4]]) == data_fingerprint([[2], [3, 4]])
    False
    """
    digest = hashlib.sha256()

    def feed(item) -> None:
        if isinstance(item, (np.ndarray, torch.Tensor)) or (isinstance(item, Sequence) and item and
                                                             not isinstance(item[0], (Sequence, np.ndarray))):
            array = np.asarray(item.cpu() if isinstance(item, torch.Tensor) else item, dtype=np.int64)
            digest.update(b"[%d]" % array.size + array.tobytes())
        elif isinstance(item, Iterable):
            digest.update(b"(")
            for sub in item:
                feed(sub)
            digest.update(b")")
        else:
            digest.update(repr(item).encode())

    for part in parts:
        feed(part)
    return digest.hexdigest()


def run_identity(model: torch.nn.Module, config, data: str) -> dict:
    """What a resumed run must share with the run that wrote the state (see the module notes)."""
    settings = {k: v for k, v in config.to_dict().items() if k not in RESUMABLE_CHANGES}
    model_config = model.config.to_dict() if hasattr(getattr(model, "config", None), "to_dict") else None
    trainable = [name for name, param in model.named_parameters() if param.requires_grad]
    return dict(model=getattr(model, "name", None) or type(model).__name__, model_config=model_config,
                settings=settings, data=data, trainable=trainable)


# --------------------------------------------------------------------------- RNG
def _capture_rng() -> tuple[dict[str, torch.Tensor], dict]:
    tensors = {"rng.torch": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        for i, state in enumerate(torch.cuda.get_rng_state_all()):
            tensors[f"rng.cuda.{i}"] = state
    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    tensors["rng.numpy"] = torch.from_numpy(np.asarray(keys, dtype=np.int64))
    version, internal, gauss_next = random.getstate()
    return tensors, dict(numpy=[kind, int(pos), int(has_gauss), float(gauss)],
                         python=[version, list(internal), gauss_next])


def _restore_rng(tensors: Mapping[str, torch.Tensor], values: dict) -> None:
    torch.set_rng_state(tensors["rng.torch"])
    cuda = [tensors[f"rng.cuda.{i}"] for i in range(sum(k.startswith("rng.cuda.") for k in tensors))]
    if cuda and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(cuda[: torch.cuda.device_count()])
    kind, pos, has_gauss, gauss = values["numpy"]
    np.random.set_state((kind, tensors["rng.numpy"].numpy().astype(np.uint32), pos, has_gauss, gauss))
    version, internal, gauss_next = values["python"]
    random.setstate((version, tuple(internal), gauss_next))


# --------------------------------------------------------------------------- save / load
def _tensors(prefix: str, state: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {f"{prefix}.{k}": v.detach().cpu().contiguous().clone() for k, v in state.items()}


def save_training_state(directory: str | os.PathLike, *, model: torch.nn.Module,
                        best_state: Mapping[str, torch.Tensor] | None,
                        optimisers: Sequence[torch.optim.Optimizer], progress: dict, identity: dict,
                        final: bool = False) -> Path:
    """Write the training state of the epoch just finished to ``directory`` (atomically).

    ``best_state`` is None when the model's current parameters are the best
    so far. ``progress`` (epoch, best epoch and score, history, ...) and
    ``identity`` (:func:`run_identity`) must be JSON. ``final``: the run
    stopped early; keep only the best parameters and the progress.
    """
    if final:
        tensors = _tensors("best", model.state_dict() if best_state is None else best_state)
        header = dict(format=STATE_FORMAT, identity=identity, progress={**progress, "final": True})
        return _write(directory, tensors, header)
    tensors = _tensors("model", model.state_dict())
    if best_state is not None:
        tensors.update(_tensors("best", best_state))
    scalars: dict[str, dict[str, dict]] = {}
    for i, optimiser in enumerate(optimisers):
        scalars[str(i)] = {}
        for index, values in optimiser.state_dict()["state"].items():
            for key, value in values.items():
                if isinstance(value, torch.Tensor):
                    tensors[f"optimiser.{i}.{index}.{key}"] = value.detach().cpu().contiguous().clone()
                else:
                    scalars[str(i)].setdefault(str(index), {})[key] = value
    rng_tensors, rng_values = _capture_rng()
    tensors.update(rng_tensors)
    header = dict(format=STATE_FORMAT, identity=identity, progress=progress, best_is_current=best_state is None,
                  optimisers=len(optimisers), optimiser_scalars=scalars, rng=rng_values)
    return _write(directory, tensors, header)


def _write(directory: str | os.PathLike, tensors: dict[str, torch.Tensor], header: dict) -> Path:
    text = json.dumps(header, allow_nan=False, default=_plain)
    tensors, wide = _storable(tensors)             # complex128 (double-precision models) as float64 real views
    with atomic_directory(directory) as tmp:
        save_file(tensors, str(tmp / TENSORS_FILE), metadata={"format": STATE_FORMAT, **wide})
        (tmp / JSON_FILE).write_text(text, encoding="utf-8")
    return Path(directory)


def load_training_state(directory: str | os.PathLike, *, model: torch.nn.Module,
                        optimisers: Sequence[torch.optim.Optimizer], identity: dict) -> tuple[dict, dict | None]:
    """Restore the model's parameters, the optimisers' state and the RNG state saved in ``directory``.

    Returns ``(progress, best_state)`` (``best_state`` None: the restored
    parameters are the best so far). A final state (``progress["final"]``)
    restores nothing and returns the best parameters. Raises ``ValueError``
    naming the directory when the state is unreadable or belongs to another
    run (model, settings or data differ from ``identity``).
    """
    directory = Path(directory)
    try:
        header = json.loads((directory / JSON_FILE).read_text(encoding="utf-8"))
        tensors = _restored(load_file(str(directory / TENSORS_FILE), device="cpu"), directory / TENSORS_FILE)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, SafetensorError) as err:
        raise ValueError(f"{directory}: not a readable training state ({err})") from None
    if not isinstance(header, dict) or header.get("format") != STATE_FORMAT:
        raise ValueError(f"{directory} is not a qpnlp training state (expected format {STATE_FORMAT!r})")
    _check_identity(directory, header.get("identity", {}), identity)
    if header["progress"].get("final"):
        return header["progress"], _prefixed(tensors, "best")
    if header.get("optimisers") != len(optimisers):
        raise ValueError(f"{directory}: the state has {header.get('optimisers')} optimiser(s), this run "
                         f"{len(optimisers)}")
    try:
        model.load_state_dict(_prefixed(tensors, "model"))
        for i, optimiser in enumerate(optimisers):
            state: dict[int, dict] = {}
            for key, value in _prefixed(tensors, f"optimiser.{i}").items():
                index, name = key.split(".", 1)
                state.setdefault(int(index), {})[name] = value
            for index, values in header["optimiser_scalars"][str(i)].items():
                state.setdefault(int(index), {}).update(values)
            current = optimiser.state_dict()
            optimiser.load_state_dict({"state": state, "param_groups": current["param_groups"]})
            check_state_shapes(optimiser)          # torch's own optimisers load any shape
    except (RuntimeError, KeyError, ValueError) as err:
        raise ValueError(f"{directory}: the training state does not fit this model ({err})") from None
    best = None if header["best_is_current"] else _prefixed(tensors, "best")
    _restore_rng(tensors, header["rng"])
    return header["progress"], best


def _plain(value):
    """JSON for NumPy and torch scalars in a history entry (an observer may return them)."""
    if isinstance(value, (np.generic, torch.Tensor)) and getattr(value, "ndim", 0) == 0:
        return value.item()
    raise TypeError(f"a {type(value).__name__} is not JSON; history entries must be numbers, strings, lists or dicts")


def _prefixed(tensors: Mapping[str, torch.Tensor], prefix: str) -> dict[str, torch.Tensor]:
    start = prefix + "."
    return {k[len(start):]: v for k, v in tensors.items() if k.startswith(start)}


def _check_identity(directory: Path, saved: dict, current: dict) -> None:
    current = json.loads(json.dumps(current))          # tuples -> lists, as stored
    differences = []
    if saved.get("model") != current["model"] or saved.get("model_config") != current["model_config"]:
        differences.append(f"the model ({saved.get('model')} {saved.get('model_config')} there, "
                           f"{current['model']} {current['model_config']} here)")
    old, new = saved.get("settings", {}), current["settings"]
    changed = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
    if changed:
        differences.append("the training settings " + ", ".join(f"{k} ({old.get(k)!r} -> {new.get(k)!r})"
                                                                 for k in changed))
    # the optimisers' states are stored by parameter position: another set of trainable parameters would give
    # each one another's moments (states written before the field was recorded lack it)
    if "trainable" in saved and saved["trainable"] != current["trainable"]:
        there, here = saved["trainable"], current["trainable"]
        differences.append(f"the trainable parameters (only there: {sorted(set(there) - set(here))}, only here: "
                           f"{sorted(set(here) - set(there))})")
    if saved.get("data") != current["data"]:
        differences.append("the training or dev data")
    if differences:
        raise ValueError(f"cannot resume from {directory}: this run differs from the one that wrote it in "
                         + "; ".join(differences) + f" (only {', '.join(sorted(RESUMABLE_CHANGES))} may change)")

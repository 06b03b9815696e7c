"""The checks of a saved model, one home for saving and loading (:mod:`qpnlp.models.base`).

:meth:`~qpnlp.models.Model.save_pretrained` runs the checks that
:meth:`~qpnlp.models.Model.from_pretrained` runs, so a model is never saved
in a form its loader refuses: finite values, the tensor names, shapes and
dtypes the config describes (compared on a ``meta`` skeleton, before any
allocation), the precision the config records, and a vocabulary of one word
per embedding row. Also here: the complex128 storage of safetensors (a
float64 real view listed in the file's metadata), the checks of the other
arguments of a save (metadata, the directory's parents, further file names)
and the checked rebuilding of a model from a loaded state
(``_model_from_state``).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open

from qpnlp._atomic import existing_parent
from qpnlp.measurement._module import drawing_from

from ._precision import recorded_precision

__all__: list[str] = []

# safetensors stores complex64 but not complex128: those tensors are stored as their float64 real view
# (..., 2) and listed in the file's metadata under this key.
_COMPLEX128_KEY = "qpnlp_complex128"


def _storable(state: Mapping[str, torch.Tensor]) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """CPU copies of the state dict that safetensors can store, and the metadata that restores them."""
    tensors, wide = {}, []
    for key, value in state.items():
        value = value.detach().cpu()
        if value.dtype == torch.complex128:
            value, _ = torch.view_as_real(value.resolve_conj()), wide.append(key)
        tensors[key] = value.contiguous().clone()
    return tensors, ({_COMPLEX128_KEY: json.dumps(wide)} if wide else {})


def _restored(state: dict[str, torch.Tensor], path: Path) -> dict[str, torch.Tensor]:
    """The state dict as saved: complex128 tensors (stored as float64 real views) back to complex128."""
    with safe_open(str(path), framework="pt") as handle:
        metadata = handle.metadata() or {}
    try:
        wide = json.loads(metadata.get(_COMPLEX128_KEY, "[]"))
    except json.JSONDecodeError:
        wide = None
    if not (isinstance(wide, list) and all(isinstance(key, str) for key in wide)):   # "5" was iterated: TypeError
        raise ValueError(f"{path}: unreadable {_COMPLEX128_KEY} metadata (not a list of tensor names)")
    for key in wide:
        value = state.get(key)
        if value is None or value.dtype != torch.float64 or value.dim() < 1 or value.shape[-1] != 2:
            raise ValueError(f"{path}: tensor {key!r} is listed as complex128 but is not a float64 (..., 2) view")
        state[key] = torch.view_as_complex(value.clone())          # a fresh, aligned buffer
    return state


def _check_savable(where: str, klass: type, config, state: Mapping[str, torch.Tensor]) -> None:
    """What loading checks of a state dict, and the precision the config records: a model moved by
    ``nn.Module.to`` or by the ``.double()`` of a ``torch.compile`` wrapper (not :meth:`PrecisionMixin.to`)
    was saved, and its loader then refused it."""
    _check_finite(where, state)
    real = recorded_precision(config)
    for key, value in state.items():
        if real is not None and (value.is_floating_point() or value.is_complex()) and value.real.dtype != real:
            raise ValueError(f"{where}: tensor {key!r} is {value.dtype} but the config records {real} (move the "
                             f"model itself, model.to(dtype), which records the precision; the .to() or "
                             f".double() of a torch.compile wrapper bypasses it)")
    _check_before_allocation(where, _meta_skeleton(klass, config), config, state)


def _check_vocabulary(where: str, vocabulary, config) -> None:
    """A vocabulary to save: something with ``to_dict()`` (a list failed half-way through the save), one word
    per embedding row (``_check_vocabulary_size``, which loading checks too)."""
    if not callable(getattr(vocabulary, "to_dict", None)):
        raise TypeError(f"{where}: vocabulary must be a qpnlp Vocabulary; got {type(vocabulary).__name__}")
    _check_vocabulary_size(where, vocabulary, config, rows_from="num_words in its config")


def _check_file_names(where: str, files: Mapping[str, str] | None, own: tuple[str, ...]) -> dict[str, str]:
    """``files`` (name: text) to save beside a model, as a dict: each name a plain file name (no folder, not ``..``)
    and none of the model's ``own`` files (ValueError)."""
    files = dict(files or {})
    bad = [name for name in files if name in (*own, "", "..") or Path(name).name != name]
    if bad:
        raise ValueError(f"{where}: {bad[0]!r} is not a name for one of its files (a plain file name other than the "
                         f"model's own {', '.join(own)})")
    return files


def _metadata(metadata: Mapping[str, Any] | None) -> dict:
    """``metadata`` as a dict (``{}`` for None); TypeError for a non-mapping or a key that is not a string.

    JSON would turn a key ``1`` into ``"1"`` silently, and ``dict([1, 2])`` fails with a message naming no argument.
    """
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise TypeError(f"metadata must be a mapping (a dict of JSON values); got {type(metadata).__name__}")
    bad = [key for key in metadata if not isinstance(key, str)]
    if bad:
        raise TypeError(f"metadata keys must be strings (JSON object keys); got {type(bad[0]).__name__} {bad[0]!r}")
    return dict(metadata)


def _check_parents(directory: str | os.PathLike) -> None:
    """ValueError naming the path when a parent of ``directory`` is a file (``mkdir`` would say only "File exists")."""
    parent = existing_parent(directory)
    if not parent.is_dir():
        raise ValueError(f"cannot save to {directory}: {parent} is a file, not a directory")


def _check_vocabulary_size(where: str, vocabulary, config, *, rows_from: str) -> None:
    """One word per row of the embedding tables (``num_words`` of the config; models without it are not checked):
    with fewer words, ids past the end have no word; with more, words have ids the model has no row for."""
    rows = getattr(config, "num_words", None)
    if isinstance(rows, int) and not isinstance(rows, bool) and len(vocabulary) != rows:
        raise ValueError(f"{where}: the vocabulary has {len(vocabulary)} words but the model's embedding tables "
                         f"have {rows} rows ({rows_from}); the vocabulary does not belong to this model")


def _check_finite(path: Path, state: Mapping[str, torch.Tensor]) -> None:
    """Refuse stored floating or complex tensors that hold NaN or infinite values (a diverged or corrupt model)."""
    for key, value in state.items():
        if (value.is_floating_point() or value.is_complex()) and not bool(torch.isfinite(value).all()):
            raise ValueError(f"{path}: tensor {key!r} holds NaN or infinite values (a diverged or corrupt model)")


@contextlib.contextmanager
def _builds_a_model(config_path: Path | str, name: str) -> Iterator[None]:
    """A config that passes ``from_dict`` but that the model's layers refuse: a ValueError naming the file.

    The values the model is built with are placeholders that the saved ones replace: drawn from a generator of
    their own (:func:`~qpnlp.measurement._module.drawing_from`), they leave the caller's global RNG as it was (a
    notebook's draws after loading a model were shifted by its initialisation).
    """
    try:
        with drawing_from(torch.Generator().manual_seed(0)):
            yield
    except (ValueError, TypeError) as err:
        raise ValueError(f"{config_path}: the {name!r} config builds no model ({type(err).__name__}: {err})") from None


def _meta_skeleton(klass: type, config):
    """The model of ``config`` built on the ``meta`` device (shapes only, no memory); None where its
    initialisation cannot run there (e.g. a QR decomposition). torch's orthogonal parametrisation checks its
    initial value (``Tensor.item``), which a meta tensor cannot do; that check is skipped for the skeleton
    (its shapes do not depend on it). A config that builds no model raises the model's own error."""
    try:
        with torch.device("meta"), _orthogonality_check_skipped():
            return klass.empty(config)
    except (RuntimeError, NotImplementedError):
        return None


def _check_before_allocation(path: Path | str, skeleton, config, state: Mapping[str, torch.Tensor]) -> None:
    """Check the config against the stored tensors before the model allocates anything.

    The shapes of the ``meta`` skeleton (``_meta_skeleton``) are compared
    with the stored ones, so a tampered config (``num_words=2e9`` next to a
    small weights file) is refused before anything is allocated. Without a
    skeleton, the vocabulary, count and dimension sizes, which are what a
    tampered config inflates, are bounded by the largest stored dimension.
    """
    if skeleton is not None:
        _check_shapes(path, skeleton.state_dict(), state)
        return
    largest = max((max(t.shape, default=1) for t in state.values()), default=1)
    for key, value in config.to_dict().items():
        sized = key.startswith("num_") or key in ("vocab_size", "dim")
        if sized and isinstance(value, int) and not isinstance(value, bool) and value > largest:
            raise ValueError(f"{path}: config value {key}={value} exceeds every stored tensor dimension "
                             f"(largest {largest}); the config does not describe these weights")


@contextlib.contextmanager
def _orthogonality_check_skipped() -> Iterator[None]:
    from torch.nn.utils import parametrizations

    original = getattr(parametrizations, "_is_orthogonal", None)
    if original is None:                    # another torch version: nothing to skip
        yield
        return
    parametrizations._is_orthogonal = lambda *args, **kwargs: True
    try:
        yield
    finally:
        parametrizations._is_orthogonal = original


def _check_shapes(path: Path, expected: Mapping[str, torch.Tensor], stored: Mapping[str, torch.Tensor]) -> None:
    """Refuse stored tensors whose names, shapes or dtypes do not match the model the config describes."""
    missing, extra = sorted(set(expected) - set(stored)), sorted(set(stored) - set(expected))
    if missing or extra:
        raise ValueError(f"{path}: the state dict does not match its config: missing tensors {missing[:5]}, "
                         f"unexpected tensors {extra[:5]}")
    for key, tensor in expected.items():
        if tuple(stored[key].shape) != tuple(tensor.shape) or stored[key].dtype != tensor.dtype:
            raise ValueError(f"{path}: tensor {key!r} is {tuple(stored[key].shape)} {stored[key].dtype} but the "
                             f"config describes {tuple(tensor.shape)} {tensor.dtype}")


def _model_from_state(klass: type, config, state: Mapping[str, torch.Tensor], *, weights: Path | str,
                      config_path: Path | str, name: str) -> torch.nn.Module:
    """The ``klass`` model of ``config`` holding ``state``, checked before anything is allocated.

    Finite values, then the tensor names, shapes and dtypes the config
    describes (on a ``meta`` skeleton; ``_check_before_allocation``), so a
    config inflated past its weights allocates nothing. Errors name
    ``weights`` (tensors) or ``config_path`` (a config that builds no model).
    :meth:`~qpnlp.models.Model.from_pretrained` and the qpnlp 0.1 converter both load this way.
    """
    _check_finite(weights, state)
    with _builds_a_model(config_path, name):
        skeleton = _meta_skeleton(klass, config)
    _check_before_allocation(weights, skeleton, config, state)
    with _builds_a_model(config_path, name):
        model = klass.empty(config)
    _check_shapes(weights, model.state_dict(), state)
    model.load_state_dict(state)
    return model

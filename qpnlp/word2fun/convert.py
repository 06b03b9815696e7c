"""Word2Fun directories saved by qpnlp 0.1: recognise them, and convert them to today's format.

qpnlp 0.1 saved a trained Word2Fun (``Word2FunEmbeddings.save``) as a
directory with ``weights.safetensors`` (the state dict) and ``config.json``
holding ``{"model": {vocab_size, dim, family, time_scale: {start, end, scale},
n_slices, freeze_compass, frequency_init, max_periods}, "words": [...],
"counts": [...]}``. Today every model is saved the same way
(:mod:`qpnlp.models.base`: ``config.json`` + ``model.safetensors`` +
``vocabulary.json``). :func:`convert_legacy_word2fun` rewrites an old
directory in the new format (the parameters unchanged); loading an old
directory directly fails with an error naming the converter
(``qpnlp convert OLD NEW`` on the command line).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from qpnlp.data.vocab import Vocabulary
from qpnlp._errors import preview
from qpnlp.models.base import CONFIG_FILE, MAX_CONFIG_BYTES, _model_from_state, read_model_header
from qpnlp.word2fun.model import Word2Fun, Word2FunConfig

__all__ = ["LEGACY_WEIGHTS_FILE", "is_legacy_word2fun", "convert_legacy_word2fun"]

#: The weights file of a Word2Fun run saved before the model format.
LEGACY_WEIGHTS_FILE = "weights.safetensors"
_LEGACY_MODEL_KEYS = ("vocab_size", "dim", "family", "time_scale", "n_slices", "freeze_compass", "frequency_init",
                      "max_periods")


def _read_legacy(directory: Path) -> dict | None:
    """The parsed old ``config.json`` if ``directory`` is a qpnlp 0.1 Word2Fun directory, else None."""
    config, weights = directory / CONFIG_FILE, directory / LEGACY_WEIGHTS_FILE
    if not (config.is_file() and weights.is_file()) or config.stat().st_size > 64 * MAX_CONFIG_BYTES:
        return None
    try:
        header = json.loads(config.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    if isinstance(header, dict) and isinstance(header.get("model"), dict) and "family" in header["model"] \
            and isinstance(header.get("words"), list):
        return header
    return None


def is_legacy_word2fun(directory: str | os.PathLike) -> bool:
    """Whether ``directory`` holds a Word2Fun saved by qpnlp 0.1 (``config.json`` + ``weights.safetensors``).

    Parameters
    ----------
    directory : path-like
        The folder looked at (a missing one gives False).
    """
    return _read_legacy(Path(directory)) is not None


def _not_legacy(directory: Path) -> ValueError:
    """The error for a directory that is not a qpnlp 0.1 Word2Fun directory; it names a model of today's format."""
    try:
        model = read_model_header(directory)["model"]
    except (OSError, ValueError):
        return ValueError(f"{directory} is not a qpnlp 0.1 Word2Fun directory (config.json with 'model' and 'words', "
                          f"and {LEGACY_WEIGHTS_FILE})")
    return ValueError(f"{directory} is already a saved qpnlp model ({model}) in the current format; nothing to convert "
                      f"(load it as it is)")


def legacy_error(directory: str | os.PathLike) -> ValueError:
    """The error raised when an old Word2Fun directory is loaded directly (names the converter)."""
    return ValueError(f"{directory} is a Word2Fun directory saved by qpnlp 0.1 (config.json + {LEGACY_WEIGHTS_FILE}); "
                      f"convert it once with qpnlp.word2fun.convert_legacy_word2fun({str(directory)!r}, NEW_DIRECTORY) "
                      f"or `qpnlp convert {directory} NEW_DIRECTORY`, then load NEW_DIRECTORY")


def convert_legacy_word2fun(old_dir: str | os.PathLike, new_dir: str | os.PathLike) -> Path:
    """Rewrite a qpnlp 0.1 Word2Fun directory in today's model format.

    The parameters are copied unchanged; the words and their counts become a
    :class:`~qpnlp.data.vocab.Vocabulary` without special tokens (document
    frequencies were not saved by qpnlp 0.1: they are recorded as 0, with
    ``n_docs`` 0). Nothing is executed from the old files (JSON and
    safetensors only).

    Parameters
    ----------
    old_dir : path
        The old directory (``config.json`` + ``weights.safetensors``); not modified.
    new_dir : path
        The directory to write (atomically), different from ``old_dir``.

    Returns
    -------
    pathlib.Path
        ``new_dir``; load it with ``KeyedVectors.from_pretrained``.

    Raises
    ------
    ValueError
        When ``old_dir`` is not an old Word2Fun directory (the error says so
        of a model already saved in today's format), its config is
        inconsistent, or its tensors do not match its config.
    """
    old, new = Path(old_dir), Path(new_dir)
    header = _read_legacy(old)
    if header is None:
        raise _not_legacy(old)
    if new.resolve() == old.resolve():
        raise ValueError(f"write the converted model to a new directory, not over {old}")
    model = dict(header["model"])
    unknown = sorted(set(model) - set(_LEGACY_MODEL_KEYS))
    if unknown:
        raise ValueError(f"{old / CONFIG_FILE}: unknown Word2Fun settings {preview(unknown, 80)}")
    span = model.pop("time_scale", None)
    if not isinstance(span, dict) or set(span) - {"start", "end", "scale"} or not {"start", "end"} <= set(span):
        raise ValueError(f"{old / CONFIG_FILE}: time_scale must be {{start, end, scale}}; got {preview(span, 80)}")
    model.update(span_start=span["start"], span_end=span["end"], time_scale=span.get("scale", 60.0))
    config = Word2FunConfig.from_dict(model)
    words = header["words"]
    counts = header.get("counts") or [0] * len(words)
    if not (len(words) == len(counts) == config.vocab_size):
        raise ValueError(f"{old / CONFIG_FILE}: {len(words)} words and {len(counts)} counts for a vocabulary of "
                         f"{config.vocab_size}")
    vocabulary = Vocabulary(words, dict(zip(words, counts)), dict.fromkeys(words, 0), 0, specials=False)
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        state = load_file(str(old / LEGACY_WEIGHTS_FILE), device="cpu")
    except (SafetensorError, OSError) as err:
        raise ValueError(f"{old / LEGACY_WEIGHTS_FILE}: not a readable safetensors file ({err})") from None
    try:     # the tensors checked against the config on a meta skeleton before the model is allocated
        w2f = _model_from_state(Word2Fun, config, state, weights=old / LEGACY_WEIGHTS_FILE,
                                config_path=old / CONFIG_FILE, name="word2fun")
    except (RuntimeError, ValueError) as err:
        detail = str(err).removeprefix(f"{old / LEGACY_WEIGHTS_FILE}: ")
        raise ValueError(f"{old / LEGACY_WEIGHTS_FILE} does not match its config: {detail}") from None
    w2f.save_pretrained(new, vocabulary=vocabulary, metadata={"converted_from": str(old),
                                                              "source_format": "qpnlp 0.1 Word2FunEmbeddings.save"})
    return new

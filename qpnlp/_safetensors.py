"""Byte-identical safetensors files for identical saves.

``safetensors`` (0.8) builds a file's ``__metadata__`` map as a Rust
``HashMap``, whose iteration order is seeded at random for every map: the same
tensors saved twice, even in one process, give files whose headers list the
metadata keys in another order, so their checksums differ. :func:`save_tensors`
saves with :func:`safetensors.torch.save_file`, then rewrites the header in place
with the metadata keys sorted. Everything else (the tensors' entries and offsets,
the header's length and its padding) is left as it was, so every reader sees the
same file; only its bytes become a function of its contents.

There is no option for this in safetensors, hence this small rewrite.

safetensors reports a failed write (a full disk, a directory it may not write) as a ``SafetensorError`` whose
message holds the system's error number; :func:`save_tensors` raises it as the OSError of that number, naming the
file, as Python's own writes do (the command line then says it in one line, and
:func:`qpnlp.models.base.atomic_directory` names the directory being saved).

safetensors writes the file through a temporary of its own, created private (0o600), and renames that into place;
:func:`save_tensors` gives it the mode ``open(path, "w")`` would (``qpnlp._atomic.give_default_mode``).
"""

from __future__ import annotations

import json
import os
import re

from safetensors import SafetensorError
from safetensors.torch import save_file

from qpnlp._atomic import give_default_mode

__all__ = ["save_tensors"]

_LENGTH_BYTES = 8       # the header's length, a little-endian u64, comes first


def save_tensors(tensors: dict, path: str | os.PathLike, metadata: dict[str, str]) -> None:
    """Save ``tensors`` with ``metadata`` to ``path`` (safetensors), the metadata keys in sorted order, the file's mode
    0o666 less the umask (not safetensors' 0o600); a failed write raises the OSError of its error number, naming
    ``path``."""
    try:
        save_file(tensors, str(path), metadata=metadata)
    except SafetensorError as error:
        number = _error_number(error)
        if number is None:                                               # not an I/O failure
            raise
        raise OSError(number, os.strerror(number), str(path)) from error
    give_default_mode(path)
    _sort_metadata(path)


def _error_number(error: SafetensorError) -> int | None:
    """The system error number in a safetensors error's message (``... (os error 28)``), None where there is none."""
    found = re.search(r"\(os error (\d+)\)", str(error))
    return None if found is None else int(found.group(1))


def _sort_metadata(path: str | os.PathLike) -> None:
    """Rewrite the header of the safetensors file ``path`` with its ``__metadata__`` keys sorted.

    The data offsets count from the header's end, so any header that fits in
    the old one's length, padded with spaces as safetensors pads it, leaves the
    file valid. The sorted one has the same length as safetensors' compact JSON;
    should it not fit, the file stays as safetensors wrote it.
    """
    with open(path, "r+b") as file:
        length = int.from_bytes(file.read(_LENGTH_BYTES), "little")
        raw = file.read(length)
        header = json.loads(raw)
        metadata = header.get("__metadata__")
        if not metadata:
            return
        header["__metadata__"] = dict(sorted(metadata.items()))
        text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
        if len(text) > length:
            return
        file.seek(_LENGTH_BYTES)
        file.write(text.ljust(length))

"""Which qpnlp saved a model: the ``qpnlp_version`` of its ``config.json`` against the installed one."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__: list[str] = []


def _newer_version_note(header: Mapping[str, Any]) -> str:
    """A note for errors on a checkpoint saved by a newer qpnlp than this one ("" otherwise)."""
    saved, installed = header.get("qpnlp_version"), _version()
    if not isinstance(saved, str) or _release(saved) <= _release(installed):
        return ""
    return f" (saved by qpnlp {saved}, newer than this qpnlp {installed}: upgrade qpnlp to load it)"


def _release(version: str) -> tuple[int, ...]:
    """The release numbers of a version string: "0.2.0.dev0" -> (0, 2, 0); () if it has none."""
    match = re.match(r"\d+(\.\d+)*", version.strip())
    return tuple(int(part) for part in match.group(0).split(".")) if match else ()


def _version() -> str:
    from qpnlp import __version__

    return __version__

"""The settings line of ``print(model)``: the fields of a model's config that its submodules do not show.

``print(CNM(...))`` lists the layers, not the config-only settings that
shape the forward pass (the windows and pooling of CNM, the network and
variant of the order classifier); :meth:`qpnlp.models.Model.extra_repr`
adds them with :func:`config_repr`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from qpnlp._errors import preview
from qpnlp._repr import RawText, value_repr

from ._config_types import field_default

__all__ = ["config_repr"]

#: Characters at most of the whole line (each value: :data:`qpnlp._repr.VALUE_LIMIT`).
LINE_LIMIT = 240


def config_repr(config: Any) -> str:
    """``name=value`` of the fields of the dataclass ``config`` that differ from their defaults (and those without
    one, such as ``num_words``), comma-separated: each value at most :data:`~qpnlp._repr.VALUE_LIMIT` characters
    (``value_repr``), the line at most :data:`LINE_LIMIT` (cut with ``...``). A tuple equal to a default list
    counts as the default."""
    parts = [f"{f.name}={value_repr(getattr(config, f.name))}" for f in dataclasses.fields(config)
             if f.repr and not _is_default(f, getattr(config, f.name))]
    return preview(RawText(", ".join(parts)), LINE_LIMIT)


def _is_default(field: dataclasses.Field, value: Any) -> bool:
    default = field_default(field)
    if default is dataclasses.MISSING:
        return False
    if isinstance(value, (list, tuple)) and isinstance(default, (list, tuple)):
        return list(value) == list(default)
    return type(value) is type(default) and value == default

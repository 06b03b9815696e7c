"""JSON round trip shared by the models' config dataclasses."""

from __future__ import annotations

import dataclasses


class JsonConfig:
    """Mixin for dataclasses: ``to_dict`` and a strict ``from_dict`` (unknown keys are an error)."""

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict):
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(values) - known
        if unknown:
            raise ValueError(f"unknown {cls.__name__} keys: {sorted(unknown)}")
        return cls(**values)

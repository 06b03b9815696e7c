"""Validation and JSON round trip shared by the models' config dataclasses."""

from __future__ import annotations

import dataclasses


class JsonConfig:
    """Mixin for dataclasses: ``to_dict``, a strict ``from_dict`` (unknown keys are an error), ``_require``."""

    @staticmethod
    def _require(checks) -> None:
        """Raise ValueError with the message of the first ``(ok, message)`` pair that is not ok."""
        for ok, message in checks:
            if not ok:
                raise ValueError(message)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict):
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(values) - known
        if unknown:
            raise ValueError(f"unknown {cls.__name__} keys: {sorted(unknown)}")
        return cls(**values)

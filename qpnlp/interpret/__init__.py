"""Interpretation: nearest words of states and measurements, word importance, positional sensitivity."""

from .nearest import nearest_words
from .positional import PositionalSensitivity, positional_sensitivity
from .weights import word_importance

__all__ = ["nearest_words", "word_importance", "positional_sensitivity", "PositionalSensitivity"]

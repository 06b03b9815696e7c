"""Interpretation: nearest words of states and measurements, word importance."""

from .nearest import nearest_words
from .weights import word_importance

__all__ = ["nearest_words", "word_importance"]

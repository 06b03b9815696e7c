"""Interpretation: nearest words, word weights, matching patterns, periods, trajectories and plots.

* :mod:`~qpnlp.interpret.nearest` - words nearest to states and measurement
  vectors by the Born probability :math:`|\\langle v|w\\rangle|^2` or the
  cosine (``score="cosine"``; for complex vectors
  :math:`\\operatorname{Re}\\langle v|w\\rangle` of unit rows, the thesis'
  ranking), exact, batched, CPU or CUDA; :mod:`~qpnlp.interpret.ann` - the optional
  approximate index (faiss, ``pip install "qpnlp[ann]"``) with exact re-ranking.
* :mod:`~qpnlp.interpret.weights` - most and least important words from the
  learned mixture weights.
* :mod:`~qpnlp.interpret.matching` - CNM matching patterns of a question-answer pair.
* :mod:`~qpnlp.interpret.positional`, :mod:`~qpnlp.interpret.periods` -
  complex-order positional sensitivity and frequency periods.
* :mod:`~qpnlp.interpret.temporal` - Word2Fun similarity trajectories,
  nearest words per era, change ranking.
* :mod:`~qpnlp.interpret.optimal` - the best accuracy any measurement of the
  sentence states could reach (Helstrom bound, pretty-good measurement), to
  set beside the learned measurement's.
* :mod:`~qpnlp.interpret.plots` - matplotlib figures of all of these
  (imported on first use, so that importing the package does not load matplotlib).
"""

from .ann import BornIndex, faiss_available
from .matching import MatchingPatterns, matching_patterns
from .nearest import (ANN_MIN_VOCAB, born_scores, measurement_vectors, measurement_words, nearest_states,
                      nearest_table, nearest_words)
from .optimal import (OptimalMeasurement, class_averages, helstrom, measurement_bound, pretty_good_measurement,
                      single_shot_accuracy)
from .periods import frequency_periods, period_distribution, period_table
from .positional import PositionalSensitivity, frequency_table, positional_sensitivity
from .temporal import change_ranking, equal_eras, era_label, nearest_by_era, similarity_trajectories
from .weights import importance_table, word_importance, word_scores

__all__ = [
    # nearest words
    "born_scores", "nearest_states", "nearest_words", "nearest_table", "measurement_vectors", "measurement_words",
    "BornIndex", "faiss_available", "ANN_MIN_VOCAB",
    # word weights
    "word_scores", "word_importance", "importance_table",
    # CNM
    "matching_patterns", "MatchingPatterns",
    # complex order
    "positional_sensitivity", "PositionalSensitivity", "frequency_table", "frequency_periods", "period_table",
    "period_distribution",
    # Word2Fun
    "similarity_trajectories", "nearest_by_era", "change_ranking", "equal_eras", "era_label",
    # optimal measurements
    "helstrom", "pretty_good_measurement", "class_averages", "measurement_bound", "single_shot_accuracy",
    "OptimalMeasurement",
    # plots
    "plot_density_matrix", "plot_density_matrix_parts", "plot_measurement_probabilities", "plot_word_states",
    "plot_similarity_over_time", "plot_period_histogram",
]

_PLOTS = frozenset(name for name in __all__ if name.startswith("plot_"))


def __getattr__(name: str):
    if name in _PLOTS:
        from . import plots

        return getattr(plots, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""The gensim baselines of the drift evaluation: what temporal referencing refuses before training."""

import pytest

from qpnlp.data import TimestampedCorpus
from qpnlp.evaluation.drift_baselines import temporal_referencing_grid


def test_temporal_referencing_refuses_a_token_that_is_a_probe_tag():
    # the probe "war" in bin 0 is tagged "war@0"; a corpus token "war@0" (an e-mail-like token) got the same key
    # and the grid's row for "war" in bin 0 mixed the two words, silently
    corpus = TimestampedCorpus.from_pairs([(1900, ["war", "war@0", "peace"]), (1950, ["war", "peace"])])
    with pytest.raises(ValueError, match="the token 'war@0', which is also the temporal-referencing tag"):
        temporal_referencing_grid(corpus, ["war"], ["war", "peace"], n_bins=2, min_count=1)

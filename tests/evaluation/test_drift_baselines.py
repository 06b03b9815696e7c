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


def test_a_probe_that_looks_like_another_probes_tag_is_no_clash():
    # probes "war" and "war@1": the corpus's "war@1" is tagged "war@1@k" in its turn, never the key "war@1" of
    # "war" in bin 1, so it was refused although nothing would share a vector
    from qpnlp.evaluation.drift_baselines import _refuse_tag_clashes

    corpus = TimestampedCorpus.from_pairs([(1900, ["war", "war@1", "peace"]), (1950, ["war", "peace"])])
    _refuse_tag_clashes(corpus, {"war", "war@1"}, 2)                      # no ValueError
    with pytest.raises(ValueError, match="'war@1'"):
        _refuse_tag_clashes(corpus, {"war"}, 2)                         # still refused where it is no probe

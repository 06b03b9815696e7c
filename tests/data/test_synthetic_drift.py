import numpy as np

import pytest

from qpnlp.data.synthetic_drift import VARIANTS, DriftSpec, drift_mixture, drift_spec, generate_drift_corpus

SPEC = DriftSpec(n_years=40, n_tokens=240_000, n_topics=6, words_per_topic=20, n_background=30,
                 n_drift=6, n_stable=2, n_trap=2, rate=60.0, trap_rate_start=5.0, trap_growth=20.0,
                 strength_range=(0.5, 1.0), seed=3)


def topic_of_context(doc, prefix_topics):
    ks = [int(w[1:3]) for w in doc if w.startswith("t") and w[1:3].isdigit() and w[3] == "w"]
    return max(set(ks), key=ks.count) if ks else -1


def test_corpus_size_span_and_determinism():
    c, t = generate_drift_corpus(SPEC)
    assert c.span == (1900.0, 1939.0)
    assert abs(c.n_tokens - SPEC.n_tokens) / SPEC.n_tokens < 0.01
    c2, _ = generate_drift_corpus(SPEC)
    assert c2.docs[:50] == c.docs[:50]
    assert t.kind.count("drift") == 6 and t.kind.count("trap") == 2
    assert (t.strength[:6] >= 0.5).all() and (t.strength[6:] == 0).all()
    assert (t.dest[:6] != t.source[:6]).all()


def test_mixture_step_and_ramp():
    s, c, w = np.array([0.8, 0.8]), np.array([10.0, 10.0]), np.array([0.0, 4.0])
    assert drift_mixture(np.array(9.0), s, c, w).tolist() == [0.0, 0.8 * 0.25]
    assert drift_mixture(np.array(10.0), s, c, w).tolist() == [0.8, 0.4]
    assert drift_mixture(np.array(12.0), s, c, w).tolist() == [0.8, 0.8]
    assert drift_mixture(np.array(5.0), np.array([0.0]), np.array([np.nan]), np.array([np.nan])).tolist() == [0.0]


def test_drift_words_move_to_their_destination_topic_as_planted():
    c, t = generate_drift_corpus(SPEC)
    for p in range(6):
        w = t.words[p]
        before, after, n_before, n_after = 0, 0, 0, 0
        lo = t.switch_year[p] - t.width[p] / 2
        hi = t.switch_year[p] + t.width[p] / 2
        for year, doc in c:
            if w not in doc:
                continue
            k = topic_of_context(doc, None)
            if year < lo:
                n_before += 1
                before += k == t.dest[p]
            elif year >= hi:
                n_after += 1
                after += k == t.dest[p]
        assert before / n_before < 0.05  # before the switch: source topic only
        assert abs(after / n_after - t.strength[p]) < 0.1  # after: destination with probability = strength


def test_trap_frequency_rises_and_stable_does_not_drift():
    c, t = generate_drift_corpus(SPEC)
    trap, stable = t.words[-1], t.words[6]
    first = sum(d.count(trap) for y, d in c if y < 1905)
    last = sum(d.count(trap) for y, d in c if y >= 1935)
    assert last > 8 * first
    dest_hits = sum(topic_of_context(d, None) != t.source[6] for y, d in c if stable in d)
    total = sum(1 for y, d in c if stable in d)
    assert dest_hits / total < 0.1  # background-only windows may mislabel a few


def test_the_low_frequency_variant_makes_probes_rare_and_switches_reach_towards_the_ends():
    small = dict(n_years=40, n_tokens=200_000, n_topics=6, words_per_topic=20, n_background=30, n_drift=30,
                 n_stable=4, n_trap=2, seed=4)
    std, t_std = generate_drift_corpus(drift_spec("standard", **small))
    low, t_low = generate_drift_corpus(drift_spec("low-frequency", **small))
    count = lambda c, w: sum(d.count(w) for d in c.docs)
    per_year = [count(low, w) / 40 for w in t_low.words[:30]]
    assert 2.5 < np.mean(per_year) < 5.5  # a few occurrences a year
    assert np.mean([count(std, w) / 40 for w in t_std.words[:30]]) > 3 * np.mean(per_year)
    lo, hi = VARIANTS["low-frequency"]["switch_range"]
    rel = (t_low.switch_year[:30] - 1900) / 39
    assert rel.min() >= lo - 1e-9 and rel.max() <= hi + 1e-9 and (rel < 0.3).any() and (rel > 0.7).any()
    with pytest.raises(ValueError, match="variant"):
        drift_spec("rare")

"""Synthetic timestamped corpus with planted semantic drift.

The generator writes ``n_years`` years of sentences.  Each sentence has one
*topic* ``k``; each of its ``sentence_length`` slots is a word of topic ``k``
(uniform over its ``words_per_topic`` words) with probability
``1 - background_rate`` and a Zipf-distributed background word otherwise.
Then *probe words* are written into random slots of random sentences of the
year (each occurrence picks a sentence of the topic the word currently
belongs to):

* ``drift`` words -- at year :math:`y` an occurrence is in the destination
  topic ``B`` with probability :math:`s\\, g(y)` and in the source topic ``A``
  otherwise, where ``s`` is the planted *strength* and ``g`` is a step at the
  switch year ``c`` (abrupt) or a linear ramp of width ``w`` centred at ``c``
  (gradual): :math:`g(y) = \\mathrm{clip}((y - c)/w + 1/2, 0, 1)`;
* ``stable`` words -- always topic ``A`` (strength 0), same frequency as the
  drift words;
* ``trap`` words -- always topic ``A``, but their frequency rises
  exponentially by a factor ``trap_growth`` over the span (frequency change is
  not meaning change).

Everything a metric needs is in :class:`PlantedDrift`.

**Variants** (:data:`VARIANTS`, :func:`drift_spec`): ``"standard"`` (the
defaults of :class:`DriftSpec`: probes seen about 20 times a year, switches in
the middle 40% of the span) and ``"low-frequency"`` (probes seen about 4
times a year, trap words 0.5 rising to 15, switches anywhere in the middle 60%
of the span, so abrupt switches of rare words also happen close to the first
and the last fifth of the span, the periods the change scores compare).

Example
-------
>>> spec = DriftSpec(n_years=10, n_tokens=20_000, n_topics=4, words_per_topic=10,
...                  n_drift=4, n_stable=2, n_trap=2, seed=1)
>>> corpus, truth = generate_drift_corpus(spec)
>>> corpus.span, len(truth.words), truth.kind.count("drift")
((1900.0, 1909.0), 8, 4)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from qpnlp.data.timestamped import TimestampedCorpus

__all__ = ["DriftSpec", "PlantedDrift", "VARIANTS", "drift_spec", "generate_drift_corpus", "drift_mixture"]


@dataclass(frozen=True)
class DriftSpec:
    """Parameters of :func:`generate_drift_corpus` (defaults: the 1M-token, 100-year, 60-target protocol).

    Parameters
    ----------
    n_years : int, default 100
        Years of the corpus, one time value per year.
    start_year : int, default 1900
        The first year.
    n_tokens : int, default 1_000_000
        About this many tokens in all: ``n_tokens / n_years / sentence_length`` sentences a year (at least one).
    sentence_length : int, default 12
        Tokens per sentence.
    n_topics : int, default 20
        Topics ``K``; a sentence has one.
    words_per_topic : int, default 40
        Words of each topic, drawn uniformly in its sentences.
    n_background : int, default 200
        Background words, drawn with Zipf probabilities :math:`p_j \\propto 1/j`.
    background_rate : float, default 0.25
        The probability that a slot of a sentence holds a background word rather than a topic word.
    n_drift, n_stable, n_trap : int, default 60, 20, 10
        Probe words of each kind (module docstring).
    rate : float, default 20.0
        Expected occurrences a year of each drift and stable word.
    trap_rate_start : float, default 2.0
        Expected occurrences of each trap word in the first year.
    trap_growth : float, default 30.0
        The factor by which a trap word's rate grows, exponentially, from the first year to the last.
    strength_range : tuple of float, default (0.2, 1.0)
        The drift words' strengths :math:`s` are evenly spaced over this range, in a random order.
    switch_range : tuple of float, default (0.3, 0.7)
        A drift word switches at a whole year drawn uniformly from this range, as fractions of the span.
    gradual_fraction : float, default 0.5
        The probability that a drift word's switch is a ramp rather than a step.
    width_range : tuple of float, default (5.0, 20.0)
        A ramp's width in years, a whole number drawn uniformly from this range.
    seed : int, default 0
        Seeds the generator: the same spec gives the same corpus.
    """

    n_years: int = 100
    start_year: int = 1900
    n_tokens: int = 1_000_000
    sentence_length: int = 12
    n_topics: int = 20
    words_per_topic: int = 40
    n_background: int = 200
    background_rate: float = 0.25
    n_drift: int = 60
    n_stable: int = 20
    n_trap: int = 10
    rate: float = 20.0
    trap_rate_start: float = 2.0
    trap_growth: float = 30.0
    strength_range: tuple = (0.2, 1.0)
    switch_range: tuple = (0.3, 0.7)
    gradual_fraction: float = 0.5
    width_range: tuple = (5.0, 20.0)
    seed: int = 0


#: The named generator settings of the drift benchmark (overrides of :class:`DriftSpec`'s defaults).
VARIANTS = {
    "standard": {},
    "low-frequency": {"rate": 4.0, "trap_rate_start": 0.5, "switch_range": (0.2, 0.8)},
}


def drift_spec(variant: str = "standard", **overrides) -> DriftSpec:
    """The :class:`DriftSpec` of a named variant (:data:`VARIANTS`), with further ``overrides``.

    Parameters
    ----------
    variant : str, default "standard"
        A key of :data:`VARIANTS` (ValueError otherwise).
    **overrides
        :class:`DriftSpec` fields, over the variant's settings (``seed=3``).

    Examples
    --------
    >>> drift_spec("low-frequency", seed=3).rate, drift_spec(seed=3) == DriftSpec(seed=3)
    (4.0, True)
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {tuple(VARIANTS)}; got {variant!r}")
    return DriftSpec(**{**VARIANTS[variant], **overrides})


@dataclass(frozen=True, eq=False)        # == is identity: the generated one compared arrays and raised
class PlantedDrift:
    """Ground truth of a generated corpus (all per-probe arrays have length ``len(words)``).

    Attributes
    ----------
    words : tuple of str -- probe words (drift, then stable, then trap)
    kind : tuple of str -- ``"drift"``, ``"stable"`` or ``"trap"``
    source, dest : numpy.ndarray int -- source and destination topics (dest = source when not drifting)
    strength : numpy.ndarray float -- planted strength ``s`` (0 for stable and trap)
    switch_year : numpy.ndarray float -- change year ``c`` (NaN when not drifting)
    width : numpy.ndarray float -- ramp width (0 = abrupt, NaN when not drifting)
    topic_words : tuple of tuple of str -- the words of each topic
    years : numpy.ndarray float -- the years of the corpus
    """

    words: tuple
    kind: tuple
    source: np.ndarray
    dest: np.ndarray
    strength: np.ndarray
    switch_year: np.ndarray
    width: np.ndarray
    topic_words: tuple
    years: np.ndarray

    def mixture(self, year: float) -> np.ndarray:
        """Probability that an occurrence of each probe is in its destination topic at ``year``, (n_probes,)."""
        return drift_mixture(np.asarray(year, float), self.strength, self.switch_year, self.width)


def drift_mixture(year, strength, switch, width) -> np.ndarray:
    """:math:`s\\, g(y)` with a step (``width == 0``) or a ramp of ``width`` centred at ``switch``.

    Parameters
    ----------
    year : float or numpy.ndarray
        The year(s) :math:`y`; broadcast against the per-probe arrays.
    strength : numpy.ndarray of float, shape (n_probes,)
        The planted strengths :math:`s` (0 for a probe that does not drift).
    switch : numpy.ndarray of float, shape (n_probes,)
        The switch years :math:`c`; NaN for a probe that does not drift (mixture 0).
    width : numpy.ndarray of float, shape (n_probes,)
        The ramp widths :math:`w`; 0 (or NaN) is a step at ``switch``.

    Examples
    --------
    >>> drift_mixture(np.array(1945.0), np.array([1.0, 0.5]), np.array([1950.0, 1940.0]), np.array([0.0, 20.0])).tolist()
    [0.0, 0.375]
    """
    year = np.asarray(year, float)
    out = np.zeros(np.broadcast(year, strength).shape)
    drifting = np.isfinite(switch) & (strength > 0)
    w = np.where(np.isfinite(width), width, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        ramp = np.clip((year - switch) / np.where(w > 0, w, 1.0) + 0.5, 0.0, 1.0)
        step = (year >= switch).astype(float)
    g = np.where(w > 0, ramp, step)
    return np.where(drifting, strength * g, out)


def generate_drift_corpus(spec: DriftSpec = DriftSpec()) -> tuple[TimestampedCorpus, PlantedDrift]:
    """Generate the corpus and its ground truth (deterministic given ``spec.seed``).

    Parameters
    ----------
    spec : DriftSpec, default DriftSpec()
        The generator's settings (:func:`drift_spec` for a named variant).
    """
    rng = np.random.default_rng(spec.seed)
    topic_words = _topic_words(spec)
    background, zipf = _background_words(spec)
    truth = _planted_drift(spec, rng, topic_words)
    n_sent = max(1, int(round(spec.n_tokens / spec.n_years / spec.sentence_length)))  # sentences per year
    rates = _probe_rates(spec)
    vocab = list(truth.words) + [w for tw in topic_words for w in tw] + background
    all_times, all_docs = [], []
    for year, year_rates in zip(truth.years, rates):
        ids = _sentences_of_year(spec, rng, n_sent, year, year_rates, truth, zipf)
        all_docs.extend([vocab[i] for i in row] for row in ids)
        all_times.append(np.full(n_sent, year))
    return TimestampedCorpus(np.concatenate(all_times), tuple(all_docs)), truth


def _topic_words(spec: DriftSpec) -> tuple:
    """The ``words_per_topic`` words of each of the ``n_topics`` topics, ``t{k}w{j}``: K tuples of M str."""
    return tuple(tuple(f"t{k:02d}w{j:02d}" for j in range(spec.words_per_topic)) for k in range(spec.n_topics))


def _background_words(spec: DriftSpec) -> tuple[list[str], np.ndarray]:
    """The ``n_background`` background words and their Zipf probabilities :math:`p_j \\propto 1/j`, (n_background,)."""
    background = [f"bg{j:03d}" for j in range(spec.n_background)]
    zipf = 1.0 / np.arange(1, spec.n_background + 1)
    zipf /= zipf.sum()
    return background, zipf


def _planted_drift(spec: DriftSpec, rng: np.random.Generator, topic_words: tuple) -> PlantedDrift:
    """The ground truth: the probes (drift, stable, trap), their topics, strengths and transitions.

    Draws from ``rng``, in this order: the source topics, the shifts to the
    destinations, the strengths' order, the switch years, which switches are
    gradual and the ramp widths.
    """
    nd, ns, nt = spec.n_drift, spec.n_stable, spec.n_trap
    words = tuple([f"drift{i:02d}" for i in range(nd)] + [f"stable{i:02d}" for i in range(ns)]
                  + [f"trap{i:02d}" for i in range(nt)])
    kind = tuple(["drift"] * nd + ["stable"] * ns + ["trap"] * nt)
    P = nd + ns + nt
    source, dest = _probe_topics(spec, rng, P)
    strength = np.zeros(P)
    strength[:nd] = rng.permutation(np.linspace(*spec.strength_range, nd))
    switch, width = _transitions(spec, rng, P)
    years = np.arange(spec.start_year, spec.start_year + spec.n_years, dtype=float)
    return PlantedDrift(
        words=words, kind=kind, source=source, dest=dest, strength=strength, switch_year=switch,
        width=width, topic_words=topic_words, years=years,
    )


def _probe_topics(spec: DriftSpec, rng: np.random.Generator, P: int) -> tuple[np.ndarray, np.ndarray]:
    """Source and destination topic of each of the ``P`` probes, int (P,) each.

    The sources are uniform; a drift word's destination is its source shifted
    by 1 .. K-1 (mod K), another topic; the other probes keep their source.
    """
    K, nd = spec.n_topics, spec.n_drift
    source = rng.integers(0, K, size=P)
    dest = source.copy()
    shift = rng.integers(1, K, size=nd)
    dest[:nd] = (source[:nd] + shift) % K
    return source, dest


def _transitions(spec: DriftSpec, rng: np.random.Generator, P: int) -> tuple[np.ndarray, np.ndarray]:
    """Switch year :math:`c` and ramp width :math:`w` of each of the ``P`` probes, float (P,) each.

    A drift word switches at a whole year in ``switch_range`` (fractions of
    the span); with probability ``gradual_fraction`` its ramp has a whole
    width drawn from ``width_range``, else it is abrupt (``w = 0``). NaN for
    the probes that do not drift.
    """
    nd, y0, Y = spec.n_drift, spec.start_year, spec.n_years
    switch = np.full(P, np.nan)
    lo, hi = spec.switch_range
    switch[:nd] = np.round(y0 + (Y - 1) * rng.uniform(lo, hi, size=nd))
    width = np.full(P, np.nan)
    gradual = rng.random(nd) < spec.gradual_fraction
    width[:nd] = np.where(gradual, np.round(rng.uniform(*spec.width_range, size=nd)), 0.0)
    return switch, width


def _probe_rates(spec: DriftSpec) -> np.ndarray:
    """Expected occurrences of each probe in each year, shape (n_years, P).

    ``rate`` for the drift and stable words; the trap words' rate grows
    exponentially from ``trap_rate_start`` by a factor ``trap_growth`` over the span.
    """
    Y, first_trap = spec.n_years, spec.n_drift + spec.n_stable
    rates = np.full((Y, first_trap + spec.n_trap), spec.rate)
    grow = spec.trap_rate_start * spec.trap_growth ** (np.arange(Y) / max(Y - 1, 1))
    rates[:, first_trap:] = grow[:, None]
    return rates


def _sentences_of_year(spec: DriftSpec, rng: np.random.Generator, n_sent: int, year: float, rates: np.ndarray,
                       truth: PlantedDrift, zipf: np.ndarray) -> np.ndarray:
    """Word ids of the year's ``n_sent`` sentences, shape (n_sent, L), with the probes written in.

    Ids index the vocabulary: the probes, then the topic words (topic by
    topic), then the background words. ``rates`` (P,): the probes' expected
    counts this year.
    """
    topics, sent = _topic_sentences(spec, rng, n_sent, zipf)
    occ_word, occ_topic = _probe_occurrences(rng, rates, year, truth)
    _write_probes(spec, rng, sent, topics, occ_word, occ_topic)
    return sent


def _topic_sentences(spec: DriftSpec, rng: np.random.Generator, n_sent: int,
                     zipf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The topic of each sentence (n_sent,) and its word ids (n_sent, L), before the probes are written.

    Each slot is a uniform word of the sentence's topic, or with probability
    ``background_rate`` a background word drawn by ``zipf``.
    """
    K, M, L = spec.n_topics, spec.words_per_topic, spec.sentence_length
    topic_id0 = spec.n_drift + spec.n_stable + spec.n_trap
    bg_id0 = topic_id0 + K * M
    topics = rng.integers(0, K, size=n_sent)
    slot_topic = rng.integers(0, M, size=(n_sent, L)) + topic_id0 + topics[:, None] * M
    slot_bg = rng.choice(spec.n_background, size=(n_sent, L), p=zipf) + bg_id0
    sent = np.where(rng.random((n_sent, L)) < spec.background_rate, slot_bg, slot_topic)
    return topics, sent


def _probe_occurrences(rng: np.random.Generator, rates: np.ndarray, year: float,
                       truth: PlantedDrift) -> tuple[np.ndarray, np.ndarray]:
    """The year's probe occurrences: the probe of each (n_occ,) and the topic it is written in (n_occ,).

    Each probe occurs Poisson(``rates``) times; an occurrence is in the
    destination topic with probability :math:`s\\, g(y)` (:func:`drift_mixture`),
    in the source topic otherwise.
    """
    counts = rng.poisson(rates)
    occ_word = np.repeat(np.arange(len(truth.words)), counts)
    p_dest = drift_mixture(year, truth.strength, truth.switch_year, truth.width)[occ_word]
    occ_topic = np.where(rng.random(occ_word.size) < p_dest, truth.dest[occ_word], truth.source[occ_word])
    return occ_word, occ_topic


def _write_probes(spec: DriftSpec, rng: np.random.Generator, sent: np.ndarray, topics: np.ndarray,
                  occ_word: np.ndarray, occ_topic: np.ndarray) -> None:
    """Write each probe occurrence into a random slot of a random sentence of its topic (``sent`` in place).

    An occurrence whose topic has no sentence this year is dropped.
    """
    K, L = spec.n_topics, spec.sentence_length
    # a random sentence of the required topic: sort sentences by topic, index within the topic's block
    order = np.argsort(topics, kind="stable")
    start = np.searchsorted(topics[order], np.arange(K))
    size = np.bincount(topics, minlength=K)
    ok = size[occ_topic] > 0
    occ_word, occ_topic = occ_word[ok], occ_topic[ok]
    pick = order[start[occ_topic] + (rng.random(occ_word.size) * size[occ_topic]).astype(np.int64)]
    slot = rng.integers(0, L, size=occ_word.size)
    sent[pick, slot] = occ_word

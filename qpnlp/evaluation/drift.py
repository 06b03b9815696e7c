"""Semantic-drift evaluation on a grid of time-specific vectors.

Every model is scored through the same object: a grid ``E`` of shape (T, W, D) -- the vector of each of ``W``
words at each of ``T`` times -- with its ``words`` and ``years``.  Word2Fun produces it with
:meth:`~qpnlp.word2fun.keyed_vectors.KeyedVectors.grid`; the gensim baselines of
:mod:`qpnlp.evaluation.drift_baselines` produce it from word2vec models.

Metrics (:func:`evaluate_grid`), for a :class:`~qpnlp.data.synthetic_drift.PlantedDrift`:

* ``spearman`` -- between planted strength and measured change of the drift
  words, where change is the cosine distance between the mean vectors of an
  early and a late period (:func:`change_scores`) or, in prediction space,
  the mean absolute change of pair probabilities (:func:`context_change_scores`),
  minus the change within the two periods (:func:`noise_corrected`);
* ``auc`` -- drift words vs non-drifting probes (stable and trap words);
* ``trap_mean_percentile`` -- mean percentile of the trap words' change among
  all probes (1 = most changed; a tie at its mid-rank), and ``trap_top_rank`` --
  the best (smallest) 1-based rank of a trap word (a tie at its best rank);
* ``acc_before`` / ``acc_after`` -- how often the topic whose centroid is nearest to a drift word is its source topic
  before the transition and its dominant topic (destination if strength > 0.5, else source) after it, over all years
  outside the transition; words with strength within 0.1 of 0.5 are ambiguous and excluded from ``acc_after``;
* ``change_year_mae`` -- mean absolute error of the change year estimated by the best two-segment split
  (:func:`change_points`) for drift words with strength >= 0.5; each segment spans at least ``min_segment_years`` (3)
  of time whatever the grid's spacing (3 yearly times, 1 time of a decade grid).

Example
-------
>>> E = torch.tensor([[[1.0, 0.0]], [[1.0, 0.0]], [[0.0, 1.0]], [[0.0, 1.0]]])
>>> change_points(E, np.array([0.0, 1.0, 2.0, 3.0]), min_segment=1).tolist()
[1.5]
"""

from __future__ import annotations

import contextlib
import zipfile
import zlib
from collections import Counter
from dataclasses import dataclass

import numpy as np
import torch
from scipy.stats import rankdata, spearmanr

from qpnlp._atomic import atomic_file
from qpnlp._checks import check_real, str_array, time_values
from qpnlp.data.synthetic_drift import PlantedDrift
from qpnlp.hilbert._validation import check_finite

from ._drift_measures import (_years, auc, change_points, change_scores, context_change_scores, nearest_topic,
                              noise_corrected)

__all__ = [
    "DriftGrid",
    "change_scores",
    "context_change_scores",
    "noise_corrected",
    "change_points",
    "auc",
    "nearest_topic",
    "evaluate_grid",
]


@dataclass(frozen=True, eq=False)        # == is identity: the generated one compared tensors and raised
class DriftGrid:
    """Time-specific vectors of a model, the object every metric reads.

    Attributes
    ----------
    E : torch.Tensor, shape (T, W, D) -- vector of each word at each time
    words : tuple of str, length W, distinct
    years : numpy.ndarray, shape (T,), finite and strictly increasing
    context : torch.Tensor, shape (1 or T, C, D), optional
        Target ("compass") vectors of ``context_words``, static (first dim 1)
        or per time.  When given, the metrics can be computed in *prediction
        space*: the profile :math:`p_t(u, v) = \\sigma(E_t[u] \\cdot h_t(v))`,
        the skip-gram probability the model assigns to the pair (u, v) at t.
    context_words : tuple of str, length C
    train_seconds, tokens_per_s : float
    """

    E: torch.Tensor
    words: tuple
    years: np.ndarray
    train_seconds: float = float("nan")
    tokens_per_s: float = float("nan")
    context: torch.Tensor | None = None
    context_words: tuple = ()

    def __post_init__(self):
        E = _real_vectors(self.E, "E")
        object.__setattr__(self, "E", E)
        object.__setattr__(self, "words", tuple(self.words))
        object.__setattr__(self, "context_words", tuple(self.context_words))
        years = time_values(self.years, "years", not_a_sequence=ValueError, not_numbers=ValueError)   # read once
        object.__setattr__(self, "years", years)
        if E.dim() != 3 or E.shape[0] != years.shape[0] or E.shape[1] != len(self.words):
            raise ValueError(f"E must be (T={years.shape[0]}, W={len(self.words)}, D); got {tuple(E.shape)}")
        _years(years, E.shape[0], increasing=True)
        repeated = sorted(w for w, n in Counter(self.words).items() if n > 1)   # one pass, not W passes
        if repeated:  # columns() would silently read the last of them
            raise ValueError(f"words must be distinct; repeated: {repeated[:5]}")
        if self.context is not None:
            C = _real_vectors(self.context, "context")
            if C.dim() != 3 or C.shape[0] not in (1, E.shape[0]) or C.shape[1] != len(self.context_words) or C.shape[2] != E.shape[2]:
                raise ValueError(f"context must be (1 or {E.shape[0]}, {len(self.context_words)}, {E.shape[2]}); got {tuple(C.shape)}")
            object.__setattr__(self, "context", C)

    def profiles(self, words) -> torch.Tensor:
        """Prediction-space profiles :math:`\\sigma(E_t[u] \\cdot h_t(v))` of ``words``, shape (T, len(words), C)."""
        if self.context is None:
            raise ValueError("this grid has no context vectors; prediction-space metrics need them")
        return torch.sigmoid(torch.einsum("twd,tcd->twc", self.columns(words), self.context.expand(self.E.shape[0], -1, -1)))

    def columns(self, words) -> torch.Tensor:
        """Vectors of ``words``, shape (T, len(words), D) (KeyError naming the words the grid lacks)."""
        idx = {w: i for i, w in enumerate(self.words)}
        missing = [w for w in words if w not in idx]
        if missing:
            raise KeyError(f"not in the grid ({len(self.words)} words): {', '.join(map(repr, missing[:10]))}")
        return self.E[:, [idx[w] for w in words]]

    def save_npz(self, path) -> None:
        """Save every field (the context vectors too: without them :func:`evaluate_grid` changes space) to the
        .npz file ``path`` exactly (:func:`numpy.savez` would append ``.npz`` to a name without it), atomically.
        ``ValueError`` for a word that ends in a NUL character, which the format cannot hold
        (``qpnlp._checks.str_array``), before anything is written."""
        extra = {} if self.context is None else {"context": self.context.numpy(),
                                                  "context_words": str_array(self.context_words, "context_words")}
        words = str_array(self.words)                       # a ValueError before the file is opened
        with atomic_file(path, "wb") as handle:             # a file object: numpy appends no suffix to it
            np.savez(handle, words=words, years=self.years, E=self.E.numpy(),
                     train_seconds=self.train_seconds, tokens_per_s=self.tokens_per_s, **extra)

    @classmethod
    def load_npz(cls, path) -> "DriftGrid":
        """A grid written by :meth:`save_npz` or :meth:`~qpnlp.word2fun.keyed_vectors.KeyedVectors.export_npz`;
        ValueError naming the file when it is not a readable .npz archive (e.g. truncated) or lacks E, words or
        years."""
        try:
            # the file opened here, not by np.load: np.load(path) leaves the file it opened open when the archive
            # does not parse ("ResourceWarning: unclosed file")
            # an open file (np.load takes one) is the caller's to close
            with (contextlib.nullcontext(path) if hasattr(path, "read") else open(path, "rb")) as handle, \
                    np.load(handle, allow_pickle=False) as archive:
                z = {key: archive[key] for key in archive.files}   # members are read lazily: all of them here
        except (zipfile.BadZipFile, zlib.error, EOFError, ValueError) as err:
            raise ValueError(f"{path}: not a readable .npz archive, truncated or damaged ({err})") from None
        missing = [key for key in ("E", "words", "years") if key not in z]
        if missing:
            raise ValueError(f"{path}: not a drift grid (no {', '.join(missing)} in the archive)")
        context = z.get("context")                          # the optional fields: older files lack them
        return cls(torch.from_numpy(z["E"]), tuple(z["words"].tolist()), z["years"],
                   float(z.get("train_seconds", float("nan"))), float(z.get("tokens_per_s", float("nan"))),
                   None if context is None else torch.from_numpy(context),
                   tuple(z.get("context_words", np.array([], dtype=str)).tolist()))


def _real_vectors(value, name: str) -> torch.Tensor:
    """``value`` (an array or a tensor of real numbers, any shape) as a float32 tensor, on the tensor's device.

    TypeError naming ``name`` for complex numbers (the cast to float32 dropped the imaginary part with only a
    warning), bools and anything that is not numbers (strings, objects); ValueError for a NaN or an infinity in
    float32 (a float64 beyond 3.4e38 reads as inf), which turned every change score and nearest topic into NaN
    (:func:`qpnlp.hilbert._validation.check_finite`, naming the index of the vector).
    """
    if not isinstance(value, torch.Tensor):
        value = np.asarray(value)
    dtype = value.dtype
    real = (not dtype.is_complex and dtype != torch.bool) if isinstance(dtype, torch.dtype) else dtype.kind in "iuf"
    if not real:
        raise TypeError(f"{name} must hold real numbers (read as float32); got {dtype}")
    vectors = torch.as_tensor(value, dtype=torch.float32)
    check_finite(name, vectors, event_ndim=1)           # names the (time, word) of the first bad vector
    return vectors


def _share(hits: list[np.ndarray]) -> float:
    """The share of ``True`` over all the words' years; NaN where no word has a year to count (undefined)."""
    hits = [h for h in hits if h.size]
    return float(np.concatenate(hits).mean()) if hits else float("nan")


def evaluate_grid(
    grid: DriftGrid, truth: PlantedDrift, early: tuple | None = None, late: tuple | None = None, space: str = "auto",
    noise_correction: bool = True, per_word: bool = False, min_segment_years: float = 3.0,
) -> dict:
    """All drift metrics of the protocol for one model (see module docstring).

    A metric that no drift word counts towards is NaN, not an error:
    ``acc_after`` when every strength is within 0.1 of 0.5,
    ``change_year_mae`` and ``change_year_median_ae`` when no strength is at
    least 0.5, ``acc_before`` when no grid year precedes any transition;
    ``spearman`` when the drift words' strengths or changes are all equal.

    Parameters
    ----------
    grid : DriftGrid
        The model's time-specific vectors.
    truth : PlantedDrift
        The planted drift: probe words, their kinds and strengths, change years, topic words.
    early, late : (float, float), optional
        Inclusive year ranges compared; default the first and last fifth of the years.
    space : {"auto", "vector", "prediction"}
        ``"vector"``: change and nearest topics by cosines of the vectors ``E``; ``"prediction"`` (``"auto"``'s
        choice when the grid has context vectors for the topic words): by the pair probabilities
        :math:`\\sigma(e \\cdot h)`, change by :func:`context_change_scores`, the nearest topic as the one whose
        words get the highest mean probability, change points on the probability profiles.
    noise_correction : bool
        Change scores by :func:`noise_corrected` (default True).
    per_word : bool
        Also return ``"per_word"``: for each drift word, its change score, the share of its years after the
        transition whose nearest topic is the dominant one (``None`` where ``acc_after`` leaves the word out: a
        strength within 0.1 of 0.5, or no grid year after the transition) and the years that miss it.
    min_segment_years : float
        Shortest segment of the change-point split in *time* (default 3), converted to grid times by the grid's
        (median) spacing: 3 times of a yearly grid, 1 time of a grid of decade bins. A fixed count of grid times
        would let a binned model place no change in its first or last three bins (30 years) while a yearly model
        may place one anywhere but its first and last three years. A finite real number >= 0 (TypeError /
        ValueError naming it otherwise).
    """
    _check_min_segment_years(min_segment_years)
    space, early, late = _space_and_periods(space, grid, truth, early, late)
    probes = list(truth.words)
    Ep = grid.columns(probes)                   # (T, P, D); a KeyError names the probes the grid lacks
    kind = np.asarray(truth.kind)
    if not (kind == "drift").any():             # was a bare "need at least one array to concatenate"
        raise ValueError(f"truth has no drift word (kinds {sorted(set(kind.tolist()))} over {len(probes)} probes): "
                         f"the drift metrics (spearman, auc, acc_before, acc_after, change years) need at least one")
    topic_flat, K, M = [w for tw in truth.topic_words for w in tw], len(truth.topic_words), len(truth.topic_words[0])
    if space == "prediction":
        ch, near, traj = _prediction_space(grid, truth, probes, topic_flat, early, late, noise_correction)
    else:
        ch, near, traj = _vector_space(grid, Ep, topic_flat, (K, M), early, late, noise_correction)
    out = {"space": space, "noise_correction": noise_correction, **_ranking_metrics(ch, truth.strength, kind)}
    before_ok, after_ok, words = _topic_hits(near, ch, truth, kind == "drift", grid.years)
    out["acc_before"], out["acc_after"] = _share(before_ok), _share(after_ok)
    if per_word:
        out["per_word"] = words
    out.update(_change_year_errors(traj, truth, grid.years, min_segment_years))
    out["tokens_per_s"], out["train_seconds"] = grid.tokens_per_s, grid.train_seconds
    return out


def _check_min_segment_years(value) -> None:
    """TypeError naming ``min_segment_years`` when ``value`` is not a real number, ValueError when it is not finite
    and >= 0 (a NaN or an infinity failed in the change-point split: "cannot convert float NaN to integer")."""
    wanted = "a finite number >= 0 (a span of time)"
    if check_real("min_segment_years", value, wanted, tensors=False) < 0:
        raise ValueError(f"min_segment_years must be {wanted}; got {value!r}")


def _space_and_periods(space: str, grid: DriftGrid, truth: PlantedDrift, early, late) -> tuple[str, tuple, tuple]:
    """The space (``"auto"``: prediction if the grid has context vectors), ``early`` and ``late`` (see above)."""
    space = ("prediction" if grid.context is not None else "vector") if space == "auto" else space
    if space not in ("vector", "prediction"):
        raise ValueError(f"space must be 'auto', 'vector' or 'prediction'; got {space!r}")
    y0, y1 = float(truth.years.min()), float(truth.years.max())
    return space, early or (y0, y0 + 0.2 * (y1 - y0)), late or (y1 - 0.2 * (y1 - y0), y1)


def _period_change(score_fn, X: torch.Tensor, years: np.ndarray, early, late, noise_correction: bool) -> np.ndarray:
    """``score_fn(X, years, early, late)`` (W,) as NumPy, :func:`noise_corrected` if asked."""
    scores = noise_corrected(score_fn, X, years, early, late) if noise_correction else score_fn(X, years, early, late)
    return scores.numpy()


def _vector_space(grid: DriftGrid, Ep: torch.Tensor, topic_flat: list, topic_shape: tuple, early, late,
                  noise_correction: bool) -> tuple[np.ndarray, np.ndarray, torch.Tensor]:
    """Change (P,) by :func:`change_scores`, nearest topic (T, P) by :func:`nearest_topic`, trajectories ``Ep``."""
    ch = _period_change(change_scores, Ep, grid.years, early, late, noise_correction)
    Et = grid.columns(topic_flat)
    near = nearest_topic(Ep, Et.reshape(Et.shape[0], *topic_shape, -1)).numpy()  # (T, P)
    return ch, near, Ep


def _prediction_space(grid: DriftGrid, truth: PlantedDrift, probes: list, topic_flat: list, early, late,
                      noise_correction: bool) -> tuple[np.ndarray, np.ndarray, torch.Tensor]:
    """Change (P,) by :func:`context_change_scores`, nearest topic (T, P) as the one whose words get the highest
    mean probability, and profiles (T, P, C') against the C' topic words that have context vectors."""
    ctx_idx = {w: i for i, w in enumerate(grid.context_words)}
    known = [w for w in topic_flat if w in ctx_idx]  # topic words the model has context vectors for
    if not known:
        raise ValueError("the grid has context vectors for none of the topic words")
    P = grid.profiles(probes)[..., [ctx_idx[w] for w in known]]  # (T, P, C')
    ch = _period_change(context_change_scores, P, grid.years, early, late, noise_correction)
    member = torch.zeros(len(known), len(truth.topic_words))  # (C', K): 1 where the word is in the topic
    topic_of = {w: k for k, tw in enumerate(truth.topic_words) for w in tw}
    for j, w in enumerate(known):
        member[j, topic_of[w]] = 1.0
    near = ((P @ member) / member.sum(0).clamp_min(1)).argmax(-1).numpy()  # mean probability per topic
    return ch, near, P


def _ranking_metrics(ch: np.ndarray, strength: np.ndarray, kind: np.ndarray) -> dict:
    """The metrics that rank the probes by change ``ch`` (P,): spearman, auc(s) and the trap words' ranks.

    Spearman is NaN when the drift words' strengths or changes are all equal (undefined; scipy would warn). Tied
    changes do not depend on the order of the probes: the percentile takes a trap word's mid-rank (its mean rank
    over the orders of the tie, as the AUC counts a tie 1/2), the top rank its best rank in the tie (the trap word
    ranked before the probes it ties with)."""
    is_d, is_t = kind == "drift", kind == "trap"
    constant = np.ptp(ch[is_d]) == 0 or np.ptp(strength[is_d]) == 0
    out = {"spearman": float("nan") if constant else float(spearmanr(strength[is_d], ch[is_d]).statistic),
           "auc": auc(ch[is_d], ch[~is_d]), "auc_vs_stable_only": auc(ch[is_d], ch[kind == "stable"])}
    mid, top = rankdata(-ch, method="average"), rankdata(-ch, method="min")  # 1 = most changed
    out["trap_mean_percentile"] = (float(np.mean(1.0 - (mid[is_t] - 1) / (len(ch) - 1))) if is_t.any()
                                   else float("nan"))
    out["trap_top_rank"] = int(top[is_t].min()) if is_t.any() else -1
    return out


def _topic_hits(near: np.ndarray, ch: np.ndarray, truth: PlantedDrift, is_d: np.ndarray, years: np.ndarray) -> tuple:
    """Per drift word, whether its nearest topic (``near`` (T, P)) is the source before and the dominant one after
    (strength at least 0.1 from 0.5): the hits before, the hits after and the ``per_word`` dict of the result."""
    sw, wd, st = truth.switch_year, np.nan_to_num(truth.width), truth.strength
    before_ok, after_ok, words = [], [], {}
    for p in np.flatnonzero(is_d):
        lo, hi = sw[p] - wd[p] / 2, sw[p] + wd[p] / 2
        before_ok.append(near[years < lo, p] == truth.source[p])
        after, ok = years >= hi, None
        if abs(st[p] - 0.5) >= 0.1:
            dom = truth.dest[p] if st[p] > 0.5 else truth.source[p]
            ok = near[after, p] == dom
            after_ok.append(ok)
        words[truth.words[p]] = {"change": float(ch[p]),
                                 "acc_after": None if ok is None or not ok.size else float(ok.mean()),
                                 "wrong_years_after": [] if ok is None else [float(y) for y in years[after][~ok]]}
    return before_ok, after_ok, words


def _change_year_errors(traj: torch.Tensor, truth: PlantedDrift, years: np.ndarray, min_segment_years: float) -> dict:
    """Errors of the :func:`change_points` of ``traj`` for drift words with strength >= 0.5 (NaN: none)."""
    strong, sw = (np.asarray(truth.kind) == "drift") & (truth.strength >= 0.5), truth.switch_year
    out = {"change_year_mae": float("nan"), "change_year_median_ae": float("nan")}  # no strong drift word: undefined
    if strong.any():
        spacing = float(np.median(np.diff(years))) if len(years) > 1 else 1.0
        min_segment = max(1, int(np.ceil(min_segment_years / spacing - 1e-9)))
        est = change_points(traj[:, strong], years, min_segment=min_segment).numpy()
        out["change_year_mae"] = float(np.abs(est - sw[strong]).mean())
        out["change_year_median_ae"] = float(np.median(np.abs(est - sw[strong])))
    return out

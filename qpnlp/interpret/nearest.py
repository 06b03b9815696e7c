r"""Nearest words to states and measurement vectors, by the Born probability :math:`|\langle v|w\rangle|^2`.

Scores (``score=``)
-------------------
``"born"`` (the default for complex vectors)
    :math:`p(v, w) = \frac{|\langle v|w\rangle|^2}{\|v\|^2 \|w\|^2}`, the
    probability that measuring the state :math:`|w\rangle` with the projector
    :math:`|v\rangle\langle v|` gives "yes" (both normalised first). For real
    vectors this is the squared cosine (a real measurement vector and its
    negative are the same projector).
``"cosine"`` (the default for real vectors)
    :math:`\cos(v, w)`, signed: the usual ranking of real word vectors (e.g.
    Word2Fun's :math:`f(u, t)`). For complex vectors
    :math:`\operatorname{Re}\langle v|w\rangle / (\|v\| \|w\|)`, the cosine of
    their real images ``[Re, Im]``: for unit vectors
    :math:`\|v - w\|^2 = 2 - 2 \operatorname{Re}\langle v|w\rangle`, so this is the
    Euclidean ranking of the thesis' KD tree (section 5.1.4.2, the nearest words
    of the measurement vectors, Tables 5.13-5.14). It sees a word's global
    phase (:math:`-w` is the farthest word from :math:`w`), which no
    measurement does; the Born probability, the default for complex vectors,
    ranks :math:`w` and :math:`e^{i\alpha} w` alike.

Rows of the vocabulary that are exactly zero (the padding row of an
embedding) never rank. Equal scores rank by increasing row, as a stable sort
would rank them (duplicate words, or basis-state queries with many zeros).
Everything is batched over queries and runs on the device of the vocabulary
tensor (queries are moved there).

Exact or approximate (``method=``)
----------------------------------
``"exact"`` (default) scores every vocabulary row: O(m V d), in chunks of
queries so that at most about 16M scores are held at once. ``"approximate"``
uses :class:`~qpnlp.interpret.ann.BornIndex` (faiss HNSW, optional extra
``qpnlp[ann]``): candidates from the index, re-ranked exactly, so returned
scores are exact but a true neighbour may be missed. ``"auto"`` takes the
index when one is passed, or when the vocabulary has at least
:data:`ANN_MIN_VOCAB` usable rows and faiss is installed; otherwise exact.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
import torch
from torch import nn

from qpnlp._checks import is_integer
from qpnlp._top_k import top_k
from qpnlp.hilbert import promote
from qpnlp.measurement import POVM, POVMMeasurement, ProjectiveMeasurement, Projector

from . import _checks
from ._scores import SCORES, pair_scores, resolve_score, unit_rows
from .ann import BornIndex, faiss_available

__all__ = ["SCORES", "METHODS", "ANN_MIN_VOCAB", "born_scores", "nearest_states", "nearest_words", "nearest_table",
           "measurement_vectors", "measurement_words"]

#: How the neighbours are searched (``method=``): exact, approximate (an ANN index) or chosen by size.
METHODS = ("exact", "approximate", "auto")
#: Usable vocabulary rows from which ``method="auto"`` switches to the approximate index.
ANN_MIN_VOCAB = 200_000
_CHUNK_SCORES = 1 << 24


def _prepare(queries, states, score: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, str]:
    states = _checks.vectors("vocab_states", states)
    queries = _checks.vectors("queries", queries, allow_single=True).to(states.device)
    if queries.shape[1] != states.shape[1]:
        raise ValueError(f"queries have dimension {queries.shape[1]} but vocab_states have {states.shape[1]}")
    score = resolve_score(score, queries, states)
    if queries.is_complex() or states.is_complex():
        queries, states = promote(queries, states)
    elif queries.dtype != states.dtype:
        common = torch.promote_types(queries.dtype, states.dtype)
        queries, states = queries.to(common), states.to(common)
    q, q_nonzero = unit_rows(queries)
    if not bool(q_nonzero.all()):
        raise ValueError(f"query {int((~q_nonzero).nonzero()[0])} is the zero vector: it measures nothing")
    s, s_nonzero = unit_rows(states)
    return q, s, s_nonzero, score


def born_scores(queries: torch.Tensor, vocab_states: torch.Tensor, *, score: str = "auto") -> torch.Tensor:
    r"""Scores of every vocabulary row for every query (see the module docstring).

    .. math:: P_{qv} = \frac{|\langle q|v\rangle|^2}{\|q\|^2\|v\|^2} \quad(\text{"born"}), \qquad
              \cos(q, v) \quad(\text{"cosine"})

    Parameters
    ----------
    queries : torch.Tensor
        ``(m, d)`` or ``(d,)`` states or measurement vectors, real or complex.
    vocab_states : torch.Tensor
        ``(V, d)`` word states.
    score : {"auto", "born", "cosine"}
        ``"auto"``: Born for complex inputs, cosine for real ones (for complex ones: of the real images).

    Returns
    -------
    torch.Tensor
        Real ``(m, V)`` on the device of ``vocab_states``; zero for zero rows.

    Examples
    --------
    >>> w = torch.tensor([[1, 0], [0.6, 0.8j]], dtype=torch.complex64)
    >>> born_scores(w[1], w)
    tensor([[0.3600, 1.0000]])
    """
    q, s, _, score = _prepare(queries, vocab_states, score)
    return pair_scores(q, s, score)


def nearest_states(queries: torch.Tensor, vocab_states: torch.Tensor, k: int = 10, *,
                   candidates: torch.Tensor | None = None, score: str = "auto", method: str = "exact",
                   index=None) -> tuple[torch.Tensor, torch.Tensor]:
    r"""The ``k`` best vocabulary rows for each query, as tensors.

    Parameters
    ----------
    queries : torch.Tensor
        ``(m, d)`` or ``(d,)``.
    vocab_states : torch.Tensor
        ``(V, d)``; zero rows never rank.
    k : int
        Neighbours per query (fewer when fewer rows are usable).
    candidates : torch.Tensor, optional
        Bool ``(V,)``: only these rows rank (e.g. frequent words).
    score : {"auto", "born", "cosine"}
    method : {"exact", "approximate", "auto"}
        See the module docstring.
    index : BornIndex, optional
        A prebuilt approximate index over ``vocab_states`` (implies the
        approximate method; build it over the candidate rows instead of
        passing ``candidates``).

    Returns
    -------
    scores : torch.Tensor
        Real ``(m, k)``, descending per row (exact values); equal scores by increasing row (with the
        approximate method too, among the rows it finds).
    indices : torch.Tensor
        Long ``(m, k)`` row indices into ``vocab_states``.

    Examples
    --------
    >>> vocab = torch.eye(3, dtype=torch.complex64)
    >>> nearest_states(vocab[1], vocab, 2)
    (tensor([[1., 0.]]), tensor([[1, 0]]))
    """
    k = _checks.positive("k", k)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}")
    q, s, usable, score = _prepare(queries, vocab_states, score)
    if candidates is not None:
        if index is not None:
            raise ValueError("pass either candidates or a prebuilt index (build it with BornIndex(states, rows=...))")
        usable = usable & _checks.mask("candidates", candidates, s.shape[0]).to(usable.device)
    n_usable = int(usable.sum())
    if n_usable == 0:
        raise ValueError("no usable vocabulary row (all rows are zero or excluded by candidates)")
    if _use_index(method, index, n_usable):
        if index is None:
            index = BornIndex(vocab_states, score=score, rows=usable)
        elif index.num_rows != vocab_states.shape[0] or index.score != score:
            raise ValueError(f"the index was built over {index.num_rows} rows with score={index.score!r}; "
                             f"got {vocab_states.shape[0]} rows and score={score!r}")
        return index.search(queries, k)
    k = min(k, n_usable)
    chunk = max(1, _CHUNK_SCORES // s.shape[0])
    values, rows = [], []
    for start in range(0, q.shape[0], chunk):
        scores = pair_scores(q[start:start + chunk], s, score).masked_fill(~usable, float("-inf"))
        top, top_rows = top_k(scores, k)
        values.append(top)
        rows.append(top_rows)
    return torch.cat(values), torch.cat(rows)


def _use_index(method: str, index, n_usable: int) -> bool:
    if method == "approximate" or index is not None:
        return True
    if method == "exact":
        return False
    if n_usable < ANN_MIN_VOCAB:
        return False
    return faiss_available()


def nearest_words(queries: torch.Tensor, vocab_states: torch.Tensor, words: Sequence[str], *, top: int = 10,
                  candidates: torch.Tensor | None = None, score: str = "auto", method: str = "exact",
                  index=None) -> list[list[tuple[str, float]]]:
    r"""The ``top`` words most likely to be measured by each query state.

    Ranks vocabulary states :math:`|w\rangle` by :math:`|\langle v|w\rangle|^2`
    (complex) or by cosine (real); see :func:`nearest_states` for the options.

    Parameters
    ----------
    queries : torch.Tensor
        ``(m, d)`` or ``(d,)`` measurement vectors or word states.
    vocab_states : torch.Tensor
        ``(V, d)`` word states (zero rows, e.g. padding, never rank).
    words : sequence of str
        ``V`` names, ``words[i]`` for row i.
    top : int
        Number of words per query.
    candidates, score, method, index
        As in :func:`nearest_states`.

    Returns
    -------
    list of list of (word, score)
        One ranked list per query (Python floats, not rounded).

    Examples
    --------
    >>> vocab = torch.eye(3, dtype=torch.complex64)
    >>> nearest_words(vocab[2:], vocab, ["a", "b", "c"], top=2)
    [[('c', 1.0), ('a', 0.0)]]
    """
    vocab_states = _checks.vectors("vocab_states", vocab_states)
    words = _checks.words("words", words, vocab_states.shape[0], "vocabulary states")
    values, rows = nearest_states(queries, vocab_states, top, candidates=candidates, score=score, method=method,
                                  index=index)
    return [[(words[i], float(v)) for v, i in zip(vs, ix)] for vs, ix in zip(values.tolist(), rows.tolist())]


def nearest_table(queries: torch.Tensor, vocab_states: torch.Tensor, words: Sequence[str], *, top: int = 10,
                  query_names: Sequence[str] | None = None, candidates: torch.Tensor | None = None,
                  score: str = "auto", method: str = "exact", index=None) -> pd.DataFrame:
    """:func:`nearest_words` as a long table with columns ``query, rank, word`` and the score.

    The score column is ``probability`` (Born) or ``cosine``.

    Parameters
    ----------
    queries : torch.Tensor
        ``(m, d)`` or ``(d,)`` measurement vectors or word states.
    vocab_states : torch.Tensor
        ``(V, d)`` word states (zero rows, e.g. padding, never rank).
    words : sequence of str
        ``V`` names, ``words[i]`` for row i.
    top : int
        Number of words per query (default 10).
    query_names : sequence, optional
        ``m`` labels of the queries; default ``0 .. m-1``.
    candidates, score, method, index
        As in :func:`nearest_states`.

    Returns
    -------
    pandas.DataFrame
        One row per query and rank, columns ``query, rank, word`` and ``probability`` or ``cosine``.

    Examples
    --------
    >>> vocab = torch.eye(3, dtype=torch.complex64)
    >>> nearest_table(vocab[:2], vocab, ["a", "b", "c"], top=1, query_names=["v0", "v1"])
      query  rank word  probability
    0    v0     1    a          1.0
    1    v1     1    b          1.0
    """
    queries = _checks.vectors("queries", queries, allow_single=True)
    if query_names is None:
        query_names = list(range(queries.shape[0]))
    query_names = _checks.words("query_names", query_names, queries.shape[0], "queries")
    states = _checks.vectors("vocab_states", vocab_states)
    column = "probability" if resolve_score(score, queries, states) == "born" else "cosine"
    ranked = nearest_words(queries, states, words, top=top, candidates=candidates, score=score, method=method,
                           index=index)
    rows = [(name, rank, word, value) for name, neighbours in zip(query_names, ranked)
            for rank, (word, value) in enumerate(neighbours, start=1)]
    return pd.DataFrame(rows, columns=["query", "rank", "word", column])


def measurement_vectors(source) -> torch.Tensor:
    r"""The measurement vectors :math:`v_k` of a measurement or a model, ``(k, d)`` (detached).

    ``source`` is a :class:`~qpnlp.measurement.ProjectiveMeasurement`, a
    rank-1 :class:`~qpnlp.measurement.Projector` batch, a
    :class:`~qpnlp.measurement.POVMMeasurement` or
    :class:`~qpnlp.measurement.POVM` of rank-1 effects, a model with a
    ``measurement`` (QPDN, CNM, projective or POVM head) or a
    ``real_measurement`` (CNM-Real), or a ``(k, d)`` tensor.

    Projective vectors are unit vectors. The vectors of a rank-1 POVM,
    :math:`E_k = |v_k\rangle\langle v_k|`, are not: :math:`\|v_k\|^2 \le 1` is
    the largest probability outcome k can have (:func:`measurement_words`
    reports :math:`\langle w|E_k|w\rangle = \|v_k\|^2 |\langle \hat v_k|w\rangle|^2`).
    POVM effects of rank r > 1 have r vectors each and raise ValueError.

    Parameters
    ----------
    source : measurement, Projector, POVM, model or torch.Tensor
        One of the kinds listed above.

    Returns
    -------
    torch.Tensor
        Complex (or real, for a real model or tensor) ``(k, d)``, detached.
    """
    if isinstance(source, torch.Tensor):
        return _checks.vectors("measurement vectors", source)
    if isinstance(source, Projector):
        if source.rank != 1 or len(source.batch_shape) != 1:
            raise ValueError(f"need a batch (k,) of rank-1 projectors; got batch shape {tuple(source.batch_shape)} "
                             f"and rank {source.rank}")
        return source.vectors[:, 0].detach()
    if isinstance(source, (ProjectiveMeasurement, POVMMeasurement, POVM)):
        return _measurement_vectors(source)
    if isinstance(source, nn.Module):
        if isinstance(getattr(source, "measurement", None), (ProjectiveMeasurement, POVMMeasurement)):
            return _measurement_vectors(source.measurement)
        if isinstance(getattr(source, "real_measurement", None), torch.Tensor):
            return torch.nn.functional.normalize(source.real_measurement.detach(), dim=-1)
        raise ValueError(f"{type(source).__name__} has no measurement (e.g. QPDN head='dense' or CNM head='trace')")
    raise TypeError(f"cannot read measurement vectors from {type(source).__name__}")


def _measurement_vectors(measurement) -> torch.Tensor:
    if isinstance(measurement, ProjectiveMeasurement):
        return measurement.vectors().detach()
    povm = measurement.as_povm() if isinstance(measurement, POVMMeasurement) else measurement
    if povm.rank != 1 or povm.batch_shape:
        raise ValueError(f"need one POVM of rank-1 effects (one vector per outcome); got rank {povm.rank} and "
                         f"batch shape {tuple(povm.batch_shape)} (inspect povm.effects() instead)")
    return povm.vectors[..., 0, :].detach()


def _is_povm(source) -> bool:
    measurement = getattr(source, "measurement", source) if isinstance(source, nn.Module) else source
    return isinstance(measurement, (POVMMeasurement, POVM))


def _model_states(model: nn.Module) -> torch.Tensor:
    embedding = getattr(model, "embedding", None)
    if embedding is not None and hasattr(embedding, "all_states"):
        return embedding.all_states().detach()
    real = getattr(model, "real_embedding", None)
    if isinstance(real, nn.Embedding):
        return real.weight.detach()
    raise ValueError(f"cannot read word states from {type(model).__name__}; pass states=")


def _outcomes(outcomes, k: int) -> list[int]:
    """``outcomes`` as a non-empty list of measurement indices in ``[0, k)`` (all of them when None).

    True integers only (``qpnlp._checks.is_integer``; a tensor or array is read by ``tolist``): 0.7 or
    ``"0"`` is refused with the value named, not truncated to measurement 0 (TypeError; ValueError out of range).
    """
    if outcomes is None:
        return list(range(k))
    if isinstance(outcomes, (str, bytes)):
        raise TypeError(f"outcomes must be a sequence of integers, not a string; got {outcomes!r}")
    if isinstance(outcomes, (torch.Tensor, np.ndarray)):
        values = outcomes.tolist()
        values = values if isinstance(values, list) else [values]      # tolist() of a 0-d tensor is a number
    elif isinstance(outcomes, Iterable):
        values = list(outcomes)
    else:
        raise TypeError(f"outcomes must be a sequence of integers; got {type(outcomes).__name__} {outcomes!r}")
    wrong = [v for v in values if not is_integer(v)]
    if wrong:
        raise TypeError(f"outcomes must be integers (measurement indices in [0, {k})); got "
                        f"{type(wrong[0]).__name__} {wrong[0]!r}")
    bad = [v for v in values if not 0 <= v < k]
    if bad or not values:
        raise ValueError(f"outcomes must be a non-empty list of measurements in [0, {k}); got {bad or values}")
    return [int(v) for v in values]


@torch.no_grad()
def measurement_words(source, words: Sequence[str], *, states: torch.Tensor | None = None, top: int = 10,
                      outcomes: Sequence[int] | None = None, candidates: torch.Tensor | None = None,
                      exclude_ids: Sequence[int] = (0, 1), method: str = "exact", score: str = "born") -> pd.DataFrame:
    r"""The words most likely to be measured by each measurement vector :math:`|v_k\rangle`.

    Ranks words by :math:`p(k \mid w) = |\langle v_k|w\rangle|^2`: the
    probability that a sentence made of the single word w answers "yes" to
    measurement k (for CNM-Real the squared cosine of the real vectors; for a
    rank-1 POVM :math:`\langle w|E_k|w\rangle`, the outcome's probability).

    Parameters
    ----------
    source : ProjectiveMeasurement, Projector, QPDN, CNM or Tensor
        See :func:`measurement_vectors`.
    words : sequence of str
        Name of every vocabulary id (``Vocabulary.words``).
    states : torch.Tensor, optional
        ``(V, d)`` word states; default: the model's embedding (all ids).
    top : int
        Words per measurement.
    outcomes : sequence of int, optional
        The measurements to show (default all k).
    candidates : torch.Tensor, optional
        Bool ``(V,)`` rows allowed to rank.
    exclude_ids : sequence of int
        Ids never shown (padding and unknown by default).
    method : {"exact", "approximate", "auto"}
    score : {"born", "cosine"}
        ``"born"``: the probability above. ``"cosine"``: :math:`\operatorname{Re}\langle v_k|w\rangle` of the
        unit vectors, the thesis' own ranking (a KD tree over the real images, section 5.1.4.2; see the module
        docstring), for reproducing its Tables 5.13-5.14; a projective measurement only.

    Returns
    -------
    pandas.DataFrame
        Columns ``measurement, rank, word, probability`` (``cosine`` with ``score="cosine"``).

    Examples
    --------
    >>> from qpnlp.measurement import ProjectiveMeasurement
    >>> m = ProjectiveMeasurement(3, 2, init="identity")
    >>> states = torch.eye(3, dtype=torch.complex64)
    >>> measurement_words(m, ["<pad>", "<unk>", "x"], states=states, top=1, exclude_ids=())
       measurement  rank   word  probability
    0            0     1  <pad>          1.0
    1            1     1  <unk>          1.0
    """
    if score not in ("born", "cosine"):
        raise ValueError(f"score must be 'born' or 'cosine'; got {score!r}")
    if score == "cosine" and _is_povm(source):
        raise ValueError("score='cosine' ranks by the vectors of a projective measurement; a POVM's outcomes are "
                         "ranked by their probability (score='born')")
    vectors = measurement_vectors(source)
    if states is None:
        if not isinstance(source, nn.Module):
            raise ValueError("pass states= (the vocabulary states) when the source is not a model")
        states = _model_states(source)
    states = _checks.vectors("states", states)
    keep = torch.ones(states.shape[0], dtype=torch.bool, device=states.device)
    if candidates is not None:
        keep &= _checks.mask("candidates", candidates, states.shape[0]).to(states.device)
    keep &= _checks.kept_ids("exclude_ids", exclude_ids, states.shape[0]).to(states.device)
    outcomes = _outcomes(outcomes, vectors.shape[0])
    table = nearest_table(vectors[outcomes], states, words, top=top, query_names=outcomes, candidates=keep,
                          score=score, method=method)
    if _is_povm(source):          # <w|E_k|w> = ||v_k||^2 |<v_k/||v_k|| | w>|^2: the same ranking, rescaled
        weight = vectors.norm(dim=-1).square().cpu().double().numpy()
        table["probability"] = table["probability"] * weight[table["query"].to_numpy(dtype=int)]
    return table.rename(columns={"query": "measurement"})

r"""Approximate nearest words for large vocabularies: a faiss HNSW index with exact re-ranking.

Optional: needs ``faiss-cpu`` (``pip install "qpnlp[ann]"``), imported only
when an index is built. Used by :func:`~qpnlp.interpret.nearest_states` with
``method="approximate"``, with a prebuilt ``index=``, or with
``method="auto"`` from :data:`~qpnlp.interpret.nearest.ANN_MIN_VOCAB` rows on.

Why it is correct to search a real index for a complex score
------------------------------------------------------------
For unit vectors the Born probability is the squared modulus of the
amplitude :math:`z = \langle v|w\rangle`, and

.. math:: |z| = \max_\theta \operatorname{Re}(e^{i\theta} z), \qquad
          \operatorname{Re}(e^{i\theta}\langle v|w\rangle) = \langle u_\theta, w\rangle_{\mathbb{R}^{2d}},
          \quad u_\theta = e^{-i\theta} v,

where a complex vector is seen as the real vector ``[Re, Im]`` of length 2d.
So the index holds the real images of the word states and is queried with
``phases`` rotated copies :math:`u_{\theta_p}` of each query,
:math:`\theta_p = 2\pi p / P`. Every word with :math:`|z|` large scores at
least :math:`|z|\cos(\pi/P)` for one of the rotations (:math:`0.92\,|z|` for :math:`P = 8`),
so it is among the candidates of that rotation. The union of the candidates
of all rotations is then re-ranked by the exact :math:`|\langle v|w\rangle|^2`
in torch, on the device of the vocabulary: returned scores are exact, only
recall can be below one. The cosine score (:math:`\operatorname{Re}\langle v|w\rangle`
for complex vectors) needs one rotation, and the squared cosine of real
vectors two (:math:`\pm v`).

All vectors are unit, so the largest inner product is the smallest Euclidean
distance (:math:`\|u - w\|^2 = 2 - 2\langle u, w\rangle`): the index is
faiss' ``IndexHNSWFlat`` with the L2 metric (graph search, no quantisation).
Recall is tested in ``tests/interpret/test_ann.py``: at least 0.95 for top-10
over 5 000 random complex unit vectors in dimension 32 with the defaults
(measured: 1.0 there; 0.999 for 20 000 words in dimension 32 and 0.995 in
dimension 50, against 0.91 with ``phases=4``). Building the index costs about
0.3 ms per word on one core, so build it once and pass it as ``index=``.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from qpnlp import _optional
from qpnlp._top_k import top_k
from qpnlp.hilbert import promote

from . import _checks
from ._scores import pair_scores, resolve_score, unit_rows

__all__ = ["BornIndex", "faiss_available"]

_CHUNK = 1 << 22


def faiss_available() -> bool:
    """Whether ``faiss`` can be imported (the optional extra ``qpnlp[ann]``).

    An installed faiss that fails to import (built for another NumPy, a missing BLAS) warns once and counts as
    missing (``qpnlp._optional.imports``), so that ``method="auto"`` searches exactly instead of raising;
    ``method="approximate"`` still raises, naming the extra.
    """
    return _optional.imports("faiss", "nearest-word searches with method='auto' are exact")


def _import_faiss():
    try:
        import faiss
    except ImportError as error:  # pragma: no cover - exercised by monkeypatching in the tests
        raise ImportError("the approximate nearest-word index needs faiss: pip install 'qpnlp[ann]' "
                          "(faiss-cpu), or use method='exact'") from error
    return faiss


def _real_image(x: torch.Tensor) -> np.ndarray:
    """Complex ``(n, d)`` -> real ``(n, 2d)`` (or real ``(n, d)`` as is), float32 C-contiguous for faiss."""
    real = torch.view_as_real(x).flatten(-2) if x.is_complex() else x
    return np.ascontiguousarray(real.detach().cpu().numpy(), dtype=np.float32)


class BornIndex:
    r"""Approximate top-k words by :math:`|\langle v|w\rangle|^2` (or cosine) over a fixed vocabulary.

    Parameters
    ----------
    states : torch.Tensor
        ``(V, d)`` word states, complex or real (normalised here; zero rows are
        left out). They stay on their device for the exact re-ranking.
    score : {"auto", "born", "cosine"}
        As in :func:`~qpnlp.interpret.born_scores`.
    rows : torch.Tensor, optional
        Bool ``(V,)``: index only these rows (e.g. frequent words).
    phases : int
        Rotations of each complex query (ignored for real vectors).
    m : int
        HNSW graph degree.
    ef_construction, ef_search : int
        HNSW beam widths when building and searching (larger: slower, better recall).

    Examples
    --------
    >>> states = torch.nn.functional.normalize(torch.randn(500, 8, dtype=torch.complex64), dim=-1)
    >>> index = BornIndex(states)                                   # doctest: +SKIP
    >>> scores, rows = index.search(states[:3], 5)                  # doctest: +SKIP
    >>> rows[:, 0].tolist()                                         # doctest: +SKIP
    [0, 1, 2]
    """

    def __init__(self, states: torch.Tensor, *, score: str = "auto", rows: torch.Tensor | None = None,
                 phases: int = 8, m: int = 32, ef_construction: int = 100, ef_search: int = 128) -> None:
        faiss = _import_faiss()
        states = _checks.vectors("states", states)
        self.score = resolve_score(score, states)
        self.phases = 1 if self.score == "cosine" else \
            2 if not states.is_complex() else _checks.positive("phases", phases)
        self.ef_search = _checks.positive("ef_search", ef_search)
        self._unit, usable = unit_rows(states)
        if rows is not None:
            usable = usable & _checks.mask("rows", rows, states.shape[0]).to(usable.device)
        self._rows = usable.nonzero().squeeze(-1)
        if self._rows.numel() == 0:
            raise ValueError("no row to index (all rows are zero or excluded)")
        self._rows_np = self._rows.cpu().numpy()
        data = _real_image(self._unit[self._rows])
        self._index = faiss.IndexHNSWFlat(data.shape[1], _checks.positive("m", m), faiss.METRIC_L2)
        self._index.hnsw.efConstruction = _checks.positive("ef_construction", ef_construction)
        self._index.add(data)

    @property
    def num_rows(self) -> int:
        """V, the number of rows of the vocabulary the index was built over (indexed or not)."""
        return self._unit.shape[0]

    @property
    def num_indexed(self) -> int:
        """Number of rows in the index."""
        return int(self._rows.numel())

    def __repr__(self) -> str:
        return (f"BornIndex(rows={self.num_indexed}/{self.num_rows}, dim={self._unit.shape[1]}, score={self.score!r}, "
                f"phases={self.phases}, faiss HNSW)")

    def _rotations(self, q: torch.Tensor) -> torch.Tensor:
        r"""``(m, P, d)`` rotated queries :math:`e^{-i\theta_p} v` (real: v, or v and -v)."""
        if not q.is_complex():
            return torch.stack([q, -q], 1) if self.phases == 2 else q.unsqueeze(1)
        theta = torch.arange(self.phases, dtype=q.real.dtype, device=q.device) * (2 * math.pi / self.phases)
        return q.unsqueeze(1) * torch.polar(torch.ones_like(theta), -theta).unsqueeze(-1)

    @torch.no_grad()
    def search(self, queries: torch.Tensor, k: int = 10, *,
               candidates_per_phase: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Approximate top ``k`` rows per query, with exact scores.

        Parameters
        ----------
        queries : torch.Tensor
            ``(m, d)`` or ``(d,)``.
        k : int
        candidates_per_phase : int, optional
            Candidates taken from the index for each rotation (default ``max(2k, 32)``).

        Returns
        -------
        scores : torch.Tensor
            Real ``(m, k')`` exact scores, descending, ``k' = min(k, indexed rows)``.
        indices : torch.Tensor
            Long ``(m, k')`` rows of the original vocabulary.
        """
        k = min(_checks.positive("k", k), self.num_indexed)
        queries = _checks.vectors("queries", queries, allow_single=True).to(self._unit.device)
        if queries.shape[1] != self._unit.shape[1]:
            raise ValueError(f"queries have dimension {queries.shape[1]}; the index has {self._unit.shape[1]}")
        if queries.is_complex() and not self._unit.is_complex():
            raise ValueError("complex queries cannot search an index of real vectors")
        if self._unit.is_complex() and not queries.is_complex():
            queries = promote(queries, self._unit)[0]                   # a real query is a complex one too
        q, nonzero = unit_rows(queries)
        if not bool(nonzero.all()):
            raise ValueError(f"query {int((~nonzero).nonzero()[0])} is the zero vector: it measures nothing")
        per_phase = min(max(2 * k, 32) if candidates_per_phase is None else
                        _checks.positive("candidates_per_phase", candidates_per_phase), self.num_indexed)
        per_phase = max(per_phase, k)
        # this search's beam, not the index's (hnsw.efSearch): threads searching one index each keep their own
        beam = _import_faiss().SearchParametersHNSW(efSearch=max(self.ef_search, per_phase))
        chunk = max(1, _CHUNK // (self.phases * per_phase * q.shape[1]))
        values, rows = [], []
        for start in range(0, q.shape[0], chunk):
            v, r = self._search_chunk(q[start:start + chunk], k, per_phase, beam)
            values.append(v)
            rows.append(r)
        return torch.cat(values), torch.cat(rows)

    def _search_chunk(self, q: torch.Tensor, k: int, per_phase: int, beam) -> tuple[torch.Tensor, torch.Tensor]:
        m = q.shape[0]
        rotated = self._rotations(q).reshape(m * self.phases, -1)
        _, found = self._index.search(_real_image(rotated), per_phase, params=beam)  # (m P, C), -1 = none
        found = found.reshape(m, self.phases * per_phase)
        sentinel = self.num_rows                                    # sorts after every real row
        ids = np.where(found < 0, sentinel, self._rows_np[np.maximum(found, 0)])
        ids = torch.from_numpy(ids).to(q.device).sort(dim=-1).values
        drop = ids == sentinel
        drop[:, 1:] |= ids[:, 1:] == ids[:, :-1]                    # a word found by several rotations
        ids = ids.clamp_max(sentinel - 1)
        exact = _pairwise(q, self._unit[ids], self.score).masked_fill(drop, float("-inf"))     # (m, P C)
        values, columns = top_k(exact, k)                           # ids increase along a row: ties by id
        return values, ids.gather(-1, columns)


def _pairwise(q: torch.Tensor, members: torch.Tensor, score: str) -> torch.Tensor:
    """Scores of query i with its own candidates: q ``(m, d)``, members ``(m, C, d)`` -> ``(m, C)``."""
    if q.is_complex() or members.is_complex():
        q, members = promote(q, members)
    else:
        common = torch.promote_types(q.dtype, members.dtype)
        q, members = q.to(common), members.to(common)
    return pair_scores(q.unsqueeze(1), members, score).squeeze(1)

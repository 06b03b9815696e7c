"""Querying trained Word2Fun vectors: gensim's ``KeyedVectors`` interface, with time.

:class:`KeyedVectors` holds a trained :class:`~qpnlp.word2fun.model.Word2Fun`
and its :class:`~qpnlp.data.vocab.Vocabulary` (no special tokens: id ``i`` is
word ``index_to_key[i]``). Its queries take words and raw times (years):

* gensim's queries at one year: ``most_similar(positive=, negative=, topn=, year=)``,
  ``similarity(a, b, year=)``, ``word in vectors``, and ``vectors.at(year)``,
  a :class:`~qpnlp.word2fun.static_vectors.StaticKeyedVectors` (every word's vector at that year as a numpy
  array, with the same queries without ``year``);
* over time: :meth:`~KeyedVectors.grid` (many words at many times),
  :meth:`~KeyedVectors.similarity_over_time` (similarity trajectories; :meth:`~KeyedVectors.similarities_over_time`
  for many words),
  :meth:`~KeyedVectors.change_degree` (:meth:`~KeyedVectors.change_degrees` for many words),
  :meth:`~KeyedVectors.indicators`,
  :meth:`~KeyedVectors.export_npz`;
* checking times as every query does (a float64 array, a warning outside the training span):
  :meth:`~KeyedVectors.query_times`;
* saving: :meth:`~KeyedVectors.save_pretrained` / :meth:`~KeyedVectors.from_pretrained`
  in the format of every qpnlp model (``config.json`` + ``model.safetensors``
  + ``vocabulary.json``).

Similarities are cosines. ``most_similar`` follows gensim: the query is the
mean of the unit vectors of the positive words and of the negated unit
vectors of the negative words; the query words are never returned. A word
is looked up as written, else in the Unicode form the corpus readers give
it (:func:`~qpnlp.data.tokenize.normalize_text`; case kept). An
unknown word raises ``KeyError`` naming it; a query that is the zero vector
(positive and negative words that cancel) raises ``ValueError``.

Times are raw times (years) and may lie anywhere within
:data:`~qpnlp.word2fun.functions.MAX_ABS_TIME`; outside the training span the
functions extrapolate without data (the ``sliced`` family holds its first or
last slice), and a query there warns (``UserWarning`` naming the time and the span).

Example
-------
>>> import torch
>>> from qpnlp.data import Vocabulary
>>> from qpnlp.word2fun.model import Word2Fun, Word2FunConfig
>>> vocab = Vocabulary.build([["war", "peace", "war", "trade"]], specials=False)
>>> model = Word2Fun(Word2FunConfig(vocab_size=len(vocab), dim=4, family="linear", span_start=1900, span_end=2000))
>>> vectors = KeyedVectors(model, vocab)
>>> "war" in vectors, "tea" in vectors, vectors.index_to_key
(True, False, ('war', 'peace', 'trade'))
>>> [word for word, _ in vectors.most_similar("war", topn=2, year=1950)] == [w for w, _ in vectors.at(1950).most_similar("war", topn=2)]
True
>>> vectors.query_times((1950, 1960.5)).tolist()   # the times as every query reads them
[1950.0, 1960.5]
"""

from __future__ import annotations

import json
import math
import numbers
import os
import warnings
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from qpnlp._atomic import atomic_file
from qpnlp._checks import str_array, time_values
from qpnlp._modes import eval_mode
from qpnlp._stacklevel import outside_qpnlp
from qpnlp.data.vocab import Vocabulary
from qpnlp.models.base import VOCABULARY_FILE
from qpnlp.word2fun.convert import is_legacy_word2fun, legacy_error
from qpnlp.word2fun.functions import MAX_ABS_TIME, TimeScale
from qpnlp.word2fun.model import Word2Fun
from qpnlp.word2fun.static_vectors import (StaticKeyedVectors, _index_of, _is_vector, _missing, _plain_state,
                                           _query_list, _unit, _word_list)

__all__ = ["KeyedVectors"]

#: Most times one query over a period samples (``change_degree``): more is an error naming a larger step.
MAX_QUERY_TIMES = 100_000
#: Most entries of one (times, V) matrix of probabilities ``change_degree(measure="context")`` holds at once (16 MB
#: in float32): the times go in chunks, so its memory does not grow with the number of times.
CONTEXT_CHUNK_VALUES = 1 << 22


def _mean_sigmoid(f: torch.Tensor, H: torch.Tensor) -> torch.Tensor:
    r""":math:`\frac1T \sum_t \sigma(f_t \cdot h_v)` of vectors ``f`` (T, D) and ``H`` (V, D): (V,), summed over chunks
    of the times, so that at most ``CONTEXT_CHUNK_VALUES`` probabilities are held at once, never (T, V)."""
    chunk = max(1, CONTEXT_CHUNK_VALUES // max(H.shape[0], 1))
    total = sum(torch.sigmoid(f[i:i + chunk] @ H.T).sum(0) for i in range(0, f.shape[0], chunk))
    return total / f.shape[0]


def _one_time(year, name: str = "year") -> float:
    """``year`` as a finite float; ``TypeError`` / ``ValueError`` naming ``name`` otherwise."""
    try:
        value = float(year)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be one raw time (a number such as 1950); got {year!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite time; got {year!r}")
    return value


class KeyedVectors:
    """A trained :class:`~qpnlp.word2fun.model.Word2Fun` with its vocabulary: the query object.

    Every query that takes times reads them through :meth:`query_times` (a float64 array; a ``UserWarning``
    for a time outside the training span), which is public so that other code checks times the same way.

    Parameters
    ----------
    model : Word2Fun
    vocabulary : Vocabulary
        Without special tokens (``specials=False``), ``len(vocabulary) == model.vocab_size``.

    Attributes
    ----------
    model : Word2Fun
    vocabulary : Vocabulary
    index_to_key : tuple of str
        The word of each id.
    key_to_index : mapping str -> int
    counts : numpy.ndarray, shape (V,)
        Training counts of each word.
    """

    def __init__(self, model: Word2Fun, vocabulary: Vocabulary):
        if not isinstance(model, Word2Fun):
            raise TypeError(f"model must be a Word2Fun; got {type(model).__name__}")
        if not isinstance(vocabulary, Vocabulary) or vocabulary.specials:
            raise TypeError("vocabulary must be a Vocabulary without special tokens (Vocabulary.build(..., specials=False))")
        if len(vocabulary) != model.vocab_size:
            raise ValueError(f"{len(vocabulary)} words for a model of vocabulary {model.vocab_size}")
        self.model = model           # queried in eval mode (eval_mode), its modes put back after each query
        self.vocabulary = vocabulary
        self.index_to_key = tuple(vocabulary.words)
        self.key_to_index = vocabulary.index
        self.counts = vocabulary.counts

    def __len__(self) -> int:
        return len(self.index_to_key)

    def __contains__(self, key: object) -> bool:
        return _index_of(self.key_to_index, key) is not None

    def __repr__(self) -> str:
        start, end = self.time_span
        return f"KeyedVectors({len(self)} words x {self.vector_size}, family {self.model.family}, {start:g}-{end:g})"

    def __getstate__(self) -> dict:
        return _plain_state(self)

    def __setstate__(self, state: dict) -> None:
        """Restore ``__getstate__``, ``key_to_index`` the vocabulary's read-only mapping again."""
        self.__dict__.update(state, key_to_index=state["vocabulary"].index)

    @property
    def vector_size(self) -> int:
        return self.model.dim

    @property
    def time_scale(self) -> TimeScale:
        return self.model.time_scale

    @property
    def time_span(self) -> tuple[float, float]:
        """``(start, end)`` of the training span (raw times)."""
        return self.model.time_scale.start, self.model.time_scale.end

    # ---- look-ups
    def get_index(self, key: str) -> int:
        """The id of ``key`` (as written, else in the corpus's Unicode form,
        :func:`~qpnlp.data.tokenize.normalize_text`: ``union’s`` is ``union's``); ``KeyError`` naming it when
        unknown."""
        index = _index_of(self.key_to_index, key)
        if index is None:
            raise _missing(key, len(self))
        return index

    def _ids(self, words) -> torch.Tensor:
        return torch.tensor([self.get_index(w) for w in _word_list(words)], dtype=torch.long)

    def _device(self) -> torch.device:
        return self.model.compass.weight.device

    def query_times(self, times, name: str = "times") -> np.ndarray:
        """Raw query ``times`` as a float64 array of shape (T,), checked as every query of this object checks them.

        Every query that takes times (:meth:`grid`, :meth:`indicators`, ...) reads them here; call it to check
        other times the same way, e.g. those of a corpus scored with the model
        (``qpnlp evaluate`` on a Word2Fun checkpoint does). ``times`` is any iterable of numbers (a list, a
        generator, a numpy array, a tensor).

        Raises ``TypeError`` / ``ValueError`` naming ``name`` for one number or a
        nested sequence instead of a sequence of times, ``TypeError`` for complex times; warns (``UserWarning``
        naming the time and the span) when a time lies outside the training span
        [start, end] of :attr:`time_span` (the functions extrapolate there).
        Non-finite and huge times are the model's errors, when it is queried
        (:meth:`~qpnlp.word2fun.model.Word2Fun.normalised_times`); the model casts the times to its dtype.
        """
        array = time_values(times, name, not_numbers=ValueError, finite=False)    # complex: a TypeError
        start, end = self.time_span
        tol = 1e-9 * (end - start)
        outside = array[(array < start - tol) | (array > end + tol)]
        if outside.size and (np.abs(outside) <= MAX_ABS_TIME).all():   # NaN, inf, huge: errors of the model
            warnings.warn(f"time {outside[0]:g} lies outside the training span [{start:g}, {end:g}]: the vectors "
                          f"there extrapolate the fitted functions, no data support them", UserWarning,
                          stacklevel=outside_qpnlp())
        return array

    def grid(self, words: Sequence[str], times: Sequence[float]) -> torch.Tensor:
        """Vectors :math:`f(u, t)` of ``words`` at raw ``times`` (T,) in one call, shape (T, W, D), on the CPU.

        A time outside the training span warns (the functions extrapolate there).
        """
        return self._grid(words, self.query_times(times))

    def _grid(self, words: Sequence[str], times: np.ndarray) -> torch.Tensor:
        """:meth:`grid` at ``times`` (T,) that :meth:`query_times` has read already (so a generator is read once)."""
        dev = self._device()
        with eval_mode(self.model):
            return self.model.grid(self._ids(words).to(dev), torch.as_tensor(times).to(dev)).cpu()

    def get_vector(self, key: str, year: float) -> torch.Tensor:
        """:math:`f(u, t)` of ``key`` at raw time ``year``, shape (D,)."""
        return self.grid([key], [year])[0, 0]

    def compass_vectors(self, words: Sequence[str]) -> torch.Tensor:
        """The static target ("compass") vectors :math:`h(v)` of ``words``, shape (W, D), on the CPU."""
        return self.model.compass.weight.detach()[self._ids(words).to(self._device())].cpu()

    # ---- gensim's queries at one time
    def at(self, year: float) -> StaticKeyedVectors:
        """Every word's vector at raw time ``year``: a static view with gensim's queries."""
        if year is None:
            raise ValueError("year must be a finite time; got None")
        year = _one_time(year)
        with torch.no_grad():
            E = self.grid(self.index_to_key, [year])[0]
        return StaticKeyedVectors(self.index_to_key, E.numpy(), counts=self.counts, year=year)

    @staticmethod
    def _need_year(year, method: str) -> float:
        if year is None:
            raise ValueError(f"{method} needs year=: Word2Fun vectors are functions of time "
                             f"(or query a static view, vectors.at(year).{method}(...))")
        return _one_time(year)

    def most_similar(self, positive: str | Iterable[str] | None = None, negative: str | Iterable[str] | None = None,
                     topn: int = 10, *, year: float | None = None, min_count: int = 0) -> list[tuple[str, float]]:
        """The ``topn`` words nearest (cosine) to positive minus negative words at raw time ``year``.

        See :meth:`StaticKeyedVectors.most_similar
        <qpnlp.word2fun.static_vectors.StaticKeyedVectors.most_similar>`; ``year`` is required.
        ``min_count`` keeps only words seen at least that often in training.
        A query may hold vectors (D,) too, e.g. a word's vector at another
        time: ``most_similar(vectors.get_vector("war", 1900), year=1990)``.
        """
        year = self._need_year(year, "most_similar")
        positive, negative = _query_list(positive), _query_list(negative)   # read once: iterators too
        for w in positive + negative:
            if not _is_vector(w):
                self.get_index(w)  # the KeyError before the grid of every word
        return self.at(year).most_similar(positive, negative, topn, min_count=min_count)

    def similarity(self, a: str, b: str, *, year: float | None = None) -> float:
        """Cosine of :math:`f(a, t)` and :math:`f(b, t)` at raw time ``year`` (required)."""
        year = self._need_year(year, "similarity")
        return float(self.similarity_over_time(a, b, [year])[0])

    # ---- over time
    def similarity_over_time(self, word_a: str, word_b: str, times: Sequence[float]) -> torch.Tensor:
        """Cosine of :math:`f(a, t)` and :math:`f(b, t)` for each time, shape (T,): a similarity trajectory."""
        return self.similarities_over_time(word_a, [word_b], times)[:, 0]

    def similarities_over_time(self, word: str, others: Sequence[str], times: Sequence[float]) -> torch.Tensor:
        r"""Cosines :math:`\cos(f(u, t), f(v, t))` of ``word`` u with each ``v`` of ``others`` (W,) at each of the
        raw ``times`` (T,): shape (T, W), on the CPU; column j is the trajectory of ``others[j]``.

        The vectors of ``others`` come from one grid of (T, w, D) vectors per chunk of w words, at most
        ``CONTEXT_CHUNK_VALUES`` values each (a single chunk while T W D is within it), not from one query per
        word; the times are checked (and a time outside the training span warned about) once.
        """
        others = _word_list(others)
        ids = self._ids([word, *others])                    # the KeyError naming an unknown word, before any grid
        dev = self._device()
        times = torch.as_tensor(self.query_times(times)).to(dev)
        with eval_mode(self.model):
            u = _unit(self.model.grid(ids[:1].to(dev), times).cpu())                     # (T, 1, D)
            out = torch.empty(len(times), len(others), dtype=u.dtype)
            chunk = max(1, CONTEXT_CHUNK_VALUES // max(len(times) * self.vector_size, 1))
            for start in range(1, len(ids), chunk):            # ids[start:start + chunk]: a chunk of others
                G = _unit(self.model.grid(ids[start:start + chunk].to(dev), times).cpu())
                out[:, start - 1:start - 1 + G.shape[1]] = (u * G).sum(-1)
        return out

    def default_step(self, points: int = 1000) -> float:
        """A sampling step for queries over the span: 1 (a year) or longer, at most ``points`` steps over the span;
        ``span / points`` for a span that holds fewer than two integer times (decimal years within a year or two).

        A step of 1 on a span such as [2020.1, 2020.7] sampled one time of it (and :meth:`export_npz` none).

        >>> from qpnlp.data import Vocabulary
        >>> from qpnlp.word2fun.model import Word2Fun, Word2FunConfig
        >>> v = Vocabulary.build([["a", "b"]], specials=False)
        >>> KeyedVectors(Word2Fun(Word2FunConfig(2, 2, span_start=1.6e9, span_end=1.7e9)), v).default_step()
        100000.0
        >>> KeyedVectors(Word2Fun(Word2FunConfig(2, 2, span_start=2020.1, span_end=2020.6)), v).default_step(100)
        0.005
        """
        if isinstance(points, bool) or not isinstance(points, numbers.Integral) or points < 1:
            raise ValueError(f"points must be an integer >= 1; got {points!r}")     # 0 was a ZeroDivisionError
        start, end = self.time_span
        whole = math.floor(end) - math.ceil(start) >= 1          # two integer times at least: years
        return max(1.0, (end - start) / points) if whole else (end - start) / points

    @staticmethod
    def _period(period, name: str) -> tuple[float, float]:
        """``(start, end)`` of a period as two floats; ``TypeError`` naming ``name`` for anything else."""
        if isinstance(period, (str, bytes)) or np.ndim(period) != 1 or len(period) != 2:
            raise TypeError(f"{name} must be a (start, end) pair of raw times; got {period!r}")
        return _one_time(period[0], name), _one_time(period[1], name)

    def _times(self, a: float, b: float, step: float, name: str = "the period") -> np.ndarray:
        if isinstance(step, bool) or not isinstance(step, numbers.Real) or not (step > 0 and math.isfinite(step)):
            raise ValueError(f"step must be a positive and finite number; got {step!r}")
        if not (math.isfinite(a) and math.isfinite(b) and a <= b):   # else no time at all: a mean of nothing, NaN
            raise ValueError(f"{name} must be a finite (start, end) with start <= end; got ({a!r}, {b!r})")
        n = math.floor((b - a) / step + 1e-9) + 1
        if n > MAX_QUERY_TIMES:
            raise ValueError(f"sampling [{a:g}, {b:g}] every {step:g} needs {n} times (more than "
                             f"{MAX_QUERY_TIMES}); pass a larger step, e.g. step={self.default_step():g}")
        return np.arange(a, b + 1e-9, step)

    def change_degree(
        self, word: str, period_a: tuple[float, float], period_b: tuple[float, float], step: float = 1.0,
        measure: str = "cosine",
    ) -> float:
        """Degree of change of ``word`` between two periods (inclusive ranges sampled every ``step``).

        ``measure="cosine"`` -- cosine distance of the mean vectors (thesis Sec. 5.3.2.3):

        .. math:: 1 - \\cos\\Bigl(\\overline{f(u, t)}_{t \\in A}, \\overline{f(u, t)}_{t \\in B}\\Bigr)

        ``measure="context"`` -- mean absolute change of the period-averaged
        skip-gram probability :math:`\\sigma(f(u, t) h(v)^T)` (thesis Sec. 4.2.2)
        over all words ``v`` of the vocabulary:

        .. math:: \\frac1V \\sum_v \\Bigl| \\overline{\\sigma(f(u,t) h(v)^T)}_{t \\in A} - \\overline{\\sigma(f(u,t) h(v)^T)}_{t \\in B} \\Bigr|

        For many words, :meth:`change_degrees` computes the same values in batches.
        """
        return float(self.change_degrees([word], period_a, period_b, step, measure)[0])

    def change_degrees(
        self, words: Sequence[str], period_a: tuple[float, float], period_b: tuple[float, float], step: float = 1.0,
        measure: str = "cosine",
    ) -> np.ndarray:
        """:meth:`change_degree` of each of ``words`` (W,), float64 (W,): the vectors of the two periods, (T_a, W, D)
        and (T_b, W, D), are computed for chunks of words at once, at most ``CONTEXT_CHUNK_VALUES`` entries per
        chunk (one :meth:`grid` call per chunk, not per word)."""
        ta = self._times(*self._period(period_a, "period_a"), step, "period_a")
        tb = self._times(*self._period(period_b, "period_b"), step, "period_b")
        words = _word_list(words)
        self._ids(words)                                    # the KeyError naming an unknown word, before any grid
        if measure not in ("cosine", "context"):
            raise ValueError(f"measure must be 'cosine' or 'context'; got {measure!r}")
        H = self.model.compass.weight.detach().cpu() if measure == "context" else None
        out = np.empty(len(words), dtype=np.float64)
        chunk = max(1, CONTEXT_CHUNK_VALUES // ((len(ta) + len(tb)) * self.vector_size))
        for start in range(0, len(words), chunk):
            a, b = self.grid(words[start:start + chunk], ta), self.grid(words[start:start + chunk], tb)
            if H is None:                                   # (w,): 1 - cos of the period means
                change = 1.0 - F.cosine_similarity(a.mean(0), b.mean(0), dim=-1)
            else:                                           # (T, V) probabilities per word: one word at a time
                change = torch.stack([(_mean_sigmoid(a[:, j], H) - _mean_sigmoid(b[:, j], H)).abs().mean()
                                      for j in range(a.shape[1])])
            out[start:start + chunk] = change.double().numpy()
        return out

    def indicators(self, words: Sequence[str], span: tuple[float, float] | None = None, *, p: float = 1.0,
                   times=None) -> dict:
        """Thesis Table 5.27 and 5.28 indicators as ``{name: {word: value}}`` (see :meth:`Word2Fun.indicators`;
        ``times``: raw times at which the derivative is averaged, e.g. the decades, instead of the span)."""
        words = _word_list(words)
        if span is not None:
            bounds = self.query_times(span, "span")
            if len(bounds) != 2:
                raise ValueError(f"span must be a (start, end) pair of raw times; got {span!r}")
            span = (float(bounds[0]), float(bounds[1]))
        times = None if times is None else self.query_times(times)
        with eval_mode(self.model):
            ind = self.model.indicators(self._ids(words).to(self._device()), span, p=p, times=times)
        return {k: dict(zip(words, v.cpu().tolist())) for k, v in ind.items()}

    def export_npz(self, path: str | os.PathLike, words: Sequence[str] | None = None,
                   years: Sequence[float] | None = None) -> Path:
        """Write ``words`` (W,), ``years`` (T,) and ``E`` (T, W, D) in the model's dtype (float32, or float64 for a
        float64 model) to the .npz file ``path``; returns it.

        Defaults: every word, and every integer time of the training span
        (every :meth:`default_step` when the span is longer than 1000 units,
        e.g. Unix seconds, or holds fewer than two integer times). The file is ``path`` exactly (:func:`numpy.savez`
        would append ``.npz`` to a name without it), written atomically (a
        temporary file in the same directory, renamed into place), with its
        missing parent directories created; a directory is an error, and so is a word that ends in a NUL
        character (``ValueError``: NumPy's strings drop trailing NULs, ``qpnlp._checks.str_array``).
        """
        path = Path(path)
        if path.is_dir():
            raise IsADirectoryError(f"{path} is a directory; export_npz writes one .npz file (e.g. {path}/grid.npz)")
        words = _word_list(words) if words is not None else list(self.index_to_key)
        start, end = self.time_span
        if years is None:
            step = self.default_step()
            years = list(np.arange(math.ceil(start), math.floor(end) + 1) if step == 1.0
                         else self._times(start, end, step))
        names = str_array(words)                    # a word the format cannot hold: refused before the grid
        years = self.query_times(years, "years")    # read once: a generator gave the grid its years, the file none
        E = self._grid(words, years).numpy()        # the model's dtype (a cast to float32 narrowed float64 ones)
        with atomic_file(path, "wb") as handle:             # a file object: numpy appends no suffix to it
            np.savez(handle, words=names, years=years, E=E)
        return path

    # ---- saving: the format of every qpnlp model
    def save_pretrained(self, directory: str | os.PathLike, *, metadata: Mapping[str, Any] | None = None,
                        files: Mapping[str, str] | None = None) -> Path:
        """Save the model and its vocabulary to ``directory`` (atomically; see :mod:`qpnlp.models.base`), with
        ``metadata`` in its ``config.json`` and the further text ``files`` (name: text) beside it."""
        return self.model.save_pretrained(directory, vocabulary=self.vocabulary, metadata=metadata, files=files)

    @classmethod
    def from_pretrained(cls, directory: str | os.PathLike, *, device: str | torch.device = "cpu") -> KeyedVectors:
        """Load what :meth:`save_pretrained` wrote; executes no code from the files.

        A directory saved by qpnlp 0.1 raises ``ValueError`` naming
        :func:`~qpnlp.word2fun.convert.convert_legacy_word2fun`.
        """
        directory = Path(directory)
        if is_legacy_word2fun(directory):
            raise legacy_error(directory)
        model = Word2Fun.from_pretrained(directory, device=device)
        path = directory / VOCABULARY_FILE
        if not path.is_file():
            raise FileNotFoundError(f"{directory} holds a Word2Fun model but no {VOCABULARY_FILE}")
        try:   # UnicodeDecodeError and json.JSONDecodeError are ValueErrors
            data = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(data, dict):
                raise TypeError(f"a JSON {type(data).__name__}, not an object")
            vocabulary = Vocabulary.from_dict(data)
        except (ValueError, KeyError, TypeError) as err:
            raise ValueError(f"{path}: not a saved Vocabulary ({err})") from None
        if vocabulary.specials or len(vocabulary) != model.vocab_size:
            raise ValueError(f"{path}: a vocabulary of {len(vocabulary)} words" + (" with special tokens" if
                             vocabulary.specials else "") + f" for a Word2Fun of {model.vocab_size} words "
                             f"without special tokens")
        return cls(model, vocabulary)

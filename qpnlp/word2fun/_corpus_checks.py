"""The corpus :func:`~qpnlp.word2fun.train.fit` trains on: each process's shard, the counts and the vocabulary
over every shard, and the refusals of a corpus it cannot train on (no token in the vocabulary, a single time,
different corpora in the processes of a distributed run)."""

from __future__ import annotations

from collections import Counter

from qpnlp.data.timestamped import TimestampedCorpus, TsvStream
from qpnlp.data.vocab import Vocabulary
from qpnlp.word2fun import distributed as dist
from qpnlp.word2fun.sources import ArraySource


def _count(docs) -> tuple[Counter, Counter, int, int, float, float]:
    """Word and document counts, documents, tokens and time range of ``(time, tokens)`` pairs, in one pass."""
    wf, df = Counter(), Counter()
    n_docs = n_tokens = 0
    lo, hi = float("inf"), float("-inf")
    for t, toks in docs:
        wf.update(toks)
        df.update(set(toks))
        n_docs += 1
        n_tokens += len(toks)
        lo, hi = min(lo, t), max(hi, t)
    return wf, df, n_docs, n_tokens, lo, hi


def _shard(corpus: TimestampedCorpus | TsvStream, rank: int, world: int) -> TimestampedCorpus | TsvStream:
    """The documents process ``rank`` of ``world`` trains on: the whole corpus, or every ``world``-th document.

    A stream is sharded by :meth:`TsvStream.shard <qpnlp.data.timestamped.TsvStream.shard>`; an empty corpus in
    memory is refused here (a stream's emptiness is known after counting), and so, in every process, is a
    distributed run whose processes were given different corpora (``_check_one_corpus``).
    """
    if world > 1:
        _check_one_corpus(corpus, world)
    if isinstance(corpus, TsvStream):
        return corpus.shard(rank, world) if world > 1 else corpus
    if len(corpus) == 0:
        raise ValueError("the corpus is empty")
    return corpus if world == 1 else TimestampedCorpus(corpus.times[rank::world], corpus.docs[rank::world])


def _corpus_signature(corpus: TimestampedCorpus | TsvStream) -> dict:
    """What every process of a distributed run must be given alike: a stream's files (names and sizes, in their
    order, which decides each process's shard) and case, or the size of a corpus in memory."""
    if isinstance(corpus, TsvStream):
        return {"files": [(p.name, p.stat().st_size) for p in corpus.paths], "lowercase": corpus.lowercase}
    return {"documents": len(corpus), "tokens": corpus.n_tokens}


def _check_one_corpus(corpus: TimestampedCorpus | TsvStream, world: int) -> None:
    """Refuse, in every process, a distributed run whose processes were given different corpora (a collective).

    The processes split the corpus by position (files ``rank, rank + world, ...``): files listed in another
    order (an unsorted glob) or each process's own local file would train on some files twice and never read
    others, silently; the first process that differs from process 0 and how are named.
    """
    every = dist.gather_together(lambda: _corpus_signature(corpus),     # a missing file: every process raises
                                 "reading the corpus's files")
    other = next((r for r, s in enumerate(every) if s != every[0]), None)
    if other is None:
        return
    raise ValueError(f"process {other} of {world} was given another corpus than process 0 "
                     f"({_first_difference(every[0], every[other])}): every process "
                     f"must be given the same corpus, the same files in the same order (the processes split them "
                     f"by position: sort a glob's files)")


def _first_difference(ours: dict, theirs: dict) -> str:
    """The first difference of another process's ``_corpus_signature`` ``theirs`` from process 0's ``ours``."""
    key = next(k for k in ours if ours[k] != theirs.get(k))
    if key not in theirs:
        return "one of them streams the corpus, the other holds it in memory"
    if key != "files":
        return f"{key} {theirs[key]!r}, process 0 {ours[key]!r}"
    mine, other = ours[key], theirs[key]
    i = next((i for i, (a, b) in enumerate(zip(mine, other)) if a != b), None)
    if i is None:
        return f"{len(other)} files, process 0 {len(mine)}"
    return f"its file {i + 1} is {other[i][0]} ({other[i][1]} bytes), process 0's {mine[i][0]} ({mine[i][1]} bytes)"


def _vocabulary_and_corpus_info(corpus, local, world: int, vocabulary: Vocabulary | None,
                                min_count: int) -> tuple[Vocabulary, dict, tuple, Counter]:
    """The vocabulary, the corpus size ``{documents, tokens, span}`` (and a stream's ``lowercase``), the span
    ``(t0, t1)`` and this shard's word counts, counted over every shard (empty counts for one process holding the
    corpus in memory).

    Without ``vocabulary``, the words seen ``min_count`` times (``_checked_size`` checks there are two).
    """
    local_counts = Counter()
    if not isinstance(corpus, TsvStream) and world == 1:
        info = {"documents": len(corpus), "tokens": corpus.n_tokens}
        vocab = vocabulary if vocabulary is not None else Vocabulary.build(corpus.docs, min_freq=min_count,
                                                                            specials=False)
        span = corpus.span
    else:
        with dist.fail_together("counting its shard of the corpus"):      # a bad line: every process raises
            wf, df, n_docs, n_tokens, lo, hi = _count(local)
        local_counts = wf
        n_docs, n_tokens = (int(x) for x in dist.all_sum([n_docs, n_tokens]))
        if n_docs == 0:
            raise ValueError("the corpus is empty")
        span = dist.all_min_max(lo, hi)
        info = {"documents": n_docs, "tokens": n_tokens}
        vocab = _merged_vocabulary(wf, df, n_docs, min_count) if vocabulary is None else vocabulary
    info["span"] = list(span)
    if isinstance(corpus, TsvStream):      # how its words were read: `qpnlp evaluate` reads a corpus file the same way
        info["lowercase"] = corpus.lowercase
    return vocab, info, span, local_counts


def _checked_size(vocab: Vocabulary, min_count: int) -> Vocabulary:
    """``vocab``, a fresh model's vocabulary, if it has two words at least (``ValueError`` otherwise; a resumed
    run's vocabulary is compared with its checkpoint's instead)."""
    if len(vocab) < 2:
        raise ValueError(f"the vocabulary has {len(vocab)} words (min count {min_count}); Word2Fun needs at "
                         f"least two")
    return vocab


def _merged_vocabulary(wf: Counter, df: Counter, n_docs: int, min_count: int) -> Vocabulary:
    """The vocabulary of the word and document counts ``wf``, ``df`` summed over the processes: the words seen
    at least ``min_count`` times, most frequent first, ties alphabetically (the same in every process)."""
    wf, df = dist.merge_counts(wf, df)
    kept = sorted((w for w, c in wf.items() if c >= min_count), key=lambda w: (-wf[w], w))
    return Vocabulary(kept, wf, df, n_docs, specials=False)


class OneTimeCorpus(ValueError):
    """:func:`_check_some_token_in_vocabulary`'s refusal of a corpus whose tokens in the vocabulary have a single
    time (``qpnlp train word2fun`` adds the corpus's files to it)."""


def _check_some_token_in_vocabulary(source, vocab: Vocabulary, scaled: bool) -> None:
    """Refuse a corpus none of whose tokens is in ``vocab`` (else an epoch of nothing gives "trained" vectors), and,
    without a ``TimeScale`` (``scaled``), one in memory whose tokens in ``vocab`` have a single time
    (:class:`OneTimeCorpus`)."""
    if source.n_tokens == 0:
        raise ValueError(f"no token of the corpus is in the vocabulary ({len(vocab)} words, e.g. "
                         f"{list(vocab.words[:3])}): pass the corpus's own vocabulary, or none")
    times = source.token_times() if isinstance(source, ArraySource) and not scaled else ()
    if len(times) == 1:
        raise OneTimeCorpus(f"every token of the vocabulary ({len(vocab)} words) is dated {times[0]:g}: the "
                            f"documents of other times hold none (empty, or words seen fewer than min_count times); "
                            f"Word2Fun needs tokens of at least two times")

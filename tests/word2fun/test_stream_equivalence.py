"""A corpus streamed from TSV files against the same corpus in memory: the same documents, vocabulary, counts,
encoded tokens and skip-gram pairs, whatever the files (plain or gzip, shards, line ends) and the chunk size; and
one chunk trains the same model bit for bit. Also: the SGD loop's one torch thread per worker makes ``fit``
independent of the torch threads set around it."""

from __future__ import annotations

import gzip
from collections import Counter

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qpnlp.data import TimestampedCorpus, TsvStream, Vocabulary, read_tsv, write_tsv
from qpnlp.data.timestamped import concatenate
from qpnlp.word2fun import TrainConfig, fit, loop
from qpnlp.word2fun import train as train_module
from qpnlp.word2fun.sources import ArraySource, StreamSource

WORDS = ["a", "b", "c", "café", "日本", "x_y", "Z"]
YEARS = [1900, 1901, 1950, 2000]
CHUNKS = [1, 2, 3, 7, 1000]
SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

#: A document: (year, tokens, a blank line before it); tokens may be none ("1900<TAB>"), one, or more than a window.
document = st.tuples(st.sampled_from(YEARS), st.lists(st.sampled_from(WORDS), max_size=9), st.booleans())
#: A shard: its documents, its line end, whether the last line ends, whether it is gzip.
shard = st.tuples(st.lists(document, max_size=6), st.sampled_from(["\n", "\r\n"]), st.booleans(), st.booleans())


def _write_shards(folder, shards) -> list:
    """The shards as files ``part-K.tsv[.gz]`` of ``folder`` (an empty shard is an empty file), sorted."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for k, (docs, eol, last_eol, gz) in enumerate(shards):
        lines = [line for t, toks, blank in docs for line in ([""] if blank else []) + [f"{t}\t{' '.join(toks)}"]]
        data = (eol.join(lines) + (eol if last_eol and lines else "")).encode("utf-8")
        path = folder / (f"part-{k}.tsv.gz" if gz else f"part-{k}.tsv")
        path.write_bytes(gzip.compress(data) if gz else data)
        paths.append(path)
    return paths


def _chunk_documents(chunks) -> list:
    """``(time, token ids)`` of every document with a token, over the chunks of a source."""
    return [(float(times[d]), tokens[doc_ids == d].tolist()) for tokens, doc_ids, times in chunks
            for d in np.unique(doc_ids).tolist()]


@SETTINGS
@given(shards=st.lists(shard, min_size=1, max_size=3), chunk=st.sampled_from(CHUNKS), min_count=st.integers(1, 3))
def test_a_stream_reads_counts_and_encodes_the_corpus_in_memory(tmp_path_factory, shards, chunk, min_count):
    paths = _write_shards(tmp_path_factory.mktemp("shards"), shards)
    memory, stream = concatenate([read_tsv(p) for p in paths]), TsvStream(paths)
    assert list(stream) == list(memory)
    if len(memory) == 0:
        return
    built = Vocabulary.build(memory.docs, min_freq=min_count, specials=False)    # fit's vocabulary in memory
    vocab, info, span, counts = train_module._vocabulary_and_corpus_info(stream, stream, 1, None, min_count)
    assert vocab.words == built.words and vocab.counts.tolist() == built.counts.tolist()
    # a stream also records how its words were read (evaluate reads a scored file the same way)
    assert info == {"documents": len(memory), "tokens": memory.n_tokens, "span": list(memory.span),
                    "lowercase": False}
    assert span == memory.span
    enc = memory.encode(built)
    source = train_module._token_source(stream, built, chunk, counts)
    chunks = list(source.chunks(None))
    assert source.n_tokens == StreamSource(stream, built, chunk).n_tokens == enc.n_tokens
    assert _chunk_documents(chunks) == _chunk_documents([(enc.tokens, enc.doc_ids, enc.times)])
    for tokens, doc_ids, times in chunks[:-1]:                  # a chunk ends once it holds chunk tokens or documents
        assert tokens.shape[0] >= chunk or times.shape[0] >= chunk
        assert tokens.shape[0] - np.count_nonzero(doc_ids == doc_ids[-1]) < chunk or times.shape[0] == chunk


@SETTINGS
@given(docs=st.lists(st.tuples(st.sampled_from(YEARS), st.lists(st.sampled_from(WORDS), max_size=9)), min_size=1,
                     max_size=10),
       chunk=st.sampled_from(CHUNKS), batch_size=st.sampled_from([1, 2, 5, 64]), seed=st.integers(0, 3))
def test_every_pair_once_whatever_the_chunks(tmp_path_factory, docs, chunk, batch_size, seed):
    """With window 1 and no subsampling the pairs are fixed: each neighbour pair of a document, both ways."""
    corpus = TimestampedCorpus.from_pairs(docs)
    vocab = Vocabulary.build(corpus.docs, min_freq=2, specials=False)
    want = Counter()
    for t, toks in corpus:
        ids = [vocab.index[w] for w in toks if w in vocab.index]
        for a, b in zip(ids, ids[1:]):
            want.update([(a, b, float(t)), (b, a, float(t))])
    path = tmp_path_factory.mktemp("c") / "c.tsv"
    write_tsv(corpus, path)
    enc = corpus.encode(vocab)
    cfg = TrainConfig(window=1, sample=0.0, batch_size=batch_size, chunk_tokens=chunk)
    for source in (ArraySource(enc.tokens, enc.doc_ids, enc.times), StreamSource(TsvStream(path), vocab, chunk)):
        pairs, progress = Counter(), []
        for run in loop._epoch_runs(source, cfg, np.random.default_rng(seed), np.ones(len(vocab)), "cpu"):
            for b in run.batches():
                assert 1 <= b.context.shape[0] <= batch_size + 2 * cfg.window - 1
                pairs.update(zip(b.words[b.pair_centre].tolist(), b.context.tolist(), b.time[b.pair_centre].tolist()))
                progress.append(b.progress)
        assert pairs == want
        assert progress == sorted(progress) and all(0 < p <= 1 for p in progress)


def _small_corpus(seed=0, n_docs=60, n_words=12):
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(n_words)]
    return TimestampedCorpus.from_pairs(
        (1900 + int(rng.integers(0, 20)), [words[j] for j in rng.integers(0, n_words, size=rng.integers(1, 15))])
        for _ in range(n_docs))


def _parameters(result) -> list[torch.Tensor]:
    return [p.detach().clone() for p in result.vectors.model.parameters()]


@pytest.mark.parametrize("family", ["IV", "static"])
def test_a_corpus_in_one_chunk_trains_the_same_streamed_or_in_memory(tmp_path, family):
    corpus = _small_corpus()
    half = len(corpus) // 3
    write_tsv(TimestampedCorpus(corpus.times[:half], corpus.docs[:half]), tmp_path / "part-0.tsv")
    write_tsv(TimestampedCorpus(corpus.times[half:], corpus.docs[half:]), tmp_path / "part-1.tsv")
    with open(tmp_path / "part-1.tsv", "rb") as src:
        (tmp_path / "part-1.tsv.gz").write_bytes(gzip.compress(src.read()))
    cfg = TrainConfig(epochs=2, batch_size=64, chunk_tokens=10_000)
    memory = fit(corpus, cfg, family=family, dim=4, min_count=1)
    streamed = fit(TsvStream([tmp_path / "part-0.tsv", tmp_path / "part-1.tsv.gz"]), cfg, family=family, dim=4,
                   min_count=1)
    assert streamed.corpus_info == {**memory.corpus_info, "lowercase": False}     # a stream records its casing
    assert streamed.vectors.vocabulary.words == memory.vectors.vocabulary.words
    assert streamed.stats.epoch_loss == memory.stats.epoch_loss and streamed.stats.pairs == memory.stats.pairs
    for p, q in zip(_parameters(streamed), _parameters(memory)):
        assert torch.equal(p, q)


@pytest.mark.parametrize("compass", ["trainable", "frozen"])
def test_fit_with_one_worker_is_the_same_on_one_or_two_torch_threads(compass):
    """The loop runs one torch thread per worker whatever the count around it (and puts that count back). (The
    compiled step's own threads, ``step_threads``, are compared in tests/word2fun/test_fused_step.py, in a process
    of their own.)"""
    corpus = _small_corpus(1, n_docs=200)
    cfg = TrainConfig(epochs=1, batch_size=64, workers=1)
    before, results = torch.get_num_threads(), []
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            results.append(fit(corpus, cfg, dim=4, min_count=1, compass=compass, compass_epochs=1))
            assert torch.get_num_threads() == threads
    finally:
        torch.set_num_threads(before)
    assert results[0].stats.epoch_loss == results[1].stats.epoch_loss
    for p, q in zip(_parameters(results[0]), _parameters(results[1])):
        assert torch.equal(p, q)


def test_a_stream_holds_no_list_of_a_chunks_ids_while_the_chunk_trains():
    """The lists of a chunk's ids, documents and times were held by the suspended generator beside the chunk's
    arrays while the chunk trained (and the next was prepared); now they are dropped before the chunk is yielded:
    what the generator holds beyond the arrays it yielded is small."""
    import tracemalloc

    class Index:                                       # the Vocabulary's ``index`` (word -> id) of 1000 words
        index = {str(w): w for w in range(1000)}

    rng = np.random.default_rng(0)
    docs = [(1900.0, [str(w) for w in rng.integers(0, 1000, 100)]) for _ in range(2000)]
    chunks = StreamSource(docs, Index, chunk_tokens=100_000).chunks(None)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        chunk = next(chunks)
        held = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert chunk[0].shape[0] == 100_000 and chunk[0].tolist()[:3] == [int(w) for w in docs[0][1][:3]]
    assert held - sum(a.nbytes for a in chunk) < 100_000            # bytes; was 0.85 MB (the lists)

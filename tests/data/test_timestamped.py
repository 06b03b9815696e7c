import bz2
import datetime
import doctest
import gc
import gzip
import re
import warnings

import numpy as np
import pytest
import torch

from qpnlp.data import TimestampedCorpus, TsvStream, Vocabulary, load_sotu, read_tsv, write_tsv
from qpnlp.data import paths
from qpnlp.data.paths import read_text
from qpnlp.data.tokenize import tokenize


def small():
    return TimestampedCorpus.from_pairs([(1900, ["a", "b", "a"]), (1950.5, ["b", "c"]), (1990, ["a"])])


def test_tsv_round_trip(tmp_path):
    c = small()
    write_tsv(c, tmp_path / "c.tsv")
    text = (tmp_path / "c.tsv").read_text()
    assert text.splitlines()[0] == "1900\ta b a"
    d = read_tsv(tmp_path / "c.tsv")
    assert d.times.tolist() == [1900.0, 1950.5, 1990.0]
    assert list(d.docs) == list(c.docs)
    assert list(d) == list(c)


def test_write_tsv_refuses_tokens_it_cannot_write(tmp_path):
    # the reader splits on whitespace: "a b" came back as two tokens and "" vanished, silently (an empty token is
    # now refused when the corpus is built: test_timestamped_robustness.py)
    for bad in (["a b", "c"], ["x\ty"], ["a\nb"]):
        with pytest.raises(ValueError, match="cannot be written"):
            write_tsv(TimestampedCorpus.from_pairs([(1900, ["ok"]), (1901, bad)]), tmp_path / "c.tsv")


def test_write_tsv_refuses_a_nul_token_that_read_tsv_would_refuse(tmp_path):
    # tokenize() makes "\x00" a token of its own; write_tsv wrote it and read_tsv refused the file it wrote ("not a
    # text file (a NUL byte ...)"): the corpus was lost at read time instead of refused at write time
    assert tokenize("a \x00 b") == ["a", "\x00", "b"]
    for bad in (["\x00"], ["a\x00b", "c"]):
        with pytest.raises(ValueError, match=re.escape(f"token {bad[0]!r} ") + ".*cannot be written.*NUL"):
            write_tsv(TimestampedCorpus.from_pairs([(1900, ["ok"]), (1901, bad)]), tmp_path / "c.tsv")
        assert not (tmp_path / "c.tsv").exists()
    separators = ["#", ",", '"', "-x", "--", "|", "\\", "1,725", "a\x01b"]   # what the format holds: read back as it is
    write_tsv(TimestampedCorpus.from_pairs([(1900, separators)]), tmp_path / "c.tsv")
    assert read_tsv(tmp_path / "c.tsv").docs == (separators,)


def test_write_tsv_leaves_no_partial_file(tmp_path):
    # it raised at the bad document after writing the ones before it: a half-written corpus was left behind
    p = tmp_path / "c.tsv"
    bad = TimestampedCorpus.from_pairs([(1900, ["ok"]), (1901, ["fine"]), (1902, ["a b"])])
    with pytest.raises(ValueError, match="cannot be written"):
        write_tsv(bad, p)
    assert list(tmp_path.iterdir()) == []
    write_tsv(small(), p)
    before = p.read_bytes()
    with pytest.raises(ValueError, match="cannot be written"):
        write_tsv(bad, p)
    assert p.read_bytes() == before and list(tmp_path.iterdir()) == [p]  # an existing file is left as it was


def test_write_tsv_is_atomic_when_the_write_itself_fails(tmp_path, monkeypatch):
    # it wrote in place: a write that failed (disk full, Ctrl-C) left the first part of the corpus, which reads
    # back without an error as a shorter corpus
    p = tmp_path / "c.tsv"
    write_tsv(small(), p)
    before = p.read_bytes()

    def disk_full(fd):
        raise OSError("disk full")

    monkeypatch.setattr("os.fsync", disk_full)
    with pytest.raises(OSError, match="disk full"):
        write_tsv(TimestampedCorpus.from_pairs([(2000, ["new"])]), p)
    assert p.read_bytes() == before and list(tmp_path.iterdir()) == [p]


def test_from_pairs_refuses_a_string_for_the_tokens():
    # list("a b") would be the characters ["a", " ", "b"]
    with pytest.raises(TypeError, match="list of tokens"):
        TimestampedCorpus.from_pairs([(1900, "a b")])


@pytest.mark.parametrize("bad, error, fragment", [
    (None, TypeError, "time of document 1 must be a number .*got None"),
    ("soon", ValueError, "time of document 1 must be a number .*got 'soon'"),
    (datetime.datetime(1950, 5, 1), TypeError, r"time of document 1 is the date .*pass its year \(1950\)"),
    (datetime.date(1950, 5, 1), TypeError, r"time of document 1 is the date .*pass its year \(1950\)"),
    (np.datetime64("1950-05-01"), TypeError, "time of document 1 is the date"),
])
def test_a_time_that_is_not_a_number_names_the_document(bad, error, fragment):
    """A None or a date gave float()'s bare TypeError, naming neither the time nor the document."""
    with pytest.raises(error, match=fragment):
        TimestampedCorpus.from_pairs([(1900, ["a"]), (bad, ["b"])])
    with pytest.raises(error, match=fragment):
        TimestampedCorpus(np.array([1900, bad], dtype=object), (["a"], ["b"]))


def test_the_constructor_converts_no_date_and_no_none_into_a_number():
    """numpy made days since 1970 of a datetime64 array and NaN of a None, without a word."""
    with pytest.raises(TypeError, match="time of document 0 is the date"):
        TimestampedCorpus(np.array(["1950-05-01"], dtype="datetime64[D]"), (["a"],))
    with pytest.raises(TypeError, match="time of document 1 must be a number .*got None"):
        TimestampedCorpus([1900, None], (["a"], ["b"]))
    with pytest.raises(ValueError, match="times must be finite; got nan at index 1"):
        TimestampedCorpus([1900, float("nan")], (["a"], ["b"]))
    assert TimestampedCorpus(["1950"], (["a"],)).times.tolist() == [1950.0]   # a numeric string, as float() reads it


def test_complex_times_are_refused_not_read_as_their_real_part():
    """float() of each complex time dropped its imaginary part (1900+5j became 1900) with only a numpy warning."""
    for times in (np.array([1900 + 5j, 1910]), [1900, 1910j]):
        with pytest.raises(TypeError, match="times must be real numbers .*complex128"):
            TimestampedCorpus(times, (["a"], ["b"]))
    assert TimestampedCorpus(np.array([1900, 1910], np.int32), (["a"], ["b"])).times.tolist() == [1900.0, 1910.0]


def test_times_of_any_tensor_layout_are_the_plain_times(real_layout):
    """A tensor that requires grad, a negative-bit view or bfloat16 raised in np.asarray (torch's "Can't call
    numpy() on Tensor that requires grad", "Got unsupported ScalarType BFloat16")."""
    times = torch.tensor([1904.0, 1952.0], dtype=torch.float64)                  # values bfloat16 holds
    assert TimestampedCorpus(real_layout(times), (["a"], ["b"])).times.tolist() == [1904.0, 1952.0]


def test_tsv_stream_shard_checks_the_rank(tmp_path):
    paths = []
    for i in range(4):
        paths.append(tmp_path / f"c{i}.tsv")
        paths[-1].write_text(f"{1900 + i}\ta\n")
    stream = TsvStream(paths)
    assert [t for t, _ in stream.shard(1, 2)] == [1901.0, 1903.0]
    for rank, world in [(-1, 2), (2, 2), (3, 2), (0, 0)]:  # (-1, 2) and (3, 2) gave the files of another rank
        with pytest.raises(ValueError, match="rank"):
            stream.shard(rank, world)


def test_read_tsv_errors_name_the_line(tmp_path):
    p = tmp_path / "bad.tsv"
    p.write_text("1900\ta b\n\nno tab here\n")
    with pytest.raises(ValueError, match=":3: expected"):
        read_tsv(p)
    p.write_text("year\ta b\n")
    with pytest.raises(ValueError, match="not a number .a header line"):
        read_tsv(p)
    p.write_text("1900\ta b\nnineteen\ta b\n")
    with pytest.raises(ValueError, match=r":2: time 'nineteen' is not a number$"):  # no header hint past line 1
        read_tsv(p)


def test_read_tsv_cr_line_ends(tmp_path):
    # old-Mac files end lines with "\r" only: the file was read as one document, later years became tokens
    p = tmp_path / "c.tsv"
    want = [(1900.0, ["a", "b"]), (1901.0, ["c"]), (1902.0, ["d"])]
    p.write_bytes(b"1900\ta b\r1901\tc\r\r1902\td\r")
    assert list(read_tsv(p)) == want
    assert [t for t, _ in TsvStream([p]).shard(1, 2)] == [1901.0]
    p.write_bytes(gzip.compress(b"\xef\xbb\xbf1900\ta b\r1901\tc\r\r1902\td"))
    assert list(read_tsv(p)) == want
    p.write_bytes(b"1900\ta\rno tab\r")
    with pytest.raises(ValueError, match=":2: expected 'TIME<TAB>tokens'"):
        read_tsv(p)
    # files with "\n" line ends read as before: a stray "\r" inside a line is whitespace
    p.write_bytes(b"1900\ta\rb\r\n1901\tc\r\n")
    assert list(read_tsv(p)) == [(1900.0, ["a", "b"]), (1901.0, ["c"])]
    p.write_bytes(b"1900\ta\rb\n1901\tc")
    assert list(read_tsv(p)) == [(1900.0, ["a", "b"]), (1901.0, ["c"])]


def test_read_tsv_streams_cr_line_ends(tmp_path, monkeypatch):
    # an old-Mac file was read as one line, in memory: one longer than MAX_LINE_BYTES was refused as a long line
    monkeypatch.setattr(paths, "MAX_LINE_BYTES", 64)
    p = tmp_path / "c.tsv"
    p.write_bytes(b"".join(b"%d\tw%d\r" % (1900 + i, i) for i in range(50)))
    assert list(read_tsv(p)) == [(1900.0 + i, [f"w{i}"]) for i in range(50)]


def test_read_tsv_encodings(tmp_path):
    p = tmp_path / "c.tsv"
    p.write_bytes("\ufeff1900\tcafé b\n".encode("utf-8"))  # a UTF-8 byte-order mark is dropped
    assert list(read_tsv(p)) == [(1900.0, ["café", "b"])]
    p.write_bytes("1900\ta b\n1901\tcafé\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"c.tsv:2: not utf-8 text \(byte 0xe9 at column 9\); convert"):
        read_tsv(p)
    p.write_bytes("1900\ta b\n".encode("utf-16"))
    with pytest.raises(ValueError, match="UTF-16 encoded"):
        read_tsv(p)
    p.write_bytes(bz2.compress(b"1900\ta b\n"))
    with pytest.raises(ValueError, match="is a bzip2; extract it first"):
        read_tsv(p)
    p.write_bytes(gzip.compress(b"1900\ta b\n")[:12])
    with pytest.raises(ValueError, match="truncated or corrupt"):
        read_tsv(p)
    p.write_bytes(gzip.compress("1900\tcafé\n".encode()))
    assert list(read_tsv(p)) == [(1900.0, ["café"])]


def test_a_corrupt_gzip_block_names_the_file_and_the_last_line_read(tmp_path):
    """Corrupt compressed data in the middle of a streamed gzip file raised zlib's bare ``error: Error -3 ...``,
    naming no file; now the ValueError of a truncated file, with the file and the last line read."""
    good = gzip.compress(b"1900\ta b\n1901\tb c\n", mtime=0)
    bad = bytearray(gzip.compress(b"1902\tc d\n", mtime=0))
    bad[10] |= 0x06                                    # the first deflate block of the second member: reserved type
    p = tmp_path / "c.tsv.gz"
    p.write_bytes(good + bytes(bad))
    with pytest.raises(ValueError, match=r"c.tsv.gz: truncated or corrupt gzip file after line 2 \(.*invalid block"):
        list(TsvStream([p]))
    with pytest.raises(ValueError, match=r"c.tsv.gz: truncated or corrupt gzip file"):
        read_text(p)


def test_a_gzip_file_corrupt_in_its_first_block_says_before_the_first_line(tmp_path):
    """The message said "after line 0" where no line could be read."""
    from qpnlp.data.paths import iter_lines

    bad = bytearray(gzip.compress(b"1900\ta b\n", mtime=0))
    bad[10] |= 0x06                                    # the first deflate block: reserved type
    p = tmp_path / "c.tsv.gz"
    p.write_bytes(bytes(bad))
    with pytest.raises(ValueError, match=r"c.tsv.gz: truncated or corrupt gzip file before the first line \("):
        list(iter_lines(p))


def test_vocabulary_and_encoding_drop_rare_words():
    c = small()
    v = Vocabulary.build(c.docs, min_freq=2, specials=False)
    assert v.words == ["a", "b"] and v.counts.tolist() == [3, 2]
    e = c.encode(v)
    assert e.tokens.tolist() == [0, 1, 0, 1, 0]
    assert e.doc_ids.tolist() == [0, 0, 0, 1, 2]
    assert e.token_times().tolist() == [1900, 1900, 1900, 1950.5, 1990]
    with pytest.raises(KeyError, match="'c'"):
        v.ids(["a", "c"])
    with pytest.raises(TypeError, match="corpus.docs"):
        Vocabulary.build(c, specials=False)


def test_span_shuffle_and_between():
    c = small()
    assert c.span == (1900.0, 1990.0) and c.n_tokens == 6
    s = c.with_shuffled_times(seed=3)
    assert sorted(s.times.tolist()) == sorted(c.times.tolist()) and s.docs == c.docs
    assert len(c.between(1900, 1960)) == 2


@pytest.mark.parametrize("seed", range(3))
def test_between_by_one_mask_keeps_what_a_comparison_per_document_keeps(seed):
    rng = np.random.default_rng(seed)
    for n in (1, 2, 50):
        c = TimestampedCorpus(rng.integers(3800, 3812, size=n) / 2,
                              tuple([f"d{i}"] for i in range(n)))                  # equal times: ties
        for start, end in ((1900, 1903), (1902, 1902), (1899, 1910), (1903.5, 1904), (1910, 1920)):
            keep = [i for i, t in enumerate(c.times.tolist()) if start <= t < end]
            got = c.between(start, end)
            assert got.times.tolist() == c.times[keep].tolist() and got.docs == tuple(c.docs[i] for i in keep)


def test_mismatched_times_rejected():
    with pytest.raises(ValueError, match="2 entries"):
        TimestampedCorpus(np.array([1.0, 2.0]), (["a"],))


def test_tokenize():
    assert tokenize("War, and PEACE's end 1812", style="alpha") == ["war", "and", "peace's", "end"]


def test_sotu_reader():
    c = load_sotu()
    t0, t1 = c.span
    assert t0 == 1790 and t1 >= 2020
    assert len(c) > 10_000 and c.n_tokens > 1_000_000
    assert all(len(d) >= 3 for d in c.docs[:100])
    assert all(t == tokenize(" ".join(t), style="alpha") for t in c.docs[:100])


def test_sotu_units():
    speeches = load_sotu(unit="speech", min_tokens=1)
    sentences = load_sotu(unit="sentence", min_tokens=1, style="ptb")
    assert len(speeches) < 300 < len(sentences) and speeches.span == sentences.span
    assert sentences.docs[0][-1] in {".", "!", "?", ":", '"', "''"}  # punctuation is kept by the ptb style
    assert not any("applause" in d for d in sentences.docs[-2000:])  # transcript notes are removed
    with pytest.raises(ValueError, match="unit must be one of"):
        load_sotu(unit="chapter")


def test_the_tsv_stream_example_closes_the_file_it_writes():
    # the docstring's example wrote its file with open(path, "w").write(...), never closed: every doctest run
    # warned "ResourceWarning: unclosed file"
    from qpnlp.data import timestamped

    [example] = [t for t in doctest.DocTestFinder().find(TsvStream, globs=vars(timestamped).copy())
                 if t.name == "TsvStream"]
    runner = doctest.DocTestRunner()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        runner.run(example)
        gc.collect()
    assert runner.summarize(verbose=False) == (0, len(example.examples))
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)], [str(w.message) for w in caught]


def test_repr_is_short_and_never_prints_the_documents():
    docs = tuple([f"w{i % 50}" for i in range(j, j + 30)] for j in range(2000))
    corpus = TimestampedCorpus(np.arange(2000.0), docs)
    text = repr(corpus)
    assert text == "TimestampedCorpus(n_docs=2000, n_tokens=60000, span=(0, 1999))"
    assert repr(TimestampedCorpus(np.zeros(0), ())) == "TimestampedCorpus(n_docs=0, n_tokens=0)"
    encoded = corpus.encode(Vocabulary.build(docs, specials=False))
    assert repr(encoded) == "EncodedCorpus(n_docs=2000, n_tokens=60000)"

"""What Word2Fun corpora accepted silently: a NUL byte in a TSV line, a time written 1_900, 2-D times, the
empty token, and bounds of ``between`` that are no real numbers (a list, an array, a bool), NaN or reversed."""

import math

import numpy as np
import pytest

from qpnlp.data import TimestampedCorpus, TsvStream, read_tsv
from qpnlp.word2fun import TrainConfig, fit


def _tsv(tmp_path, data: bytes):
    path = tmp_path / "c.tsv"
    path.write_bytes(data)
    return path


def test_a_nul_byte_in_a_tsv_line_is_refused_with_the_line(tmp_path):
    """read_text refuses binary files; read_tsv took the NUL as part of a token."""
    path = _tsv(tmp_path, b"1900\ta b\n1901\tc \x00d\n")
    with pytest.raises(ValueError, match=r"c.tsv:2: not a text file \(a NUL byte at column 8\)"):
        read_tsv(path)
    with pytest.raises(ValueError, match=r"c.tsv:2: not a text file"):
        list(TsvStream([path]))


@pytest.mark.parametrize("time", ["1_900", "19_00.5", "\u0661\u0669\u0660\u0660"])   # the last: Arabic-Indic digits
def test_a_time_that_float_reads_but_is_no_plain_number_is_refused(tmp_path, time):
    path = _tsv(tmp_path, f"1900\ta b\n{time}\tc d\n".encode())
    with pytest.raises(ValueError, match=f":2: time '{time}' is not a plain number"):
        read_tsv(path)
    with pytest.raises(ValueError, match=f"time of document 1 must be a plain number .*got '{time}'"):
        TimestampedCorpus.from_pairs([(1900, ["a"]), (time, ["b"])])
    with pytest.raises(ValueError, match="time of document 0 must be a plain number"):
        TimestampedCorpus(np.array([time]), (["a"],))


def test_plain_numbers_are_still_read(tmp_path):
    path = _tsv(tmp_path, b"1900\ta\n-12.5\tb\n+1.9e3\tc\n.5\td\n1950.\te\n")
    assert read_tsv(path).times.tolist() == [1900.0, -12.5, 1900.0, 0.5, 1950.0]
    assert TimestampedCorpus(["1950", " 1960 "], (["a"], ["b"])).times.tolist() == [1950.0, 1960.0]


@pytest.mark.parametrize("times, shape", [(np.array([[1900, 1901]]), r"\(1, 2\)"),
                                          (np.array([[1900], [1901]]), r"\(2, 1\)"),
                                          (np.float64(1900), r"\(\)")])
def test_times_must_be_one_dimensional(times, shape):
    """reshape(-1) flattened a (1, 2) array of times into two documents' times without a word."""
    docs = (["a"], ["b"]) if np.size(times) == 2 else (["a"],)
    with pytest.raises(ValueError, match=f"times must be 1-D, one time per document; got an array of shape {shape}"):
        TimestampedCorpus(times, docs)


def test_the_empty_token_is_refused_naming_the_document():
    with pytest.raises(ValueError, match=r"document 1 \(time 1901\) holds an empty token ''"):
        TimestampedCorpus.from_pairs([(1900, ["a", "b"]), (1901, ["c", ""])])
    with pytest.raises(ValueError, match=r"document 0 \(time 1950.5\) holds an empty token"):
        TimestampedCorpus(np.array([1950.5]), ([""],))


def test_fit_never_sees_an_empty_token():
    """fit trained a vector for the word '' (its corpus is a TimestampedCorpus: refused when it is built)."""
    with pytest.raises(ValueError, match="holds an empty token"):
        fit(TimestampedCorpus.from_pairs([(1900 + i, ["war", "", "peace"]) for i in range(10)]),
            TrainConfig(epochs=1, sample=0), dim=4, min_count=1)


def _three() -> TimestampedCorpus:
    return TimestampedCorpus.from_pairs([(1900, ["a"]), (1950, ["b"]), (2000, ["c"])])


@pytest.mark.parametrize("bound", [[1900, 1950], np.array([1900]), np.array(1900.0), "1900", True, np.True_, None,
                                   1900 + 0j])
@pytest.mark.parametrize("which", ["start", "end"])
def test_between_refuses_a_bound_that_is_not_a_real_number(bound, which):
    """A list or an array was broadcast against the times (a broadcast error, or a corpus cut by an array), a
    bool compared as 0 or 1, a string raised numpy's UFuncTypeError."""
    start, end = (bound, 2000) if which == "start" else (1900, bound)
    with pytest.raises(TypeError, match=f"between\\(start, end\\): {which} must be a real number .*got "):
        _three().between(start, end)


@pytest.mark.parametrize("start, end, match", [(float("nan"), 2000, "start must be a number, not NaN"),
                                               (1900, np.float64("nan"), "end must be a number, not NaN"),
                                               (2000, 1950.5, "needs start <= end; got start 2000 > end 1950.5")])
def test_between_refuses_nan_and_a_start_after_the_end(start, end, match):
    """Both gave an empty corpus without a word."""
    with pytest.raises(ValueError, match=match):
        _three().between(start, end)


def test_between_takes_numpy_scalars_infinities_and_an_empty_interval():
    corpus = _three()
    assert corpus.between(np.float32(1900), np.int64(2000)).times.tolist() == [1900.0, 1950.0]
    assert corpus.between(1950, math.inf).times.tolist() == [1950.0, 2000.0]
    assert corpus.between(-math.inf, 10 ** 400).times.tolist() == [1900.0, 1950.0, 2000.0]   # an int beyond floats
    assert len(corpus.between(1950, 1950)) == 0 and len(corpus.between(1950, np.nextafter(1950, 2000))) == 1


@pytest.mark.parametrize("bad", [[_three(), None], [_three(), [(1900, ["a"])]], ["corpus.tsv"]])
def test_concatenate_refuses_what_is_not_a_corpus(bad):
    """Before: an AttributeError ("'NoneType' object has no attribute 'times'") naming no entry."""
    from qpnlp.data import concatenate
    with pytest.raises(TypeError, match=rf"corpora\[{len(bad) - 1}\] must be a TimestampedCorpus; got "):
        concatenate(bad)

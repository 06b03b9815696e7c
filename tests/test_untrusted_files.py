"""Loading files someone else made: sizes are checked before memory is allocated, only regular files are read
from a model directory, and errors show at most a preview of what a file holds (docs: "Loading files you did not
make")."""

import gzip
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import qpnlp.data.paths as paths_module
from qpnlp.data import Vocabulary, read_tsv
from qpnlp.data.paths import iter_lines
from qpnlp.data.vectors import MAX_GZIP_WORD2VEC_DIM, read_word2vec_binary
from qpnlp.models import QPDN, QPDNConfig, read_model_header
from qpnlp.models.base import CONFIG_FILE
from qpnlp.training.checkpoint import save_checkpoint
from qpnlp.word2fun import convert_legacy_word2fun

LEGACY = Path(__file__).parent / "word2fun" / "data" / "legacy-word2fun-0.1"
posix_only = pytest.mark.skipif(os.name != "posix", reason="/dev/zero and FIFOs are POSIX")


# --------------------------------------------------------------------------- sizes announced by a file
def test_a_word2vec_header_of_a_huge_dimension_reads_blocks_not_the_announced_vector(tmp_path):
    """``read1(4 d)`` allocated the 400 GB a header "1 100000000000" announces before reading 16 bytes."""
    path = tmp_path / "v.bin"
    path.write_bytes(b"1 100000000000\nw " + bytes(16))
    with pytest.raises(ValueError, match="entry 1 of 1 has 16 of 400000000000 vector bytes"):
        read_word2vec_binary(path)


def test_a_gzip_word2vec_file_may_not_announce_vectors_larger_than_the_limit(tmp_path):
    """A gzip file's decompressed size is unknown: a bomb announcing one huge vector had its stream buffered whole."""
    path = tmp_path / "v.bin.gz"
    path.write_bytes(gzip.compress(b"1 %d\nw " % (MAX_GZIP_WORD2VEC_DIM + 1) + bytes(1 << 16)))
    with pytest.raises(ValueError, match=f"read up to dimension {MAX_GZIP_WORD2VEC_DIM}"):
        read_word2vec_binary(path)


def test_streamed_lines_are_bounded(tmp_path, monkeypatch):
    """A line (of a gzip bomb without line ends, say) is refused at MAX_LINE_BYTES, not read whole."""
    monkeypatch.setattr(paths_module, "MAX_LINE_BYTES", 1000)
    path = tmp_path / "corpus.tsv"
    path.write_bytes(gzip.compress(b"1900\t" + b"a " * 497 + b"\n" + b"1901\t" + b"b" * 5000 + b"\n"))
    lines = iter_lines(path)
    assert len(next(lines)[1]) == 1000                  # exactly the limit, line end included: read
    with pytest.raises(ValueError, match=r"corpus.tsv:2: a line longer than 1000 bytes"):
        next(lines)
    with pytest.raises(ValueError, match="longer than 1000 bytes"):
        read_tsv(path)


def test_a_legacy_word2fun_config_is_checked_before_the_model_is_allocated(tmp_path):
    """A qpnlp 0.1 config of dimension 10**12 next to small weights: 24 TB were asked for before any check."""
    old = tmp_path / "old"
    shutil.copytree(LEGACY, old)
    meta = json.loads((old / "config.json").read_text())
    meta["model"]["dim"] = 10 ** 12
    (old / "config.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="does not match its config: tensor .* but the config describes"):
        convert_legacy_word2fun(old, tmp_path / "new")
    assert not (tmp_path / "new").exists()


# --------------------------------------------------------------------------- files that are no regular files
@pytest.fixture
def checkpoint(tmp_path):
    vocab = Vocabulary.build([["a", "b"]])
    model = QPDN(QPDNConfig(num_words=len(vocab), num_classes=2, dim=4, num_measurements=2))
    return save_checkpoint(tmp_path / "model", model, vocabulary=vocab)


def _load_in_child(directory: Path) -> str:
    """``load_checkpoint(directory)`` in a child limited to 1 GiB more memory and 60 s: the error it raises."""
    code = textwrap.dedent(f"""
        import resource
        from qpnlp.training.checkpoint import load_checkpoint
        with open("/proc/self/statm") as f:
            used = int(f.read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (used + (1 << 30), resource.RLIM_INFINITY))
        try:
            load_checkpoint({str(directory)!r})
        except BaseException as err:
            print(type(err).__name__, err)
    """)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}).stdout


@posix_only
@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="needs /proc")
def test_a_vocabulary_linked_to_a_device_is_refused(checkpoint):
    """A vocabulary.json linked to /dev/zero was read until memory ran out."""
    (checkpoint / "vocabulary.json").unlink()
    (checkpoint / "vocabulary.json").symlink_to("/dev/zero")
    assert "ValueError" in _load_in_child(checkpoint) and "not a regular file" in _load_in_child(checkpoint)


@posix_only
@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="needs /proc")
def test_weights_that_are_a_fifo_are_refused(checkpoint):
    """A model.safetensors that is a FIFO blocked the load until some process wrote to it."""
    (checkpoint / "model.safetensors").unlink()
    os.mkfifo(checkpoint / "model.safetensors")
    assert "model.safetensors: not a readable safetensors file (not a regular file)" in _load_in_child(checkpoint)


# --------------------------------------------------------------------------- errors quote previews of files
LONG = "x" * 100_000


def _config(checkpoint: Path, **changes) -> None:
    header = json.loads((checkpoint / CONFIG_FILE).read_text())
    (checkpoint / CONFIG_FILE).write_text(json.dumps({**header, **changes}))


@pytest.mark.parametrize("changes", [dict(model=LONG), dict(format=LONG), dict(qpnlp_version=[LONG]),
                                     dict(config={"dim": LONG})], ids=["model", "format", "version", "config"])
def test_errors_on_a_model_directory_quote_a_preview(checkpoint, changes):
    from qpnlp.models import Model

    if "config" in changes:
        changes = dict(config={**read_model_header(checkpoint)["config"], **changes["config"]})
    _config(checkpoint, **changes)
    with pytest.raises(ValueError) as caught:
        Model.from_pretrained(checkpoint)
    assert len(str(caught.value)) < 1000 and "xxx..." in str(caught.value)


def test_errors_on_data_files_quote_a_preview(tmp_path):
    corpus = tmp_path / "corpus.tsv"
    corpus.write_text(LONG + "\tfoo\n")
    with pytest.raises(ValueError, match=r"time 'x+\.\.\. is not a number") as caught:
        read_tsv(corpus)
    assert len(str(caught.value)) < 1000
    vectors = tmp_path / "vectors.txt"
    vectors.write_text(f"{LONG} 1.0\nword {LONG}\n")
    from qpnlp.data import load_glove_text

    with pytest.raises(ValueError, match="non-numeric value") as caught:
        load_glove_text(vectors)
    assert len(str(caught.value)) < 1000
    for data in ({"format": LONG}, {"format": "qpnlp.Vocabulary/1", **{f"k{i}": 0 for i in range(10_000)}}):
        with pytest.raises(ValueError) as caught:
            Vocabulary.from_dict(data)
        assert len(str(caught.value)) < 1000

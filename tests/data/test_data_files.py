"""Data files as users have them: compressed, binary, mis-encoded, empty, with one class; and too-small protocols."""

import bz2
import gzip
import lzma
import re
import zipfile

import numpy as np
import pytest

from qpnlp.data import ClassificationDataset, load_classification, load_qa, read_qa_tsv, splits
from qpnlp.data.classification import read_label_files, read_trec, read_tsv
from qpnlp.data.paths import find_file, read_text
from qpnlp.data.protocols import Split, carve_dev


@pytest.mark.parametrize("compress", [gzip.compress, bz2.compress, lzma.compress], ids=["gzip", "bzip2", "xz"])
def test_compressed_files_read_like_the_plain_file(fake_root, compress):
    plain = load_classification("CR", root=fake_root)
    for name in ("custrev.pos", "custrev.neg"):
        path = fake_root / "classification" / "CR" / name
        path.write_bytes(compress(path.read_bytes()))
    compressed = load_classification("CR", root=fake_root)
    assert compressed.texts == plain.texts and compressed.labels.tolist() == plain.labels.tolist()


def test_a_gz_file_is_found_when_the_plain_name_is_absent(fake_root):
    plain = load_qa("wikiqa", "dev", root=fake_root)
    path = fake_root / "qa" / "wikiqa" / "dev.tsv"
    path.with_name("dev.tsv.gz").write_bytes(gzip.compress(path.read_bytes()))
    path.unlink()
    assert find_file(path.parent, "dev.tsv").name == "dev.tsv.gz"
    again = load_qa("wikiqa", "dev", root=fake_root)
    assert again.questions == plain.questions and again.candidates == plain.candidates
    with pytest.raises(FileNotFoundError, match="present splits: dev, train"):
        load_qa("wikiqa", "test", root=fake_root)


def test_archives_binary_utf16_and_corrupt_files_are_refused_with_the_file_named(tmp_path):
    archive = tmp_path / "rt-polarity.pos"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("inner.txt", "good film .\n")
    with pytest.raises(ValueError, match=r"rt-polarity.pos is a zip archive; extract it first"):
        read_text(archive)
    binary = tmp_path / "model.bin"
    binary.write_bytes(b"good film .\nnice \x00\x01 plot\n")
    with pytest.raises(ValueError, match=r"model.bin is not a text file \(a NUL byte on line 2, byte offset 17\)"):
        read_text(binary)
    utf16 = tmp_path / "u16.txt"
    utf16.write_bytes("good film .\n".encode("utf-16"))
    with pytest.raises(ValueError, match="u16.txt is UTF-16 encoded"):
        read_text(utf16)
    truncated = tmp_path / "t.tsv"
    truncated.write_bytes(gzip.compress(b"q ?\ta .\t1\n" * 50)[:30])
    with pytest.raises(ValueError, match="t.tsv: truncated or corrupt gzip file"):
        read_text(truncated)
    with pytest.raises(ValueError, match="is a directory"):
        read_text(tmp_path)


def test_gzip_data_is_never_read_as_latin1_sentences(tmp_path):
    """The old reader decoded a gzip file as ISO-8859-1 and trained on the bytes; now it reads the text inside."""
    (tmp_path / "a").write_bytes(gzip.compress(b"fine film .\n"))
    (tmp_path / "b").write_bytes(b"dull film .\n")
    texts, labels, _ = read_label_files({1: tmp_path / "a", 0: tmp_path / "b"})
    assert texts == [["dull", "film", "."], ["fine", "film", "."]] and labels == [0, 1]


def test_a_decoding_error_names_the_file_line_column_and_encoding(tmp_path):
    path = tmp_path / "dev.tsv"
    path.write_bytes(b"q ?\ta .\t1\nq ?\tb .\t0\nwh\xffo ?\tc .\t0\n")
    with pytest.raises(ValueError, match=r"dev.tsv:3: cannot decode byte 0xff at column 3 as utf-8"):
        read_qa_tsv(path)
    assert read_text(path, ("utf-8", "iso-8859-1")).splitlines()[2].startswith("wh\u00ffo")
    bom = tmp_path / "bom.tsv"
    bom.write_bytes(b"\xef\xbb\xbfq ?\ta .\t1\nq ?\tb .\t0\n")
    assert read_qa_tsv(bom).questions == ["q ?"]                 # a UTF-8 byte-order mark is dropped


def test_empty_files_are_refused_with_the_file_named(fake_root, tmp_path):
    (fake_root / "classification" / "MR" / "rt-polarity.neg").write_text("\n  \n")
    with pytest.raises(ValueError, match=r"rt-polarity.neg: no sentence in the file"):
        load_classification("MR", root=fake_root)
    (fake_root / "classification" / "SST2" / "dev.tsv").write_text("")
    with pytest.raises(ValueError, match=r"SST2/dev.tsv: no item in the file"):
        load_classification("SST2", root=fake_root)
    (fake_root / "classification" / "TREC" / "TREC_10.label").write_text("\n")
    with pytest.raises(ValueError, match=r"TREC_10.label: no item in the file"):
        load_classification("TREC", root=fake_root)
    (fake_root / "qa" / "wikiqa" / "dev.tsv").write_text("\n\n")
    with pytest.raises(ValueError, match=r"dev.tsv: no question in the file"):
        load_qa("wikiqa", "dev", root=fake_root)
    for reader in (read_tsv, read_trec):
        (tmp_path / "e").write_text("")
        with pytest.raises(ValueError, match="no item"):
            reader(tmp_path / "e")


def test_a_split_without_a_rankable_question_is_refused(tmp_path):
    path = tmp_path / "dev.tsv"
    path.write_text("q ?\ta .\t1\nr ?\tb .\t0\n")
    with pytest.raises(ValueError, match=r"dev.tsv: none of its 2 question\(s\) is left after the filter 'clean'"):
        read_qa_tsv(path)
    assert read_qa_tsv(path, filter_questions=False).n_questions == 2


def test_a_set_with_fewer_than_two_classes_is_refused(fake_root):
    sst2 = fake_root / "classification" / "SST2"
    for split in ("train", "dev", "test"):
        (sst2 / f"{split}.tsv").write_text("good \t1\nfine \t1\n")
    with pytest.raises(ValueError, match=r"the SST2 \(.*\) holds fewer than two classes \(6 'pos'\)"):
        load_classification("SST2", root=fake_root)
    (sst2 / "test.tsv").write_text("bad \t0\n")                   # two classes overall, one in training
    with pytest.raises(ValueError, match="the train split of SST2 .* holds fewer than two classes"):
        load_classification("SST2", root=fake_root)


def test_a_training_part_with_one_class_is_refused():
    from qpnlp.training.classification import prepare

    data = ClassificationDataset("toy", [["a"], ["b"], ["c"], ["d"]], np.array([0, 0, 1, 1]), ("n", "p"))
    with pytest.raises(ValueError, match=r"training part of toy s holds only the class \['n'\]"):
        prepare(data, Split("s", np.array([0, 1]), np.array([2]), np.array([3])), None)


def test_a_test_class_that_training_lacks_is_warned_about(fake_root):
    """TREC's test here holds DESC, which its training file lacks: it trained silently, the item unpredictable."""
    import warnings

    from qpnlp.training.classification import prepare

    trec = load_classification("TREC", root=fake_root)
    split = next(splits(trec))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        prepare(trec, split, None)
    said = sorted(str(w.message) for w in seen if issubclass(w.category, UserWarning))
    assert said[0].startswith("the dev part of TREC fixed holds 1 of its 1 items in a class that its training part "
                              "lacks ('NUM' 1)")                 # the one NUM question was carved into dev
    assert re.fullmatch(r"the test part of TREC fixed holds 1 of its 2 items in a class that its training part lacks "
                        r"\('DESC' 1\): .* test accuracy is at most 0.5000", said[1])
    sst2 = load_classification("SST2", root=fake_root)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                          # every dev and test class is trained: no warning
        prepare(sst2, next(splits(sst2)), None)


def test_protocols_on_tiny_sets_give_clear_errors(fake_root):
    mr = load_classification("MR", root=fake_root)           # one sentence per class
    with pytest.raises(ValueError, match=r"MR is too small for 10-fold cross-validation \(2 items: 'neg' 1, "
                                         r"'pos' 1\); use fewer folds"):
        next(splits(mr))
    with pytest.raises(ValueError, match="cannot carve a dev set from a training part of 1 item"):
        carve_dev(np.array([0]), np.array([0, 1]))
    labels = np.array([0, 1, 2] * 2)                          # 3 classes, dev of 1 item: not stratified, no error
    train, dev = carve_dev(np.arange(6), labels, dev_fraction=0.1)
    assert len(dev) == 1 and len(train) == 5


def test_limit_questions_refuses_zero_and_negative(fake_root):
    from qpnlp.training.matching import limit_questions

    dev = load_qa("wikiqa", "dev", root=fake_root)
    for n in (0, -1, 1.5):
        with pytest.raises(ValueError, match="an integer >= 1"):
            limit_questions(dev, n)
    assert limit_questions(dev, 1).n_questions == 1


def test_a_file_mixing_utf8_with_another_encoding_is_refused_not_garbled(tmp_path):
    """ISO-8859-1 decodes any bytes: as a fallback it used to turn every UTF-8 'é' of a mixed file into 'Ã©'."""
    mixed = tmp_path / "mixed.pos"
    mixed.write_bytes("a café .\n".encode("utf-8") + b"ok\nna\xefve \x85 yes\n")
    with pytest.raises(ValueError, match=r"mixed.pos: mixed encodings: line 1 has UTF-8 text \('é'\) but line 3 "
                                         r"has byte 0xef at column 3"):
        read_label_files({1: mixed})
    latin = tmp_path / "latin.pos"                         # one encoding throughout: the fallback still reads it
    latin.write_bytes("a café .\nna\u00efve .\n".encode("iso-8859-1"))
    assert read_label_files({1: latin})[0] == [["a", "café", "."], ["naïve", "."]]
    assert read_text(mixed, ("iso-8859-1",)).startswith("a cafÃ©")  # asked for explicitly, no UTF-8 first: as asked


def test_a_label_that_is_a_digit_but_not_a_number_names_the_line(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_text("good film\t1\nbad film\t\u00b2\n", encoding="utf-8")   # '²'.isdigit() is True, int('²') fails
    with pytest.raises(ValueError, match=r"train.tsv:2: expected 'text<TAB>label'"):
        read_tsv(path)

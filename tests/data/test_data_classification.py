import numpy as np
import pytest

from qpnlp.data.classification import (
    ClassificationDataset,
    load_classification,
    read_label_files,
    read_trec,
    read_tsv,
)


def test_unknown_name_lists_valid_names(fake_root):
    with pytest.raises(ValueError, match="unknown classification data set 'IMDB'; valid names: CR, MPQA, MR, SUBJ, SST2, TREC"):
        load_classification("IMDB", root=fake_root)


def test_names_are_case_insensitive(fake_root):
    assert load_classification("mr", root=fake_root).name == "MR"
    assert load_classification("Sst2", root=fake_root).name == "SST2"


def test_missing_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="classification/CR does not exist"):
        load_classification("CR", root=tmp_path)


def test_cr_empty_lines_and_duplicates_kept(fake_root):
    ds = load_classification("CR", root=fake_root)
    assert ds.label_names == ("neg", "pos")
    assert ds.texts == [
        ["it", "does", "n't", "work", "."],
        ["bad", "remote", "."],
        ["great", "player", "!", "."],
        ["i", "love", "it", "."],
        ["great", "player", "!", "."],
    ]
    assert ds.labels.tolist() == [0, 0, 1, 1, 1] and ds.labels.dtype == np.int64
    assert ds.n_empty == 2 and ds.n_duplicates == 1 and ds.fixed_splits is None
    assert ds.class_counts == (2, 3)


def test_cr_dedupe_drops_repeats(fake_root):
    ds = load_classification("CR", root=fake_root, dedupe=True)
    assert len(ds) == 4 and ds.n_duplicates == 1
    assert ds.texts.count(["great", "player", "!", "."]) == 1


def test_conflicting_labels_are_kept_and_counted(fake_root):
    ds = load_classification("MPQA", root=fake_root, dedupe=True)
    assert len(ds) == 3 and ds.n_conflicting == 1 and ds.n_duplicates == 0


def test_subj_labels(fake_root):
    ds = load_classification("SUBJ", root=fake_root)
    assert ds.label_names == ("obj", "subj") and ds.labels.tolist() == [0, 1]


def test_sst2_fixed_splits(fake_root):
    ds = load_classification("SST2", root=fake_root)
    assert {k: v.tolist() for k, v in ds.fixed_splits.items()} == {"train": [0, 1, 2, 3], "dev": [4], "test": [5, 6]}
    assert ds.texts[3] == ["clichés", "galore"] and ds.n_duplicates == 1
    # "good" in train and test is not a within-split duplicate: dedupe keeps both
    dd = load_classification("SST2", root=fake_root, dedupe=True)
    assert {k: len(v) for k, v in dd.fixed_splits.items()} == {"train": 3, "dev": 1, "test": 2}
    assert [dd.texts[i] for i in dd.fixed_splits["test"]] == [["awful"], ["good"]]


def test_trec_iso_8859_1(fake_root):
    ds = load_classification("TREC", root=fake_root)
    assert ds.label_names == ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")
    assert ds.texts[0] == ["which", "city", "has", "a", "sister\u00f0city", "?"]
    assert [ds.label_names[y] for y in ds.labels] == ["LOC", "HUM", "NUM", "LOC", "DESC", "HUM"]
    assert {k: v.tolist() for k, v in ds.fixed_splits.items()} == {"train": [0, 1, 2, 3], "test": [4, 5]}
    assert ds.n_duplicates == 1


def test_trec_malformed_line(tmp_path):
    path = tmp_path / "t.label"
    path.write_text("HUM:ind Who ?\nWho is this without a label ?\n")
    with pytest.raises(ValueError, match=r"t.label:2: expected 'COARSE:fine question'"):
        read_trec(path)


def test_tsv_malformed_lines(tmp_path):
    path = tmp_path / "x.tsv"
    path.write_text("good\t1\nno tab here 1\n")
    with pytest.raises(ValueError, match=r"x.tsv:2: expected 'text<TAB>label'"):
        read_tsv(path)
    path.write_text("good\t1\nbad\t7\n")
    with pytest.raises(ValueError, match=r"x.tsv:2: .*label in 0..1"):
        read_tsv(path)
    path.write_text("good\t1\n \t0\n")
    with pytest.raises(ValueError, match=r"x.tsv:2: empty text"):
        read_tsv(path)


def test_tsv_line_of_three_columns_is_refused(tmp_path):
    # the text ended at the last tab: 'id<TAB>text<TAB>label' read the id as a word of the text, silently
    path = tmp_path / "x.tsv"
    path.write_text("good film\t1\n17\tbad film\t0\n")
    with pytest.raises(ValueError, match=r"x.tsv:2: expected 'text<TAB>label' .*got 3 tab-separated field\(s\)"):
        read_tsv(path)


def test_read_label_files_latin1(tmp_path):
    (tmp_path / "a").write_bytes("caf\u00e9 ok\n".encode("iso-8859-1"))
    (tmp_path / "b").write_text("fine\n\n")
    texts, labels, n_empty = read_label_files({1: tmp_path / "b", 0: tmp_path / "a"})
    assert texts == [["caf\u00e9", "ok"], ["fine"]] and labels == [0, 1] and n_empty == 1


def test_only_line_ends_end_a_line(tmp_path):
    # str.splitlines would also split at \x85 (cp1252's ellipsis read as ISO-8859-1), form feeds and U+2028
    (tmp_path / "pos").write_bytes(b"\xef\xbb\xbfa good film\x85 really\r\nfine\r\n")
    (tmp_path / "neg").write_bytes("dull\x0cslow\nflat\u2028film\nlast line".encode("utf-8"))
    texts, labels, n_empty = read_label_files({0: tmp_path / "neg", 1: tmp_path / "pos"})
    assert texts == [["dull", "slow"], ["flat", "film"], ["last", "line"], ["a", "good", "film", "really"],
                     ["fine"]]
    assert labels == [0, 0, 0, 1, 1] and n_empty == 0
    path = tmp_path / "x.tsv"
    path.write_text("good\x0cfilm\t1\nbad\t7\n")
    with pytest.raises(ValueError, match=r"x.tsv:2: .*label in 0..1"):   # line 2, not 3
        read_tsv(path)
    path.write_text("good\x0cfilm\t1\r\nbad\t0")
    assert read_tsv(path) == ([["good", "film"], ["bad"]], [1, 0], 0)


def test_trec_label_separated_by_a_tab(tmp_path):
    path = tmp_path / "t.label"
    path.write_text("DESC:manner\tHow did serfdom develop ?\nHUM:ind Who ?\n")
    texts, coarse, fine, _ = read_trec(path)
    assert texts[0] == ["how", "did", "serfdom", "develop", "?"] and fine == ["manner", "ind"]
    path.write_text("HUM:ind Who ?\nDESC:\tHow ?\n")
    with pytest.raises(ValueError, match=r"t.label:2: expected 'COARSE:fine question'"):
        read_trec(path)


def test_dataset_validation_and_subset():
    with pytest.raises(ValueError, match="labels must lie in 0..1"):
        ClassificationDataset("x", [["a"]], np.array([2]), ("n", "p"))
    with pytest.raises(ValueError, match="text 1 of x is empty"):
        ClassificationDataset("x", [["a"], []], np.array([0, 1]), ("n", "p"))
    with pytest.raises(ValueError, match="outside"):
        ClassificationDataset("x", [["a"]], np.array([0]), ("n", "p"), {"train": np.array([3])})
    ds = ClassificationDataset("x", [["a"], ["b"], ["c"]], np.array([0, 1, 1]), ("n", "p"))
    sub = ds.subset([2, 0])
    assert sub.texts == [["c"], ["a"]] and sub.labels.tolist() == [1, 0]


# ---------------------------------------------------------------- real data
EXPECTED = {
    # name: (size, class counts, empty lines, duplicate items)
    "CR": (3771, (1366, 2405), 4, 6),
    "MPQA": (10603, (7292, 3311), 3, 2265),
    "MR": (10662, (5331, 5331), 0, 0),
    "SUBJ": (10000, (5000, 5000), 0, 0),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
@pytest.mark.data
def test_real_cv_sets(data_root, name):
    size, counts, n_empty, n_dup = EXPECTED[name]
    ds = load_classification(name, root=data_root)
    assert len(ds) == size and ds.class_counts == counts and ds.n_classes == 2
    assert ds.n_empty == n_empty and ds.n_duplicates == n_dup and ds.fixed_splits is None
    assert len(load_classification(name, root=data_root, dedupe=True)) == size - n_dup


@pytest.mark.data
def test_real_sst2(data_root):
    ds = load_classification("SST2", root=data_root)
    assert {k: len(v) for k, v in ds.fixed_splits.items()} == {"train": 67349, "dev": 872, "test": 1821}
    assert np.bincount(ds.labels[ds.fixed_splits["test"]]).tolist() == [912, 909]
    assert np.bincount(ds.labels[ds.fixed_splits["dev"]]).tolist() == [428, 444]
    assert ds.n_duplicates == 366


@pytest.mark.data
def test_real_trec(data_root):
    ds = load_classification("TREC", root=data_root)
    assert ds.n_classes == 6
    assert {k: len(v) for k, v in ds.fixed_splits.items()} == {"train": 5452, "test": 500}
    test_counts = dict(zip(ds.label_names, np.bincount(ds.labels[ds.fixed_splits["test"]]).tolist()))
    assert test_counts == {"ABBR": 9, "DESC": 138, "ENTY": 94, "HUM": 65, "LOC": 81, "NUM": 113}
    assert any("\u00f0" in t for text in ds.texts for t in text)  # the ISO-8859-1 line decoded


def test_a_label_that_is_not_a_class_id_is_refused_not_truncated():
    """``ClassificationDataset`` cast 0.5 and 1.7 to the classes 0 and 1 itself, before any batching."""
    texts = [["a"], ["b"], ["c"]]
    with pytest.raises(ValueError, match=r"labels\[1\] is 0.5"):
        ClassificationDataset("toy", texts, [0, 0.5, 1.7], ("neg", "pos"))
    assert ClassificationDataset("toy", texts, [0.0, 1.0, 1.0], ("neg", "pos")).labels.tolist() == [0, 1, 1]

import numpy as np
import pytest

from qpnlp.data.qa import concat_qa, load_qa, read_qa_tsv


def test_grouping_preserves_order_and_filters(fake_root):
    ds = load_qa("wikiqa", "dev", root=fake_root, filter_questions=True)
    assert ds.filtered and ds.n_questions_raw == 4 and ds.n_no_correct == 1 and ds.n_no_wrong == 1
    assert ds.questions == ["what is a cat ?", "when ?"]
    assert ds.candidates == ["A cat is an animal .", "Dogs bark .", "Cats purr .", "Today .", "Now ."]
    assert ds.labels.tolist() == [1, 0, 0, 0, 1] and ds.labels.dtype == np.int64
    assert ds.question_index.tolist() == [0, 0, 0, 1, 1]
    assert [g.tolist() for g in ds.groups] == [[0, 1, 2], [3, 4]]
    assert "questions=2 (raw 4" in repr(ds) and len(ds) == 5 and ds.n_questions == 2
    assert ds.question_filter == "clean"


def test_each_data_set_is_filtered_as_its_published_results(fake_root):
    """WikiQA's dev and test keep the questions whose candidates are all correct (Yang et al., 2015; thesis
    Table 5.5: 243 test questions); TREC-QA's "clean" sets remove them too. Until 0.2.0 WikiQA removed them."""
    (fake_root / "qa" / "trecqa" / "dev.tsv").write_text((fake_root / "qa" / "wikiqa" / "dev.tsv").read_text())
    wiki, trec = load_qa("wikiqa", "dev", root=fake_root), load_qa("trecqa", "dev", root=fake_root)
    assert wiki.question_filter == "no-correct" and trec.question_filter == "clean"
    assert wiki.questions == ["what is a cat ?", "where is paris ?", "when ?"]
    assert trec.questions == ["what is a cat ?", "when ?"]
    assert all(wiki.labels[g].sum() > 0 for g in wiki.groups) and wiki.filtered
    with pytest.raises(ValueError, match="question filter must be one of"):
        load_qa("wikiqa", "dev", root=fake_root, filter_questions="no-wrong")


def test_unfiltered_keeps_everything(fake_root):
    ds = load_qa("WikiQA", "dev", root=fake_root, filter_questions=False)
    assert ds.n_questions == 4 and len(ds) == 7 and not ds.filtered
    assert ds.n_no_correct == 1 and ds.n_no_wrong == 1


def test_train_is_not_filtered_by_default(fake_root):
    ds = load_qa("wikiqa", "train", root=fake_root)
    assert ds.n_questions == 2 and ds.n_no_correct == 1 and not ds.filtered


def test_tokens(fake_root):
    ds = load_qa("wikiqa", "dev", root=fake_root)
    assert ds.question_tokens()[0] == ["what", "is", "a", "cat", "?"]
    assert ds.candidate_tokens()[0] == ["a", "cat", "is", "an", "animal", "."]


def test_missing_split_lists_present_ones(fake_root):
    with pytest.raises(FileNotFoundError, match=r"trecqa has no split 'test'.*present splits: dev, train"):
        load_qa("trecqa", "test", root=fake_root)


def test_a_split_that_is_a_directory_is_named_as_such(fake_root):
    """A ``test.tsv`` directory was reported as 'not found' beside 'present splits: test, ...'."""
    (fake_root / "qa" / "trecqa" / "test.tsv").mkdir()
    with pytest.raises(ValueError, match=r"trecqa/test.tsv is a directory; expected a text file"):
        load_qa("trecqa", "test", root=fake_root)
    with pytest.raises(FileNotFoundError, match=r"present splits: dev, train$"):     # a directory is no split
        load_qa("trecqa", "nosuch", root=fake_root)


def test_a_user_test_file_is_read(fake_root):
    (fake_root / "qa" / "trecqa" / "test.tsv").write_text("q ?\ta .\t0\nq ?\tb .\t1\n")
    ds = load_qa("trec-qa", "test", root=fake_root)
    assert ds.split == "test" and ds.n_questions == 1 and ds.labels.tolist() == [0, 1]


def test_unknown_name(fake_root):
    with pytest.raises(ValueError, match="valid names: trecqa, wikiqa"):
        load_qa("insuranceqa", "dev", root=fake_root)


@pytest.mark.parametrize(
    ("line", "n_fields"),
    [("q ?\ta .\n", 2), ("q ?\ta .\t1\textra\n", 4), ("q ?\ta .\tyes\n", 3)],
)
def test_malformed_line(tmp_path, line, n_fields):
    path = tmp_path / "dev.tsv"
    path.write_text("q ?\tb .\t1\n" + line)
    with pytest.raises(ValueError, match=rf"dev.tsv:2: expected 'question<TAB>candidate<TAB>label' .* got {n_fields} field"):
        read_qa_tsv(path)


def test_empty_candidate(tmp_path):
    path = tmp_path / "dev.tsv"
    path.write_text("q ?\t \t1\n")
    with pytest.raises(ValueError, match=r"dev.tsv:1: empty question or candidate"):
        read_qa_tsv(path)


# real data: (raw questions, kept after the filter, pairs kept)
EXPECTED = {
    ("wikiqa", "train"): (2118, 2118, 20360),
    ("wikiqa", "dev"): (296, 126, 1130),             # thesis Table 5.5: 126 and 243 questions, 1,130 and 2,351 pairs
    ("wikiqa", "test"): (633, 243, 2351),
    ("trecqa", "train"): (93, 93, 4718),
    ("trecqa", "dev"): (81, 65, 1117),
    ("trecqa", "train-all"): (1227, 1227, 53417),   # TRAIN-ALL is training data: not filtered
}


@pytest.mark.parametrize(("name", "split"), sorted(EXPECTED))
@pytest.mark.data
def test_real_qa(data_root, name, split):
    raw, kept, pairs = EXPECTED[name, split]
    ds = load_qa(name, split, root=data_root)
    assert ds.n_questions_raw == raw and ds.n_questions == kept and len(ds) == pairs
    for g in ds.groups:
        y = ds.labels[g]
        assert not ds.filtered or (0 < y.sum() and (ds.question_filter == "no-correct" or y.sum() < len(y)))
    assert sum(len(g) for g in ds.groups) == len(ds)


def test_concat_shifts_questions_and_groups(fake_root):
    dev = load_qa("wikiqa", "dev", root=fake_root, filter_questions=True)
    both = concat_qa([dev, dev])
    assert both.name == "wikiqa+wikiqa" and both.n_questions == 4 and len(both) == 10
    assert both.question_index.tolist() == [0, 0, 0, 1, 1, 2, 2, 2, 3, 3]
    assert [g.tolist() for g in both.groups[2:]] == [[5, 6, 7], [8, 9]]
    assert both.candidates[5] == dev.candidates[0] and both.labels.tolist() == dev.labels.tolist() * 2
    assert both.n_questions_raw == 8 and both.filtered
    assert concat_qa([dev, load_qa("wikiqa", "dev", root=fake_root)]).question_filter == "no-correct"   # the weakest
    with pytest.raises(ValueError, match="different splits"):
        concat_qa([dev, load_qa("wikiqa", "train", root=fake_root)])
    with pytest.raises(ValueError, match="at least one"):
        concat_qa([])


def test_train_all_is_a_training_file_and_not_filtered_by_default(fake_root):
    # TREC-QA's TRAIN-ALL is training data: like "train", its questions without a wrong (or correct) candidate stay
    (fake_root / "qa" / "trecqa" / "train-all.tsv").write_text("q ?\ta .\t1\nq ?\tb .\t0\nr ?\tc .\t1\n")
    ds = load_qa("trecqa", "train-all", root=fake_root)
    assert not ds.filtered and ds.n_questions == 2 and ds.n_no_wrong == 1
    assert load_qa("trecqa", "train-all", root=fake_root, filter_questions=True).n_questions == 1

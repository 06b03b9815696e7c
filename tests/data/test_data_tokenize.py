from pathlib import Path

import pytest

from qpnlp.data.tokenize import tokenize


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("Hello, World!", ["hello", ",", "world", "!"]),
        ("I don't know.", ["i", "do", "n't", "know", "."]),
        ("can't won't", ["ca", "n't", "wo", "n't"]),
        ("It's what we'll do, they're sure I'm right", ["it", "'s", "what", "we", "'ll", "do", ",", "they", "'re", "sure", "i", "'m", "right"]),
        ("do n't it 's", ["do", "n't", "it", "'s"]),
        ("it does n 't work", ["it", "does", "n't", "work"]),
        ("i don 't , can 't , would 't", ["i", "do", "n't", ",", "ca", "n't", ",", "would", "'t"]),
        ("n 't", ["n't"]),
        ("`` the rock '' is", ["``", "the", "rock", "''", "is"]),
        ("dual-layer 1/2x 3.5 o'neill at&t", ["dual-layer", "1/2x", "3.5", "o'neill", "at&t"]),
        ("1,725 offices", ["1,725", "offices"]),
        ("wait... -- no", ["wait", "...", "--", "no"]),
        ("Young -LRB- Farrar -RRB-", ["young", "(", "farrar", ")"]),
        ("the \u201cbest\u201d film\u2019s", ["the", '"', "best", '"', "film", "'s"]),
        ("Am\u00e9lie", ["am\u00e9lie"]),
        ("   \n\t", []),
        ("", []),
    ],
)
def test_examples(text, tokens):
    assert tokenize(text) == tokens


def test_rejects_non_strings():
    with pytest.raises(TypeError, match="expects a str"):
        tokenize(["a", "b"])
    with pytest.raises(TypeError, match="expects a str"):
        tokenize(None, style="alpha")


def test_alpha_style_keeps_letters_only():
    """The tokens of the timestamped corpora: [a-z]+ runs, one inner apostrophe kept, digits and punctuation dropped."""
    assert tokenize("War, and PEACE's end 1812", style="alpha") == ["war", "and", "peace's", "end"]
    assert tokenize("The Union's state, in 1790, is GOOD.", style="alpha") == ["the", "union's", "state", "in", "is", "good"]
    assert tokenize("don't rock 'n' roll o'neill's", style="alpha") == ["don't", "rock", "n", "roll", "o'neill", "s"]
    assert tokenize("Am\u00e9lie dual-layer 3.5x", style="alpha") == ["am", "lie", "dual", "layer", "x"]
    assert tokenize("", style="alpha") == []
    with pytest.raises(ValueError, match="style must be one of"):
        tokenize("a", style="words")


def test_idempotent_on_hand_made_text():
    texts = ["He said: \"don't!\" (really?)", "U.S. economy grew 3.5% in 1999...", "rock 'n' roll, the '90s"]
    for t in texts:
        once = tokenize(t)
        assert tokenize(" ".join(once)) == once


@pytest.mark.data
def test_pretokenised_benchmark_lines_are_kept(data_root):
    """The tokenised benchmark files mostly come back as their own whitespace split.

    Known differences: opening single quotes are split off ('who -> ' who) and
    MR's ``M-^W`` byte artefacts break into punctuation.
    """
    folder = Path(data_root) / "classification"
    for rel in ("MR/rt-polarity.pos", "SUBJ/subj.objective", "CR/custrev.neg"):
        lines = [line for line in (folder / rel).read_text(encoding="utf-8").splitlines()[:300] if line.strip()]
        for line in lines:
            once = tokenize(line)
            assert tokenize(" ".join(once)) == once
        if rel.startswith("CR"):
            # CR's "does n 't" / "don 't" become the PTB "does n't" / "do n't"
            tokens = [t for line in lines for t in tokenize(line)]
            n_neg = sum(line.count("n 't") for line in lines)
            assert n_neg > 20 and tokens.count("n't") == n_neg
        else:
            same = sum(tokenize(line) == line.split() for line in lines)
            assert same / len(lines) > 0.9, rel


def test_combining_marks_stay_in_their_word():
    """Words of any script: combining marks (Unicode category M) are not \\w in Python's re, so a Devanagari
    word fell apart into letters and vowel signs, and "İstanbul" (lowercased to i + U+0307) into three tokens."""
    assert tokenize("हिन्दी भाषा") == ["हिन्दी", "भाषा"]
    assert tokenize("İstanbul's") == ["i\u0307stanbul", "'s"]
    assert tokenize("x\u20dd-q\u0301z") == ["x\u20dd-q\u0301z"]           # marks with no precomposed form
    assert tokenize("a \u0301 b") == ["a", "\u0301", "b"]                 # a lone mark is still a token
    for t in ("हिन्दी भाषा", "İstanbul's"):
        assert tokenize(" ".join(tokenize(t))) == tokenize(t)


def test_invisible_format_characters_are_dropped():
    """Format characters (Unicode category Cf) are invisible and no word: WikiQA's ``1 , \\xad000`` (a soft hyphen)
    gave an invisible token ``\\xad`` before ``000``, a soft-hyphenated word fell into three tokens, and the same
    word with and without a zero-width space got two ids."""
    assert tokenize("1 , \u00ad000 , \u00ad000") == ["1", ",", "000", ",", "000"]
    assert tokenize("ind\u00adus\u00adtry") == ["industry"]
    assert tokenize("zero\u200bwidth \u200ebal\u200dsara\u200c \ufeffword\u2060s") == ["zerowidth", "balsara", "words"]
    assert tokenize("deviation \u00ad\u2013 the") == ["deviation", "\u2013", "the"]
    for t in ("ind\u00adus\u00adtry", "a\u200c b"):
        assert tokenize(" ".join(tokenize(t))) == tokenize(t)


@pytest.mark.data
def test_no_benchmark_token_holds_a_format_character(data_root):
    """WikiQA test holds 35 soft hyphens (and dev two zero-width non-joiners): none may become or enter a token."""
    import unicodedata

    from qpnlp.data.qa import load_qa

    for split in ("dev", "test"):
        ds = load_qa("wikiqa", split, root=data_root, filter_questions=False)
        bad = {t for toks in ds.candidate_tokens() + ds.question_tokens() for t in toks
               if any(unicodedata.category(ch) == "Cf" for ch in t)}
        assert not bad, (split, sorted(map(ascii, bad)))

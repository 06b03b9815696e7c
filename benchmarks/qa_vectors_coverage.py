"""How well each pretrained vector set covers the QA splits: OOV rate, distinct vectors, and shared rows.

For every (data set, split) and vector set: the words of the split (questions and candidates, tokenised as the
models see them), how many have a vector, how many distinct vectors those are (pruned sets such as spaCy's map
many words to one row), and, per question-candidate pair, how many candidate words that are not in the question
share their vector with a question word (a match CNM cannot tell from an exact word overlap).

Run::

    QPNLP_DATA=/work/shared/data python benchmarks/qa_vectors_coverage.py
"""

from __future__ import annotations

import argparse

from qpnlp.data import Vocabulary, embedding_matrix_for
from qpnlp.data.qa import load_qa
from qpnlp.data.vectors import load_vectors


def shared_row_matches(questions, candidates, groups, row_of: dict[str, int]) -> float:
    """Mean number per pair of candidate words absent from the question whose vector is a question word's."""
    count = pairs = 0
    for q, rows in enumerate(groups):
        question = set(questions[q])
        question_rows = {row_of[w] for w in question if w in row_of}
        for r in rows:
            count += sum(1 for w in set(candidates[r]) - question if w in row_of and row_of[w] in question_rows)
            pairs += 1
    return count / max(pairs, 1)


def _parser() -> argparse.ArgumentParser:
    """The command line, apart from main() so that tests/test_documented_commands.py parses documented runs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", nargs="+", default=["wikiqa:test", "trecqa:dev"])
    parser.add_argument("--vectors", nargs="+", default=["glove-6b-50d", "spacy-md-300d"])
    return parser


def main(argv=None) -> None:
    args = _parser().parse_args(argv)
    print("| data set | split | vectors | words | with a vector | OOV | distinct vectors | shared-row matches per pair |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for spec in args.splits:
        name, split = spec.split(":")
        data = load_qa(name, split)
        questions, candidates = data.question_tokens(), data.candidate_tokens()   # tokenised as the models see them
        vocab = Vocabulary.build(questions + candidates)
        for vectors_name in args.vectors:
            vectors = load_vectors(vectors_name, words=vocab.words)
            report = embedding_matrix_for(vocab, vectors)[1]                        # the pipelines' own OOV count
            found = report.n_words - report.n_oov
            if vectors.rows is None:
                distinct, shared = found, 0.0
            else:
                distinct = vectors.n_distinct_rows
                shared = shared_row_matches(questions, candidates, data.groups,
                                            {w: int(r) for w, r in zip(vectors.words, vectors.rows)})
            print(f"| {name} | {split} | {vectors_name} | {report.n_words} | {found} | {report.rate:.1%} | "
                  f"{distinct} | {shared:.2f} |")


if __name__ == "__main__":
    main()

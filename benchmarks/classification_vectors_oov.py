"""How many words of a classification data set have no pretrained vector, with and without the vectors back-off.

For each data set and vector set: the vocabulary of every text of the set (all splits) and, where the set has a
fixed training split (SST-2, TREC), of that split's texts; for each, the OOV rate over word types and over tokens
as :func:`qpnlp.data.embedding_matrix_for` reports it (the pipelines' own count: :class:`~qpnlp.data.pretrained.
OOVReport`), with the back-off to other spellings and compound parts off and on
(:func:`qpnlp.data.backoff.backoff_vector`). No training: one load of the vectors and a dictionary look-up per word.

Run::

    QPNLP_DATA=/work/shared/data python benchmarks/classification_vectors_oov.py --json FILE
"""

from __future__ import annotations

import argparse
import json

from qpnlp.data import Vocabulary, embedding_matrix_for
from qpnlp.data.classification import load_classification
from qpnlp.data.vectors import load_vectors


def vocabularies(dataset) -> dict[str, Vocabulary]:
    """The vocabularies whose coverage is reported: ``all`` (every text) and ``train`` (the fixed training split)."""
    parts = {"all": list(dataset.texts)}
    if dataset.fixed_splits is not None and "train" in dataset.fixed_splits:
        parts["train"] = [dataset.texts[i] for i in dataset.fixed_splits["train"]]
    return {name: Vocabulary.build(texts) for name, texts in parts.items()}


def coverage_rows(dataset_name: str, vectors_name: str) -> list[dict]:
    """One row per (vocabulary, back-off off/on): word types, OOV types, the type and token OOV rates."""
    dataset, vectors = load_classification(dataset_name), load_vectors(vectors_name)
    rows = []
    for part, vocab in vocabularies(dataset).items():
        for backoff in (False, True):
            report = embedding_matrix_for(vocab, vectors, backoff=backoff)[1]
            rows.append({"dataset": dataset_name, "vectors": vectors_name, "vocabulary": part, "backoff": backoff,
                         "words": report.n_words, "oov": report.n_oov, "rate": report.rate,
                         "token_rate": report.token_rate, "found_by_backoff": report.n_backoff})
    return rows


def _parser() -> argparse.ArgumentParser:
    """The command line, apart from main() so that tests/test_documented_commands.py parses documented runs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["SST2"])
    parser.add_argument("--vectors", nargs="+", default=["spacy-md-300d"])
    parser.add_argument("--json", default=None, help="also write the rows to this file")
    return parser


def main(argv=None) -> None:
    args = _parser().parse_args(argv)
    rows = [row for name in args.datasets for vectors in args.vectors for row in coverage_rows(name, vectors)]
    print("| data set | vectors | vocabulary | back-off | words | OOV | OOV types | OOV tokens |")
    print("|---|---|---|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['dataset']} | {r['vectors']} | {r['vocabulary']} | {'on' if r['backoff'] else 'off'} | "
              f"{r['words']} | {r['oov']} | {r['rate']:.1%} | {r['token_rate']:.1%} |")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"args": vars(args), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()

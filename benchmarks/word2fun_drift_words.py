"""Per-word diagnosis of Word2Fun on the planted-drift benchmark: measured change, switch, learned step.

Trains Word2Fun as ``benchmarks/word2fun_drift.py`` does (the library's defaults, one thread) and prints, for every
drift word sorted by planted strength: the learned step centre (as a year) and rate, the planted switch year and
width, the raw and noise-corrected prediction-space change, the corrected change per unit of strength, and the
word's share of ``acc_after`` (the years after its transition whose nearest topic is its dominant one, with the
wrong years listed; ``-`` for the ambiguous strengths within 0.1 of 0.5 that the metric leaves out); then
the Spearman correlations of that ratio with the switch year and with the strength. A ratio that grows with the
switch year means early switches are under-measured. Then, for the words with wrong years, the mean probability of
the source and the destination topic's words (a near tie shows an under-fitted mixture), and the metrics again
with every probe's harmonic amplitudes set to zero.

Usage::

    python benchmarks/word2fun_drift_words.py --seed 0 --variant low-frequency [--step-centres middle] [--negative-weight 1]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import types
from pathlib import Path

import numpy as np
import torch
from scipy.stats import spearmanr

sys.path.insert(0, str(Path(__file__).resolve().parent))
import word2fun_drift as drift  # noqa: E402

from qpnlp.data.synthetic_drift import VARIANTS, drift_spec, generate_drift_corpus  # noqa: E402
from qpnlp.evaluation.drift import evaluate_grid  # noqa: E402
from qpnlp.word2fun.train import STEP_CENTRES  # noqa: E402


def trained(corpus, truth, seed: int, step_centres: str, negative_weight: float = drift.TRAIN["negative_weight"]):
    """The drift benchmark's Word2Fun grid and the trained model (the benchmark's settings, one thread)."""
    args = types.SimpleNamespace(
        **{k: drift.TRAIN[k] for k in ("epochs", "batch_size", "lr", "negatives", "roughness_penalty",
                                       "roughness_power", "rare_lr_power", "rare_lr_max", "frequency_reference",
                                       "step_centre_lr")},
        negative_weight=negative_weight,
        **{k: drift.FIT[k] for k in ("dim", "time_scale", "frequency_init", "max_periods", "logistic")},
        slices=drift.FIT["n_slices"], threads=1, seed=seed, step_centres=step_centres, progress=False)
    fitted = {}
    real_fit = drift.fit

    def keep(*a, **k):
        fitted["result"] = real_fit(*a, **k)
        return fitted["result"]

    drift.fit = keep
    try:
        grid = drift.word2fun_grid(corpus, truth, args, "IV")
    finally:
        drift.fit = real_fit
    return grid, fitted["result"].vectors


def _parser() -> argparse.ArgumentParser:
    """The command line, apart from main() so that tests/test_documented_commands.py parses documented runs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--variant", default="low-frequency", choices=list(VARIANTS))
    parser.add_argument("--step-centres", default=drift.FIT["step_centres"], choices=STEP_CENTRES)
    parser.add_argument("--negative-weight", type=float, default=drift.TRAIN["negative_weight"],
                        help="weight of the negative term (1: the thesis loss)")
    return parser


def main(argv=None) -> None:
    args = _parser().parse_args(argv)
    torch.set_num_threads(1)
    corpus, truth = generate_drift_corpus(drift_spec(args.variant, n_tokens=1_000_000, n_years=100, n_drift=60,
                                                     seed=args.seed))
    grid, vectors = trained(corpus, truth, args.seed, args.step_centres, args.negative_weight)
    metrics = evaluate_grid(grid, truth, per_word=True)
    print(f"{args.variant} seed {args.seed}, steps start: {args.step_centres}, negative weight {args.negative_weight:g}; "
          f"Spearman {metrics['spearman']:.3f}, acc after {metrics['acc_after']:.3f}, change-year MAE {metrics['change_year_mae']:.2f}")
    drifting = np.flatnonzero(np.asarray(truth.kind) == "drift")
    words = [truth.words[i] for i in drifting]
    uncorrected = evaluate_grid(grid, truth, noise_correction=False, per_word=True)["per_word"]
    after = [metrics["per_word"][w] for w in words]
    raw = np.array([uncorrected[w]["change"] for w in words])
    corrected = np.array([a["change"] for a in after])
    y0, y1 = float(truth.years.min()), float(truth.years.max())
    model, ids = vectors.model, vectors._ids(words).long()
    centre = y0 + (y1 - y0) * model.step_centre.weight.detach()[ids, 0].numpy()
    rate = model.step_rate.weight.detach()[ids, 0].exp().numpy()
    strength, switch = truth.strength[drifting], truth.switch_year[drifting]
    width = np.nan_to_num(truth.width[drifting])
    per_strength = corrected / strength
    print("| word | strength | switch | width | step centre | rate | raw change | corrected | per strength | "
          "acc after | wrong years after |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for i in np.argsort(strength):
        ok, wrong = after[i]["acc_after"], after[i]["wrong_years_after"]
        print(f"| {words[i]} | {strength[i]:.2f} | {switch[i]:.0f} | {width[i]:.0f} | {centre[i]:.0f} | "
              f"{rate[i]:.1f} | {raw[i]:.3f} | {corrected[i]:.3f} | {per_strength[i]:.3f} | "
              f"{'-' if ok is None else f'{ok:.2f}'} | {' '.join(f'{y:.0f}' for y in wrong)} |")
    counted = [(a["acc_after"], len(a["wrong_years_after"])) for a in after if a["acc_after"] is not None]
    wrong_total = sum(n for _, n in counted)
    print(f"{wrong_total} wrong word-years after the transitions, in {sum(n > 0 for _, n in counted)} of "
          f"{len(counted)} counted words")
    print(f"Spearman of the change per strength with the switch year {spearmanr(per_strength, switch).statistic:+.2f}, "
          f"with the strength {spearmanr(per_strength, strength).statistic:+.2f}")
    print_margins(grid, truth, metrics["per_word"])
    print_without_harmonics(grid, truth, vectors)


def topic_probabilities(grid, truth, word: str) -> np.ndarray:
    """(T, K): the mean prediction-space probability sigma(f(u, t) . h(v)) of ``word`` over each topic's words
    (what ``acc_after`` takes the argmax of)."""
    P = grid.profiles([word])[:, 0]                                     # (T, C)
    ctx = {w: i for i, w in enumerate(grid.context_words)}
    return np.stack([P[:, [ctx[w] for w in tw]].mean(-1).numpy() for tw in truth.topic_words], axis=1)


def print_margins(grid, truth, per_word: dict) -> None:
    """For each word with wrong years after its transition: its mean probability over the source and the
    destination topic's words, averaged over the years after the transition and over the wrong ones."""
    print("\nWords with wrong years after: mean topic probability, source / destination (dominant: source below "
          "strength 0.5)")
    print("| word | strength | after: source / destination | wrong years: source / destination | wrong / after |")
    print("|---|---|---|---|---|")
    for p in np.argsort(truth.strength):
        word = truth.words[p]
        wrong = per_word.get(word, {}).get("wrong_years_after") or []
        if truth.kind[p] != "drift" or not wrong:
            continue
        tp = topic_probabilities(grid, truth, word)
        after = grid.years >= truth.switch_year[p] + np.nan_to_num(truth.width[p]) / 2
        bad = np.isin(grid.years, wrong)
        s, d = truth.source[p], truth.dest[p]
        print(f"| {word} | {truth.strength[p]:.2f} | {tp[after, s].mean():.3f} / {tp[after, d].mean():.3f} | "
              f"{tp[bad, s].mean():.3f} / {tp[bad, d].mean():.3f} | {bad.sum()} / {after.sum()} |")


def print_without_harmonics(grid, truth, vectors) -> None:
    """acc after and Spearman again with the harmonic amplitudes R_u of every probe set to 0 (the static part and
    the logistic step left): do the wrong years come from the harmonics?"""
    model = vectors.model
    ids = vectors._ids(list(truth.words)).long()
    saved = model.amplitude.weight.detach().clone()
    try:
        with torch.no_grad():
            model.amplitude.weight[ids] = 0
        E = vectors.grid(grid.words, truth.years)
    finally:
        with torch.no_grad():
            model.amplitude.weight.copy_(saved)
    m = evaluate_grid(dataclasses.replace(grid, E=E), truth, per_word=True)
    wrong = sum(len(a["wrong_years_after"]) for a in m["per_word"].values())
    print(f"\nWithout the probes' harmonics (R_u = 0): acc after {m['acc_after']:.3f}, Spearman {m['spearman']:.3f}, "
          f"{wrong} wrong word-years after")


if __name__ == "__main__":
    main()

"""Figures the docs quote from benchmarks/results agree with the results files they come from (recomputed, no training).

Each test reads the stored ``results.json`` of a run, recomputes what a page states about it and looks for that
statement on the page, so a page that cites a superseded run or rounds a figure wrongly fails here.
"""

import importlib.util
import json
import math
import re
import statistics
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def _qpdn_rows(run: str) -> dict:
    rows = json.loads((RESULTS / "qpdn" / run / "results.json").read_text(encoding="utf-8"))["rows"]
    return {row["dataset"]: row for row in rows}


def test_qpdn_summary_states_the_sst2_gaps_to_the_published_figure_of_both_reportings():
    runs = ["run-e2", *(f"run-e3-seed{s}" for s in range(1, 5))]     # SST-2 seeds 0-4, one setting
    honest = statistics.mean(_qpdn_rows(r)["SST2"]["qpdn"]["mean"] for r in runs) * 100
    best = statistics.mean(_qpdn_rows(r)["SST2"]["qpdn"]["best_test_epoch"]["mean"] for r in runs) * 100
    published = 83.9
    summary = (RESULTS / "qpdn" / "SUMMARY.md").read_text(encoding="utf-8")
    assert (f"SST-2: {published - honest:.1f} below with dev selection, {published - best:.1f} with the public "
            "code's reporting.") in summary


def test_readme_cites_the_cnm_ablations_paired_with_the_cnm_figure_it_quotes():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quoted = re.search(r"WikiQA test MAP (0\.\d{3}) ± (0\.\d{3})", readme)
    cited = re.search(r"significantly over the ten seeds\s*\(`(benchmarks/results/cnm/[^`]+)`\)", readme)
    assert quoted and cited
    table = (ROOT / cited.group(1) / "README.md").read_text(encoding="utf-8")
    cnm = re.search(r"^\| CNM\b[^|]*\| (0\.\d{4}) ± (0\.\d{4}) \|", table, flags=re.M)
    assert cnm, "the cited ablations' table has no CNM row"
    assert (f"{float(cnm.group(1)):.3f}", f"{float(cnm.group(2)):.3f}") == quoted.groups()


def _json(*parts: str):
    """A results file of benchmarks/results, parsed."""
    return json.loads(RESULTS.joinpath(*parts).read_text(encoding="utf-8"))


def _page(*parts: str) -> str:
    """A page of benchmarks/results with its line breaks read as spaces (a quoted figure may wrap)."""
    return " ".join(RESULTS.joinpath(*parts).read_text(encoding="utf-8").split())


def test_metrics_vs_qutip_readme_states_the_ranges_and_the_agreement_of_its_json():
    rows = _json("metrics_vs_qutip", "metrics_vs_qutip.json")["rows"]
    readme = _page("metrics_vs_qutip", "README.md")
    sentences = [r for r in rows if r["kind"] == "sentences"]
    dense = [r for r in rows if r["kind"] == "mixed"]
    c128 = sorted(r["qutip_over_qpnlp"] for r in sentences)
    assert f"{c128[0]:.0f}x to {c128[-1]:.0f}x faster in complex128" in readme
    more = sorted(r["qutip_over_qpnlp_complex64"] / r["qutip_over_qpnlp"] for r in sentences)
    assert f"{more[0]:.1f}x to {more[-1]:.1f}x more in complex64" in readme
    dense128 = sorted(r["qutip_over_qpnlp"] for r in dense)
    dense64 = sorted(r["qutip_over_qpnlp_complex64"] for r in dense)
    assert (f"{dense128[0]:.1f}x to {dense128[-1]:.1f}x in complex128, {dense64[0]:.1f}x to {dense64[-1]:.1f}x in "
            "complex64") in readme
    tight = max(r["max_abs_diff"] for r in rows if r["atol"] < 1e-6)   # every row but the loose square-root ones
    assert tight <= 2e-13 and "to 2e-13 or better everywhere except the square-root metrics" in readme
    fidelity = {f"{r['qutip_over_qpnlp']:.1f}" for r in dense if r["metric"].startswith(("fidelity", "bures"))}
    assert fidelity == {"0.6"} and "Bures distance and angle) is slower than QuTiP (0.6x)" in readme


def _complex_order_300d() -> tuple[dict, list]:
    """Test accuracies per (network, data set, variant) and the claims of the merged 300-d run."""
    merged = _json("complex_order", "merged-300d", "results.json")
    accuracies: dict = {}
    for r in merged["records"]:
        accuracies.setdefault((r["network"], r["dataset"], r["variant"]), []).append(r["test_accuracy"])
    return accuracies, merged["claims"]


def test_complex_order_pages_state_the_cell_counts_and_means_of_the_merged_300d_run():
    accuracies, claims = _complex_order_300d()
    holds = sum(c["verdict"] == "holds" for c in claims)
    significant = sum(c["verdict"] == "holds" and c["max_p"] < 0.05 for c in claims)
    reversed_ = sum(any(a["margin"] < 0 and a["p"] < 0.05 for a in c["against"].values()) for c in claims)
    assert (len(claims), holds, significant, reversed_) == (24, 6, 0, 12)
    assert "holds in 6 of 24 cells, significantly in none, and is significantly reversed in twelve" in \
        _page("complex_order", "README.md")
    table = _page("complex_order", "merged-300d", "README.md")
    assert "The paper's claim holds in 6 of 24 cells, is significant in none, and is significantly reversed" in table
    names = {"fasttext": "FastText", "cnn": "CNN", "rnn": "LSTM", "transformer": "Transformer"}
    for c in claims:
        mean = statistics.mean(accuracies[(c["network"], c["dataset"], "complex_order")]) * 100
        dataset = {"SST2": "SST-2"}.get(c["dataset"], c["dataset"])
        assert f"| {names[c['network']]} {dataset} | {mean:.1f} (" in table


def test_complex_order_pages_state_how_close_the_lstm_subj_variants_lie():
    accuracies, _ = _complex_order_300d()
    means = [statistics.mean(a) * 100 for (net, ds, _v), a in accuracies.items() if (net, ds) == ("rnn", "SUBJ")]
    spread = f"all five within {max(means) - min(means):.1f}"
    assert spread in _page("complex_order", "merged-300d", "README.md")
    assert spread in _page("complex_order", "README.md")


def test_complex_order_readme_tables_are_the_stored_tables_of_their_runs():
    readme = (RESULTS / "complex_order" / "README.md").read_text(encoding="utf-8")
    quoted = {"merged-sinusoidal": ("| FastText |", "| CNN |", "| Transformer |", "| SST2 |"),
              "run-l-timing": ("| SST2 |",), "run-d": ("| SST2 |",)}    # run-d's accuracies: in the merged table
    for run, starts in quoted.items():
        table = (RESULTS / "complex_order" / run / "table.md").read_text(encoding="utf-8")
        rows = [line for line in table.splitlines() if line.startswith(starts)]
        assert rows and all(row in readme for row in rows), run


def _cgrnn_runs() -> dict:
    """The seed-0 run (``main``) and the two seed-1 runs of benchmarks/results/cgrnn."""
    folders = {"main": (), "seed1_adding": ("seed1_adding",), "seed1_memory": ("seed1_memory",)}
    return {name: _json("cgrnn", *path, "results.json") for name, path in folders.items()}


def test_cgrnn_notes_tables_are_the_results_files():
    notes = (RESULTS / "cgrnn" / "NOTES.md").read_text(encoding="utf-8")
    runs = _cgrnn_runs()
    for task, result in runs["main"]["results"].items():
        for model, r in result["models"].items():
            name = f"GRU (h = {r['hidden']})" if model == "gru" else model
            assert (f"| {task} | {name} | {r['params']} | {r['final_train_loss']:.4f} | {r['test_loss']:.4f} | "
                    f"{result['baseline']:.4f} |") in notes
    for r in runs["seed1_adding"]["results"]["adding"]["models"].values():
        assert f"| {r['final_train_loss']:.4f} | {r['test_loss']:.4f} |" in notes
    assert f"Total wall time {runs['main']['total_wall_s']:.1f} s" in notes


def test_cgrnn_notes_count_the_steps_of_the_diverged_run_from_one():
    curve = _cgrnn_runs()["seed1_memory"]["results"]["memory"]["models"]["modrelu-free"]["curve"]
    huge = next(i for i, loss in enumerate(curve) if loss > 1e20) + 1
    nan = next(i for i, loss in enumerate(curve) if loss != loss) + 1
    notes = _page("cgrnn", "NOTES.md")
    assert f"loss ~1e28 from step {huge}, NaN at step {nan}" in notes
    assert f"loss ~1e28 from step {huge} and NaN at step {nan}" in notes


def _ms(seconds: float) -> str:
    """Seconds as the GPU page writes milliseconds."""
    return f"{seconds * 1e3:.2f} ms"


def test_cuda_readme_h100_tables_are_cuda_steps_json():
    steps = _json("cuda", "cuda_steps.json")
    readme = (RESULTS / "cuda" / "README.md").read_text(encoding="utf-8")
    for network in ("fasttext", "cnn", "transformer"):
        part = steps[f"complex-order {network}"]
        times, ratios = part["summary"], part["ratios"]
        name = {"fasttext": "FastText", "cnn": "CNN", "transformer": "Transformer"}[network]
        assert (f"| {name} | {_ms(times['PE']['median'])} | {_ms(times['complex-order']['median'])} | "
                f"{_ms(times['PE 2D']['median'])} | {ratios['complex-order / PE']:.2f}x | "
                f"{ratios['complex-order / PE 2D']:.2f}x |") in readme
    qpdn = steps["QPDN d=300 V=20000 B=32 L=50 k=50"]["summary"]
    assert f"| QPDN d=300 V=20000 B=32 L=50 k=50, full step | {_ms(qpdn['step']['median'])} |" in readme
    for row in steps["largest_qpdn_batch"]:
        assert f"| {row['dim']} | {row['batch']:,}" in readme and f"{row['peak_gib']:.1f} GiB |" in readme
    for run in steps["word2fun"]:
        assert (f"| {round(run['tokens_per_s'], -3):,.0f} | {run['seconds']:.1f} s | {run['spearman']:.3f} | "
                f"{run['acc_after']:.3f} | {run['change_year_mae']:.3g} years |") in readme


def test_cuda_readme_h200_word2fun_table_is_its_json():
    runs = _json("cuda", "cuda_steps_h200_1130_word2fun.json")["word2fun"]
    readme = (RESULTS / "cuda" / "README.md").read_text(encoding="utf-8")
    for run in runs:
        assert (f"| {round(run['tokens_per_s'], -3):,.0f} | {run['spearman']:.3f} | {run['acc_after']:.3f} | "
                f"{run['change_year_mae']:.3g} years |") in readme


def test_readme_states_the_speed_ups_of_the_fast_extra_from_their_results():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    threads = _json("word2fun", "fused-step", "threads.json")["threads"]
    ratio = threads["compiled"]["one_thread_s"] / threads["torch ops"]["one_thread_s"]
    assert f"Word2Fun's SGD step ({ratio:.2f}x the torch ops' time with one thread" in readme
    assert "`benchmarks/results/word2fun/fused-step/threads.json`" in readme
    adam = (RESULTS / "speed" / "qpdn_train_step_adam_loop.txt").read_text(encoding="utf-8")
    speed_up = re.search(r"before step / after step\s+(\d\.\d\d)x", adam).group(1)
    assert f"(QPDN step {speed_up}x faster: `benchmarks/results/speed/qpdn_train_step_adam_loop.txt`)" in readme


def test_the_sst2_oov_rates_of_the_vectors_backoff_are_the_stored_counts():
    rows = _json("qpdn", "run-g-300d", "backoff-sst2-oov.json")["rows"]
    rate = {(r["vocabulary"], r["backoff"]): r for r in rows}
    every, train = (f"from {rate[part, False]['rate']:.1%} to {rate[part, True]['rate']:.1%}".replace("%", " %")
                    for part in ("all", "train"))
    changelog = " ".join((ROOT / "CHANGELOG.md").read_text(encoding="utf-8").split())
    assert f"SST-2 vocabulary (all three splits) falls {every} of types" in changelog
    assert f"report counts, {train}" in changelog
    concepts = " ".join((ROOT / "docs" / "concepts" / "superposition.md").read_text(encoding="utf-8").split())
    assert f"vocabulary (all three splits) {every} of words" in concepts


# --- The per-run pages of benchmarks/results/complex_order/run-*/ ----------------------------------------------------

COMPLEX_ORDER = RESULTS / "complex_order"
VARIANTS = ("none", "pe", "tpe", "complex_vanilla", "complex_order")
VARIANT_NAMES = {"none": "none", "pe": "PE", "tpe": "TPE", "complex_vanilla": "complex-vanilla",
                 "complex_order": "complex-order"}
LEARNING_RATES = {1e-3: "1e-3", 1e-4: "1e-4"}


def _stats():
    """``benchmarks/_stats.py``, the exact paired statistics the complex-order tables use."""
    spec = importlib.util.spec_from_file_location("_stats", ROOT / "benchmarks" / "_stats.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _agrees(stated: str, value: float) -> bool:
    """``stated`` is ``value`` rounded to the decimals it shows (a tie may round either way)."""
    decimals = len(stated.partition(".")[2])
    return abs(float(stated) - value) <= 0.5 * 10 ** -decimals + 1e-9


def _run_records(run: str, folder: str, network: str | None = None, dataset: str | None = None) -> dict:
    """Records of one results.json of a run, by variant, then by (split, seed)."""
    records = _json("complex_order", run, folder, "results.json")["records"]
    by_variant: dict = {}
    for r in records:
        if (network, dataset) in ((None, None), (r["network"], r["dataset"])):
            by_variant.setdefault(r["variant"], {})[(r["split"], r["seed"])] = r
    return by_variant


def _test_percent(runs: dict) -> list:
    """Test accuracies of a variant's runs, in percent."""
    return [r["test_accuracy"] * 100 for r in runs.values()]


def _paired(by_variant: dict, other: str) -> tuple[float, float]:
    """Complex-order minus ``other``: the mean paired difference in points and the two-sided exact Wilcoxon p."""
    stats = _stats()
    ours, theirs = by_variant["complex_order"], by_variant[other]
    exact = [stats.exact_accuracy(ours[k]["test_accuracy"]) - stats.exact_accuracy(theirs[k]["test_accuracy"])
             for k in sorted(set(ours) & set(theirs))]
    return float(sum(exact) / len(exact)) * 100, stats.signed_rank_p(exact)


def _table_cells(line: str) -> list[str]:
    """The cells of a Markdown table row after its label."""
    return [cell.strip() for cell in line.strip().strip("|").split("|")[1:]]


# (run, results folder, network, data set, label of the README's row of means; the first row below it that says
# "minus" holds the differences)
SUMMARY_ROWS = [
    ("run-o-300d", "cr-cnn", "cnn", "CR", "ours"),
    ("run-p-300d", "merged-fasttext", "fasttext", "MR", "MR"),
    ("run-p-300d", "merged-fasttext", "fasttext", "SUBJ", "SUBJ"),
    ("run-p-300d", "merged-cnn", "cnn", "MPQA", "MPQA"),
    ("run-q-300d", "merged-transformer", "transformer", "MPQA", "MPQA"),
    ("run-r-300d", "merged", "transformer", "CR", "Transformer CR"),
    ("run-s-300d", "merged", "rnn", "TREC", "LSTM TREC"),
    ("run-t-300d", "merged", "rnn", "MPQA", "LSTM MPQA"),
    ("run-v-300d", "merged", "rnn", "CR", "LSTM CR"),
    ("run-w-300d", "merged", "cnn", "SUBJ", "CNN SUBJ"),
]


@pytest.mark.parametrize("run, folder, network, dataset, label", SUMMARY_ROWS)
def test_complex_order_run_pages_state_the_means_differences_and_p_of_their_results(run, folder, network, dataset,
                                                                                     label):
    by_variant = _run_records(run, folder, network, dataset)
    lines = (COMPLEX_ORDER / run / "README.md").read_text(encoding="utf-8").splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(f"| {label} | "))
    for cell, variant in zip(_table_cells(lines[at]), VARIANTS):
        mean, std = cell.split(" ± ")
        accuracy = _test_percent(by_variant[variant])
        assert _agrees(mean, statistics.mean(accuracy)) and _agrees(std, statistics.stdev(accuracy)), (variant, cell)
    differences = next(line for line in lines[at + 1:] if "minus" in line)
    for cell, variant in zip(_table_cells(differences), VARIANTS[:4]):
        margin, p = re.fullmatch(r"([+-]?\d+\.\d) \(([\d.]+)\)", cell).groups()
        expected_margin, expected_p = _paired(by_variant, variant)
        assert _agrees(margin, expected_margin) and _agrees(p, expected_p), (variant, cell, expected_p)


def test_cnn_cr_page_says_its_stored_p_values_predate_the_exact_test():
    stored = {v: a["p"] for v, a in _json("complex_order", "run-o-300d", "cr-cnn", "results.json")["claims"][0][
        "against"].items()}
    readme = _page("complex_order", "run-o-300d", "README.md")
    assert f"keep the float-based p of the run ({stored['none']:.3f}, {stored['pe']:.2f}, {stored['tpe']:.1f}, " \
           f"{stored['complex_vanilla']:.2f})" in readme
    by_variant = _run_records("run-o-300d", "cr-cnn")
    assert f"(significant, p {_paired(by_variant, 'none')[1]:.3f})" in readme


def _split_number(split: str, seed: int) -> int:
    """A fold's number, or the seed on a fixed split, as the per-run tables name their rows."""
    return int(split.split()[1]) if split.startswith("fold") else seed


# (run, results folder with every job): pages with a "N, test" and an "N, dev (lr)" row per fold or seed
SPLIT_TABLES = [("run-aa-300d", "merged"), ("run-ab-300d", "merged-folds-1-10"),
                ("run-ad-300d", "merged-folds-1-10"), ("run-x-300d", "merged"), ("run-z-300d", "merged")]


@pytest.mark.parametrize("run, folder", SPLIT_TABLES)
def test_complex_order_run_tables_give_each_jobs_test_dev_and_chosen_lr(run, folder):
    by_variant = _run_records(run, folder)
    readme = (COMPLEX_ORDER / run / "README.md").read_text(encoding="utf-8")
    for key in by_variant["none"]:
        jobs = [by_variant[v][key] for v in VARIANTS]
        n = _split_number(*key)
        assert f"| {n}, test | " + " | ".join(f"{r['test_accuracy'] * 100:.1f}" for r in jobs) + " |" in readme
        assert f"| {n}, dev (lr) | " + " | ".join(
            f"{r['dev_accuracy'] * 100:.1f} ({LEARNING_RATES[r['selected']['lr']]})" for r in jobs) + " |" in readme


@pytest.mark.parametrize("run", ["run-u-300d", "run-w-300d"])
def test_complex_order_fold_tables_give_each_folds_test_accuracy(run):
    by_variant = _run_records(run, "merged")
    readme = (COMPLEX_ORDER / run / "README.md").read_text(encoding="utf-8")
    for key in by_variant["none"]:
        row = " | ".join(f"{by_variant[v][key]['test_accuracy'] * 100:.1f}" for v in VARIANTS)
        assert f"| {_split_number(*key)} | {row} |" in readme


def test_cnn_mr_page_states_the_means_and_p_of_its_ten_folds():
    by_variant = _run_records("run-u-300d", "merged")
    readme = _page("complex_order", "run-u-300d", "README.md")
    means = ", ".join(f"{VARIANT_NAMES[v]} {statistics.mean(_test_percent(by_variant[v])):.1f} ± "
                      f"{statistics.stdev(_test_percent(by_variant[v])):.1f}" for v in VARIANTS)
    assert means in readme
    (none, p_none), (pe, p_pe) = _paired(by_variant, "none"), _paired(by_variant, "pe")
    assert f"below none ({none:.1f}, Wilcoxon p {p_none:.3f}) and PE ({pe:.1f}, p {p_pe:.3f})" in readme


def test_lstm_sst2_page_gives_each_seeds_test_and_lr_and_the_means():
    by_variant = _run_records("run-ae-300d", "merged-seeds0-5")
    readme = (COMPLEX_ORDER / "run-ae-300d" / "README.md").read_text(encoding="utf-8")
    for key in by_variant["none"]:
        row = " | ".join(f"{by_variant[v][key]['test_accuracy'] * 100:.1f} "
                         f"({LEARNING_RATES[by_variant[v][key]['selected']['lr']]})" for v in VARIANTS)
        assert f"| {key[1]} | {row} |" in readme
    means = " | ".join(f"{statistics.mean(_test_percent(by_variant[v])):.1f} ± "
                       f"{statistics.stdev(_test_percent(by_variant[v])):.1f}" for v in VARIANTS)
    assert f"| mean ± std | {means} |" in readme


def test_lstm_sst2_page_differences_on_one_seed_come_from_the_sentence_counts():
    by_variant = _run_records("run-ae-300d", "merged-seeds0-5")
    test = {v: {key[1]: r["test_accuracy"] * 100 for key, r in runs.items()} for v, runs in by_variant.items()}
    readme = _page("complex_order", "run-ae-300d", "README.md")
    assert f"and {test['pe'][5] - test['complex_order'][5]:.1f} under PE (85.0;" in readme
    assert f"({test['none'][4] - test['complex_order'][4]:.1f} points under none, 85.7)" in readme


def test_cnn_sst2_page_states_complex_orders_gap_to_pe_on_each_seed():
    by_variant = _run_records("run-x-300d", "merged")
    gaps = {key[1]: (by_variant["pe"][key]["test_accuracy"] - r["test_accuracy"]) * 100
            for key, r in by_variant["complex_order"].items()}
    readme = _page("complex_order", "run-x-300d", "README.md")
    assert f"last on test on seeds 0-4: {', '.join(f'{gaps[s]:.1f}' for s in range(4))} and {gaps[4]:.1f} points " \
           "below PE on test" in readme
    assert f"above TPE (81.6) and {gaps[5]:.1f} below PE" in readme


def test_transformer_sst2_page_gives_every_jobs_figures():
    by_variant = _run_records("run-ac-300d", "merged-seeds0-5")
    readme = (COMPLEX_ORDER / "run-ac-300d" / "README.md").read_text(encoding="utf-8")
    for variant, runs in by_variant.items():
        for (_split, seed), r in runs.items():
            assert (f"| seed {seed}, {VARIANT_NAMES[variant]} | {r['test_accuracy'] * 100:.2f} | "
                    f"{r['dev_accuracy'] * 100:.2f} | {LEARNING_RATES[r['selected']['lr']]} | "
                    f"{r['best_epoch']} / {r['epochs_run']} |") in readme


@pytest.mark.parametrize("run", ["run-ac-300d", "run-ad-300d"])
def test_complex_order_merged_tables_of_a_page_are_their_merges(run):
    """Each table "| variant | mean ± std (paper) | difference (p) |" after a ``--merge ... --out $R/DIR`` command."""
    checked, merged = 0, None
    for line in (COMPLEX_ORDER / run / "README.md").read_text(encoding="utf-8").splitlines():
        out = re.search(r"--out \$R/(merged[\w-]*)", line)
        merged = out.group(1) if out else merged
        row = re.match(r"\| (none|PE|TPE|complex-vanilla|complex-order) \| (\d+\.\d) ± (\d\.\d)[^|]*\|"
                       r"(?: ([+-]\d\.\d)(?: \(([\d.]+)\))? \|)?", line)
        if not row or merged is None:
            continue
        by_variant = _run_records(run, merged)
        variant = {name: v for v, name in VARIANT_NAMES.items()}[row.group(1)]
        accuracy = _test_percent(by_variant[variant])
        assert _agrees(row.group(2), statistics.mean(accuracy)) and _agrees(row.group(3), statistics.stdev(accuracy))
        if row.group(4):
            margin, p = _paired(by_variant, variant)
            assert _agrees(row.group(4), margin) and (row.group(5) is None or _agrees(row.group(5), p)), line
        checked += 1
    assert checked >= 5


def test_lstm_subj_page_states_how_close_the_ten_folds_variants_lie():
    by_variant = _run_records("run-ad-300d", "merged-folds-1-10")
    means = [statistics.mean(_test_percent(runs)) for runs in by_variant.values()]
    assert f"all five variants lie within {max(means) - min(means):.1f} points" in _page(
        "complex_order", "run-ad-300d", "README.md")


def test_transformer_subj_page_ranks_complex_order_on_fold_3s_dev():
    fold3 = {v: runs[("fold 3", 0)]["dev_accuracy"] * 100 for v, runs in _run_records(
        "run-ab-300d", "merged-folds-1-10").items()}
    above = sorted((v for v in fold3 if fold3[v] > fold3["complex_order"]), key=fold3.get, reverse=True)
    assert [VARIANT_NAMES[v] for v in above] == ["TPE", "PE"]
    assert (f"on dev it is third ({fold3['complex_order']:.1f}), behind TPE ({fold3['tpe']:.1f}) and PE "
            f"({fold3['pe']:.1f})") in _page("complex_order", "run-ab-300d", "README.md")


def _paper(run: str, folder: str, network: str, variant: str) -> float:
    """The paper's Table 2 figure, as the bracket of a merged table.md row."""
    table = (COMPLEX_ORDER / run / folder / "table.md").read_text(encoding="utf-8")
    return float(re.search(rf"^\| {network} \| {variant} \| [^[]*\[(\d+\.\d)\]", table, flags=re.M).group(1))


@pytest.mark.parametrize("run, folder, network, name, stated", [
    ("run-s-300d", "merged", "rnn", "LSTM", "the paper's real LSTMs (85.8-86.5) are {low}-{high} points below ours"),
    ("run-p-300d", "merged-cnn", "cnn", "CNN", "our real CNNs are {low}-{high} below the paper's (89.4-89.7)"),
])
def test_complex_order_pages_state_the_gap_of_the_real_variants_to_the_paper(run, folder, network, name, stated):
    by_variant = _run_records(run, folder)
    gaps = [abs(statistics.mean(_test_percent(by_variant[v])) - _paper(run, folder, name, label))
            for v, label in (("none", "none"), ("pe", "PE"), ("tpe", "TPE"))]
    assert stated.format(low=f"{min(gaps):.1f}", high=f"{max(gaps):.1f}") in _page("complex_order", run, "README.md")


@pytest.mark.parametrize("run, folder", [("run-m-300d", "merged"), ("run-n-300d", "merged")])
def test_complex_order_pages_quote_their_merged_tables_with_the_means_of_the_records(run, folder):
    readme = (COMPLEX_ORDER / run / "README.md").read_text(encoding="utf-8")
    table = (COMPLEX_ORDER / run / folder / "table.md").read_text(encoding="utf-8").splitlines()
    rows = [line for line in readme.splitlines() if line.startswith("| ") and not line.startswith("|---")]
    assert len(rows) > 10 and all(row in table for row in rows)
    records = _json("complex_order", run, folder, "results.json")["records"]
    cells: dict = {}
    for r in records:
        cells.setdefault((r["network"], r["dataset"], r["variant"]), []).append(r["test_accuracy"] * 100)
    for accuracy in cells.values():
        assert f"| {statistics.mean(accuracy):.1f} ± {statistics.stdev(accuracy):.1f} (n={len(accuracy)}) [" in readme


def test_gpu_attempt_page_states_the_probe_epochs_and_traces_its_cpu_epoch():
    probe = COMPLEX_ORDER / "run-y-300d" / "probe"
    solo = json.loads((probe / "solo.json").read_text(encoding="utf-8"))["records"][0]
    four = [json.loads((probe / f"four{i}.json").read_text(encoding="utf-8"))["records"][0] for i in range(1, 5)]
    readme = _page("complex_order", "run-y-300d", "README.md")
    seconds = sorted(r["seconds_per_epoch"] for r in four)
    assert f"| 1 | {solo['seconds_per_epoch']:.1f} |" in readme
    assert f"| 4 | {seconds[0]:.1f}-{seconds[-1]:.1f} |" in readme
    dev = sorted(r["dev_accuracy"] for r in four)
    assert f"{solo['dev_accuracy']:.3f} after 2 epochs alone; {dev[0]:.3f}-{dev[-1]:.3f} after 1 epoch" in readme
    log = (COMPLEX_ORDER / "run-ac-300d" / "sst2-transformer-s0-complex_order.log").read_text(encoding="utf-8")
    first = re.search(r"lr 0\.001: epoch 1, .*, (\d+) s", log).group(1)
    assert f"logged {first} s for seed 0's first epoch at lr 1e-3" in readme
    assert "424 s" not in readme


# --- benchmarks/results/word2fun/NOTES.md below its top sections -----------------------------------------------------


def _notes() -> str:
    """NOTES.md of the Word2Fun results, line breaks and bold marks removed."""
    return _page("word2fun", "NOTES.md").replace("**", "")


def test_word2fun_notes_heldout_table_is_the_run_of_every_model():
    ll = {model: r["log_likelihood"] for model, r in _json("word2fun", "heldout-all", "heldout.json")["results"].items()
          if "log_likelihood" in r}
    notes = _notes()
    assert (f"| Word2Fun II / III / IV, library defaults | {ll['word2fun-II']:.4f} / {ll['word2fun-III']:.4f} / "
            f"{ll['word2fun-IV']:.4f} |") in notes
    assert f"| Word2Fun IV, word2vec's per-pair negatives | {ll['word2fun-IV-w2v-loss']:.4f} (best) |" in notes
    for label, model in (("compass-aligned periods (CADE's algorithm in qpnlp)", "compass_aligned_periods"),
                         ("per-period skip-gram (gensim, Procrustes)", "per_period"),
                         ("static skip-gram (gensim)", "static"),
                         ("CADE, PyPI `cade` 1.2.0 (its authors' code)", "cade")):
        assert f"| {label} | {ll[model]:.4f} |" in notes
    assert f"{ll['compass_aligned_periods'] - ll['cade']:.2f} below qpnlp's compass-aligned periods" in notes
    assert f"log-likelihood 6 log(1/2) = {6 * math.log(0.5):.3f} each" in notes


def test_word2fun_notes_logistic_step_checks_are_their_drift_runs():
    def figures(tag: str) -> str:
        r = _json("word2fun", "logistic-step", f"{tag}.json")["results"]["word2fun-IV"]
        return f"{r['spearman']:.3f} / {r['acc_after']:.3f} / {r['change_year_mae']:.2f} / {r['control_spearman']:.2f}"

    notes = _notes()
    for seed, variant in ((0, "standard"), (5, "standard"), (0, "low-frequency"), (5, "low-frequency")):
        step, previous = figures(f"final-check-{variant}-s{seed}"), figures(f"check-nologistic-{variant}-s{seed}")
        step = step.replace("-0.26", "-0.261")  # the page gives the missed control to three decimals
        assert f"| {seed} {variant} | {step} | {previous} |" in notes


def test_word2fun_notes_candidate_row_is_the_held_out_seeds_runs():
    runs = [_json("word2fun", "drift-candidate.json")] + [
        _json("word2fun", "extra-seeds", f"candidate-seed{s}.json") for s in range(5, 9)]
    rows = [r["results"]["word2fun-IV"] for r in runs]
    columns = [", ".join(f"{r[key]:.{digits}f}" for r in rows) for key, digits in (
        ("spearman", 3), ("acc_after", 3), ("change_year_mae", 2), ("control_spearman", 2))]
    assert "| cap 6, roughness 2e-5 (current default) | " + " | ".join(columns) + " |" in _notes()


def test_word2fun_notes_speed_slow_downs_are_speed_json():
    phases = _json("word2fun", "speed.json")["phases"]

    def slow_down(model: str) -> str:
        return f"{phases['0'][model]['median_tokens_per_s'] / phases['2'][model]['median_tokens_per_s']:.2f}x"

    assert (f"beside two busy processes gensim slows {slow_down('gensim per-period')}, Word2Fun "
            f"{slow_down('word2fun (2 processes, torchrun, defaults)')} (processes) and "
            f"{slow_down('word2fun (defaults: shared negatives)')} (threads), the previous CLI (1 worker, torch's 2 "
            f"intra-op threads) {slow_down('word2fun CLI before (baseline tree, workers 1, default threads)')}") \
        in _notes()

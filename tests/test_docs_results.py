"""Figures the docs quote from benchmarks/results agree with the results files they come from (recomputed, no training).

Each test reads the stored ``results.json`` of a run, recomputes what a page states about it and looks for that
statement on the page, so a page that cites a superseded run or rounds a figure wrongly fails here.
"""

import json
import re
import statistics
from pathlib import Path

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

"""The options of ``qpnlp train word2fun``, by group: the corpus, the model, the training, the output.

Every default is the library's, handed in by ``qpnlp.commands.word2fun.register``: the keyword defaults of
:func:`qpnlp.word2fun.fit` and the field defaults of :class:`qpnlp.word2fun.TrainConfig`.
"""

from __future__ import annotations

import argparse

from ._types import DEVICE_HELP, count_type, device_type, finite_type, path_type, rate_type
from ._word2fun_ignored import GIVEN

DEFAULT_ERAS = 4  # eras of the report when --eras is not given (fewer for a corpus of fewer distinct times)


def add_word2fun_options(p: argparse.ArgumentParser, train: dict, fk: dict) -> None:
    """Add every option of ``qpnlp train word2fun`` to ``p``: ``train`` holds the :class:`~qpnlp.word2fun.TrainConfig`
    field defaults, ``fk`` the keyword defaults of :func:`~qpnlp.word2fun.fit`."""
    _add_corpus_options(p)
    _add_model_options(p.add_argument_group("model (defaults of qpnlp.word2fun.fit)"), fk)
    t = p.add_argument_group("training (defaults of qpnlp.word2fun.TrainConfig)")
    _add_sgd_options(t, train)
    _add_run_options(t, train)
    o = p.add_argument_group("output")
    _add_report_options(o)
    _add_file_options(o)


def _penalty_default() -> str:
    """The default of ``--roughness-penalty`` in words: it depends on the family and the logistic step."""
    from qpnlp.word2fun.config import DEFAULT_ROUGHNESS_PENALTY, DEFAULT_ROUGHNESS_PENALTY_NO_STEP

    return (f"{DEFAULT_ROUGHNESS_PENALTY:g} for families II-IV with the logistic step, "
            f"{DEFAULT_ROUGHNESS_PENALTY_NO_STEP:g} without it, 0 for the others")


def _add_corpus_options(p: argparse.ArgumentParser) -> None:
    """``--corpus`` and ``--stream``: what is read, and how."""
    p.add_argument("--corpus", required=True,
                   help="'sotu', a TSV file (YEAR<TAB>tokens per line, plain or .gz), or several: a comma-separated "
                        "list or a quoted glob; a comma inside a path is written \\, (--corpus 'a\\,b.tsv,c.tsv'); "
                        "other backslashes are as typed")
    p.add_argument("--stream", action="store_true",
                   help="read the files in chunks of --chunk-tokens tokens instead of loading the corpus")


def _add_model_options(m, fk: dict) -> None:
    """The model options, into the group ``m``, with the keyword defaults ``fk`` of :func:`qpnlp.word2fun.fit`."""
    from qpnlp.word2fun import FAMILIES
    from qpnlp.word2fun.model import FREQUENCY_INITS
    from qpnlp.word2fun.train import COMPASS_MODES, STEP_CENTRES

    m.add_argument("--family", default=fk["family"], choices=list(FAMILIES), help="(default %(default)s)")
    m.add_argument("--dim", type=count_type(), default=fk["dim"], help="(default %(default)s)")
    m.add_argument("--time-scale", type=float, default=fk["time_scale"],
                   help="normalised time range [0, S] of the corpus span (default %(default)s)")
    m.add_argument("--frequency-init", action=GIVEN, default=fk["frequency_init"], choices=list(FREQUENCY_INITS),
                   help="initial per-word frequencies of families III and IV (default %(default)s)")
    m.add_argument("--max-periods", action=GIVEN, type=float, default=fk["max_periods"] or 0.0,
                   help="harmonic init: fastest frequency in periods over the span (0 = the full ladder, D/8 "
                        "periods; default %(default)s)")
    m.add_argument("--logistic", action=argparse.BooleanOptionalAction, default=fk["logistic"],
                   help="add one logistic step per word, A_u (sigmoid(k_u (s - c_u)) - 1/2), that every coordinate "
                        "follows at once (default: on for families II-IV, off for the others)")
    m.add_argument("--step-centres", action=GIVEN, default=fk["step_centres"], choices=list(STEP_CENTRES),
                   help="where the logistic steps start: each word's change point of its contexts (one extra pass "
                        "over the corpus) or mid-span (default %(default)s)")
    m.add_argument("--slices", action=GIVEN, type=count_type(), default=fk["n_slices"],
                   help="time slices of the 'sliced' family (default %(default)s)")
    m.add_argument("--min-count", type=count_type(), default=fk["min_count"], help="(default %(default)s)")
    m.add_argument("--compass", default=fk["compass"], choices=list(COMPASS_MODES),
                   help="frozen: first train a static model for --compass-epochs, then freeze its target vectors "
                        "(default %(default)s)")
    m.add_argument("--compass-epochs", action=GIVEN, type=count_type(), default=fk["compass_epochs"],
                   help="(default %(default)s)")


def _add_sgd_options(t, train: dict) -> None:
    """The SGD settings (batches, learning rates, negatives, roughness penalty, rare words), into the group ``t``,
    with the field defaults ``train`` of :class:`qpnlp.word2fun.TrainConfig`."""
    t.add_argument("--epochs", type=count_type(), default=train["epochs"], help="(default %(default)s)")
    t.add_argument("--batch-size", type=count_type(), default=train["batch_size"],
                   help="pairs per SGD step (default %(default)s)")
    t.add_argument("--lr", type=float, default=train["lr"], help="initial learning rate (default %(default)s)")
    t.add_argument("--window", type=count_type(), default=train["window"], help="(default %(default)s)")
    t.add_argument("--sample", type=finite_type, default=train["sample"],
                   help="subsampling threshold, 0 = off (default %(default)s)")
    t.add_argument("--negatives", type=count_type(), default=train["negatives"],
                   help="negatives shared by the pairs of a batch (--shared-negatives) or drawn for each pair "
                        "(--no-shared-negatives; default %(default)s)")
    t.add_argument("--negative-weight", type=rate_type(), default=train["negative_weight"],
                   help="weight of the negative term; 1 is the thesis loss, k word2vec's sum over k negatives "
                        "(default %(default)s)")
    t.add_argument("--shared-negatives", action=argparse.BooleanOptionalAction, default=train["shared_negatives"],
                   help="share one sample of --negatives by all pairs of a batch (default %(default)s)")
    t.add_argument("--per-pair-negatives", dest="shared_negatives", action="store_false",
                   help=argparse.SUPPRESS)  # the spelling of qpnlp 0.1
    t.add_argument("--roughness-penalty", type=finite_type, default=train["roughness_penalty"],
                   help="families II-IV: weight of the mean squared speed of f(u, .), 0 = off (default "
                        f"{_penalty_default()})")
    t.add_argument("--roughness-power", action=GIVEN, type=finite_type, default=train["roughness_power"],
                   help="a word's penalty scales as (--frequency-reference / its occurrences per million tokens) ** "
                        "power: 0 = the same per "
                        "occurrence, 1 = the same per word (default %(default)s)")
    t.add_argument("--rare-lr-power", type=finite_type, default=train["rare_lr_power"],
                   help="a word's learning rate is multiplied by (--frequency-reference / its occurrences per million "
                        "tokens) ** power, "
                        "between 1 and --rare-lr-max (default %(default)s)")
    t.add_argument("--rare-lr-max", action=GIVEN, type=finite_type, default=train["rare_lr_max"],
                   help="(default %(default)s)")
    t.add_argument("--frequency-reference", action=GIVEN, type=float, default=train["frequency_reference"],
                   help="occurrences per million tokens below which a word counts as rare (default %(default)s)")


def _add_run_options(t, train: dict) -> None:
    """How the run trains (chunks, threads, processes, device, seed, progress bars), into the group ``t``, with the
    field defaults ``train`` of :class:`qpnlp.word2fun.TrainConfig`."""
    from qpnlp.word2fun.config import PARALLEL_MODES

    t.add_argument("--chunk-tokens", type=count_type(), default=train["chunk_tokens"],
                   help="tokens shuffled together (and held in memory with --stream; default %(default)s)")
    t.add_argument("--workers", type=count_type(), default=train["workers"],
                   help="training threads, one torch thread each (default %(default)s); how they share the "
                        "training: --parallel")
    t.add_argument("--parallel", action=GIVEN, choices=PARALLEL_MODES, default=train["parallel"],
                   help="with --workers > 1: hogwild threads sharing one model (not deterministic), or replicas, "
                        "one copy per thread, their updates merged every --replica-sync-every batches of each "
                        "(deterministic; default %(default)s)")
    t.add_argument("--replica-sync-every", action=GIVEN, type=count_type(), default=train["replica_sync_every"],
                   help="--parallel replicas: batches each replica trains between two merges of their updates "
                        "(default %(default)s)")
    t.add_argument("--processes", type=count_type(), default=1,
                   help="train in this many processes on this machine, started as torchrun would start them "
                        "(gloo on CPU; one process per core is about as fast as --workers on idle cores and faster "
                        "beside busy processes; see the distributed-training docs page; default %(default)s)")
    t.add_argument("--sync-every", action=GIVEN, type=count_type(), default=train["sync_every"],
                   help="distributed runs: batches between two synchronisations of the processes (default "
                        "%(default)s)")
    t.add_argument("--threads", type=count_type(0), default=0,
                   help="torch CPU threads (counting, change points, the report; 0 = torch's default, the cores; "
                        "default %(default)s); the SGD loop runs one per --workers, with --step-threads each")
    t.add_argument("--step-threads", type=count_type(0), default=train["step_threads"],
                   help="threads of each worker's compiled SGD step, which makes the same updates whatever their "
                        "number (0 = --threads' count for one worker where numba's threads survive fork, i.e. its TBB "
                        "layer, else 1; default %(default)s)")
    t.add_argument("--device", type=device_type, default=train["device"],
                   help=DEVICE_HELP)
    t.add_argument("--seed", type=count_type(0), default=train["seed"], help="(default %(default)s)")
    t.add_argument("--no-progress", action="store_true",
                   help="no progress bars (shown only when stderr is a terminal)")


def _add_report_options(o) -> None:
    """What the report says of the ``--words`` (their nearest words per era), into the group ``o``."""
    o.add_argument("--words", default="",
                   help="comma-separated words to report (nearest words per era); each must be in the vocabulary "
                        "(seen at least --min-count times), matched as written, case included, after the Unicode "
                        "normalisation the corpus gets (qpnlp.data.tokenize.normalize_text); a comma inside a word "
                        "is written \\, (--words '1\\,725,war'), a backslash \\\\; --words=-x for a list that "
                        "begins with '-'")
    o.add_argument("--eras", type=count_type(), default=None,
                   help="number of equal eras for the report, at most the number of distinct times of the corpus "
                        f"(default {DEFAULT_ERAS}, or that number when smaller)")
    o.add_argument("--topk", action=GIVEN, type=count_type(), default=8,
                   help="nearest words per era (default %(default)s)")


def _add_file_options(o) -> None:
    """The files the run writes (checkpoint, report, grid) and ``--resume``, into the group ``o``."""
    o.add_argument("--out", default=None, type=path_type,
                   help="checkpoint directory, replaced after every epoch (an existing one must hold a saved model); "
                        "locked while the run lasts by the file .NAME.lock beside it: a second run given it at the "
                        "same time is refused")
    o.add_argument("--resume", action="store_true",
                   help="continue the run saved in --out at its next epoch, given its corpus: every model and "
                        "training setting not given here (--min-count, --dim, --lr, ...) is the saved run's, not "
                        "today's default; one given is compared with the saved run's, a difference refused, named "
                        "with both values (only --epochs, --device, --workers, --parallel, --replica-sync-every, "
                        "--chunk-tokens, --sync-every and --processes may change); what the checkpoint does not "
                        "record (--processes, --stream, --threads, the report and output options) is this command "
                        "line's")
    o.add_argument("--report", default=None, metavar="FILE.json", type=path_type,
                   help="write the report (metrics, history, settings, the --words results) to this JSON file, "
                        "rewritten after every epoch (a failed rewrite is a warning, said once: the training goes "
                        "on), with the history also as FILE.history.csv")
    o.add_argument("--export-npz", default=None, metavar="FILE", type=path_type,
                   help="write words, years, E (years x words x dim) to this .npz file (this name exactly; its "
                        "missing directories are created, as for --report)")
    o.add_argument("--npz-words", action=GIVEN, type=count_type(), default=2000,
                   help="most frequent words in the .npz grid (default %(default)s)")

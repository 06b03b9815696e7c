"""``qpnlp train word2fun``: train Word2Fun on a timestamped corpus and report drifts.

Examples
--------
``qpnlp train word2fun --corpus sotu --words energy,union --out runs/sotu --report sotu.json``

``qpnlp train word2fun --corpus data.tsv --family IV --epochs 7 --export-npz grid.npz``

``qpnlp train word2fun --corpus 'shards/part-*.tsv.gz' --stream --out runs/big --resume``

``qpnlp train word2fun --corpus 'shards/*.tsv.gz' --stream --out runs/big --processes 2``

``torchrun --nproc-per-node 2 -m qpnlp.cli train word2fun --corpus 'shards/*.tsv.gz' --stream --out runs/big``

The corpus is ``sotu`` (the State of the Union package) or TSV files with one
document per line, ``YEAR<TAB>space separated tokens`` (plain or gzip; a
comma-separated list or a glob of shards).  Training is
:func:`qpnlp.word2fun.fit`, and every default of this command is the
library's (:class:`qpnlp.word2fun.TrainConfig` and the keyword defaults of
``fit``), so the command and a Python user train the same model.  With
``--stream`` the files are read in chunks of ``--chunk-tokens`` tokens
(memory bounded by the chunk, not the corpus).  Started by ``torchrun``
(``WORLD_SIZE`` > 1) each process trains on its own shard and the processes
keep one model (see the distributed-training docs page); ``--processes N``
starts N such processes on this machine itself.  With ``--out`` the
vectors are saved there after every epoch, atomically, by the first process
only; ``--resume`` continues from that checkpoint.

An option given where the others leave it without effect (``--slices`` with
another family than ``sliced``, ``--step-centres`` with ``--no-logistic``, ...:
``qpnlp.commands._word2fun_ignored``) is a warning, on stderr and in the
report's ``warnings``, not an error.

Options are checked before training: the output paths, and, for a corpus in
memory, the ``--words`` against the vocabulary (a streamed or resumed run,
whose vocabulary is known only inside ``fit``, warns after training) and
``--eras`` against its distinct times.  Each
epoch prints one line and rewrites the ``--report`` (the one report schema of
every command, ``qpnlp-report/1``, with ``<report>.history.csv``); the
nearest words, change degrees and indicators of ``--words`` are under its
``details``.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import os
import sys
from collections import Counter
from pathlib import Path

import numpy as np

from qpnlp import _env
from qpnlp._threads import torch_threads

from ._common import show_progress
from ._console import result_line, status_line, warning_line
from ._errors import CommandFailed, UsageError
from ._outputs import (check_output_path, check_report_apart, check_report_path, lock_for_the_run, overlapping,
                       remove_leftovers_of)
from ._processes import ERROR_FILE_VARIABLE, interrupted, records_error, run_in_processes, saved_epochs
from ._report import Report, epoch_logger
from ._resume_word2fun import continue_saved_run
from ._word2fun_corpus import _comma_items, _corpus_parts, _load_corpus
from ._word2fun_ignored import ignored_options
from ._word2fun_options import DEFAULT_ERAS, add_word2fun_options

__all__ = ["register", "run"]

#: Set by the launcher of ``--processes`` for the processes it starts: the lock file of ``--out`` it holds for them.
LOCKED_OUT_VARIABLE = "QPNLP_LOCKED_OUT"


def _defaults():
    """The library's defaults: ``(TrainConfig field defaults, fit keyword defaults)``."""
    from qpnlp.word2fun import TrainConfig, fit

    train = {f.name: f.default for f in dataclasses.fields(TrainConfig)}
    fit_kw = {name: p.default for name, p in inspect.signature(fit).parameters.items()
              if p.default is not inspect.Parameter.empty}
    return train, fit_kw


def register(subparsers: dict) -> None:
    """Add ``word2fun`` under ``subparsers["train"]``."""
    train, fk = _defaults()
    p = subparsers["train"].add_parser(
        "word2fun", help="dynamic word embeddings as functions of time (Word2Fun)", description=__doc__.splitlines()[0],
    )
    add_word2fun_options(p, train, fk)
    p.set_defaults(func=run)


def _writes_report() -> bool:
    """Whether this process writes the report and prints the epoch lines: the only one, or rank 0 under torchrun.

    The process group opens inside ``fit``; before that the rank is the one
    ``torchrun`` gave the process (``RANK``), which the group then takes.
    """
    from qpnlp.word2fun.distributed import is_main_process

    if not is_main_process():
        return False
    return _env.count("WORLD_SIZE", 1) <= 1 or _env.count("RANK", 0) == 0


def _check_environment(args: argparse.Namespace) -> None:
    """The environment a run of several processes reads (torchrun's ``WORLD_SIZE`` and ``RANK``,
    ``QPNLP_DIST_BACKEND``, ``QPNLP_DIST_TIMEOUT``), checked before anything is read: a bad value is a usage error
    (exit code 2), said once, not by every process of ``--processes`` once they have started."""
    from qpnlp.word2fun.distributed import group_options

    try:
        torchrun = _env.count("WORLD_SIZE", 1) > 1
        if torchrun:
            _env.count("RANK", 0)
        if torchrun or args.processes > 1:
            group_options(args.device)
    except ValueError as err:
        raise UsageError(str(err)) from None
    _launches_processes(args)                     # --processes against torchrun's WORLD_SIZE


def _launches_processes(args: argparse.Namespace) -> bool:
    """Whether this process starts ``--processes`` others instead of training (not when torchrun started it)."""
    world = _env.count("WORLD_SIZE", 0)              # 0: not started by torchrun
    if not world:
        return args.processes > 1
    if args.processes > 1 and world != args.processes:
        raise UsageError(f"--processes {args.processes}, but torchrun started {world} processes: leave --processes "
                         f"out under torchrun")
    return False


def _lock_out(args: argparse.Namespace, main: bool, device: str) -> dict[str, str]:
    """Hold ``--out`` locked until the command ends; the environment that tells processes it starts so.

    Every save replaces the directory, so its lock file is beside it
    (``.NAME.lock``, ``qpnlp._atomic.lock_file_of``): a second run given
    the same ``--out`` while this one runs (each checkpoint whole, but the
    runs' epochs overwriting each other's) is refused before the corpus is
    read (``qpnlp.commands._outputs.lock_for_the_run``).  One process of a run holds
    it: the only one, the launcher of ``--processes`` (its processes, given
    :data:`LOCKED_OUT_VARIABLE`, take none), or the first of those
    ``torchrun`` started (``main``), which opens the process group here on
    ``device`` (``fit`` then finds it open) and tells the others in one
    collective whether it holds the lock: refused, every process ends with
    the same line, instead of the others reading the corpus and waiting for
    the first one in ``fit`` until torchrun stopped them. Once held, what a
    killed run's saves of ``--out`` left beside it is deleted
    (``qpnlp.commands._outputs.remove_leftovers_of``).
    """
    from qpnlp._atomic import lock_file_of
    from qpnlp.word2fun import distributed as dist

    if not args.out:
        return {}
    lock = str(lock_file_of(args.out, beside=True))
    if os.environ.get(LOCKED_OUT_VARIABLE) == lock:
        return {LOCKED_OUT_VARIABLE: lock}

    def refusal() -> str | None:
        if main:
            try:
                held = lock_for_the_run(args, args.out, "--out", beside=True, keeps="its checkpoints")
            except CommandFailed as err:
                return str(err)
            if held:                    # no one else's saves of --out: a killed run's leftovers are stale
                remove_leftovers_of(args.out, "--out")
        return None

    if _env.count("WORLD_SIZE", 1) > 1:
        dist.setup(device)
    refused = dist.gather_together(refusal, "locking --out")[0]
    if refused is not None:
        dist.shutdown()
        raise CommandFailed(refused)
    return {LOCKED_OUT_VARIABLE: lock}


def _report_words(spec: str) -> list[str]:
    """The distinct words of ``--words``, split at commas (``\\,`` is a comma inside a word, ``\\\\`` a
    backslash: ``1\\,725`` is the token ``1,725``), each normalised as the TSV reader normalises the corpus
    (:func:`~qpnlp.data.tokenize.normalize_text`: ``café`` typed with a combining accent is the corpus's ``café``);
    a value that names no word (``--words ,``) is a :class:`UsageError`, not a run that reports none."""
    from qpnlp.data.tokenize import normalize_text

    words = list(dict.fromkeys(w for w in (normalize_text(item).strip() for item in _comma_items(spec)) if w))
    if spec.strip() and not words:
        raise UsageError(f"--words {spec!r}: names no word (words are separated by commas; write a comma inside a "
                         f"word as \\,)")
    return words


def _checked_vocabulary(args: argparse.Namespace, corpus, words: list[str]):
    """The vocabulary ``fit`` would build, with every ``--words`` word in it (:class:`UsageError` otherwise).

    Only for a corpus in memory and a fresh run: a streamed corpus is counted
    by ``fit`` itself (one pass over the files, split between the processes;
    another one here would double the reading), and a resumed run keeps the
    vocabulary of its checkpoint; both check ``--words`` after training.
    """
    from qpnlp.data import Vocabulary

    if args.stream or args.resume or len(corpus) == 0:
        return None
    # fit's own rule (qpnlp.word2fun.train.fit); in a distributed run the processes' merged counts are these
    vocabulary = Vocabulary.build(corpus.docs, min_freq=args.min_count, specials=False)
    missing = [w for w in words if w not in vocabulary]
    if missing and len(vocabulary) >= 2:          # fewer than two words: fit's own error says more
        unknown = set(missing)
        seen = Counter(t for doc in corpus.docs for t in doc if t in unknown)
        cased = _other_case(vocabulary.words, missing)
        named = ", ".join(f"{w!r} ({f'{seen[w]} times' if seen[w] else 'not in the corpus'}"
                          f"{f'; the vocabulary has {cased[w]!r}' if w in cased else ''})" for w in missing)
        rarest = min((seen[w] for w in missing if seen[w]), default=0)
        which = "them" if all(seen[w] for w in missing) else "those the corpus has"
        keeps = f" (--min-count {rarest} keeps {which})" if rarest else ""
        raise UsageError(f"--words: not in the vocabulary ({len(vocabulary)} words seen at least --min-count "
                         f"{args.min_count} times): {named}; check the spelling, or lower --min-count{keeps}")
    return vocabulary


def _other_case(vocabulary: list[str], missing: list[str]) -> dict[str, str]:
    """The vocabulary's spelling of each of the ``missing`` words it has in another case: words are matched as
    written, and ``--words Energy`` is not the sotu corpus's ``energy`` (the most frequent spelling is named)."""
    folded = {w.casefold(): w for w in reversed(vocabulary)}
    return {w: folded[w.casefold()] for w in missing if w.casefold() in folded}


def _checked_eras(args: argparse.Namespace, corpus) -> int:
    """The report's eras: ``--eras`` (default :data:`DEFAULT_ERAS`), at most the distinct times of a corpus in memory.

    An era of the report is a part of the corpus's time span; with E eras
    and T < E distinct times, at least E - T eras hold no document, and their
    nearest words would show the model's interpolation only (a report over a
    million eras also ran for minutes after training): such an ``--eras`` is
    a :class:`UsageError`, before training.  The default is lowered to the
    number of distinct times of a smaller corpus.  A streamed corpus, read by
    ``fit`` only, is not checked (another pass here would double the
    reading); neither is a corpus of one time (``fit`` refuses it).
    """
    if args.stream:
        return args.eras or DEFAULT_ERAS
    distinct = len(np.unique(corpus.times))
    if args.eras is None:
        return max(1, min(DEFAULT_ERAS, distinct))
    if distinct >= 2 and args.eras > distinct:
        raise UsageError(f"--eras {args.eras}: the corpus has {distinct} distinct times, so at least "
                         f"{args.eras - distinct} eras would hold no document; use --eras {distinct} or fewer")
    return args.eras


def _epoch_history(report: Report, log, finished: list[int]):
    """``fit``'s ``on_epoch``: one history entry and one line per epoch, the epoch (1-based) first appended to
    ``finished`` (``fit`` calls ``on_epoch`` once the epoch's checkpoint, if any, is written whole).

    As for the other trainers, ``seconds`` is the training time so far; ``epoch_seconds``, ``tokens``,
    ``pairs`` and ``tokens_per_s`` are that epoch's own.
    """
    done = {"tokens": 0, "pairs": 0, "seconds": 0.0, "compile": 0}

    def on_epoch(epoch: int, stats) -> None:
        finished.append(epoch + 1)
        _restored_epochs(report, stats, epoch)
        if not done["compile"] and stats.compile_seconds >= 1:
            done["compile"] = 1
            status_line(f"compiled the training step in {stats.compile_seconds:.0f}s (numba, once after an install: "
                        "later runs load it from the cache); not counted in the epochs' times")
        tokens, pairs = stats.tokens - done["tokens"], stats.pairs - done["pairs"]
        seconds = stats.seconds - done["seconds"]
        done.update(tokens=stats.tokens, pairs=stats.pairs, seconds=stats.seconds)
        log(dict(epoch=epoch + 1, train_loss=stats.epoch_loss[-1], seconds=stats.seconds, epoch_seconds=seconds,
                 tokens_per_s=tokens / seconds if seconds > 0 else None, tokens=tokens, pairs=pairs))
    return on_epoch


def _restored_epochs(report: Report, stats, upto: int) -> None:
    """Epochs of a resumed run trained before it (their losses, from the checkpoint) as history entries."""
    history = report.data["history"]
    for i in range(len(history), min(upto, len(stats.epoch_loss))):
        history.append(dict(epoch=i + 1, train_loss=stats.epoch_loss[i], restored=True))


def run(args: argparse.Namespace) -> int:
    """Run the command; started by ``--processes`` (``qpnlp.commands._processes.run_in_processes``), its error is also
    recorded for the launcher (``qpnlp.commands._processes.records_error``)."""
    with torch_threads(args.threads), records_error():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    """The command, once ``--threads`` is set: the options checked, the corpus read, then training here or in
    ``--processes`` processes."""
    resumed = continue_saved_run(args)            # --resume: the settings not given are the saved run's
    _check_environment(args)
    report = Report(args, command="train word2fun", model="word2fun")
    main = _writes_report()
    if not main:
        report.path = None                        # the first process writes the report
    _check_outputs(args)                          # everything the command line alone decides: before the corpus
    if resumed is not None and main and not os.environ.get(ERROR_FILE_VARIABLE):   # said once, not by each process
        status_line(resumed)
    words = _report_words(args.words)
    cfg, options = _checked_settings(args)
    report.data["warnings"] += ignored_options(args)     # said once (not by each process), kept in the report
    for warning in report.data["warnings"] if main and not os.environ.get(ERROR_FILE_VARIABLE) else ():
        warning_line(args.prog, warning)
    locked = _lock_out(args, main, cfg.device)
    report.update(dataset=args.corpus, split="corpus", split_unit="documents, tokens",
                  config=dict(model=None, train=dataclasses.asdict(cfg), fit=options),
                  checkpoint=args.out, training_state=args.out)
    with report.guard():
        corpus = _load_corpus(args.corpus, args.stream)
    vocabulary = _checked_vocabulary(args, corpus, words)      # a usage error: before any training, no report
    args.eras = _checked_eras(args, corpus)
    report.update(arguments={**report.data["arguments"], "eras": args.eras})
    if _launches_processes(args):
        del corpus, vocabulary                    # each process reads the corpus itself
        return run_in_processes(args, report, env=locked)
    if not args.stream:
        report.update(split_counts=dict(corpus=dict(documents=len(corpus), tokens=corpus.n_tokens)))
    return _train_until_stopped(args, report, corpus, cfg, options, vocabulary, words, main)


def _check_outputs(args: argparse.Namespace) -> None:
    """Refuse output options that cannot be written together (:class:`UsageError`), before the corpus is read:
    ``--resume`` without ``--out``, unwritable paths, a report among the other files, a grid inside ``--out``."""
    if args.resume and not args.out:
        raise UsageError("--resume needs --out, the checkpoint directory to continue")
    report_path = check_report_path(args.report)
    check_output_path(args.export_npz, "--export-npz")
    check_output_path(args.out, "--out", directory=True, model=True)
    check_report_apart(report_path, {"--out": args.out, "--export-npz": args.export_npz},
                       [("--corpus", path) for _, paths in _corpus_parts(args.corpus) for path in paths])
    if args.out and args.export_npz and overlapping(Path(args.out), Path(args.export_npz)):
        # --out is replaced by every checkpoint: the grid could not be written there (only after training), or
        # would be deleted by the next save of the model (--resume)
        raise UsageError(f"--export-npz {args.export_npz} and --out {args.out} overlap; write the grid outside the "
                         f"checkpoint directory, which every save replaces")


def _checked_settings(args: argparse.Namespace):
    """``(TrainConfig, fit's model options)`` of the command line, checked by the library before the corpus is
    read: a value it refuses is a :class:`UsageError` (exit code 2)."""
    from qpnlp.word2fun import TrainConfig, Word2FunConfig
    from qpnlp.word2fun.config import check_penalty_family

    try:
        cfg = TrainConfig(
            epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, negatives=args.negatives,
            shared_negatives=args.shared_negatives, window=args.window, sample=args.sample, seed=args.seed,
            device=args.device, workers=args.workers, parallel=args.parallel,
            roughness_penalty=args.roughness_penalty,
            roughness_power=args.roughness_power, frequency_reference=args.frequency_reference,
            rare_lr_power=args.rare_lr_power, rare_lr_max=args.rare_lr_max,
            chunk_tokens=args.chunk_tokens, sync_every=args.sync_every,
            replica_sync_every=args.replica_sync_every, negative_weight=args.negative_weight,
            step_threads=args.step_threads,
        )
        Word2FunConfig(vocab_size=1, dim=args.dim, family=args.family, time_scale=args.time_scale,
                       n_slices=args.slices, frequency_init=args.frequency_init,
                       max_periods=args.max_periods or None, logistic=bool(args.logistic))
        check_penalty_family(cfg, args.family)    # fit's own check, before the corpus is read
    except ValueError as err:
        raise UsageError(" ".join(str(err).split())) from None
    options = dict(family=args.family, dim=args.dim, time_scale=args.time_scale, n_slices=args.slices,
                   frequency_init=args.frequency_init, max_periods=args.max_periods or None,
                   logistic=args.logistic, step_centres=args.step_centres, min_count=args.min_count,
                   compass=args.compass, compass_epochs=args.compass_epochs)
    return cfg, options


def _train_until_stopped(args, report: Report, corpus, cfg, options: dict, vocabulary, words: list[str],
                         main: bool) -> int:
    """:func:`_train` in this process; Ctrl-C there ends the command as ``interrupted`` says, naming the last
    epoch whose checkpoint was written (said by the first process only, or by the launcher of ``--processes``)."""
    finished: list[int] = []                      # the epochs this run finished (--out: their checkpoints written)
    try:
        with report.guard():
            return _train(args, report, corpus, cfg, options, vocabulary, words, main, finished)
    except KeyboardInterrupt as stop:
        if not main or os.environ.get(ERROR_FILE_VARIABLE):   # the first process, or the launcher, says what
            raise                                             # --out keeps
        return interrupted(args, stop, finished[-1] if finished else (saved_epochs(args.out) if args.resume else 0))


def _train(args, report: Report, corpus, cfg, options: dict, vocabulary, words: list[str], main: bool,
           finished: list[int]) -> int:
    """Train (:func:`_fit`); then the first process reports the ``--words`` per era, writes the grid and the
    report, and prints the results last."""
    from qpnlp.word2fun.distributed import is_main_process, shutdown

    result = _fit(args, report, corpus, cfg, options, vocabulary, main, finished)
    main = is_main_process()
    shutdown()  # every process leaves the group together; the first one reports
    if not main:
        return 0
    vectors, stats = result.vectors, result.stats
    report.data["warnings"] += result.warnings    # fit said them on stderr; the report keeps them
    _restored_epochs(report, stats, len(stats.epoch_loss))   # a resumed run that had no epoch left
    status_line(f"vocabulary {len(vectors)} words (min count {args.min_count})")
    words = _words_in_vocabulary(args, report, vectors, words)
    eras, nearest, change = _nearest_per_era(args, vectors, words)
    indicators = vectors.indicators(words) if words else {}
    if args.export_npz:
        _export_grid(args, vectors, words)
    _finish_report(args, report, result, dict(eras=eras, nearest=nearest, change_degree=change),
                   indicators)
    _print_results(words, nearest, change)      # the results last: a reader of stdout that leaves early loses no file
    return 0


def _fit(args, report: Report, corpus, cfg, options: dict, vocabulary, main: bool, finished: list[int]):
    """:func:`qpnlp.word2fun.fit` on the command line's settings, the first process logging each epoch; a corpus
    of one time is refused naming its files (``ValueError``)."""
    from qpnlp.word2fun import fit
    from qpnlp.word2fun._corpus_checks import OneTimeCorpus

    on_epoch = _epoch_history(report, epoch_logger(report, "word2fun"), finished) if main else None
    try:
        return fit(corpus, cfg, **options, vocabulary=vocabulary, checkpoint=args.out, resume=args.resume,
                   metadata={"corpus_name": args.corpus}, progress=show_progress(args), on_epoch=on_epoch,
                   log=sys.stderr)
    except OneTimeCorpus as err:                  # fit refuses a corpus of one time without the files that hold it
        files = ", ".join(str(p) for _, paths in _corpus_parts(args.corpus) for p in paths) or args.corpus
        raise ValueError(f"--corpus {files}: {err}")


def _words_in_vocabulary(args: argparse.Namespace, report: Report, vectors, words: list[str]) -> list[str]:
    """The ``--words`` the trained vocabulary has; the others named in a warning (stderr and the report).

    Only a streamed or resumed run can miss some (a corpus in memory is checked before, ``_checked_vocabulary``).
    """
    missing = [w for w in words if w not in vectors]
    if missing:
        cased = _other_case(list(vectors.index_to_key), missing)
        named = ", ".join(w + (f" (the vocabulary has {cased[w]!r})" if w in cased else "") for w in missing)
        warning = f"--words not in the vocabulary (min count {args.min_count}): {named}"
        report.data["warnings"].append(warning)
        warning_line(args.prog, warning)
    return [w for w in words if w not in missing]


def _nearest_per_era(args: argparse.Namespace, vectors, words: list[str]) -> tuple[list, dict, dict]:
    """``(eras, nearest, change)``: ``args.eras`` equal eras of the span, each word's ``--topk`` nearest words at
    the middle of each era, and its change degree between the first and the last era."""
    from qpnlp.interpret.temporal import equal_eras

    eras = equal_eras(*vectors.time_span, args.eras)
    # every era sampled at its two ends at least: eras shorter than the step (a corpus of two years) were sampled
    # at their start alone, the last era of 1900 and 1901 at 1900.5, never at 1901
    step = min(vectors.default_step(), eras[0][1] - eras[0][0])
    nearest = {w: [] for w in words}
    for a, b in eras:
        mid = (a + b) / 2
        at_mid = vectors.at(mid) if words else None     # every word's vector at mid, once per era, not once per word
        for w in words:
            found = at_mid.most_similar(w, topn=args.topk, min_count=args.min_count)
            nearest[w].append({"era": [a, b], "year": mid, "nearest": [[x, round(s, 4)] for x, s in found]})
    change = dict(zip(words, vectors.change_degrees(words, eras[0], eras[-1], step=step).tolist()))
    return eras, nearest, change


def _export_grid(args: argparse.Namespace, vectors, words: list[str]) -> None:
    """``--export-npz``: the ``--npz-words`` most frequent words and the ``--words`` on the yearly grid."""
    top = list(vectors.index_to_key[: args.npz_words])
    top += [w for w in words if w not in top]
    written = vectors.export_npz(args.export_npz, top)      # that path exactly, its parents created
    status_line(f"grid of {len(top)} words written to {written}")


def _finish_report(args: argparse.Namespace, report: Report, result, per_era: dict, indicators: dict) -> None:
    """The report finished: the trained model's settings, the metrics, and under ``details`` the corpus, the
    training, the ``per_era`` results (``eras``, ``nearest``, ``change_degree``) and the words' ``indicators``."""
    vectors, stats, info = result.vectors, result.stats, result.corpus_info
    trained = stats.seconds > 0
    report.data["config"].update(model=vectors.model.config.to_dict(), train=dataclasses.asdict(result.config))
    report.finish(
        split_counts=dict(corpus=dict(documents=info["documents"], tokens=info["tokens"])), n=info["tokens"],
        counts=dict(tokens=info["tokens"]),
        metrics=dict(train_loss=stats.epoch_loss[-1] if stats.epoch_loss else None,
                     tokens_per_s=stats.tokens_per_s if trained else None, pairs=stats.pairs,
                     vocabulary_size=len(vectors), epochs=result.epochs_done),
        details=dict(
            corpus={"name": args.corpus, **info, "vocabulary": len(vectors), "streamed": bool(args.stream)},
            training=dict(seconds=stats.seconds, tokens=stats.tokens, processes=result.world_size,
                          compass_pretraining_seconds=result.compass_stats.seconds if result.compass_stats else None),
            **per_era,
            # an indicator a word does not have (NaN) is null, not a warning
            indicators={k: {w: (None if v != v else v) for w, v in d.items()} for k, d in indicators.items()},
            npz=args.export_npz))


def _print_results(words: list[str], nearest: dict, change: dict) -> None:
    """Each word's change degree and nearest words per era, on stdout."""
    from qpnlp.interpret.temporal import era_label

    for i, w in enumerate(words):
        result_line(("\n" if i else "") + f"{w}  (change degree first vs last era: {change[w]:.3f})")
        for e in nearest[w]:
            a, b = e["era"]
            result_line(f"  {era_label(a, b)}: " + ", ".join(x for x, _ in e["nearest"]))

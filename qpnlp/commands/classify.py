"""``qpnlp train MODEL``: sentence classification under the papers' protocols, for every registered classifier.

One sub-command per classification model of the registry (``qpdn``,
``real-bow``, ``order-classifier``, ``cgrnn-classifier`` and any model a user
registers); its model options are generated from the model's config
(``qpnlp.commands._config_options``).

Every option is checked before any file is read (the selection grid against
the model's config and the training settings, the output paths); each epoch
prints one line and rewrites the report; Ctrl-C saves the best model so far
(with ``--save``) and ``--resume`` continues from the last epoch's training
state.
"""

from __future__ import annotations

import argparse
import warnings

from qpnlp._threads import torch_threads
from qpnlp.data import DATASETS, ClassificationDataset, load_classification, splits
from qpnlp.data.classification import CV_DATASETS
from qpnlp.models import get_model_class, registered_models
from qpnlp.training import save_checkpoint
from qpnlp.training.defaults import default_embedding_lr
from qpnlp.training.classification import (apply_setting, check_grid, check_model_options, parse_grid, run_split,
                                           run_split_selected, summarise)
from qpnlp.training import TrainingDiverged, TrainingInterrupted

from ._common import (add_fallback_option, add_training_options, add_vectors_option, inputs_used, load_cli_vectors,
                      train_config, vectors_scale)
from ._errors import CommandFailed, UsageError, how_stopped, interrupted_status
from ._outputs import add_resume_options, prepare_outputs, state_subdir
from ._report import Report, epoch_logger, run_outcome
from ._resume import resume_training_run, resumed_training_settings, taken_from_saved_run
from ._types import count_type, path_type
from ._config_options import add_config_options, config_options, explicit_options, grid_less_given
from ._console import result_line, status_line
from qpnlp.data.protocols import DEFAULT_FOLDS


def register(subparsers: dict) -> None:
    for name in registered_models("classification"):
        p = subparsers["train"].add_parser(
            name.replace("_", "-"), help=f"train {name} on a classification data set",
            description="Train and test under the papers' protocol: 10-fold CV (CR, MPQA, MR, SUBJ) or the fixed "
                        "splits (SST2, TREC); dev carved from training data for early stopping.")
        p.add_argument("--dataset", required=True, type=str.upper, choices=sorted(DATASETS),
                       help="data set name (case-insensitive)")
        p.add_argument("--data", metavar="PATH", help="data root (default: $QPNLP_DATA)")
        p.add_argument("--folds", type=count_type(2), default=None,
                       help=f"CV folds; CV data sets only (default {DEFAULT_FOLDS})")
        p.add_argument("--max-splits", type=count_type(), default=None,
                       help="run only the first N folds (default: all; a fixed split is one)")
        add_vectors_option(p)
        p.add_argument("--select", nargs="+", metavar="NAME=V1,V2", default=None,
                       help="select settings on dev inside each split from this grid of model options or "
                            "training settings (e.g. --select dropout=0,0.3 weighting=amplitude_norm,trainable); "
                            "only the selected setting is scored on test (default: "
                            f"{' '.join(get_model_class(name).training_defaults.get('select', [])) or 'none'}; "
                            "an axis of that default whose option is given, e.g. --dropout, is left out)")
        p.add_argument("--no-select", dest="select", action="store_const", const=[],
                       help="train the given setting only (no selection grid)")
        p.add_argument("--save", metavar="DIRECTORY", type=path_type,
                       help="save the model of the first split run to this directory; a saved qpnlp model there is "
                            "replaced, any other non-empty directory refused (default: not saved); locked while the "
                            "run lasts: a second run given it at the same time is refused")
        add_fallback_option(p)
        add_training_options(p, name)
        add_resume_options(p)
        add_config_options(p, get_model_class(name).config_class)
        p.set_defaults(func=run, kind=name)


def run(args: argparse.Namespace) -> int:
    protocol_folds(args)                  # --folds on a fixed split: refused before a file is read or cleared
    saved = resume_training_run(args)     # --resume: the options not given are the saved run's
    if saved is not None and args.dataset not in CV_DATASETS:   # an earlier qpnlp's --folds 10, unused here:
        saved["taken"].pop("folds", None)                       # not said as continued (protocol_folds)
    args.vectors_scale = vectors_scale(args)                # the report (and a resumed run) records the scale used
    report = Report(args, command=f"train {args.kind}", model=args.kind)
    # Everything the command line alone decides is checked before any file is read.
    notes: list[str] = []                 # said once the command line is known to be good: an error is one line
    select = selection_grid(args, notes)
    candidates = parse_grid(select) if select else None
    follows = default_embedding_lr(args.kind, dataset=args.dataset, vectors=args.vectors) is None
    if candidates is not None and follows and "embedding_lr" not in explicit_options(args):   # each point's lr
        candidates = [{**c, "embedding_lr": c["lr"]} if "lr" in c and "embedding_lr" not in c else c
                      for c in candidates]
    config, options, candidates, resumed = resumed_training_settings(args, saved, train_config(args),
                                                                     config_options(args), candidates)
    # --phase-lr too, before any file is read or written (with a grid, check_grid checks each candidate's)
    check_model_options(args.kind, options, config if candidates is None else None)
    if candidates is not None:
        check_grid(args.kind, candidates, options, config)
    for line in notes if resumed is None else [*notes, resumed]:     # a resume says its grid notes too
        status_line(line)
    state_root = prepare_outputs(args, settings=dict(model=options, train=config.to_dict(), grid=candidates))
    report.update(config=dict(model=options, train=config.to_dict(), grid=candidates), split_unit="sentences",
                  split="test", training_state=None if state_root is None else str(state_root))
    with torch_threads(args.threads), report.guard():
        return _train(args, report, config, options, candidates, state_root)


def selection_grid(args: argparse.Namespace, notes: list[str]) -> list[str]:
    """``--select``, or the model's default grid less the axes whose model option or training setting the command
    line gives.

    ``--dropout 0.5`` with the default grid ``dropout=0,0.3 weighting=...`` trains dropout 0.5 and searches the
    weighting only; ``--lr 0.01`` with ``lr=1e-3,1e-4`` trains at 0.01 (a given option is never overridden by a
    default it did not ask for). An explicit ``--select`` axis wins over the option it varies, and says so (a line
    appended to ``notes``, as ``grid_less_given`` says what it left out).
    """
    if args.select is not None:
        given = set(explicit_options(args))
        for axis in args.select:
            if axis.partition("=")[0] in given:
                flag = "--" + axis.partition("=")[0].replace("_", "-")
                notes.append(f"--select {axis} replaces the {flag} given on the command line")
        return args.select
    return grid_less_given(get_model_class(args.kind).training_defaults.get("select", []), args, notes)


def _train(args, report: Report, config, options: dict, candidates, state_root) -> int:
    dataset = load_classification(args.dataset, root=args.data)
    args.folds = protocol_folds(args)
    pretrained = load_cli_vectors(args)
    repeated = repeated_texts(dataset)
    if any(repeated.values()):
        status_line(f"{dataset.name}: {repeated['n_duplicates']} repeated (text, label) items kept as distributed, "
                    f"{repeated['n_conflicting']} texts with more than one label (report: details.n_duplicates, "
                    f"details.n_conflicting)")
    report.update(dataset=dataset.name, arguments={**report.data["arguments"], "folds": args.folds},
                  details={**inputs_used(args), **repeated})           # the checkpoint's vectors too (_save)
    with warnings.catch_warnings():
        return _train_splits(args, report, config, options, candidates, state_root, dataset, pretrained)


def _train_splits(args, report: Report, config, options: dict, candidates, state_root, dataset, pretrained) -> int:
    results, oov_rates = [], []
    for i, split in enumerate(splits(dataset, seed=args.seed, n_folds=args.folds or DEFAULT_FOLDS)):
        if args.max_splits is not None and i >= args.max_splits:
            break
        if i == 1:      # the same vectors on every split: their low coverage is said once, not once per fold
            warnings.filterwarnings("ignore", message="the pretrained vectors cover", category=UserWarning)
        log = epoch_logger(report, f"{dataset.name} {split.name}", split=split.name)
        resumable = dict(log=log, checkpoint_dir=state_subdir(state_root, split.name), resume=args.resume)
        try:
            if candidates is None:
                result, model, prepared, _ = run_split(args.kind, dataset, split, pretrained, options, config,
                                                       pretrained_fallback=args.pretrained_fallback, **resumable)
            else:
                result, model, prepared, _ = run_split_selected(args.kind, dataset, split, pretrained, options,
                                                                config, candidates,
                                                                pretrained_fallback=args.pretrained_fallback,
                                                                **resumable)
        except TrainingInterrupted as err:
            return _interrupted(args, report, err, dataset, config, first=i == 0)
        except TrainingDiverged as err:
            report.finish("diverged", error=str(err))
            raise CommandFailed(f"{dataset.name} {split.name}: {err}") from None
        results.append(result)
        oov_rates.append(prepared.oov_rate)
        report.data["split_counts"][split.name] = dict(train=len(prepared.train), dev=len(prepared.dev),
                                                       test=len(prepared.test))
        # each finished split's result joins the report at once: a run stopped in a later split (Ctrl-C, divergence)
        # keeps in its report every result it printed
        report.update(details={**report.data["details"], "splits": split_rows(results, oov_rates)})
        if args.save and i == 0:            # the files before the results: a reader of stdout that leaves loses none
            _save(args, report, model, prepared.vocab, dataset, split.name, config, result.selected)
        chosen = "" if result.selected is None else f", selected {result.selected}"
        result_line(f"{dataset.name} {split.name}: test accuracy {result.test_accuracy:.4f} "
                    f"(dev {result.dev_accuracy:.4f}, epoch {result.best_epoch}{chosen}, {result.seconds:.0f}s)")
    summary = summarise(results)
    tested = sum(c["test"] for c in report.data["split_counts"].values())
    report.finish(metrics=dict(accuracy_mean=summary["mean"], accuracy_std=summary["std"], splits=summary["n"]),
                  n=tested, counts=dict(sentences=tested))
    result_line(f"{dataset.name}: test accuracy {summary['mean']:.4f} +- {summary['std']:.4f} over {summary['n']} "
                f"split(s), seed {args.seed}")
    return 0


def split_rows(results: list, oov_rates: list) -> list[dict]:
    """The report's ``details.splits``: each split's :class:`~qpnlp.training.classification.SplitResult` as a dict,
    without its ``history`` (the report's ``history`` holds every epoch), with ``oov_rate``: the fraction of the
    split's training words without a vector (``Prepared.oov_rate``; None without vectors), as the matching report's
    ``details.oov_rate``."""
    return [{**{k: v for k, v in vars(r).items() if k != "history"}, "oov_rate": oov}
            for r, oov in zip(results, oov_rates, strict=True)]


def repeated_texts(dataset: ClassificationDataset) -> dict:
    """The report's ``details.n_duplicates`` and ``details.n_conflicting`` of ``dataset``
    (:class:`~qpnlp.data.ClassificationDataset`), which the command says in one stderr line when either is not 0:
    the repeated (text, label) items kept as distributed (a cross-validation fold may test a text it trained on) and
    the texts that occur with more than one label (MPQA 98, SST2 5), which no classifier can get right both times."""
    return dict(n_duplicates=dataset.n_duplicates, n_conflicting=dataset.n_conflicting)


def protocol_folds(args: argparse.Namespace) -> int | None:
    """The folds the run uses: ``--folds`` (default 10) for a cross-validation data set
    (:data:`~qpnlp.data.classification.CV_DATASETS`), None for a fixed split, where ``--folds`` is a usage error,
    known from the name alone (it was said once the data set was read, after an earlier run's training state was
    cleared and a failed report written); but not for a ``--folds`` that ``--resume`` took from the run it
    continues: an earlier qpnlp recorded its default 10 for every data set
    (``qpnlp.commands._resume.taken_from_saved_run``)."""
    if args.dataset in CV_DATASETS:
        return args.folds or DEFAULT_FOLDS
    if args.folds is not None and not taken_from_saved_run(args, "folds"):
        raise UsageError(f"--folds {args.folds}: {args.dataset} has a fixed split, not cross-validation folds; "
                         f"leave --folds out")
    return None


def _save(args, report: Report, model, vocab, dataset, split: str, config, selected, **extra) -> None:
    """Save ``model`` to ``--save``; its metadata's ``vectors`` is the report's ``details.vectors``
    (``inputs_used``, worked out once by ``_train``)."""
    used = config if selected is None else apply_setting(selected, {}, config)[1]
    save_checkpoint(args.save, model, vocabulary=vocab,
                    metadata=dict(dataset=dataset.name, split=split, seed=args.seed, folds=args.folds,
                                  label_names=list(dataset.label_names), train=used.to_dict(), max_len=args.max_len,
                                  selected=selected, task="classification",
                                  vectors=report.data["details"]["vectors"], **extra))
    report.update(checkpoint=str(args.save))
    status_line(f"checkpoint written to {args.save}")


def _interrupted(args, report: Report, err: TrainingInterrupted, dataset, config, *, first: bool) -> int:
    """Ctrl-C (or SIGTERM) during a split: save its best model so far (first split, ``--save``), finish the report,
    exit 130 (SIGTERM: 143)."""
    where = f"{dataset.name} {err.context.get('split', '')}".strip()
    message = f"{args.prog}: {how_stopped(err)} in epoch {err.epoch + 1} of {where}"
    if args.save and first and err.best_epoch >= 1:
        _save(args, report, err.model, err.context["prepared"].vocab, dataset, err.context["split"], config,
              err.context.get("selected"), interrupted=dict(epoch=err.epoch, best_epoch=err.best_epoch))
        message += (f"; best model so far (epoch {err.best_epoch}, dev accuracy {err.best_score:.4f}) saved to "
                    f"{args.save}")
    elif args.save and first:
        message += "; no epoch finished, nothing saved"
    elif args.save:
        message += f"; the model of the first split is in {args.save}"
    if err.checkpoint_dir is not None:
        message += "; continue with --resume"
    status, line = run_outcome(err)
    report.finish(status, error=line)
    status_line(message)
    return interrupted_status(err)

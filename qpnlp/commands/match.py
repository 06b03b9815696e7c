"""``qpnlp train MODEL``: answer selection (TREC-QA, WikiQA) for every registered matching model (CNM, ablations).

Options are checked before any file is read; each epoch prints one line and
rewrites the report; Ctrl-C saves the best model so far (with ``--save``) and
``--resume`` continues from the last epoch's training state.
"""

from __future__ import annotations

import argparse

from qpnlp._threads import torch_threads
from qpnlp.data import QA_DATASETS, pretrained_fallback_size
from qpnlp.models import get_model_class, registered_models
from qpnlp.training import save_checkpoint
from qpnlp.training.classification import DEFAULT_DIM, check_model_options
from qpnlp.training.defaults import training_settings
from qpnlp.training.matching import LOSSES
from qpnlp.training import TrainingDiverged, TrainingInterrupted

from ._common import (add_fallback_option, add_training_options, add_vectors_option, inputs_used, load_cli_vectors,
                      train_config, vectors_scale)
from ._errors import CommandFailed, UsageError, how_stopped, interrupted_status
from ._outputs import add_resume_options, prepare_outputs, state_subdir
from ._report import Report, epoch_logger, run_outcome
from ._resume import resume_training_run, resumed_training_settings, taken_from_saved_run
from ._types import count_type, path_type, rate_type
from ._config_options import add_config_options, config_options, explicit_options, recorded
from ._console import result_line, status_line


def register(subparsers: dict) -> None:
    """Add one command per matching model of the registry under ``subparsers["train"]``."""
    for name in registered_models("matching"):
        p = subparsers["train"].add_parser(
            name.replace("_", "-"), help=f"train {name} on an answer-selection data set",
            description=f"{_summary(name)}. Trains {name} on the train split, selects the epoch on dev MAP, and "
                        "scores the test split once when the data set has one (TREC-QA here ships train/dev only: dev "
                        "is reported).")
        settings = training_settings(name)              # the library's defaults (qpnlp.training.defaults)
        _add_data_options(p)
        _add_loss_options(p, name, settings)
        _add_split_and_save_options(p)
        add_fallback_option(p)
        add_training_options(p, name)
        p.set_defaults(lr=None)          # resolved per data set (train_config): TREC-QA and WikiQA differ
        _say_scoped_defaults(p, name, settings)
        add_resume_options(p)
        add_config_options(p, get_model_class(name).config_class)
        p.set_defaults(func=run, kind=name)


def _add_data_options(p: argparse.ArgumentParser) -> None:
    """The data set, its root, the vectors and the dimension of random amplitudes."""
    p.add_argument("--dataset", required=True, type=str.lower, choices=QA_DATASETS, help="trecqa or wikiqa")
    p.add_argument("--data", metavar="PATH", help="data root (default: $QPNLP_DATA)")
    add_vectors_option(p)
    p.add_argument("--no-pretrained", action="store_true", help="random amplitudes instead of GloVe (tests)")
    p.add_argument("--dim", type=count_type(), default=None,
                   help=f"dimension with --no-pretrained; with vectors it is their width (default {DEFAULT_DIM})")


def _add_loss_options(p: argparse.ArgumentParser, name: str, settings: dict) -> None:
    """``--loss``, ``--margin`` and ``--negatives``, with the library's defaults ``settings`` for the model ``name``
    (:func:`~qpnlp.training.defaults.training_settings`; the margin's per data set named in its help)."""
    given = recorded(argparse._StoreAction)     # a setting given; the others are the library's (train_config)
    p.add_argument("--loss", action=given, choices=LOSSES, default=settings["loss"], help="(default %(default)s)")
    defaults = get_model_class(name).training_defaults
    margins = "".join(f"{k}: {v['margin']:g}; " for k, v in defaults.get("per_dataset", {}).items()
                      if "margin" in v)
    p.add_argument("--margin", action=given, type=rate_type(zero=True), default=None,
                   help="triplet hinge margin; --loss triplet only (default: the model's for the data set, "
                        f"{margins}else {settings['margin']:g})")
    p.add_argument("--negatives", action=given, type=count_type(),
                   default=settings["negatives"],
                   help="wrong candidates drawn per correct one; --loss triplet only (default %(default)s)")


def _add_split_and_save_options(p: argparse.ArgumentParser) -> None:
    """The training split, the questions used, ``--save`` and the extra training data sets."""
    p.add_argument("--train-split", default=None, metavar="SPLIT",
                   help="training file of the data set (default: train-all where present, i.e. TREC-QA's "
                        "TRAIN-ALL as in the papers, else train; 'train' = TREC-QA's small TRAIN)")
    p.add_argument("--max-questions", type=count_type(), default=None,
                   help="use only the first N questions of each split (quick runs, tests; default: all)")
    p.add_argument("--save", metavar="DIRECTORY", type=path_type,
                   help="save the selected model to this directory; a saved qpnlp model there is replaced, any "
                        "other non-empty directory refused (default: not saved); locked while the run lasts: a "
                        "second run given it at the same time is refused")
    p.add_argument("--extra-train", nargs="+", default=[], metavar="DATASET", choices=sorted(QA_DATASETS),
                   help="add these data sets' train splits to the training data (transfer); dev and test stay "
                        "--dataset's (default: none)")


def _say_scoped_defaults(p: argparse.ArgumentParser, name: str, settings: dict) -> None:
    """The helps of ``--lr`` and ``--vectors-scale`` name the model's defaults (``settings``) and those it has per
    data set and per vector set."""
    defaults = get_model_class(name).training_defaults
    scoped = [f"{k}: {v['lr']}" for k, v in defaults.get("per_dataset", {}).items() if "lr" in v]
    scoped += [f"with {k}: {v['lr']}" for k, v in defaults.get("per_vectors", {}).items() if "lr" in v]
    p._option_string_actions["--lr"].help = (f"Adam learning rate, dense parameters (default "
                                             f"{settings['lr']}{''.join('; ' + x for x in scoped)})")
    scales = [f"{k}: {v['vectors_scale']:g}" for k, v in defaults.get("per_vectors", {}).items()
              if "vectors_scale" in v]
    if scales:
        p._option_string_actions["--vectors-scale"].help += f"; for {name}: {', '.join(scales)}"


def _summary(name: str) -> str:
    """The first line of the model class's docstring, without its full stop (what the model is)."""
    doc = (get_model_class(name).__doc__ or name).strip().splitlines()[0]
    return doc.rstrip(".")


def model_options(args: argparse.Namespace) -> dict:
    """The model options of the command line, with ``dim`` (``--dim``, default 50) under ``--no-pretrained`` (with
    vectors the dimension is their width)."""
    return {**config_options(args), **({"dim": args.dim or DEFAULT_DIM} if args.no_pretrained else {})}


def check_effective_options(args: argparse.Namespace) -> None:
    """Refuse an option that the others leave without effect (``UsageError`` naming both flags).

    ``--dim`` applies to random amplitudes only (with vectors the dimension is
    their width); ``--vectors``, ``--vectors-scale``, ``--vectors-backoff``
    and a ``--pretrained-fallback`` above 0 need vectors (not
    ``--no-pretrained``); ``--margin`` is the triplet loss's (not ``--loss
    pointwise``), and so is ``--negatives``. Runs before any file is read. A ``--dim`` or ``--margin`` without
    effect that ``--resume`` took from the run it continues is not refused
    (``qpnlp.commands._resume.taken_from_saved_run``: an earlier qpnlp recorded their defaults, 50 and 0.1,
    whatever the vectors and the loss): the dimension is left out (the vectors give it), the margin kept (the
    training state records it).
    """
    if args.no_pretrained:
        unused = [("--vectors", "vectors" in explicit_options(args)),
                  ("--vectors-scale", args.vectors_scale is not None),
                  ("--vectors-backoff", args.vectors_backoff is not None),
                  ("--pretrained-fallback", bool(args.pretrained_fallback))]
        for flag, given in unused:
            if given:
                raise UsageError(f"{flag} has no effect with --no-pretrained (random amplitudes, no vectors); "
                                 f"leave out one of {flag} and --no-pretrained")
    elif taken_from_saved_run(args, "dim"):
        args.dim = None
    elif args.dim is not None:
        raise UsageError(f"--dim {args.dim} has no effect with --vectors {args.vectors}: the model takes the "
                         f"vectors' width; --dim sets the dimension with --no-pretrained only")
    if args.margin is not None and args.loss != "triplet" and not taken_from_saved_run(args, "margin"):
        raise UsageError(f"--margin {args.margin:g} has no effect with --loss {args.loss}: the margin is the "
                         f"triplet loss's (--loss triplet)")
    if "negatives" in explicit_options(args) and args.loss != "triplet":
        raise UsageError(f"--negatives {args.negatives} has no effect with --loss {args.loss}, which trains on "
                         f"every question-candidate pair; the negatives are drawn for the triplets of --loss triplet")


def check_train_split(args: argparse.Namespace) -> None:
    """Refuse a ``--train-split`` that the run also selects on (dev) or scores (test), a silent leak
    (``UsageError``)."""
    role = {"dev": "selects the epoch", "test": "is scored once after training"}.get(args.train_split)
    if role is not None:
        raise UsageError(f"--train-split {args.train_split}: the {args.train_split} split {role}; train on another "
                         f"split (train, or TREC-QA's train-all)")


def check_extra_train(args: argparse.Namespace) -> None:
    """Refuse ``--extra-train`` naming ``--dataset`` or one data set twice: its training data would count twice
    (``UsageError``)."""
    for i, name in enumerate(args.extra_train):
        if name == args.dataset:
            raise UsageError(f"--extra-train {name}: {name} is --dataset, whose training data is used already; "
                             f"name other data sets")
        if name in args.extra_train[:i]:
            raise UsageError(f"--extra-train: {name} named twice; each data set's training data is added once")


def run(args: argparse.Namespace) -> int:
    saved = resume_training_run(args)     # --resume: the options not given are the saved run's
    check_effective_options(args)
    if args.no_pretrained and args.dim is None:
        args.dim = DEFAULT_DIM                              # the report records the dimension used
    args.vectors_scale = vectors_scale(args)
    report = Report(args, command=f"train {args.kind}", model=args.kind)
    check_train_split(args)
    check_extra_train(args)
    config, options, _, resumed = resumed_training_settings(args, saved, train_config(args), model_options(args),
                                                            None)
    check_model_options(args.kind, options, config)     # --phase-lr too: before any file is read or written
    if resumed is not None:
        status_line(resumed)
    state_root = prepare_outputs(args, settings=dict(model=options, train=config.to_dict(), grid=None))
    report.update(config=dict(model=options, train=config.to_dict()), split_unit="questions", dataset=args.dataset,
                  training_state=None if state_root is None else str(state_root))
    with torch_threads(args.threads), report.guard():
        return _train(args, report, config, options, state_root)


def _train(args, report: Report, config, options: dict, state_root) -> int:
    from qpnlp.training.matching import run_matching

    pretrained = None if args.no_pretrained else load_cli_vectors(args)
    report.update(details=inputs_used(args))                  # the checkpoint's vectors too (_save)
    try:
        result = run_matching(args.dataset, options, config, pretrained=pretrained, model=args.kind,
                              root=args.data, max_questions=args.max_questions,
                              pretrained_fallback=args.pretrained_fallback, extra_train=tuple(args.extra_train),
                              log=epoch_logger(report, args.dataset), train_split=args.train_split,
                              checkpoint_dir=state_subdir(state_root, "fixed"), resume=args.resume)
    except TrainingInterrupted as err:
        return _interrupted(args, report, err, config)
    except TrainingDiverged as err:
        report.finish("diverged", error=str(err))
        raise CommandFailed(f"{args.dataset}: {err}") from None
    per_epoch = f"{result.train_triplets} triplets" if args.loss == "triplet" else "every question-candidate pair"
    status_line(f"trained on {result.dataset} {result.train_split}: {result.train_questions} questions, {per_epoch} "
                f"per epoch")
    if args.save:
        _save(args, report, result.model, result.vocab, result.dataset, config)
    counts = {result.train_split: result.train_questions, "dev": result.dev["questions"],
              **{split: m["questions"] for split, m in result.evaluation.items()}}
    scored = scored_counts(result)
    report.finish(dataset=result.dataset, split=",".join(result.evaluation) or "dev",
                  split_counts={"fixed": counts}, metrics=dict(dev=result.dev, **result.evaluation),
                  n=scored["questions"], counts=scored,
                  details=dict(**report.data["details"], best_epoch=result.best_epoch, seconds=result.seconds,
                               train_split=result.train_split,
                               train_questions=result.train_questions, train_triplets=result.train_triplets,
                               oov_rate=result.oov_rate, extra_train=list(args.extra_train),
                               pretrained_fallback=pretrained_fallback_size(pretrained, args.pretrained_fallback),
                               vocabulary_size=len(result.vocab), questions_removed=result.questions_removed,
                               model_config=result.model_config))
    # the results last: a reader of stdout that leaves early (`| head -1`) loses neither --save nor --report
    result_line(f"{result.dataset} dev (selection, epoch {result.best_epoch}): MAP {result.dev['map']:.4f} "
                f"MRR {result.dev['mrr']:.4f} P@1 {result.dev['p_at_1']:.4f} on "
                f"{questions_phrase(result.dev['questions'], result.questions_removed.get('dev'))}")
    for split, m in result.evaluation.items():
        result_line(f"{result.dataset} {split}: MAP {m['map']:.4f} MRR {m['mrr']:.4f} P@1 {m['p_at_1']:.4f} "
                    f"on {questions_phrase(m['questions'], result.questions_removed.get(split))}")
    return 0


def scored_counts(result) -> dict:
    """The report's ``counts`` of a matching run (:class:`~qpnlp.training.matching.MatchingRun`): the ``questions``
    and the ``candidates`` (question-candidate pairs) of the evaluation splits, of dev without one, as ``qpnlp
    evaluate`` counts the split it scores; ``n`` is the questions."""
    metrics = result.evaluation or {"dev": result.dev}
    return dict(questions=sum(m["questions"] for m in metrics.values()),
                candidates=sum(result.candidates[split] for split in metrics))


def questions_phrase(questions: int, removed: dict | None) -> str:
    """``"65 questions"`` with, for a filtered split, the questions its filter removed from the whole file
    (``removed``: :meth:`~qpnlp.data.QADataset.filter_counts`), which ``--max-questions`` may then have cut:
    ``"65 questions (the 'clean' filter removed 14 of the file's 243)"``."""
    note = "" if removed is None else (f" (the {removed['filter']!r} filter removed {removed['removed']} of the "
                                       f"file's {removed['file_questions']})")
    return f"{questions} questions{note}"


def _save(args, report: Report, model, vocab, dataset: str, config, **extra) -> None:
    """Save ``model`` to ``--save``; its metadata's ``vectors`` is the report's ``details.vectors``
    (``inputs_used``, worked out once by ``_train``)."""
    save_checkpoint(args.save, model, vocabulary=vocab,
                    metadata=dict(dataset=dataset, seed=args.seed, train=config.to_dict(),
                                  label_names=["wrong", "correct"], max_len=args.max_len,
                                  max_questions=args.max_questions, task="matching",
                                  vectors=report.data["details"]["vectors"], **extra))
    report.update(checkpoint=str(args.save))
    status_line(f"checkpoint written to {args.save}")


def _interrupted(args, report: Report, err: TrainingInterrupted, config) -> int:
    """Ctrl-C (or SIGTERM): save the best model so far (``--save``), finish the report, exit 130 (SIGTERM: 143)."""
    message = f"{args.prog}: {how_stopped(err)} in epoch {err.epoch + 1}"
    if args.save and err.best_epoch >= 1:
        _save(args, report, err.model, err.context["vocab"], err.context["dataset"], config,
              interrupted=dict(epoch=err.epoch, best_epoch=err.best_epoch))
        message += f"; best model so far (epoch {err.best_epoch}, dev MAP {err.best_score:.4f}) saved to {args.save}"
    elif args.save:
        message += "; no epoch finished, nothing saved"
    if err.checkpoint_dir is not None:
        message += "; continue with --resume"
    status, line = run_outcome(err)
    report.finish(status, error=line)
    status_line(message)
    return interrupted_status(err)

"""The options common to the train commands (training settings, vectors, fallback) and :func:`train_config`.

The argparse types live in ``qpnlp.commands._types``, errors and exit codes in
``qpnlp.commands._errors``, output paths in ``qpnlp.commands._outputs``, the report in
``qpnlp.commands._report`` and the rule of what goes to stdout and to stderr in
``qpnlp.commands._console``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys

from qpnlp.training import TrainConfig
from qpnlp.training.compiled import COMPILE_MODES, CUDA_GRAPHS_PAD_MULTIPLE

from ._config_options import explicit_options, recorded
from ._types import DEVICE_HELP, chunk_overhead_type, count_type, device_type, path_type, rate_type, seed_type


def add_training_options(parser: argparse.ArgumentParser, kind: str | None, **overrides) -> None:
    """The training settings of ``qpnlp train KIND``; every default is the library's
    (:func:`qpnlp.training.defaults.training_settings`: the model's ``training_defaults`` over the training config's
    own), so the command and a Python user train alike. ``kind=None``: :class:`TrainConfig`'s defaults, replaced by
    ``overrides`` (``qpnlp demo``'s short run)."""
    defaults, embedding_lr = _training_defaults(kind, overrides)
    group = parser.add_argument_group("training")
    given = recorded(argparse._StoreAction)   # a default selection grid leaves out the axes given (explicit_options)
    _add_optimiser_options(group, given, defaults, embedding_lr)
    _add_run_options(group, defaults)
    _add_batching_options(group, given, defaults)
    _add_output_options(group)


def _training_defaults(kind: str | None, overrides: dict) -> tuple[dict, float | None]:
    """``(the defaults of the training options, --embedding-lr's default)`` of ``add_training_options``: the
    library's for the model ``kind``, or :class:`TrainConfig`'s with ``overrides`` (``kind=None``); an
    ``--embedding-lr`` default of None follows ``--lr``."""
    from qpnlp.training.defaults import default_embedding_lr, training_settings

    if kind is None:
        return {**TrainConfig().to_dict(), **overrides}, None
    return {**training_settings(kind), **overrides}, default_embedding_lr(kind)


def _add_optimiser_options(group, given: type, defaults: dict, embedding_lr: float | None) -> None:
    """Epochs, batch size, learning rates, weight decay and patience, into ``group``; each recorded when given
    (``given``, :func:`~qpnlp.commands._config_options.recorded`)."""
    group.add_argument("--epochs", action=given, type=count_type(), default=defaults["epochs"],
                       help="maximum epochs (default %(default)s)")
    group.add_argument("--batch-size", action=given, type=count_type(), default=defaults["batch_size"],
                       help="(default %(default)s)")
    group.add_argument("--lr", action=given, type=rate_type(), default=defaults["lr"],
                       help="Adam learning rate, dense parameters (default %(default)s)")
    group.add_argument("--embedding-lr", action=given, type=rate_type(), default=embedding_lr,
                       help="SparseAdam learning rate of the embedding tables (default: "
                            f"{embedding_lr if embedding_lr is not None else '--lr'})")
    group.add_argument("--phase-lr", action=given, type=rate_type(), default=defaults["phase_lr"],
                       help="learning rate of the phase tables of complex embeddings (default: --embedding-lr)")
    group.add_argument("--weight-decay", action=given, type=rate_type(zero=True), default=defaults["weight_decay"],
                       help="L2 on dense parameters (default %(default)s)")
    group.add_argument("--patience", action=given, type=count_type(), default=defaults["patience"],
                       help="early-stopping patience on the dev score (default %(default)s)")


def _add_run_options(group, defaults: dict) -> None:
    """Seed, device, threads and truncation of the texts, into ``group``."""
    group.add_argument("--seed", type=seed_type, default=defaults["seed"],
                       help="seed of folds, initialisation and shuffling (default %(default)s)")
    group.add_argument("--device", type=device_type, default=defaults["device"], help=DEVICE_HELP)
    group.add_argument("--threads", type=count_type(0), default=0,
                       help="torch CPU threads of the run (0 = torch's default, one per core; 1 on a machine whose "
                            "cores other jobs keep busy, where more threads wait on each other; default %(default)s)")
    group.add_argument("--max-len", type=count_type(), default=defaults["max_len"],
                       help="truncate texts to their first N tokens (default: no truncation)")


def _add_batching_options(group, given: type, defaults: dict) -> None:
    """How batches are cut, padded and compiled, into ``group``; each recorded when given (``given``)."""
    group.add_argument("--length-chunks", action=given, type=chunk_overhead_type, default=defaults["length_chunks"],
                       metavar="N|off",
                       help="cut batches into length-sorted chunks, each padded to its own longest text; N = the cost "
                            "of one more chunk in padded positions, 'off' = whole batches (default %(default)s; "
                            "training batches are cut only for models that gain from it: CNM, its ablations CNM-Real "
                            "and FastText-MaxPool, and the order classifiers' CNN, RNN and Transformer, whose dropout "
                            "then draws its masks chunk by chunk)")
    group.add_argument("--compile", action=given, choices=COMPILE_MODES, default=defaults["compile"], metavar="MODE",
                       help="run the training steps through torch.compile in this mode (" + ", ".join(COMPILE_MODES)
                            + "); pays for CNM, not for QPDN; the first epoch compiles (default: eager)")
    group.add_argument("--pad-to-multiple-of", action=given, type=count_type(), default=defaults["pad_to_multiple_of"],
                       metavar="N",
                       help="pad training batches to a multiple of N tokens, so that they come in a few lengths "
                            f"(default: {CUDA_GRAPHS_PAD_MULTIPLE} under --compile reduce-overhead or max-autotune on "
                            "a GPU, whose CUDA graphs are recorded per length; else the longest text)")


def _add_output_options(group) -> None:
    """Progress bars and the report, into ``group``."""
    group.add_argument("--no-progress", action="store_true",
                       help="no progress bars (shown only when stderr is a terminal; the per-epoch lines stay)")
    group.add_argument("--report", metavar="FILE.json", type=path_type,
                       help="write the report (metrics, history, settings) to this JSON file, rewritten after every "
                            "epoch (a failed rewrite is a warning, said once: the training goes on), with the history "
                            "also as FILE.history.csv (default: no report)")


def add_vectors_option(parser: argparse.ArgumentParser) -> None:
    from qpnlp.data.vectors import DEFAULT_VECTORS, VECTOR_SETS

    given = recorded(argparse._StoreAction)   # --vectors given, e.g. beside --no-pretrained (explicit_options)
    parser.add_argument("--vectors", action=given, metavar="NAME|PATH", default=DEFAULT_VECTORS,
                        help=f"pretrained vectors: a name ({', '.join(VECTOR_SETS)}) or a GloVe / word2vec / "
                             "fastText .vec text file, a word2vec .bin or .bin.gz file or a spaCy model directory "
                             "(default %(default)s)")
    parser.add_argument("--vectors-scale", type=rate_type(), default=None, metavar="FACTOR",
                        help="multiply the vectors by FACTOR (default: the named set's own scale, see "
                             "qpnlp.data.vectors.VECTOR_SETS; 1 for files)")
    parser.add_argument("--vectors-backoff", choices=("on", "off"), default=None,
                        help="give a word missing from the vectors as written the vector of another spelling "
                             "(Scorsese for scorsese) or the mean of its parts (old-fashioned), for cased vectors "
                             "split at hyphens such as spaCy's (default: off; no gain on the QPDN dev sets)")
    # qpnlp 0.1 spelling
    parser.add_argument("--glove", action=given, metavar="FILE", dest="vectors", help=argparse.SUPPRESS)


def load_cli_vectors(args: argparse.Namespace):
    """The vectors of ``--vectors``, ``--vectors-scale`` and ``--vectors-backoff``, loaded as the library loads them
    for the command's model and data set (:func:`qpnlp.training.defaults.default_vectors`: without
    ``--vectors-scale``, the model's scale for the set, else the set's own)."""
    from qpnlp.training.defaults import default_vectors

    backoff = None if args.vectors_backoff is None else args.vectors_backoff == "on"
    return default_vectors(getattr(args, "kind", None), vectors=args.vectors, dataset=getattr(args, "dataset", None),
                           scale=args.vectors_scale, backoff=backoff)


def vectors_scale(args: argparse.Namespace) -> float | None:
    """The factor the run multiplies the vectors by: ``--vectors-scale``, or the library's for this model, vector
    set and data set (:func:`qpnlp.training.defaults.default_vectors_scale`, what
    :func:`~qpnlp.training.defaults.default_vectors` applies: the model's, else the set's own); None with
    ``--no-pretrained`` (no vectors)."""
    from qpnlp.training.defaults import default_vectors_scale

    if args.vectors_scale is not None or getattr(args, "no_pretrained", False):
        return args.vectors_scale
    return default_vectors_scale(args.kind, vectors=args.vectors, dataset=args.dataset)


def add_fallback_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pretrained-fallback", type=count_type(0), default=None, metavar="N",
                        help="append the N most frequent pretrained words to the training vocabulary, so unseen "
                             "test words keep their vectors (default: the vector set's own, 400000 = all of GloVe "
                             "6B for glove-6b-50d, 0 for spacy-md-300d and files)")


def show_progress(args: argparse.Namespace) -> bool:
    """Whether the run draws progress bars: not under ``--no-progress``, and only when stderr is a terminal (a bar
    redrawn with carriage returns is noise in ``2> log.txt`` or a CI log; the per-epoch lines say it all there)."""
    return not args.no_progress and sys.stderr.isatty()


def train_config(args: argparse.Namespace) -> TrainConfig:
    """The training config of ``qpnlp train KIND`` (a :class:`~qpnlp.training.matching.MatchingConfig` for a
    matching model): every training setting given on the command line (``_config_options.explicit_options``),
    the others the library's for this model, data set and vector set
    (:func:`qpnlp.training.defaults.default_train_config`: a model's ``per_dataset`` or ``per_vectors`` value
    reaches the command, whose parser knew neither when it set its defaults). ``qpnlp demo`` (no ``kind``): the
    parser's values, ``--embedding-lr`` following ``--lr``."""
    from qpnlp.training.defaults import default_train_config, train_config_class

    kind = getattr(args, "kind", None)
    run = dict(seed=args.seed, device=args.device, max_len=args.max_len, progress=show_progress(args))
    fields = [f.name for f in dataclasses.fields(TrainConfig if kind is None else train_config_class(kind))]
    settings = {name: getattr(args, name) for name in fields if name not in run and hasattr(args, name)}
    if kind is None:
        return TrainConfig(**{**settings, "embedding_lr": settings["embedding_lr"] or settings["lr"]}, **run)
    given = {name: value for name, value in settings.items() if name in explicit_options(args)}
    vectors = None if getattr(args, "no_pretrained", False) else args.vectors
    return default_train_config(kind, dataset=args.dataset, vectors=vectors, **given, **run)


def inputs_used(args: argparse.Namespace) -> dict:
    """The report's ``details.vectors`` and ``details.data_root``: what the run read, whatever the flags' interplay.

    ``vectors`` is the registered set's name, or the absolute path of a vectors file or directory, and None with
    ``--no-pretrained`` (``arguments.vectors`` keeps its default there); ``data_root`` is the absolute data folder,
    ``--data`` or else ``$QPNLP_DATA`` (:func:`qpnlp.data.data_root`; ``arguments.data`` is null then).
    """
    from qpnlp.data import data_root
    from qpnlp.data.vectors import VECTOR_SETS

    vectors = None if getattr(args, "no_pretrained", False) else str(args.vectors)
    if vectors is not None and vectors not in VECTOR_SETS:
        vectors = os.path.abspath(os.path.expanduser(vectors))
    return dict(vectors=vectors, data_root=str(data_root(args.data)))

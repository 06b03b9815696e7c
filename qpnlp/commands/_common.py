"""Helpers shared by the CLI commands: errors and exit codes, option types, output paths, the report, devices.

Every command reports through :class:`Report` (one schema), checks its output
paths with :func:`prepare_outputs` before any work, and leaves its failures
to :func:`run_command`, which turns them into one line on stderr and an exit
code (2 usage, 1 failure, 130 Ctrl-C).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import math
import os
import platform
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from qpnlp._device import resolve_device
from qpnlp._atomic import atomic_write_text, check_replaceable
from qpnlp.models.base import CONFIG_FILE
from qpnlp.training import TrainConfig
from qpnlp.training.config import ConfigError, check_seed
from qpnlp.training.compiled import COMPILE_MODES
from qpnlp.training.length_chunks import DEFAULT_OVERHEAD

from ._config_options import recorded


def device_type(value: str) -> str:
    """argparse type: a torch device this machine has (``cpu``, ``cuda``, ``cuda:N``, ``mps``)."""
    try:
        resolve_device(value, cpu="--device cpu")
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return value


def add_training_options(parser: argparse.ArgumentParser, *, epochs: int = 20, lr: float = 1e-2, batch_size: int = 32,
                         embedding_lr: float | None = None, patience: int = 4, **_) -> None:
    group = parser.add_argument_group("training")
    given = recorded(argparse._StoreAction)   # a default selection grid leaves out the axes given (explicit_options)
    group.add_argument("--epochs", action=given, type=count_type(), default=epochs,
                       help="maximum epochs (default %(default)s)")
    group.add_argument("--batch-size", action=given, type=count_type(), default=batch_size,
                       help="(default %(default)s)")
    group.add_argument("--lr", action=given, type=rate_type(), default=lr,
                       help="Adam learning rate, dense parameters (default %(default)s)")
    group.add_argument("--embedding-lr", action=given, type=rate_type(), default=embedding_lr,
                       help="SparseAdam learning rate of the embedding tables (default: "
                            f"{embedding_lr if embedding_lr is not None else '--lr'})")
    group.add_argument("--phase-lr", action=given, type=rate_type(), default=None,
                       help="learning rate of the phase tables of complex embeddings (default: --embedding-lr)")
    group.add_argument("--weight-decay", action=given, type=rate_type(zero=True), default=0.0,
                       help="L2 on dense parameters (default %(default)s)")
    group.add_argument("--patience", action=given, type=count_type(), default=patience,
                       help="early-stopping patience on the dev score (default %(default)s)")
    group.add_argument("--seed", type=seed_type, default=0,
                       help="seed of folds, initialisation and shuffling (default %(default)s)")
    group.add_argument("--device", type=device_type, default="cpu",
                       help="cpu, cuda, cuda:N or mps (default %(default)s)")
    group.add_argument("--max-len", type=count_type(), default=None,
                       help="truncate texts to their first N tokens (default: no truncation)")
    group.add_argument("--length-chunks", action=given, type=chunk_overhead_type, default=DEFAULT_OVERHEAD,
                       metavar="N|off",
                       help="cut batches into length-sorted chunks, each padded to its own longest text; N = the cost "
                            "of one more chunk in padded positions, 'off' = whole batches (default %(default)s; "
                            "training batches are cut only for models that gain from it, e.g. CNM)")
    group.add_argument("--compile", action=given, choices=COMPILE_MODES, default=None, metavar="MODE",
                       help="run the training steps through torch.compile in this mode (" + ", ".join(COMPILE_MODES)
                            + "); pays for CNM, not for QPDN; the first epoch compiles (default: eager)")
    group.add_argument("--pad-to-multiple-of", action=given, type=count_type(), default=None, metavar="N",
                       help="pad training batches to a multiple of N tokens, so that they come in a few lengths "
                            "(default: 8 under --compile reduce-overhead or max-autotune on a GPU, whose CUDA graphs "
                            "are recorded per length; else the longest text)")
    group.add_argument("--no-progress", action="store_true", help="no progress bars (the per-epoch lines stay)")
    group.add_argument("--report", metavar="FILE.json",
                       help="write the report (metrics, history, settings) to this JSON file, rewritten after every "
                            "epoch, with the history also as FILE.history.csv (default: no report)")


def add_vectors_option(parser: argparse.ArgumentParser) -> None:
    from qpnlp.data.vectors import VECTOR_SETS

    parser.add_argument("--vectors", metavar="NAME|PATH", default="glove-6b-50d",
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
    parser.add_argument("--glove", metavar="FILE", dest="vectors", help=argparse.SUPPRESS)  # qpnlp 0.1 spelling


def load_cli_vectors(args: argparse.Namespace):
    """The vectors of ``--vectors``, ``--vectors-scale`` and ``--vectors-backoff``."""
    from qpnlp.data.vectors import load_vectors

    backoff = None if args.vectors_backoff is None else args.vectors_backoff == "on"
    return load_vectors(args.vectors, scale=args.vectors_scale, backoff=backoff)


def add_fallback_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pretrained-fallback", type=count_type(0), default=None, metavar="N",
                        help="append the N most frequent pretrained words to the training vocabulary, so unseen "
                             "test words keep their vectors (default: the vector set's own, 400000 = all of GloVe "
                             "6B for glove-6b-50d, 0 for spacy-md-300d and files)")


def pretrained_fallback(args: argparse.Namespace) -> int:
    """``--pretrained-fallback``, or the vector set's recommended size when it was not given."""
    from qpnlp.data.vectors import recommended_fallback

    if args.pretrained_fallback is not None:
        return args.pretrained_fallback
    return 0 if getattr(args, "no_pretrained", False) else recommended_fallback(args.vectors)


def train_config(args: argparse.Namespace) -> TrainConfig:
    return TrainConfig(epochs=args.epochs, batch_size=args.batch_size, lr=args.lr,
                       embedding_lr=args.embedding_lr or args.lr, phase_lr=args.phase_lr,
                       weight_decay=args.weight_decay,
                       patience=args.patience, seed=args.seed, device=args.device, max_len=args.max_len,
                       progress=not args.no_progress, length_chunks=args.length_chunks, compile=args.compile,
                       pad_to_multiple_of=args.pad_to_multiple_of)


# --------------------------------------------------------------------------- errors and exit codes
class UsageError(ValueError):
    """An option value that cannot work, found before anything is read (exit code 2)."""


class CommandFailed(RuntimeError):
    """A failure while running, with a message composed for the user (exit code 1)."""


# Errors whose message is written for users; other types are shown with their type name.
_PLAIN_ERRORS = (ValueError, OSError, RuntimeError, TypeError, LookupError)


def run_command(args: argparse.Namespace) -> int:
    """Run the parsed command and turn every failure into one line on stderr and an exit code.

    0 success; 2 a usage error (a bad option value, a model or training
    setting the configs refuse); 1 any other failure (missing or bad files,
    data that does not fit, diverged training); 130 Ctrl-C. ``--debug``
    prints the traceback before the line.
    """
    prog = getattr(args, "prog", "qpnlp")
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        if getattr(args, "debug", False):
            traceback.print_exc()
        print(f"{prog}: interrupted", file=sys.stderr, flush=True)
        return 130
    except BrokenPipeError:                      # `qpnlp ... | head`: the reader left
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as err:  # noqa: BLE001 - the CLI's one place that turns every failure into a message
        if getattr(args, "debug", False):
            traceback.print_exc()
        usage = isinstance(err, (UsageError, ConfigError))
        print(f"{prog}: error: {error_line(err)}", file=sys.stderr, flush=True)
        return 2 if usage else 1


def error_line(err: BaseException) -> str:
    """``err`` as one line: its message, with the type name for errors not written for users."""
    text = " ".join(str(err).split()) or type(err).__name__
    if isinstance(err, KeyError) or not isinstance(err, _PLAIN_ERRORS):
        text = f"{type(err).__name__}: {text} (run with --debug for the traceback)"
    return text


# --------------------------------------------------------------------------- argparse types
def _converted(text: str, convert: Callable[[str], Any], expected: str) -> Any:
    """``convert(text)``; a ``ValueError`` becomes argparse's error "expected {expected}; got 'text'"."""
    try:
        return convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}; got {text!r}") from None


def count_type(minimum: int = 1) -> Callable[[str], int]:
    """argparse type: an integer >= ``minimum``."""
    def parse(text: str) -> int:
        value = _converted(text, int, f"an integer >= {minimum}")
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}; got {value}")
        return value
    parse.__name__ = "integer"
    return parse


def chunk_overhead_type(text: str) -> int | None:
    """argparse type of ``--length-chunks``: an integer >= 0, or ``off`` (None)."""
    if text.strip().lower() == "off":
        return None
    return count_type(0)(text)


chunk_overhead_type.__name__ = "length-chunks value"


def seed_type(text: str) -> int:
    """argparse type of ``--seed``: an integer in [0, 2**32 - 1] (:func:`~qpnlp.training.config.check_seed`)."""
    value = _converted(text, int, "an integer")
    try:
        return check_seed(value)
    except ConfigError:
        raise argparse.ArgumentTypeError(f"must be an integer in [0, 2**32 - 1]; got {value}") from None


seed_type.__name__ = "seed"


def finite_type(text: str) -> float:
    """argparse type: a finite number of either sign (``nan`` and ``inf`` are refused)."""
    value = _converted(text, float, "a number")
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number; got {text}")
    return value


finite_type.__name__ = "number"


def rate_type(*, zero: bool = False) -> Callable[[str], float]:
    """argparse type: a finite number > 0 (>= 0 with ``zero``)."""
    def parse(text: str) -> float:
        value = _converted(text, float, "a number")
        if not math.isfinite(value) or value < 0 or (value == 0 and not zero):
            raise argparse.ArgumentTypeError(f"must be a finite number {'>=' if zero else '>'} 0; got {text}")
        return value
    parse.__name__ = "number"
    return parse


# --------------------------------------------------------------------------- output paths
def check_output_path(path: str | os.PathLike | None, option: str, *, directory: bool = False,
                      model: bool = False) -> Path | None:
    """Refuse an output path that cannot be written, before any work (:class:`UsageError`).

    A file must not be an existing directory; a directory must not be an
    existing file, and with ``model`` an existing non-empty directory must
    be a saved qpnlp model (it is replaced); the nearest existing parent
    must be a writable directory.
    """
    if not path:
        return None
    out = Path(path)
    if directory and out.is_file():
        raise UsageError(f"{option} {path}: exists and is a file; {option} takes a directory")
    if not directory and out.is_dir():
        raise UsageError(f"{option} {path}: is a directory; {option} takes a file name")
    if model:
        try:
            check_replaceable(out, replaces=CONFIG_FILE)
        except (FileExistsError, ValueError):
            raise UsageError(f"{option} {path}: exists and is not a saved qpnlp model; refusing to replace it "
                             f"(choose a new directory)") from None
    parent = out.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise UsageError(f"{option} {path}: {parent} is a file, not a directory")
    try:
        with tempfile.TemporaryFile(dir=parent):
            pass
    except OSError as err:
        raise UsageError(f"{option} {path}: cannot write in {parent} ({err.strerror or err})") from None
    return out


RUN_FILE = "training-run.json"


def add_resume_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("checkpoints")
    group.add_argument("--checkpoint-dir", metavar="DIRECTORY", default=None,
                       help="keep the training state of the last epoch here, written after every epoch (default: "
                            "SAVE.training next to --save; none without --save)")
    group.add_argument("--resume", action="store_true",
                       help="continue an interrupted run from its training state (--checkpoint-dir, or the one "
                            "next to --save); same result as an uninterrupted run with the same options")
    group.add_argument("--no-training-state", action="store_true",
                       help="keep no training state next to --save (saves a write of parameters and optimiser "
                            "state per epoch, about 3x the model's size; --resume is then impossible; not with "
                            "--checkpoint-dir)")


def prepare_outputs(args: argparse.Namespace) -> Path | None:
    """Check ``--report``, ``--save`` and the training-state directory before any work; returns the state directory.

    Without ``--resume`` an earlier state in that directory is cleared; with
    it, the directory must hold one.
    """
    if getattr(args, "checkpoint_dir", None) and getattr(args, "no_training_state", False):
        raise UsageError("--no-training-state and --checkpoint-dir ask for opposite things (no training state, a "
                         "training state in that directory); give one of them")
    report = check_output_path(getattr(args, "report", None), "--report")
    save = check_output_path(getattr(args, "save", None), "--save", directory=True, model=True)
    state = getattr(args, "checkpoint_dir", None) or \
        (f"{str(save).rstrip('/')}.training" if save and not getattr(args, "no_training_state", False) else None)
    option = "--checkpoint-dir" if getattr(args, "checkpoint_dir", None) else "--save"
    resume = getattr(args, "resume", False)
    if resume and state is None:
        raise UsageError("--resume needs --checkpoint-dir or --save (the training state is kept next to it), "
                         "and not --no-training-state")
    kept = option if option == "--checkpoint-dir" else "the training state next to --save"
    check_report_apart(report, {"--save": save, kept: state})
    if state is None:
        return None
    if save is not None and _nested(save, Path(state)):
        # Saving the model replaces the --save directory (and a rerun clears the state directory): one inside
        # the other would lose the training state (or the saved model).
        raise UsageError(f"--checkpoint-dir {state} and --save {save} overlap; the training state must be kept "
                         f"outside the model directory (and the model outside the state directory)")
    root = check_output_path(state, option, directory=True)
    ours = (root / RUN_FILE).is_file()
    if root.is_dir() and any(root.iterdir()) and not ours:
        raise UsageError(f"{option}: {root} exists and is not a qpnlp training-state directory; refusing to "
                         f"use it (choose a new --checkpoint-dir)")
    if resume and not ours:
        raise CommandFailed(f"nothing to resume: {root} holds no training state (give the --save or "
                            f"--checkpoint-dir of the interrupted run)")
    if not resume and ours:
        shutil.rmtree(root)
    print(f"resuming from the training state in {root}" if resume else
          f"training state kept in {root} after every epoch (--resume continues from it)", flush=True)
    if not ours or not resume:
        root.mkdir(parents=True, exist_ok=True)
        atomic_write_text(root / RUN_FILE, json.dumps(dict(format="qpnlp-training-run/1", prog=args.prog,
                                                           arguments=_strict(arguments(args), "", [])),
                                                      indent=2) + "\n")
    return root


def check_report_apart(report: Path | None, outputs: dict[str, str | os.PathLike | None]) -> None:
    """Refuse a ``--report`` file at the path of an output directory or above it (:class:`UsageError`): one of
    the two could not be written, and that would show only after the training."""
    if report is None:
        return
    where = Path(os.path.realpath(report))
    for option, path in outputs.items():
        target = None if path is None else Path(os.path.realpath(path))
        if target == where:
            raise UsageError(f"--report and {option} name the same path ({path})")
        if target is not None and where in target.parents:
            raise UsageError(f"--report and {option} overlap: {path} would lie inside the report file {report}")


def _nested(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` are the same path or one lies inside the other (after resolving links and ..)."""
    a, b = Path(os.path.realpath(a)), Path(os.path.realpath(b))
    return a == b or a in b.parents or b in a.parents


def state_subdir(root: Path | None, name: str) -> Path | None:
    """The training-state directory of one split (``fold 3`` -> ``root/fold-3``)."""
    return None if root is None else root / "-".join(name.split())


# --------------------------------------------------------------------------- reports
REPORT_SCHEMA = "qpnlp-report/1"


def arguments(args: argparse.Namespace) -> dict:
    """The command-line settings of a run, as JSON."""
    return {k: v for k, v in vars(args).items() if k not in ("func", "prog") and not callable(v)}


class Report:
    """The one report of every ``train`` / ``evaluate`` / ``demo`` command (schema ``qpnlp-report/1``).

    Keys: ``schema``, ``command``, ``status`` (running, completed,
    interrupted, diverged, failed), ``qpnlp_version``, ``torch_version``,
    ``python_version``, ``started``, ``written``, ``wall_seconds``,
    ``model``, ``dataset``, ``split``, ``split_counts`` (split -> part ->
    items), ``split_unit``, ``seed``, ``config`` (model options, training
    settings), ``arguments`` (the command line), ``metrics``, ``n`` (items
    the metrics were computed on), ``history`` (one entry per epoch),
    ``checkpoint``, ``training_state``, ``error``, ``warnings``,
    ``details`` (what only this command has).

    The JSON is strict (a NaN or infinity is written as null and named in
    ``warnings``) and written atomically, after every epoch and at the end;
    the history is also written as ``<report>.history.csv`` and, when
    ``torch.utils.tensorboard`` can be imported, as TensorBoard events in
    ``<report>.tensorboard/``.
    """

    def __init__(self, args: argparse.Namespace, *, command: str, model: str | None = None) -> None:
        from qpnlp import __version__

        report = getattr(args, "report", None)
        self.path = Path(report) if report else None
        self._start = time.perf_counter()
        self._tensorboard = None
        self.data: dict = dict(
            schema=REPORT_SCHEMA, command=command, status="running", qpnlp_version=__version__,
            torch_version=torch.__version__, python_version=platform.python_version(),
            started=time.strftime("%Y-%m-%dT%H:%M:%S%z"), written=None, wall_seconds=0.0, model=model, dataset=None,
            split=None, split_counts={}, split_unit=None, seed=getattr(args, "seed", None), config={},
            arguments=arguments(args), metrics={}, n=None, history=[], checkpoint=None, training_state=None,
            error=None, warnings=[], details={})

    def update(self, **fields) -> None:
        unknown = sorted(set(fields) - set(self.data))
        if unknown:
            raise KeyError(f"not report fields: {unknown}; command-specific values go under 'details'")
        self.data.update(fields)

    def epoch(self, entry: dict) -> None:
        """Add one epoch's history entry and rewrite the report (and its CSV and TensorBoard events)."""
        self.data["history"].append(entry)
        self.write()
        self._tensorboard_epoch(entry)

    @contextlib.contextmanager
    def guard(self):
        """Finish the report as failed / interrupted / diverged when the work inside raises (then re-raise)."""
        from qpnlp._errors import TrainingDiverged

        try:
            yield self
        except BaseException as err:
            if self.data["status"] == "running":
                status = "diverged" if isinstance(err, TrainingDiverged) else \
                    "interrupted" if isinstance(err, KeyboardInterrupt) else "failed"
                with contextlib.suppress(Exception):
                    self.finish(status, error=error_line(err) if status != "interrupted" else "interrupted (SIGINT)")
            raise

    def finish(self, status: str = "completed", **fields) -> None:
        self.update(status=status, **fields)
        self.write()
        if self.path is not None:
            print(f"report written to {self.path}", flush=True)

    def write(self) -> None:
        if self.path is None:
            return
        self.data.update(written=time.strftime("%Y-%m-%dT%H:%M:%S%z"), wall_seconds=time.perf_counter() - self._start)
        warnings = [w for w in self.data["warnings"] if not w.startswith("non-finite")]
        bad: list[str] = []
        data = _strict({**self.data, "warnings": warnings}, "", bad)
        data["warnings"] += [f"non-finite value written as null: {where}" for where in bad]
        atomic_write_text(self.path, json.dumps(data, indent=2, allow_nan=False) + "\n")
        if self.data["history"]:
            atomic_write_text(self.path.with_suffix(".history.csv"), history_csv(data["history"]))

    def _tensorboard_epoch(self, entry: dict) -> None:
        if self.path is None or self._tensorboard is False:
            return
        if self._tensorboard is None:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except Exception:  # noqa: BLE001 - tensorboard missing or broken: skip silently, as documented
                self._tensorboard = False
                return
            self._tensorboard = SummaryWriter(log_dir=str(self.path.with_suffix(".tensorboard")))
        prefix = "/".join(str(entry[k]).replace(" ", "_") for k in ("split", "candidate") if k in entry)
        for key, value in _flatten(entry).items():
            if key not in ("epoch", "candidate") and isinstance(value, (int, float)) and not isinstance(value, bool) \
                    and math.isfinite(value):
                self._tensorboard.add_scalar(f"{prefix}/{key}" if prefix else key, value, int(entry["epoch"]))
        self._tensorboard.flush()


def _strict(value, where: str, bad: list[str]):
    """JSON-ready copy: NaN/inf -> None (recorded in ``bad``), tuples -> lists, NumPy/paths -> plain values."""
    if isinstance(value, dict):
        return {str(k): _strict(v, f"{where}.{k}" if where else str(k), bad) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(v, f"{where}[{i}]", bad) for i, v in enumerate(value)]
    if hasattr(value, "item") and getattr(value, "ndim", 0) == 0 and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        bad.append(where)
        return None
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _flatten(entry: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in entry.items():
        if isinstance(value, dict):
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def history_csv(history: list[dict]) -> str:
    """The history as CSV: one row per epoch, nested values as ``dev.map`` columns."""
    rows = [_flatten(entry) for entry in history]
    columns = list(dict.fromkeys(key for row in rows for key in row))
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: json.dumps(v) if isinstance(v, (list, dict)) else v for k, v in row.items()})
    return out.getvalue()


def epoch_logger(report: Report, label: str, **context) -> Callable[[dict], None]:
    """A trainer's ``log``: print one line per epoch and add the entry (with ``context``) to the report."""
    def log(entry: dict) -> None:
        entry = {**context, **entry}
        where = label
        if "setting" in entry:
            where += " [" + " ".join(f"{k}={v}" for k, v in entry["setting"].items()) + "]"
        report.epoch(entry)                       # first: once the line is out, the report holds the epoch
        print(f"{where} epoch {entry['epoch']}: {epoch_summary(entry)}  ({entry['seconds']:.0f}s)"
              + ("  (from the saved training state)" if entry.get("restored") else ""), flush=True)
    return log


def epoch_summary(entry: dict) -> str:
    """``loss 0.4321  dev accuracy 0.8123`` / ``... dev MAP 0.61 MRR 0.62`` / ``... 812,345 tokens/s``."""
    text = f"loss {entry['train_loss']:.4f}"
    if "dev_accuracy" in entry:
        text += f"  dev accuracy {entry['dev_accuracy']:.4f}"
    if isinstance(entry.get("dev"), dict):
        text += f"  dev MAP {entry['dev']['map']:.4f} MRR {entry['dev']['mrr']:.4f}"
    if entry.get("tokens_per_s") is not None:
        text += f"  {entry['tokens_per_s']:,.0f} tokens/s"
    return text


"""Output paths of the commands: checked before any work, and the training-state directory of ``--resume``.

:func:`prepare_outputs` checks ``--report``, ``--save`` and the training
state (``--checkpoint-dir``, or ``SAVE.training``) before any work, and
clears or keeps an earlier state (:data:`RUN_FILE` marks a directory as one).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

from qpnlp._atomic import (LOCK_FILE, atomic_write_text, check_replaceable, existing_parent, leftover_of, leftovers,
                           locked_directory, written_by_qpnlp)
from qpnlp._errors import newer_format_note, preview
from qpnlp.models.base import CONFIG_FILE

from ._console import status_line
from ._errors import CommandFailed, UsageError
from ._report import arguments, history_path, is_report, json_ready, report_files, tensorboard_path
from ._types import path_type


def check_output_path(path: str | os.PathLike | None, option: str, *, directory: bool = False,
                      model: bool = False) -> Path | None:
    """Refuse an output path that cannot be written, before any work (:class:`UsageError`).

    A file must not be an existing directory; a directory must not be an
    existing file, and with ``model`` an existing non-empty directory must
    be a saved qpnlp model (it is replaced); the nearest existing parent
    must be a writable directory, and so must an existing output directory
    (its files are written in it; replacing it renames it, which a
    read-only directory refuses): a read-only output is refused before the
    work whose result would be lost, not after it. ``-`` is refused: it
    reads as stdout, which holds the results only, and became a file named ``-``.
    """
    if not path:
        return None
    if os.fspath(path) == "-":
        kind = "directory" if directory else "file"
        raise UsageError(f"{option} -: writes a {kind}, not stdout (stdout holds the results only); give a {kind} "
                         f"name (./- for one named '-')")
    out = Path(path)
    if directory and out.is_file():
        raise UsageError(f"{option} {path}: exists and is a file; {option} takes a directory")
    if not directory and out.is_dir():
        raise UsageError(f"{option} {path}: is a directory; {option} takes a file name")
    if model:
        try:
            check_replaceable(out, replaces=CONFIG_FILE)
        except (FileExistsError, ValueError):
            raise _not_replaceable(option, path) from None
    parent = existing_parent(out)
    if not parent.is_dir():
        raise UsageError(f"{option} {path}: {parent} is a file, not a directory")
    for where in (parent, out.absolute()) if directory and out.is_dir() else (parent,):
        try:
            with tempfile.TemporaryFile(dir=where):
                pass
        except OSError as err:
            raise UsageError(f"{option} {path}: cannot write in {where} ({err.strerror or err})") from None
    return out


def check_report_path(path: str | os.PathLike | None) -> Path | None:
    """``--report`` checked as :func:`check_output_path` checks a file, and its history written beside it
    (``qpnlp.commands._report.history_path``), which must not be a directory either: refused before any work, not after
    the first epoch."""
    report = check_output_path(path, "--report")
    if report is not None and history_path(report).is_dir():
        raise UsageError(f"--report {path}: {history_path(report)}, where the report's history is written, is a "
                         f"directory; choose another report name")
    if report is not None and tensorboard_path(report) == report:
        raise UsageError(f"--report {path}: the name of the directory of its TensorBoard events (FILE.tensorboard); "
                         f"choose another report name, such as FILE.json")
    return report


def _not_replaceable(option: str, path: str | os.PathLike) -> UsageError:
    """The refusal of an existing directory as a model's output: a user's own, or a model of qpnlp 0.1."""
    from qpnlp.word2fun.convert import is_legacy_word2fun      # only on this path: the converter loads Word2Fun

    if is_legacy_word2fun(path):
        return UsageError(f"{option} {path}: holds a Word2Fun model of qpnlp 0.1; refusing to replace it (convert "
                          f"it first with `qpnlp convert {path} NEW`, or choose another directory)")
    return UsageError(f"{option} {path}: exists and is not a saved qpnlp model; refusing to replace it (choose a "
                      f"new directory)")


RUN_FILE = "training-run.json"
#: The ``format`` of :data:`RUN_FILE`.
RUN_FORMAT = "qpnlp-training-run/1"


def add_resume_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("checkpoints")
    group.add_argument("--checkpoint-dir", metavar="DIRECTORY", default=None, type=path_type,
                       help="keep the training state of the last epoch here, written after every epoch (default: "
                            "SAVE.training next to --save; none without --save); locked while the run lasts: a "
                            "second run given it at the same time is refused")
    group.add_argument("--resume", action="store_true",
                       help="continue an interrupted run from its training state (--checkpoint-dir, or the one "
                            "next to --save), given its --dataset: every option not given here is the run's (its "
                            "model options, training settings and selection grid as the run resolved them, not "
                            "today's defaults; --save, --report, --threads and --no-progress are this command "
                            "line's); an option given is compared with the run's, a difference refused, named with "
                            "both values (only --epochs, --patience, --device, --compile, --pad-to-multiple-of, "
                            "--data and --max-splits may change); same result as an uninterrupted run (without "
                            "--resume, an earlier run's training state there is cleared)")
    group.add_argument("--no-training-state", action="store_true",
                       help="keep no training state next to --save (saves a write per epoch of the parameters, best "
                            "parameters and optimiser moments that training changed, up to 4x the model's size "
                            "with Adam; --resume is then impossible; not with --checkpoint-dir)")


def state_directory(args: argparse.Namespace) -> str | None:
    """The training-state directory of a ``train`` command: ``--checkpoint-dir``, else ``SAVE.training`` next to
    ``--save`` (none under ``--no-training-state``), unchecked (:func:`prepare_outputs` checks it)."""
    save = getattr(args, "save", None)
    return getattr(args, "checkpoint_dir", None) or \
        (f"{str(save).rstrip('/')}.training" if save and not getattr(args, "no_training_state", False) else None)


def saved_run_file(args: argparse.Namespace) -> dict | None:
    """Under ``--resume``, what the run that wrote the training state recorded in its :data:`RUN_FILE`: its
    command line (``arguments``) and, from this version on, its resolved ``settings`` (model options, training
    settings, selection grid; ``qpnlp.commands._resume``); None without ``--resume`` or a run file of qpnlp
    (:func:`prepare_outputs` then refuses the resume). A run file of a later format (a newer qpnlp's, whose
    options may mean otherwise) is refused (:class:`UsageError`), before its options are taken."""
    state = state_directory(args) if getattr(args, "resume", False) else None
    if state is None or not written_by_qpnlp(Path(state) / RUN_FILE):
        return None
    found = json.loads((Path(state) / RUN_FILE).read_text(encoding="utf-8"))
    note = newer_format_note(found["format"], RUN_FORMAT)
    if note:
        raise UsageError(f"--resume: {Path(state) / RUN_FILE} is not a {RUN_FORMAT} file (format "
                         f"{preview(found['format'])}){note}")
    return found if isinstance(found.get("arguments"), dict) else None


def prepare_outputs(args: argparse.Namespace, settings: dict | None = None) -> Path | None:
    """Check ``--report``, ``--save`` and the training-state directory before any work; returns the state directory.

    Without ``--resume`` an earlier state in that directory is cleared; with
    it, the directory must hold one, and the unfinished writes of a killed run are removed
    (:func:`_remove_leftovers`). The directory is locked until the
    command ends (:func:`lock_for_the_run`): a second run given it at the
    same time is refused. So is ``--save``, and what killed saves of it
    left beside it is removed (:func:`_hold_save`). A new state directory
    records the command line and ``settings`` (the run's resolved model
    options, training settings and grid) in its :data:`RUN_FILE`, which
    ``--resume`` continues (:func:`saved_run_file`).
    """
    save, state, option = _checked_paths(args)
    if state is None:
        _hold_save(args, save)
        return None
    root = _checked_state_directory(state, save, option)
    _hold_save(args, save)
    lock_for_the_run(args, root, option)
    resume = getattr(args, "resume", False)
    ours = _resume_or_clear(root, option, resume)
    if not ours or not resume:
        _record_run(args, root, settings)
    return root


def _checked_paths(args: argparse.Namespace) -> tuple[Path | None, str | None, str]:
    """``(--save, the training-state directory, the option that names it)``, with ``--report``, refused
    (:class:`UsageError`) where they contradict each other or overlap, before any work."""
    if getattr(args, "checkpoint_dir", None) and getattr(args, "no_training_state", False):
        raise UsageError("--no-training-state and --checkpoint-dir ask for opposite things (no training state, a "
                         "training state in that directory); give one of them")
    report = check_report_path(getattr(args, "report", None))
    save = check_output_path(getattr(args, "save", None), "--save", directory=True, model=True)
    state = state_directory(args)
    option = "--checkpoint-dir" if getattr(args, "checkpoint_dir", None) else "--save"
    if getattr(args, "resume", False) and state is None:
        raise UsageError("--resume needs --checkpoint-dir or --save (the training state is kept next to it), "
                         "and not --no-training-state")
    kept = option if option == "--checkpoint-dir" else "the training state next to --save"
    check_report_apart(report, {"--save": save, kept: state}, read_paths(args))
    return save, state, option


def _checked_state_directory(state: str, save: Path | None, option: str) -> Path:
    """The training-state directory ``state`` (named by ``option``), refused (:class:`UsageError`) where it overlaps
    ``--save``, cannot be written or is a directory of something else than a qpnlp training state."""
    if save is not None and overlapping(save, Path(state)):
        # Saving the model replaces the --save directory (and a rerun clears the state directory): one inside
        # the other would lose the training state (or the saved model).
        raise UsageError(f"--checkpoint-dir {state} and --save {save} overlap; the training state must be kept "
                         f"outside the model directory (and the model outside the state directory)")
    root = check_output_path(state, option, directory=True)
    if root.is_dir() and any(p.name != LOCK_FILE for p in root.iterdir()) and not written_by_qpnlp(root / RUN_FILE):
        raise UsageError(f"{option}: {root} exists and is not a qpnlp training-state directory; refusing to "
                         f"use it (choose a new --checkpoint-dir)")
    return root


def _resume_or_clear(root: Path, option: str, resume: bool) -> bool:
    """Whether the locked directory ``root`` holds a training state of qpnlp; with ``resume`` it must
    (:class:`CommandFailed`), and the unfinished writes of a killed run are removed; without, it is cleared.
    Says what it did, in status lines."""
    ours = written_by_qpnlp(root / RUN_FILE)
    if resume and not ours:
        raise CommandFailed(f"nothing to resume: {root} holds no training state (give the --save or "
                            f"--checkpoint-dir of the interrupted run)")
    if not resume and ours:
        _clear(root)
        status_line(f"{option}: the training state of an earlier run in {root} was cleared (without --resume the "
                    f"run starts afresh)")
    left = _remove_leftovers(root) if resume and ours else []
    _say_removed(option, root, [str(p.relative_to(root)) for p in left])
    status_line(f"resuming from the training state in {root}" if resume else
                f"training state kept in {root} after every epoch (--resume continues from it)")
    return ours


def _record_run(args: argparse.Namespace, root: Path, settings: dict | None) -> None:
    """Write the :data:`RUN_FILE` of a new training state in ``root`` (created): the command line and the run's
    resolved ``settings``, which ``--resume`` continues."""
    root.mkdir(parents=True, exist_ok=True)
    recorded = dict(format=RUN_FORMAT, prog=args.prog, arguments=json_ready(arguments(args), "", []))
    if settings is not None:
        recorded["settings"] = json_ready(settings, "", [])
    atomic_write_text(root / RUN_FILE, json.dumps(recorded, indent=2) + "\n")


def lock_for_the_run(args: argparse.Namespace, root: str | os.PathLike, option: str, *, beside: bool = False,
                     keeps: str = "its training state") -> bool:
    """Hold the directory ``root`` until the command ends (``qpnlp._atomic.locked_directory``, ``beside`` it for
    a directory that every save replaces, entered on ``args.exit_stack``, which ``qpnlp.commands._errors.run_command``
    closes; no lock without one): a second run given the same directory while this one runs (folds started at
    once with one ``--save``) would clear or resume this run's files (``keeps``) and mix its own into them; it is
    refused (:class:`CommandFailed`, one line naming the holder) before any work. Returns whether a lock is held
    (not without ``args.exit_stack``, nor where the file system keeps no locks)."""
    stack = getattr(args, "exit_stack", None)
    if stack is None:
        return False
    try:
        return stack.enter_context(locked_directory(root, beside=beside))
    except BlockingIOError as err:
        raise CommandFailed(f"{option}: {err.strerror}: another run keeps {keeps} there; wait for it to end, or "
                            f"give this run another {option}") from None


def _hold_save(args: argparse.Namespace, save: Path | None) -> None:
    """Lock ``--save`` for the run (beside it: every save replaces the directory) and, once held, delete what a
    killed run's saves of it left beside it (:func:`remove_leftovers_of`)."""
    if save is not None and lock_for_the_run(args, save, "--save", beside=True, keeps="its saved model"):
        remove_leftovers_of(save, "--save")


def remove_leftovers_of(path: str | os.PathLike, option: str) -> list[Path]:
    """Delete the hidden siblings that killed saves of ``path`` left beside it (``qpnlp._atomic.leftovers``: only
    ``.NAME.XXXXXXXX.tmp``, and ``.NAME.XXXXXXXX.old`` beside an existing ``NAME``, never another file), said in
    one line naming ``option``; returns them. Only for a run that holds ``path`` locked (:func:`lock_for_the_run`,
    ``beside``): no other process saves it, so these are no one's work in progress."""
    left = _remove_stale(leftovers(path))
    _say_removed(option, Path(path).parent, [p.name for p in left])
    return left


def _say_removed(option: str, where: Path, names: list[str]) -> None:
    """The line that says the unfinished writes of a killed run (``names``, in ``where``) were removed, if any."""
    if names:
        status_line(f"{option}: removed {len(names)} unfinished write(s) of a killed run from {where}: "
                    + ", ".join(names[:3]) + (" ..." if len(names) > 3 else ""))


def _clear(root: Path) -> None:
    """Delete what an earlier run left in the training-state directory ``root`` but its lock, the run file last."""
    entries = sorted(root.iterdir(), key=lambda p: p.name == RUN_FILE)
    for entry in entries:
        if entry.name != LOCK_FILE:
            shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()


def _remove_leftovers(root: Path) -> list[Path]:
    """Delete, from the locked training-state directory ``root`` and its split directories, what a killed run's
    atomic writes left (``qpnlp._atomic``): ``.NAME.XXXXXXXX.tmp`` (an unfinished write) and ``.NAME.XXXXXXXX.old``
    beside an existing ``NAME`` (a replaced state, deleted halfway). An ``.old`` whose ``NAME`` is missing is kept:
    resuming puts it back (``qpnlp.training.loop``). Under the lock no other process writes there, so these are
    no one's work in progress; each is a state's size, and every kill left one more. Returns the paths removed."""
    removed = []
    for folder in [root, *(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))]:
        removed += _remove_stale(entry for entry in sorted(folder.iterdir()) if leftover_of(entry) is not None)
    return removed


def _remove_stale(entries: Iterable[Path]) -> list[Path]:
    """Delete each of ``entries`` (hidden siblings of saves, ``qpnlp._atomic.leftover_of``) but an ``.old`` whose
    ``NAME`` is missing (the previous version of ``NAME``, which resuming or the user puts back); returns those
    deleted."""
    removed = []
    for entry in entries:
        if entry.suffix == ".old" and not leftover_of(entry).exists():
            continue
        shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
        removed.append(entry)
    return removed


def check_report_apart(report: Path | None, outputs: dict[str, str | os.PathLike | None],
                       inputs: Iterable[tuple[str, str | os.PathLike | None]] = ()) -> None:
    """Refuse a ``--report`` whose files (:func:`~._report.report_files`: the report, its history, its TensorBoard
    events) lie at the path of an output (option -> path), above it or inside it, or at an input or inside it
    (``inputs``: (option, path) pairs) (:class:`UsageError`).

    At or above an output: one of the two could not be written, or the
    later write replaced the earlier one (``--report a.json --export-npz
    a.history.csv``: the grid lost), seen only after the training. Inside:
    an output directory is replaced as a whole by the next save, of this
    run or a later one (a training state is cleared by a later run), which
    deletes the report; and the report, written first, makes a new output
    directory one that qpnlp refuses to replace (an output file's path, a
    directory). At an input (``--report corpus.tsv``), or over a file
    inside one (``--report MODEL/config.json``, ``MODEL`` the model
    directory that ``evaluate`` reads): the run overwrites what it reads. A
    new file inside an input directory (``--report MODEL/eval.json``), or
    the files of an earlier report there (:func:`~._report.is_report`), are
    written beside what is read, and taken. Inputs that do not exist are
    not compared.
    """
    if report is None:
        return
    inputs = [(option, path) for option, path in inputs if path is not None and os.path.exists(path)]
    earlier = is_report(report)                   # an earlier run's report: its files there are its own
    for what, written in report_files(report).items():
        _check_apart(what, written, outputs)
        for option, path in inputs:
            if _same(written, path) or (_inside_or_at(written, path) and os.path.lexists(written) and not earlier):
                raise UsageError(f"--report and {option} overlap: {what} {written} would be written "
                                 f"{'over' if _same(written, path) else 'inside'} {path}, which the command reads; "
                                 f"write the report elsewhere")


def _check_apart(what: str, written: Path, outputs: dict[str, str | os.PathLike | None]) -> None:
    """Refuse ``written`` (``what`` of the report) at, above or inside one of the ``outputs`` (option -> path)."""
    for option, path in outputs.items():
        if path is None:
            continue
        if _same(written, path):
            raise UsageError(f"--report and {option} name the same path ({path})" if what == "the report" else
                             f"--report and {option} overlap: {path} is also {what}; choose another report name")
        if _inside_or_at(path, written):
            raise UsageError(f"--report and {option} overlap: {path} would lie inside {what} {written}")
        if _inside_or_at(written, path):
            raise UsageError(f"--report and {option} overlap: {what} {written} would lie inside {path}, which is "
                             f"written as a whole (a later save or run replaces it, deleting the report); write the "
                             f"report outside it")


def _same(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether ``a`` and ``b`` are one path (after resolving links and ..)."""
    return os.path.realpath(a) == os.path.realpath(b)


def _inside_or_at(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether ``a`` is ``b`` or lies inside it (after resolving links and ..)."""
    a, b = Path(os.path.realpath(a)), Path(os.path.realpath(b))
    return a == b or b in a.parents


def read_paths(args: argparse.Namespace) -> list[tuple[str, str | None]]:
    """The files and directories a ``train`` or ``evaluate`` command reads, by option (a registered name of
    ``--vectors`` or ``--dataset`` is no path): the ``--vectors`` file or directory, ``evaluate``'s checkpoint and
    its TSV ``--dataset``."""
    from qpnlp.data.vectors import VECTOR_SETS

    vectors, dataset = getattr(args, "vectors", None), getattr(args, "dataset", None)
    return [("--vectors", None if vectors is None or str(vectors) in VECTOR_SETS else os.path.expanduser(vectors)),
            ("the checkpoint", getattr(args, "checkpoint", None)),
            ("--dataset", dataset if dataset and os.path.isfile(dataset) else None)]


def overlapping(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` are the same path or one lies inside the other (after resolving links and ..)."""
    return _inside_or_at(a, b) or _inside_or_at(b, a)


def state_subdir(root: Path | None, name: str) -> Path | None:
    """The training-state directory of one split (``fold 3`` -> ``root/fold-3``)."""
    return None if root is None else root / "-".join(name.split())

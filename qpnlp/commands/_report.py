"""The one report of every command (:class:`Report`, schema ``qpnlp-report/1``) and the per-epoch lines.

:func:`epoch_logger` prints one line per epoch and adds the entry to the
report, which is rewritten (JSON, ``.history.csv``, TensorBoard events)
after every epoch.
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
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import torch

from qpnlp._atomic import atomic_write_text
from qpnlp._json import map_leaves

from ._console import status_line
from ._errors import error_line, stopped_by_sigterm


REPORT_SCHEMA = "qpnlp-report/1"


def arguments(args: argparse.Namespace) -> dict:
    """The command-line settings of a run, as JSON (not what ``_errors.run_command`` adds, ``exit_stack``, nor the
    options a resumed run was given, ``given_options``)."""
    return {k: v for k, v in vars(args).items()
            if k not in ("func", "prog", "exit_stack", "given_options") and not callable(v)}


def run_outcome(error: BaseException) -> tuple[str, str]:
    """The report status and error line of a run that ``error`` ended: ``("diverged" | "interrupted" | "failed",
    line)``, Ctrl-C as ``"interrupted (SIGINT)"`` (not "KeyboardInterrupt: ..."), SIGTERM as ``"stopped by
    SIGTERM"``, else the command's one-line error."""
    from qpnlp._errors import TrainingDiverged

    if isinstance(error, KeyboardInterrupt):
        return "interrupted", "stopped by SIGTERM" if stopped_by_sigterm(error) else "interrupted (SIGINT)"
    return ("diverged" if isinstance(error, TrainingDiverged) else "failed"), error_line(error)


class Report:
    """The one report of every ``train`` / ``evaluate`` / ``demo`` command (schema ``qpnlp-report/1``).

    Keys: ``schema``, ``command``, ``status`` (running, completed,
    interrupted, diverged, failed), ``qpnlp_version``, ``torch_version``,
    ``python_version``, ``started``, ``written``, ``wall_seconds``,
    ``model``, ``dataset``, ``split``, ``split_counts`` (split -> part ->
    items), ``split_unit``, ``seed``, ``config`` (model options, training
    settings), ``arguments`` (the command line), ``metrics``, ``n`` (items
    the metrics were computed on), ``counts`` (what ``n`` counts, by name:
    unit -> count, the same names and values in ``train`` and ``evaluate``
    of one split), ``history`` (one entry per epoch),
    ``checkpoint``, ``training_state``, ``error``, ``warnings``,
    ``details`` (what only this command has).

    The JSON is strict (a NaN or infinity is written as null and named in
    ``warnings``) and written atomically, after every epoch and at the end;
    the history is also written as ``<report>.history.csv``
    (:func:`history_path`) and, when ``torch.utils.tensorboard`` can be
    imported, as TensorBoard events in ``<report>.tensorboard/``.

    A report that cannot be written after an epoch (a full disk, an I/O
    error) stops no training: that is said once, as a warning naming the
    file and the error, recorded in ``warnings``, and the report is written
    again after the next epoch and at the end. Only the last write, at the
    end (the model saved by then), fails the command (exit code 1).
    """

    def __init__(self, args: argparse.Namespace, *, command: str, model: str | None = None) -> None:
        from qpnlp import __version__

        report = getattr(args, "report", None)
        self.path = Path(report) if report else None
        self._start = time.perf_counter()
        self._tensorboard = None
        self._unwritten = False                   # an epoch's report could not be written (said once)
        self.data: dict = dict(
            schema=REPORT_SCHEMA, command=command, status="running", qpnlp_version=__version__,
            torch_version=torch.__version__, python_version=platform.python_version(),
            started=time.strftime("%Y-%m-%dT%H:%M:%S%z"), written=None, wall_seconds=0.0, model=model, dataset=None,
            split=None, split_counts={}, split_unit=None, seed=getattr(args, "seed", None), config={},
            arguments=arguments(args), metrics={}, n=None, counts={}, history=[], checkpoint=None, training_state=None,
            error=None, warnings=[], details={})

    def update(self, **fields) -> None:
        unknown = sorted(set(fields) - set(self.data))
        if unknown:
            raise KeyError(f"not report fields: {unknown}; command-specific values go under 'details'")
        self.data.update(fields)

    def epoch(self, entry: dict) -> None:
        """Add one epoch's history entry and rewrite the report (and its CSV and TensorBoard events); a write that
        fails (OSError) is a warning, said once: the training goes on (see the class notes)."""
        self.data["history"].append(entry)
        try:
            self.write()
            self._tensorboard_epoch(entry)
        except OSError as err:
            if not self._unwritten:
                self._unwritten = True
                line = (f"the report could not be written after epoch {entry.get('epoch')} ({error_line(err)}); the "
                        f"training goes on, the report is written again after each epoch and at the end")
                self.data["warnings"].append(line)
                warnings.warn(line, RuntimeWarning, stacklevel=2)

    @contextlib.contextmanager
    def guard(self):
        """Finish the report as failed / interrupted / diverged when the work inside raises (then re-raise)."""
        try:
            yield self
        except BaseException as err:
            if self.data["status"] == "running":
                status, line = run_outcome(err)
                with contextlib.suppress(Exception):
                    self.finish(status, error=line)
            raise

    def finish(self, status: str = "completed", **fields) -> None:
        try:
            self.update(status=status, **fields)
            self.write()
        finally:
            self.close()
        if self.path is not None:
            status_line(f"report written to {self.path}")

    def close(self) -> None:
        """Close the TensorBoard writer, if one is open, and its thread (each ``main([...])`` run in one process left
        one running)."""
        if self._tensorboard:
            self._tensorboard.close()
            self._tensorboard = None

    def write(self) -> None:
        if self.path is None:
            return
        self.data.update(written=time.strftime("%Y-%m-%dT%H:%M:%S%z"), wall_seconds=time.perf_counter() - self._start)
        kept = [w for w in self.data["warnings"] if not w.startswith("non-finite")]
        bad: list[str] = []
        data = json_ready({**self.data, "warnings": kept}, "", bad)
        data["warnings"] += [f"non-finite value written as null: {where}" for where in bad]
        atomic_write_text(self.path, json.dumps(data, indent=2, allow_nan=False) + "\n")
        if self.data["history"]:
            atomic_write_text(history_path(self.path), history_csv(data["history"]))

    def _tensorboard_epoch(self, entry: dict) -> None:
        if self.path is None or self._tensorboard is False:
            return
        if self._tensorboard is None:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except Exception:  # noqa: BLE001 - tensorboard missing or broken: skip silently, as documented
                self._tensorboard = False
                return
            self._tensorboard = SummaryWriter(log_dir=str(tensorboard_path(self.path)))
        prefix = "/".join(str(entry[k]).replace(" ", "_") for k in ("split", "candidate") if k in entry)
        for key, value in _flatten(entry).items():
            if key not in ("epoch", "candidate") and isinstance(value, (int, float)) and not isinstance(value, bool) \
                    and math.isfinite(value):
                self._tensorboard.add_scalar(f"{prefix}/{key}" if prefix else key, value, int(entry["epoch"]))
        self._tensorboard.flush()


def history_path(report: str | os.PathLike) -> Path:
    """Where the history of the report ``report`` is written as CSV: ``run.json`` -> ``run.history.csv``."""
    return Path(report).with_suffix(".history.csv")


def tensorboard_path(report: str | os.PathLike) -> Path:
    """The directory of the TensorBoard events of the report ``report``: ``run.json`` -> ``run.tensorboard``."""
    return Path(report).with_suffix(".tensorboard")


def is_report(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a report that :class:`Report` wrote (an earlier run's): a file whose JSON begins with
    the key ``schema`` of :data:`REPORT_SCHEMA`, as every report is written. Only its first bytes are read."""
    try:
        with open(path, "rb") as file:
            head = file.read(256)
    except OSError:
        return False
    return head.replace(b" ", b"").replace(b"\n", b"").startswith(b'{"schema":"' + REPORT_SCHEMA.encode() + b'"')


def report_files(report: str | os.PathLike) -> dict[str, Path]:
    """What ``--report`` writes, named for an error: the report, its history (:func:`history_path`) and its
    TensorBoard events (:func:`tensorboard_path`, a directory)."""
    return {"the report": Path(report), "the report's history": history_path(report),
            "the report's TensorBoard events": tensorboard_path(report)}


def json_ready(value, where: str, bad: list[str]):
    """A copy of ``value`` that ``json.dumps(..., allow_nan=False)`` accepts (strict JSON).

    Dicts become dicts with string keys, lists and tuples become lists, zero-dimensional NumPy / torch
    values become their Python scalars, and anything else that is not ``None``, a bool, int, float or str
    (a path, say) becomes its ``str``. A non-finite float (NaN, infinity) becomes ``None`` and its location
    is appended to ``bad``: ``where`` names ``value`` itself, and nested locations are built from it as
    ``key.sub`` and ``key[i]`` (pass ``""`` at the top level; ``qpnlp._json.map_leaves`` walks it). ``value`` is
    not modified.

    >>> bad = []
    >>> json_ready({"a": (1, float("nan")), "b": {"c": float("inf")}}, "", bad), bad
    ({'a': [1, None], 'b': {'c': None}}, ['a[1]', 'b.c'])
    """
    def ready(path: str, leaf):
        if hasattr(leaf, "item") and getattr(leaf, "ndim", 0) == 0 and not isinstance(leaf, (str, bytes)):
            leaf = leaf.item()
        if isinstance(leaf, float) and not math.isfinite(leaf):
            bad.append(path)
            return None
        if leaf is None or isinstance(leaf, (bool, int, float, str)):
            return leaf
        return str(leaf)

    return map_leaves(value, ready, where)


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
        status_line(f"{where} epoch {entry['epoch']}: {epoch_summary(entry)}  ({entry['seconds']:.0f}s)"
                    + ("  (from the saved training state)" if entry.get("restored") else ""))
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
